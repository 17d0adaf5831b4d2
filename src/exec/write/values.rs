//! What every writing statement shares: the read it makes of the world before it writes
//! (`reader`), and what that read gave turned into what is written: vectors as storage
//! columns of their fields' types (`to_column`, `full_columns`; one value, `to_value`), a
//! column as entity ids (`ids_of`). A value its field cannot hold is an error here, before
//! anything is written.

use std::borrow::Cow;
use std::fmt;

use crate::exec::error::ExecError;
use crate::exec::reader::Reader;
use crate::exec::{Chunk, Run};
use crate::location::Location;
use crate::plan::DataType;
use crate::storage::{Column, ComponentDef, Entity, FieldType, Value, World};
use crate::vector::cast;
use crate::vector::{Data, Datum, Vector};

pub(super) type Result<T> = std::result::Result<T, ExecError>;

/// A read of `world` for a statement that will write to it afterwards.
pub(super) fn reader<'w>(world: &'w World, run: Run<'w>) -> Reader<'w> {
    Reader::new(world, run)
}

/// `v` converted to a storage column of `ty`; a NULL where `ty` cannot hold one is an error
/// naming `what`.
pub(super) fn to_column(
    v: Vector<'_>,
    ty: FieldType,
    what: &dyn fmt::Display,
    at: Location,
) -> Result<Column> {
    let len = v.len();
    let want = DataType::from(ty);
    let v = if v.data_type() == want || matches!(v.data, Data::Null) {
        v
    } else {
        crate::vector::store_cast(Datum::Vector(v), want, what, at)?.into_vector(want, len)
    };
    v.into_owned().into_column(ty).map_err(|_| null_refused(what, at))
}

/// `to_column` of one value: `value` as a value of a field of type `ty`, or the same error.
pub(super) fn to_value(value: Value, ty: FieldType, what: &dyn fmt::Display, at: Location) -> Result<Value> {
    if ty.accepts(&value) {
        return Ok(value);
    }
    if matches!(value, Value::Null) {
        return Err(null_refused(what, at));
    }
    let want = DataType::from(ty);
    let cast = match crate::vector::store_cast(Datum::Scalar(value), want, what, at)? {
        Datum::Scalar(v) => v,
        Datum::Vector(v) if v.len() == 1 => v.get(0),
        Datum::Vector(_) => return Err(ExecError::internal(at, "a cast of one value gave another count")),
    };
    match ty.accepts(&cast) {
        true => Ok(cast),
        false => Err(null_refused(what, at)),
    }
}

/// The error of a NULL written to a field that cannot hold one.
#[cold]
fn null_refused(what: &dyn fmt::Display, at: Location) -> ExecError {
    ExecError::constraint(at, format!("{what} cannot be NULL (only ENTITY fields may be)"))
}

/// Every field of `def` as a storage column of `len` rows: the vector `given` has for it
/// (with where it was written), or its default; a value its field cannot hold is an error
/// naming the field, at the place its value was written (a default's: `at`).
pub(in crate::exec) fn full_columns<'v>(
    def: &ComponentDef,
    len: usize,
    given: impl Fn(usize) -> Option<(Vector<'v>, Location)>,
    at: Location,
) -> Result<Vec<Column>> {
    let mut columns = Vec::with_capacity(def.fields().len());
    for (f, spec) in def.fields().iter().enumerate() {
        let (v, value_at) = given(f).unwrap_or_else(|| {
            (
                Vector::broadcast(spec.default_value(), DataType::from(spec.ty()), len),
                at,
            )
        });
        columns.push(to_column(
            v,
            spec.ty(),
            &format_args!("{}.{}", def.name(), spec.name()),
            value_at,
        )?);
    }
    Ok(columns)
}

pub(super) fn ids_of(chunk: &Chunk, column: usize, at: Location) -> Result<Vec<Option<Entity>>> {
    let v = match chunk.columns.get(column) {
        Some(v) => v,
        None => return Err(ExecError::internal(at, "missing id column")),
    };
    let v = if v.data_type() == DataType::Entity {
        Cow::Borrowed(v)
    } else {
        Cow::Owned(
            cast(Datum::Vector(v.view()), DataType::Entity, at)?
                .into_vector(DataType::Entity, chunk.len)
                .into_owned(),
        )
    };
    // A column of ids without a NULL mask is read as one slice.
    if let Some(ids) = v.typed::<Option<Entity>>()
        && ids.len() == chunk.len
    {
        return Ok(ids.to_vec());
    }
    Ok((0..chunk.len)
        .map(|i| match v.get(i) {
            Value::Entity(e) => Some(e),
            _ => None,
        })
        .collect())
}
