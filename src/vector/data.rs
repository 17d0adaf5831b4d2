//! Typed column batches: the unit every operator works on. A `Vector` is one typed slice,
//! borrowed straight from an archetype column when it can be and owned when an operator
//! made it, with an optional validity mask for NULLs. A `Datum` is a vector or one scalar
//! that stands for every row (literals, parameters, per-table constants).
//!
//! Boxed `Value`s appear only at the edges: `get` for results, `from_values` for VALUES
//! rows.

use std::borrow::Cow;

use super::types::DataType;
use crate::storage::{Column, ColumnSliceMut, Entity, FieldType, Value};

#[derive(Clone, Debug)]
pub enum Data<'a> {
    /// Every row NULL; the type of a bare NULL.
    Null,
    Int(Cow<'a, [i64]>),
    Float(Cow<'a, [f64]>),
    Real(Cow<'a, [f32]>),
    Bool(Cow<'a, [bool]>),
    Text(Cow<'a, [String]>),
    /// ENTITY values; `None` is NULL (the storage's own representation).
    Entity(Cow<'a, [Option<Entity>]>),
}

/// Makes `into` hold a copy of `values`, in its own memory when it owns some (a prepared
/// statement's last result).
fn assign<T: Clone>(into: &mut Cow<'static, [T]>, values: &[T]) {
    let v = into.to_mut();
    v.clear();
    match values {
        // One value (a point read's) without a call to copy it.
        [one] => v.push(one.clone()),
        _ => v.extend_from_slice(values),
    }
}

/// Applies the same expression to whichever typed slice `data` holds; `$null` for `Null`.
macro_rules! each_data {
    ($data:expr, $v:ident => $body:expr, $null:expr) => {
        match $data {
            Data::Null => $null,
            Data::Int($v) => $body,
            Data::Float($v) => $body,
            Data::Real($v) => $body,
            Data::Bool($v) => $body,
            Data::Text($v) => $body,
            Data::Entity($v) => $body,
        }
    };
}

/// A Rust type a result column can be read as, whole, without a boxed value per row:
/// `i64` (INT), `f64` (FLOAT), `f32` (REAL), `bool`, `String` (TEXT) and `Option<Entity>`.
pub trait ColumnSlice: Sized {
    /// The type as a user writes it, for error messages.
    const NAME: &'static str;
    /// The values of `data`, when they are of this type (how the executor hands a column over).
    fn of<'x>(data: &'x Data<'_>) -> Option<&'x [Self]>;
}

macro_rules! column_slice {
    ($($t:ty => $variant:ident),*) => {
        $(impl ColumnSlice for $t {
            const NAME: &'static str = stringify!($t);
            #[inline]
            fn of<'x>(data: &'x Data<'_>) -> Option<&'x [Self]> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }
        })*
    };
}

column_slice!(i64 => Int, f64 => Float, f32 => Real, bool => Bool, String => Text, Option<Entity> => Entity);

#[derive(Clone, Debug)]
pub struct Vector<'a> {
    pub data: Data<'a>,
    /// `false` marks a NULL row; `None` means no NULLs (apart from `None` entities).
    pub valid: Option<Cow<'a, [bool]>>,
    len: usize,
}

impl<'a> Vector<'a> {
    pub fn new(data: Data<'a>, valid: Option<Cow<'a, [bool]>>, len: usize) -> Vector<'a> {
        Vector { data, valid, len }
    }

    pub fn from_data(data: Data<'a>, len: usize) -> Vector<'a> {
        Vector {
            data,
            valid: None,
            len,
        }
    }

    pub fn nulls(len: usize) -> Vector<'static> {
        Vector {
            data: Data::Null,
            valid: None,
            len,
        }
    }

    /// A borrowed view of rows `rows` of a storage column.
    pub fn from_column(column: &'a Column, rows: std::ops::Range<usize>) -> Vector<'a> {
        let len = rows.len();
        let data = match column {
            Column::Int(v) => Data::Int(Cow::Borrowed(&v[rows])),
            Column::Float(v) => Data::Float(Cow::Borrowed(&v[rows])),
            Column::Real(v) => Data::Real(Cow::Borrowed(&v[rows])),
            Column::Bool(v) => Data::Bool(Cow::Borrowed(&v[rows])),
            Column::Text(v) => Data::Text(Cow::Borrowed(&v[rows])),
            Column::Entity(v) => Data::Entity(Cow::Borrowed(&v[rows])),
        };
        Vector {
            data,
            valid: None,
            len,
        }
    }

    /// A borrowed view of rows `rows` of a column lent for writing (`ColumnSliceMut`).
    pub fn from_piece(piece: &'a ColumnSliceMut<'_>, rows: std::ops::Range<usize>) -> Vector<'a> {
        let len = rows.len();
        let data = match piece {
            ColumnSliceMut::Int(v) => Data::Int(Cow::Borrowed(&v[rows])),
            ColumnSliceMut::Float(v) => Data::Float(Cow::Borrowed(&v[rows])),
            ColumnSliceMut::Real(v) => Data::Real(Cow::Borrowed(&v[rows])),
            ColumnSliceMut::Bool(v) => Data::Bool(Cow::Borrowed(&v[rows])),
            ColumnSliceMut::Text(v) => Data::Text(Cow::Borrowed(&v[rows])),
            ColumnSliceMut::Entity(v) => Data::Entity(Cow::Borrowed(&v[rows])),
        };
        Vector {
            data,
            valid: None,
            len,
        }
    }

    /// Rows `rows` of a table column, copied in that order: how a scan reads the scattered
    /// rows an index found.
    pub fn gather_column(column: &Column, rows: &[u32]) -> Vector<'static> {
        let data = match column {
            Column::Int(v) => gather_slice(v, rows).into_data(),
            Column::Float(v) => gather_slice(v, rows).into_data(),
            Column::Real(v) => gather_slice(v, rows).into_data(),
            Column::Bool(v) => gather_slice(v, rows).into_data(),
            Column::Text(v) => gather_slice(v, rows).into_data(),
            Column::Entity(v) => gather_slice(v, rows).into_data(),
        };
        Vector {
            data,
            valid: None,
            len: rows.len(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it holds its values itself (no slice borrowed from a table), so that
    /// `into_owned` copies nothing.
    pub fn is_owned(&self) -> bool {
        each_data!(&self.data, v => matches!(v, Cow::Owned(_)), true)
            && self.valid.as_ref().is_none_or(|v| matches!(v, Cow::Owned(_)))
    }

    pub fn data_type(&self) -> DataType {
        match self.data {
            Data::Null => DataType::Null,
            Data::Int(_) => DataType::Int,
            Data::Float(_) => DataType::Float,
            Data::Real(_) => DataType::Real,
            Data::Bool(_) => DataType::Bool,
            Data::Text(_) => DataType::Text,
            Data::Entity(_) => DataType::Entity,
        }
    }

    pub fn view(&self) -> Vector<'_> {
        let data = each_data!(&self.data, v => view_of(v).into_data(), Data::Null);
        Vector {
            data,
            valid: self.valid.as_deref().map(Cow::Borrowed),
            len: self.len,
        }
    }

    pub fn into_owned(self) -> Vector<'static> {
        let data = match self.data {
            Data::Null => Data::Null,
            Data::Int(v) => Data::Int(Cow::Owned(v.into_owned())),
            Data::Float(v) => Data::Float(Cow::Owned(v.into_owned())),
            Data::Real(v) => Data::Real(Cow::Owned(v.into_owned())),
            Data::Bool(v) => Data::Bool(Cow::Owned(v.into_owned())),
            Data::Text(v) => Data::Text(Cow::Owned(v.into_owned())),
            Data::Entity(v) => Data::Entity(Cow::Owned(v.into_owned())),
        };
        Vector {
            data,
            valid: self.valid.map(|v| Cow::Owned(v.into_owned())),
            len: self.len,
        }
    }

    pub fn is_valid(&self, row: usize) -> bool {
        self.valid.as_ref().is_none_or(|v| v[row])
            && !matches!(&self.data, Data::Entity(e) if e[row].is_none())
            && !matches!(self.data, Data::Null)
    }

    /// The values as a typed slice, when they are of type `T` and the mask marks none
    /// NULL (ENTITY NULLs are the `None`s inside the slice).
    pub fn typed<T: ColumnSlice>(&self) -> Option<&[T]> {
        if self.valid.as_ref().is_some_and(|v| v.contains(&false)) {
            return None;
        }
        T::of(&self.data)
    }

    /// The validity mask with NULL entities and an all-NULL vector folded in; `None` when
    /// every row is valid.
    pub fn validity(&self) -> Option<Cow<'_, [bool]>> {
        match &self.data {
            Data::Null => Some(Cow::Owned(vec![false; self.len])),
            Data::Entity(e) if e.iter().any(Option::is_none) => {
                Some(Cow::Owned((0..self.len).map(|i| self.is_valid(i)).collect()))
            }
            _ => self.valid.as_deref().map(Cow::Borrowed),
        }
    }

    /// About how many bytes the values take when owned: the typed slice, each text's
    /// characters, and the validity flags.
    pub fn bytes(&self) -> usize {
        let values = match &self.data {
            Data::Null => 0,
            Data::Int(v) => v.len() * 8,
            Data::Float(v) => v.len() * 8,
            Data::Real(v) => v.len() * 4,
            Data::Bool(v) => v.len(),
            Data::Text(v) => v.iter().map(|s| text_bytes(s)).sum(),
            Data::Entity(v) => v.len() * 16,
        };
        values + self.valid.as_ref().map_or(0, |v| v.len())
    }

    /// What `bytes` counts for `Vector::broadcast(value, ty, 1)`, without making it (but
    /// for a NULL): the charge of a value computed for one row.
    #[inline]
    pub fn one_bytes(value: &Value, ty: DataType) -> usize {
        match value {
            Value::Null => Vector::broadcast(value, ty, 1).bytes(),
            Value::Int(_) | Value::Float(_) => 8,
            Value::Real(_) => 4,
            Value::Bool(_) => 1,
            Value::Text(s) => text_bytes(s),
            Value::Entity(_) => 16,
        }
    }

    pub fn null_count(&self) -> usize {
        (0..self.len).filter(|&i| !self.is_valid(i)).count()
    }

    /// One cell, boxed: for results and keys, never for the scan itself.
    pub fn get(&self, row: usize) -> Value {
        if !self.is_valid(row) {
            return Value::Null;
        }
        match &self.data {
            Data::Null => Value::Null,
            Data::Int(v) => Value::Int(v[row]),
            Data::Float(v) => Value::Float(v[row]),
            Data::Real(v) => Value::Real(v[row]),
            Data::Bool(v) => Value::Bool(v[row]),
            Data::Text(v) => Value::Text(v[row].clone()),
            Data::Entity(v) => v[row].map_or(Value::Null, Value::Entity),
        }
    }

    /// The rows at `rows`, in that order.
    pub fn gather(&self, rows: &[u32]) -> Vector<'static> {
        let data = each_data!(&self.data, v => gather_slice(v, rows).into_data(), Data::Null);
        let valid = self
            .valid
            .as_ref()
            .map(|v| Cow::Owned(rows.iter().map(|&r| v[r as usize]).collect()));
        Vector {
            data,
            valid,
            len: rows.len(),
        }
    }

    /// `gather`, made `piece` rows at a time with `check` called before each: an error
    /// from it (an interrupt) stops the copy at once. For results of millions of rows.
    pub fn gather_checked<E>(
        &self,
        rows: &[u32],
        piece: usize,
        mut check: impl FnMut() -> Result<(), E>,
    ) -> Result<Vector<'static>, E> {
        let data = each_data!(&self.data, v => {
            let mut out = Vec::with_capacity(rows.len());
            for part in rows.chunks(piece.max(1)) {
                check()?;
                extend_rows(&mut out, v, part);
            }
            Owned::from(out).into_data()
        }, Data::Null);
        let valid = self
            .valid
            .as_ref()
            .map(|v| Cow::Owned(rows.iter().map(|&r| v[r as usize]).collect()));
        Ok(Vector {
            data,
            valid,
            len: rows.len(),
        })
    }

    /// Rows `start..end`.
    pub fn slice(&self, start: usize, end: usize) -> Vector<'static> {
        let data = each_data!(&self.data, v => Owned::from(v[start..end].to_vec()).into_data(), Data::Null);
        let valid = self.valid.as_ref().map(|v| Cow::Owned(v[start..end].to_vec()));
        Vector {
            data,
            valid,
            len: end - start,
        }
    }

    /// `len` copies of `value`, typed `ty` (a NULL takes `ty` with every row invalid).
    pub fn broadcast(value: &Value, ty: DataType, len: usize) -> Vector<'static> {
        let data = match value {
            Value::Null => {
                let mut v = Vector::empty(ty);
                v.push_nulls(len);
                return v;
            }
            Value::Int(x) => Data::Int(Cow::Owned(vec![*x; len])),
            Value::Float(x) => Data::Float(Cow::Owned(vec![*x; len])),
            Value::Real(x) => Data::Real(Cow::Owned(vec![*x; len])),
            Value::Bool(x) => Data::Bool(Cow::Owned(vec![*x; len])),
            Value::Text(x) => Data::Text(Cow::Owned(vec![x.clone(); len])),
            Value::Entity(x) => Data::Entity(Cow::Owned(vec![Some(*x); len])),
        };
        Vector {
            data,
            valid: None,
            len,
        }
    }

    pub fn empty(ty: DataType) -> Vector<'static> {
        let data = match ty {
            DataType::Null => Data::Null,
            DataType::Int => Data::Int(Cow::Owned(Vec::new())),
            DataType::Float => Data::Float(Cow::Owned(Vec::new())),
            DataType::Real => Data::Real(Cow::Owned(Vec::new())),
            DataType::Bool => Data::Bool(Cow::Owned(Vec::new())),
            DataType::Text => Data::Text(Cow::Owned(Vec::new())),
            DataType::Entity => Data::Entity(Cow::Owned(Vec::new())),
        };
        Vector {
            data,
            valid: None,
            len: 0,
        }
    }

    /// Boxed values of one type into a vector (VALUES rows, parameters); the caller has
    /// checked that every value is `ty` or NULL.
    pub fn from_values(ty: DataType, values: &[Value]) -> Vector<'static> {
        let mut v = Vector::empty(ty);
        for value in values {
            v.push_value(value);
        }
        v
    }

    fn push_nulls(&mut self, n: usize) {
        if n == 0 {
            // No NULL to mark: a mask of all-valid rows would only slow its readers.
            return;
        }
        let old = self.len;
        let valid = self
            .valid
            .get_or_insert_with(|| Cow::Owned(vec![true; old]))
            .to_mut();
        valid.resize(old + n, false);
        match &mut self.data {
            Data::Null => {}
            Data::Int(v) => v.to_mut().resize(old + n, 0),
            Data::Float(v) => v.to_mut().resize(old + n, 0.0),
            Data::Real(v) => v.to_mut().resize(old + n, 0.0),
            Data::Bool(v) => v.to_mut().resize(old + n, false),
            Data::Text(v) => v.to_mut().resize(old + n, String::new()),
            Data::Entity(v) => v.to_mut().resize(old + n, None),
        }
        self.len += n;
    }

    /// Appends one boxed value of this vector's type (or NULL).
    pub fn push_value(&mut self, value: &Value) {
        match (&mut self.data, value) {
            (_, Value::Null) => return self.push_nulls(1),
            (Data::Int(v), Value::Int(x)) => v.to_mut().push(*x),
            (Data::Float(v), Value::Float(x)) => v.to_mut().push(*x),
            (Data::Real(v), Value::Real(x)) => v.to_mut().push(*x),
            (Data::Bool(v), Value::Bool(x)) => v.to_mut().push(*x),
            (Data::Text(v), Value::Text(x)) => v.to_mut().push(x.clone()),
            (Data::Entity(v), Value::Entity(x)) => v.to_mut().push(Some(*x)),
            // A value of another type cannot reach here through the binder's casts; keep
            // the vector rectangular rather than panic.
            _ => return self.push_nulls(1),
        }
        if let Some(valid) = &mut self.valid {
            valid.to_mut().push(true);
        }
        self.len += 1;
    }

    /// Appends `other`, which has this vector's type or is all NULL.
    pub fn append(&mut self, other: &Vector<'_>) {
        if other.len == 0 {
            return;
        }
        if let Data::Null = other.data {
            return self.push_nulls(other.len);
        }
        if let Data::Null = self.data {
            let mut grown = Vector::empty(other.data_type());
            grown.push_nulls(self.len);
            *self = grown;
        }
        let old = self.len;
        let appended = match (&mut self.data, &other.data) {
            (Data::Int(a), Data::Int(b)) => extend(a, b),
            (Data::Float(a), Data::Float(b)) => extend(a, b),
            (Data::Real(a), Data::Real(b)) => extend(a, b),
            (Data::Bool(a), Data::Bool(b)) => extend(a, b),
            (Data::Text(a), Data::Text(b)) => extend(a, b),
            (Data::Entity(a), Data::Entity(b)) => extend(a, b),
            _ => false,
        };
        if !appended {
            return self.push_nulls(other.len);
        }
        if self.valid.is_some() || other.valid.is_some() {
            let valid = self
                .valid
                .get_or_insert_with(|| Cow::Owned(vec![true; old]))
                .to_mut();
            match &other.valid {
                Some(v) => valid.extend_from_slice(v),
                None => valid.resize(old + other.len, true),
            }
        }
        self.len += other.len;
    }

    /// `append`, taking `other`'s values: its texts, when it owns them and neither has
    /// NULL flags, move rather than being copied.
    pub fn append_owned(&mut self, other: Vector<'static>) {
        let len = other.len;
        match (&mut self.data, other.data) {
            (Data::Text(a), Data::Text(Cow::Owned(b))) if self.valid.is_none() && other.valid.is_none() => {
                if a.is_empty() {
                    *a = Cow::Owned(b);
                } else {
                    a.to_mut().extend(b);
                }
                self.len += len;
            }
            (_, data) => self.append(&Vector {
                data,
                valid: other.valid,
                len,
            }),
        }
    }

    /// Into a storage column of `ty`: `Err(row)` names the first NULL when `ty` cannot
    /// hold one. The vector has already been cast to `ty`.
    pub fn into_column(self, ty: FieldType) -> Result<Column, usize> {
        if let Some(valid) = self.validity()
            && ty != FieldType::Entity
            && let Some(row) = valid.iter().position(|v| !v)
        {
            return Err(row);
        }
        let len = self.len;
        let valid = self.valid.clone();
        Ok(match (self.data, ty) {
            (Data::Int(v), FieldType::Int) => Column::Int(v.into_owned()),
            (Data::Float(v), FieldType::Float) => Column::Float(v.into_owned()),
            (Data::Real(v), FieldType::Real) => Column::Real(v.into_owned()),
            (Data::Bool(v), FieldType::Bool) => Column::Bool(v.into_owned()),
            (Data::Text(v), FieldType::Text) => Column::Text(v.into_owned()),
            (Data::Entity(v), FieldType::Entity) => {
                let mut v = v.into_owned();
                if let Some(valid) = valid {
                    for (e, ok) in v.iter_mut().zip(valid.iter()) {
                        if !ok {
                            *e = None;
                        }
                    }
                }
                Column::Entity(v)
            }
            (Data::Null, FieldType::Entity) => Column::Entity(vec![None; len]),
            (_, _) if len == 0 => Column::new(ty),
            _ => return Err(0),
        })
    }
}

fn extend<T: Clone>(a: &mut Cow<'_, [T]>, b: &[T]) -> bool {
    a.to_mut().extend_from_slice(b);
    true
}

fn view_of<T: Clone>(v: &[T]) -> Borrowed<'_, T> {
    Borrowed(v)
}

fn extend_rows<T: Clone>(out: &mut Vec<T>, v: &[T], rows: &[u32]) {
    out.extend(rows.iter().map(|&r| v[r as usize].clone()));
}

fn gather_slice<T: Clone>(v: &[T], rows: &[u32]) -> Owned<T> {
    Owned(rows.iter().map(|&r| v[r as usize].clone()).collect())
}

/// Helpers that let the `each_data!` arms rebuild the right `Data` variant from a slice of
/// any element type.
pub(crate) trait IntoData<'a> {
    fn into_data(self) -> Data<'a>;
}

pub(crate) struct Borrowed<'a, T>(&'a [T]);
pub(crate) struct Owned<T>(Vec<T>);

impl<T> From<Vec<T>> for Owned<T> {
    fn from(v: Vec<T>) -> Self {
        Owned(v)
    }
}

macro_rules! into_data {
    ($t:ty, $variant:ident) => {
        impl<'a> IntoData<'a> for Borrowed<'a, $t> {
            fn into_data(self) -> Data<'a> {
                Data::$variant(Cow::Borrowed(self.0))
            }
        }
        impl<'a> IntoData<'a> for Owned<$t> {
            fn into_data(self) -> Data<'a> {
                Data::$variant(Cow::Owned(self.0))
            }
        }
    };
}
into_data!(i64, Int);
into_data!(f64, Float);
into_data!(f32, Real);
into_data!(bool, Bool);
into_data!(String, Text);
into_data!(Option<Entity>, Entity);

/// A vector or a single value standing for every row.
#[derive(Clone, Debug)]
pub enum Datum<'a> {
    Scalar(Value),
    Vector(Vector<'a>),
}

impl<'a> Datum<'a> {
    pub fn get(&self, row: usize) -> Value {
        match self {
            Datum::Scalar(v) => v.clone(),
            Datum::Vector(v) => v.get(row),
        }
    }

    pub fn view(&self) -> Datum<'_> {
        match self {
            Datum::Scalar(v) => Datum::Scalar(v.clone()),
            Datum::Vector(v) => Datum::Vector(v.view()),
        }
    }

    pub fn gather(&self, rows: &[u32]) -> Datum<'static> {
        match self {
            Datum::Scalar(v) => Datum::Scalar(v.clone()),
            Datum::Vector(v) => Datum::Vector(v.gather(rows)),
        }
    }

    pub fn into_owned(self) -> Datum<'static> {
        match self {
            Datum::Scalar(v) => Datum::Scalar(v),
            Datum::Vector(v) => Datum::Vector(v.into_owned()),
        }
    }

    /// A vector of `len` rows typed `ty`, broadcasting a scalar.
    pub fn into_vector(self, ty: DataType, len: usize) -> Vector<'a> {
        match self {
            Datum::Scalar(v) => Vector::broadcast(&v, ty, len),
            Datum::Vector(v) => v,
        }
    }
}

/// A text's bytes as the allocator hands them out: in 16-byte steps, with a header (none
/// for an empty text), and the 24 bytes of its `String`.
fn text_bytes(s: &str) -> usize {
    24 + if s.is_empty() {
        0
    } else {
        s.len().div_ceil(16) * 16 + 16
    }
}

/// The columns an expression reads, one per slot; `None` where the statement never
/// reads that slot.
#[derive(Clone, Debug, Default)]
pub struct Batch<'a> {
    pub len: usize,
    pub slots: Vec<Option<Datum<'a>>>,
}

impl<'a> Batch<'a> {
    pub fn new(len: usize, width: usize) -> Batch<'a> {
        Batch {
            len,
            slots: vec![None; width],
        }
    }

    pub fn gather(&self, rows: &[u32]) -> Batch<'static> {
        self.gather_slots(rows, |_| true)
    }

    /// About how many bytes the batch's values take when owned: what keeping it costs.
    pub fn bytes(&self) -> usize {
        self.slots
            .iter()
            .flatten()
            .map(|d| match d {
                Datum::Vector(v) => v.bytes(),
                Datum::Scalar(Value::Text(s)) => self.len.saturating_mul(24 + s.len()),
                Datum::Scalar(_) => self.len.saturating_mul(8),
            })
            .sum::<usize>()
            .saturating_add(self.len)
    }

    /// `gather` of only the slots `keep` names; the others are left empty.
    pub fn gather_slots(&self, rows: &[u32], keep: impl Fn(usize) -> bool) -> Batch<'static> {
        Batch {
            len: rows.len(),
            slots: self
                .slots
                .iter()
                .enumerate()
                .map(|(i, s)| s.as_ref().filter(|_| keep(i)).map(|d| d.gather(rows)))
                .collect(),
        }
    }
}

impl Vector<'static> {
    /// Makes this vector rows `rows` of a storage column, copied: into its own memory when
    /// it is a vector of the same type (a prepared statement's last result), else into
    /// new memory.
    pub fn assign_column(&mut self, column: &Column, rows: std::ops::Range<usize>) {
        let len = rows.len();
        match (&mut self.data, column) {
            (Data::Int(into), Column::Int(v)) => assign(into, &v[rows]),
            (Data::Float(into), Column::Float(v)) => assign(into, &v[rows]),
            (Data::Real(into), Column::Real(v)) => assign(into, &v[rows]),
            (Data::Bool(into), Column::Bool(v)) => assign(into, &v[rows]),
            (Data::Text(into), Column::Text(v)) => assign(into, &v[rows]),
            (Data::Entity(into), Column::Entity(v)) => assign(into, &v[rows]),
            (into, _) => *into = Vector::from_column(column, rows).into_owned().data,
        }
        self.valid = None;
        self.len = len;
    }

    /// Makes this vector the one value at `row` of a storage column: written over the one
    /// value it holds when that is of the column's type, in its own memory (a point read
    /// run again), else as `assign_column` does.
    #[inline]
    pub fn assign_cell(&mut self, column: &Column, row: usize) {
        fn over<T: Copy>(into: &mut Cow<'static, [T]>, values: &[T], row: usize) -> bool {
            match (into, values.get(row)) {
                (Cow::Owned(into), Some(&value)) if into.len() == 1 => {
                    into[0] = value;
                    true
                }
                _ => false,
            }
        }
        let written = match (&mut self.data, column) {
            (Data::Int(into), Column::Int(v)) => over(into, v, row),
            (Data::Float(into), Column::Float(v)) => over(into, v, row),
            (Data::Real(into), Column::Real(v)) => over(into, v, row),
            (Data::Bool(into), Column::Bool(v)) => over(into, v, row),
            (Data::Entity(into), Column::Entity(v)) => over(into, v, row),
            _ => false,
        };
        if !written {
            return self.assign_column(column, row..row + 1);
        }
        self.valid = None;
        self.len = 1;
    }

    /// Makes this vector hold no rows, of type `ty`: in its own memory when it holds
    /// that type (a point read that found no row keeps its vectors for the next).
    pub fn clear_as(&mut self, ty: DataType) {
        fn empty<T: Clone>(v: &mut Cow<'static, [T]>) {
            match v {
                Cow::Owned(v) => v.clear(),
                borrowed => *borrowed = Cow::Owned(Vec::new()),
            }
        }
        if self.data_type() != ty {
            *self = Vector::empty(ty);
            return;
        }
        each_data!(&mut self.data, v => empty(v), ());
        self.valid = None;
        self.len = 0;
    }

    /// Makes this vector the ids `ids`, into its own memory when it holds ids (as
    /// `assign_column`).
    pub fn assign_ids(&mut self, ids: &[Option<Entity>]) {
        match &mut self.data {
            Data::Entity(into) => assign(into, ids),
            data => *data = Data::Entity(Cow::Owned(ids.to_vec())),
        }
        self.valid = None;
        self.len = ids.len();
    }
}
