//! Arrow IPC files and Parquet (the `arrow` cargo feature): a result's typed columns as
//! Arrow arrays, written in record batches, and Arrow arrays read back as typed columns.
//!
//! Types: INT is Int64, FLOAT Float64, REAL Float32, BOOL Boolean, TEXT Utf8, an id UInt64
//! with the field metadata `ecsql:type = ENTITY` (a plain UInt64 column reads into an
//! ENTITY field too). Reading also takes the narrower integer types and Utf8's large and
//! view forms; each value then goes through the same store conversion as an INSERT (a
//! float into an INT must be whole, a REAL must be in range).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type,
    UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float32Array, Float64Array, Int64Array, NullArray, RecordBatch,
    StringArray, UInt64Array,
};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};

use crate::storage::Entity;
use crate::vector::{Data, DataType, Vector};

/// The metadata key that marks an id column.
const TYPE_KEY: &str = "ecsql:type";

/// Rows per record batch written (and per Parquet row group's write).
const BATCH_ROWS: usize = 1 << 16;

fn validity(v: &Vector<'_>) -> Option<arrow_buffer::NullBuffer> {
    v.validity().map(|valid| valid.iter().copied().collect())
}

/// `v` as an Arrow array.
fn array(v: &Vector<'_>) -> ArrayRef {
    let len = v.len();
    match &v.data {
        Data::Null => Arc::new(NullArray::new(len)),
        Data::Int(x) => Arc::new(Int64Array::new(x.to_vec().into(), validity(v))),
        Data::Float(x) => Arc::new(Float64Array::new(x.to_vec().into(), validity(v))),
        Data::Real(x) => Arc::new(Float32Array::new(x.to_vec().into(), validity(v))),
        Data::Bool(x) => Arc::new(BooleanArray::new(x.iter().copied().collect(), validity(v))),
        Data::Text(x) => Arc::new(
            (0..len)
                .map(|i| v.is_valid(i).then(|| x[i].as_str()))
                .collect::<StringArray>(),
        ),
        Data::Entity(x) => Arc::new(
            (0..len)
                .map(|i| {
                    if v.is_valid(i) {
                        x[i].map(Entity::to_bits)
                    } else {
                        None
                    }
                })
                .collect::<UInt64Array>(),
        ),
    }
}

/// The schema of columns named `names` of types `types`.
pub fn schema(names: &[String], types: &[DataType]) -> SchemaRef {
    let fields: Vec<Field> = names
        .iter()
        .zip(types)
        .map(|(name, ty)| {
            let (arrow, meta) = match ty {
                DataType::Null => (ArrowType::Null, None),
                DataType::Int => (ArrowType::Int64, None),
                DataType::Float => (ArrowType::Float64, None),
                DataType::Real => (ArrowType::Float32, None),
                DataType::Bool => (ArrowType::Boolean, None),
                DataType::Text => (ArrowType::Utf8, None),
                DataType::Entity => (ArrowType::UInt64, Some("ENTITY")),
            };
            let field = Field::new(name, arrow, true);
            match meta {
                Some(m) => field.with_metadata(HashMap::from([(TYPE_KEY.to_owned(), m.to_owned())])),
                None => field,
            }
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// `columns` as one record batch of `schema` (a column of NULLs as its field's type).
pub fn record_batch(schema: &SchemaRef, columns: &[Vector<'_>]) -> Result<RecordBatch, String> {
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .zip(schema.fields())
        .map(|(v, field)| match v.data {
            Data::Null => arrow_array::new_null_array(field.data_type(), v.len()),
            _ => array(v),
        })
        .collect();
    RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())
}

/// Writes `columns` (each `len` rows, of the result types `types`) to `out` as a Parquet
/// file (Snappy-compressed), or as an Arrow IPC file, in record batches of `BATCH_ROWS`.
pub fn write(
    out: impl std::io::Write + Send,
    parquet: bool,
    names: &[String],
    types: &[DataType],
    columns: &[Vector<'_>],
    len: usize,
) -> Result<(), String> {
    let schema = schema(names, types);
    let batch = record_batch(&schema, columns)?;
    let slices = (0..len)
        .step_by(BATCH_ROWS)
        .map(|start| batch.slice(start, BATCH_ROWS.min(len - start)));
    let text = |e: &dyn std::fmt::Display| e.to_string();
    if parquet {
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(out, schema, Some(props)).map_err(|e| text(&e))?;
        for slice in slices {
            writer.write(&slice).map_err(|e| text(&e))?;
        }
        writer.close().map(drop).map_err(|e| text(&e))
    } else {
        let mut writer = arrow_ipc::writer::FileWriter::try_new(out, &schema).map_err(|e| text(&e))?;
        for slice in slices {
            writer.write(&slice).map_err(|e| text(&e))?;
        }
        writer.finish().map_err(|e| text(&e))
    }
}

/// The record batches of an Arrow IPC file or a Parquet file, whole.
pub fn read(file: std::fs::File, parquet: bool) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    if parquet {
        let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| format!("not a Parquet file, or cut short: {e}"))?;
        let schema = builder.schema().clone();
        let reader = builder.build().map_err(|e| e.to_string())?;
        let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| {
            let e = e.to_string();
            match e.split_once("Disabled feature at compile time: ") {
                // The parquet crate names gzip by the crate that reads it.
                Some((_, codec)) => format!(
                    "compressed with {}, which ecsql does not read (Snappy, zstd, LZ4 and uncompressed Parquet files it does)",
                    if codec.starts_with("flate2") { "gzip" } else { codec }
                ),
                None => format!("a damaged Parquet file: {e}"),
            }
        })?;
        Ok((schema, batches))
    } else {
        let reader = arrow_ipc::reader::FileReader::try_new(std::io::BufReader::new(file), None)
            .map_err(|e| format!("not an Arrow IPC file, or cut short: {e}"))?;
        let schema = reader.schema();
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("a damaged Arrow IPC file: {e}"))?;
        Ok((schema, batches))
    }
}

/// An Arrow array as a typed vector, in the type it holds (`as_entity`: a UInt64 column of
/// ids); `Err` names an Arrow type ecsql has no type for.
pub fn vector(a: &dyn Array, as_entity: bool) -> Result<Vector<'static>, String> {
    use std::borrow::Cow;
    let len = a.len();
    let valid = a.nulls().map(|n| Cow::Owned(n.iter().collect::<Vec<bool>>()));
    let ints = |values: Vec<i64>| Data::Int(Cow::Owned(values));
    let data = match a.data_type() {
        ArrowType::Null => return Ok(Vector::nulls(len)),
        ArrowType::Int64 => ints(a.as_primitive::<Int64Type>().values().to_vec()),
        ArrowType::Int32 => widened::<Int32Type>(a),
        ArrowType::Int16 => widened::<Int16Type>(a),
        ArrowType::Int8 => widened::<Int8Type>(a),
        ArrowType::UInt32 => widened::<UInt32Type>(a),
        ArrowType::UInt16 => widened::<UInt16Type>(a),
        ArrowType::UInt8 => widened::<UInt8Type>(a),
        ArrowType::UInt64 if as_entity => {
            let values = a.as_primitive::<UInt64Type>().values();
            Data::Entity(Cow::Owned(values.iter().map(|&x| Entity::from_bits(x)).collect()))
        }
        ArrowType::UInt64 => {
            let values = a.as_primitive::<UInt64Type>().values();
            let mut out = Vec::with_capacity(len);
            for (i, &x) in values.iter().enumerate() {
                let fits = i64::try_from(x).ok();
                match fits {
                    Some(x) => out.push(x),
                    None if !a.is_valid(i) => out.push(0),
                    None => return Err(format!("row {}: {x} is beyond INT's range", i + 1)),
                }
            }
            ints(out)
        }
        ArrowType::Float64 => Data::Float(Cow::Owned(a.as_primitive::<Float64Type>().values().to_vec())),
        ArrowType::Float32 => Data::Real(Cow::Owned(a.as_primitive::<Float32Type>().values().to_vec())),
        ArrowType::Boolean => Data::Bool(Cow::Owned(a.as_boolean().values().iter().collect())),
        ArrowType::Utf8 => Data::Text(Cow::Owned(texts(a.as_string::<i32>().iter(), len))),
        ArrowType::LargeUtf8 => Data::Text(Cow::Owned(texts(a.as_string::<i64>().iter(), len))),
        ArrowType::Utf8View => Data::Text(Cow::Owned(texts(a.as_string_view().iter(), len))),
        other => {
            return Err(format!(
                "an Arrow {other} column: ecsql reads integers, floats, booleans and text"
            ));
        }
    };
    Ok(Vector::new(data, valid, len))
}

/// A narrower integer array as INT values.
fn widened<T: arrow_array::ArrowPrimitiveType>(a: &dyn Array) -> Data<'static>
where
    T::Native: Into<i64>,
{
    let values = a.as_primitive::<T>().values();
    Data::Int(std::borrow::Cow::Owned(
        values.iter().map(|&x| x.into()).collect(),
    ))
}

fn texts<'a>(values: impl Iterator<Item = Option<&'a str>>, len: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(len);
    out.extend(values.map(|s| s.unwrap_or_default().to_owned()));
    out
}
