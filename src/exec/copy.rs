//! COPY: a query's rows written to a file (`copy_to`), and a file's rows made components
//! (`copy_from`). The file is read whole and every value converted into its field's typed
//! column (`transfer/`) before anything is written: a value that does not fit, a ragged
//! row, an unknown column or an id that cannot take the component fails the statement
//! with the line and column, and the world is as it was. Rows without an `id` column are
//! spawned as new entities, column by column; with one, the component is attached to each
//! existing entity.

use hashbrown::HashMap;

use super::error::{ExecError, ExecErrorKind};
use super::query::run_query;
use super::reader::Reader;
use super::write::full_columns;
use super::{Outcome, Run};
use crate::location::Location;
use crate::plan::{CopyFromPlan, CopyTarget, CopyToPlan, DataType};
use crate::storage::{ComponentDef, Entity, Value, World};
use crate::transfer::csv::Records;
use crate::transfer::{Builder, DataError, Format, Given, csv, json};
use crate::vector::{Data, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// Interrupts are looked for, and memory charged, once per this many rows read.
const ROWS_PER_CHECK: usize = 1 << 14;

fn file_error(path: &str, at: Location, message: String) -> ExecError {
    ExecError::new(
        at,
        ExecErrorKind::Copy {
            path: path.to_owned(),
            line: None,
            row: None,
            column: None,
            message,
        },
    )
}

/// Refuses Parquet and Arrow files in a build without them.
fn columnar_built(format: &Format, path: &str, at: Location) -> Result<()> {
    if cfg!(feature = "arrow") || !matches!(format, Format::Parquet | Format::Arrow) {
        return Ok(());
    }
    Err(file_error(
        path,
        at,
        format!(
            "this ecsql was built without {} files: build it with `--features arrow` (csv and json need nothing)",
            format.name()
        ),
    ))
}

/// `COPY (query) TO 'file'`: the rows written to a file beside it, then renamed over it,
/// so that a reader of `file` sees the old file or the whole new one.
pub fn copy_to(plan: &CopyToPlan, reader: &Reader<'_>) -> Result<Outcome> {
    let at = reader.at;
    columnar_built(&plan.format, &plan.file, at)?;
    let chunk = run_query(&plan.query, reader)?;
    let columns = &chunk.columns[..plan.names.len().min(chunk.columns.len())];
    if plan.client {
        return client_lines(plan, columns, chunk.len, at);
    }
    #[cfg(feature = "arrow")]
    let types: Vec<DataType> = plan.query.columns.iter().map(|c| c.ty).collect();
    let written = crate::files::write_file(std::path::Path::new(&plan.file), |out| {
        let flush = |text: &str| std::io::Write::write_all(out, text.as_bytes());
        match &plan.format {
            Format::Csv { delimiter, header } => {
                csv::write(&plan.names, columns, chunk.len, *delimiter, *header, flush)?;
            }
            Format::Json => json::write(&plan.names, columns, chunk.len, flush)?,
            Format::Text { delimiter } => {
                let mut flush = flush;
                let mut text = String::new();
                for row in 0..chunk.len {
                    crate::transfer::text::write_row(&mut text, columns, row, *delimiter);
                    text.push('\n');
                    if text.len() >= 1 << 16 {
                        flush(&text)?;
                        text.clear();
                    }
                }
                flush(&text)?;
            }
            #[cfg(feature = "arrow")]
            Format::Parquet | Format::Arrow => {
                let parquet = plan.format == Format::Parquet;
                crate::transfer::arrow::write(&mut *out, parquet, &plan.names, &types, columns, chunk.len)
                    .map_err(std::io::Error::other)?;
            }
            #[cfg(not(feature = "arrow"))]
            Format::Parquet | Format::Arrow => {}
        }
        Ok(())
    });
    if let Err(e) = written {
        return Err(file_error(&plan.file, at, format!("cannot write it: {e}")));
    }
    Ok(Outcome {
        affected: chunk.len,
        ..Outcome::default()
    })
}

/// `COPY … TO STDOUT`: the rows as the lines of the format, one TEXT row each (the CSV
/// header, when asked for, first), for the caller to send on; the count is the rows'.
fn client_lines(plan: &CopyToPlan, columns: &[Vector<'_>], len: usize, at: Location) -> Result<Outcome> {
    let mut lines = Vector::empty(DataType::Text);
    let mut line = String::new();
    let mut push = |line: &mut String| {
        lines.push_value(&Value::Text(std::mem::take(line)));
    };
    match &plan.format {
        Format::Text { delimiter } => {
            for row in 0..len {
                crate::transfer::text::write_row(&mut line, columns, row, *delimiter);
                push(&mut line);
            }
        }
        Format::Csv { delimiter, header } => {
            if *header {
                csv::write_header(&mut line, &plan.names, *delimiter);
                push(&mut line);
            }
            for row in 0..len {
                csv::write_row(&mut line, columns, row, *delimiter);
                push(&mut line);
            }
        }
        // JSON writes one object a line, and no line break inside one.
        Format::Json => {
            let mut text = String::new();
            json::write(&plan.names, columns, len, |piece| {
                text.push_str(piece);
                Ok(())
            })
            .map_err(|e| file_error(&plan.file, at, e.to_string()))?;
            for object in text.lines() {
                line.push_str(object);
                push(&mut line);
            }
        }
        Format::Parquet | Format::Arrow => {
            return Err(file_error(
                &plan.file,
                at,
                format!(
                    "COPY … TO STDOUT writes text, csv or json, not {}: write {} to a file",
                    plan.format.name(),
                    plan.format.name()
                ),
            ));
        }
    }
    let count = lines.len();
    Ok(Outcome {
        columns: crate::exec::OutputColumns::from(vec![crate::plan::OutputColumn {
            name: "line".to_owned(),
            ty: DataType::Text,
        }]),
        rows: crate::exec::Chunk {
            columns: vec![lines],
            len: count,
        },
        affected: len,
        returns_rows: true,
    })
}

/// The rows of a file as typed columns, one per target, and the line each row starts on
/// (in a columnar file, its row number).
struct Read {
    targets: Vec<CopyTarget>,
    columns: Vec<Vector<'static>>,
    lines: Vec<u64>,
    rows_are_lines: bool,
}

impl Read {
    /// What a CSV or JSON file gave: each target's column built, each row's line.
    fn of_text(targets: Vec<CopyTarget>, builders: Vec<Builder>, lines: Vec<u64>) -> Read {
        Read {
            targets,
            columns: builders.into_iter().map(Builder::finish).collect(),
            lines,
            rows_are_lines: true,
        }
    }
}

/// Notes that a row of `columns` values starting on `line` was read; now and then, charges
/// the statement's memory budget for the rows read since (their text was charged with the
/// file) and looks for an interrupt.
fn row_read(lines: &mut Vec<u64>, line: u64, columns: usize, run: &Run<'_>) -> Result<()> {
    lines.push(line);
    if lines.len().is_multiple_of(ROWS_PER_CHECK) {
        run.budget
            .charge(ROWS_PER_CHECK * (8 + CELL_BYTES * columns), run.at)?;
    }
    Ok(())
}

/// What a value read costs beyond its text: a `String`'s own bytes, or a number's.
const CELL_BYTES: usize = 32;

/// How a column of the file is called in errors: `2 (hp)`.
fn label(def: &ComponentDef, position: usize, target: CopyTarget) -> String {
    format!("{} ({})", position + 1, target_name(def, target))
}

/// `id`, or the field's name.
fn target_name(def: &ComponentDef, target: CopyTarget) -> &str {
    match target {
        CopyTarget::Id => "id",
        CopyTarget::Field(f) => def.fields().get(f).map_or("?", |f| f.name()),
    }
}

fn target_type(def: &ComponentDef, target: CopyTarget) -> DataType {
    match target {
        CopyTarget::Id => DataType::Entity,
        CopyTarget::Field(f) => def
            .fields()
            .get(f)
            .map_or(DataType::Null, |f| DataType::from(f.ty())),
    }
}

/// The target a file's column named `name` fills: `id` or a field (exactly, or in any case).
fn target_named(def: &ComponentDef, name: &str) -> Option<CopyTarget> {
    // `Unit.hp` (as the shell's csv mode heads its columns) is `hp` of Unit.
    let name = match name.split_once('.') {
        Some((component, field)) if component.eq_ignore_ascii_case(def.name()) => field,
        _ => name,
    };
    if name.eq_ignore_ascii_case("id") {
        return Some(CopyTarget::Id);
    }
    let fields = def.fields();
    fields
        .iter()
        .position(|f| f.name() == name)
        .or_else(|| fields.iter().position(|f| f.name().eq_ignore_ascii_case(name)))
        .map(CopyTarget::Field)
}

fn unknown_column(def: &ComponentDef, name: &str) -> String {
    let fields: Vec<&str> = def.fields().iter().map(|f| f.name()).collect();
    format!(
        "no field \"{name}\" in {} (a column is id or a field: {})",
        def.name(),
        if fields.is_empty() {
            "none, it is a tag".to_owned()
        } else {
            fields.join(", ")
        }
    )
}

fn read_records<'a>(
    mut reader: impl Records<'a>,
    header: bool,
    def: &ComponentDef,
    named: Option<&[CopyTarget]>,
    run: &Run<'_>,
) -> std::result::Result<Read, ExecError> {
    let at = run.at;
    let mut fields = Vec::new();
    let mut targets: Vec<CopyTarget> = named.map(<[CopyTarget]>::to_vec).unwrap_or_default();
    if header {
        match reader.record(&mut fields) {
            Ok(Some(line)) => {
                if let Some(named) = named {
                    // A column list says where each of the file's columns goes, in order;
                    // a header that names them otherwise would load them swapped.
                    for (i, f) in fields.iter().enumerate() {
                        if let (Some(t), Some(&listed)) = (target_named(def, &f.text), named.get(i))
                            && t != listed
                        {
                            return Err(with_line(
                                line,
                                Some((i + 1).to_string()),
                                format!(
                                    "the header calls this column {}, but the column list puts {} here (the list gives the file's columns in order)",
                                    f.text,
                                    target_name(def, listed)
                                ),
                                at,
                            ));
                        }
                    }
                } else {
                    for (i, f) in fields.iter().enumerate() {
                        let Some(t) = target_named(def, &f.text) else {
                            let hint = if i == 0 {
                                " (a file with no header line: COPY … (HEADER false), with a column list when it does not hold every field in order)"
                            } else {
                                ""
                            };
                            return Err(with_line(
                                line,
                                Some((i + 1).to_string()),
                                format!("{}{hint}", unknown_column(def, &f.text)),
                                at,
                            ));
                        };
                        if targets.contains(&t) {
                            return Err(with_line(
                                line,
                                Some((i + 1).to_string()),
                                format!("{} is named twice", f.text),
                                at,
                            ));
                        }
                        targets.push(t);
                    }
                }
            }
            Ok(None) => {}
            Err(e) => return Err(data_error(e, at)),
        }
    } else if named.is_none() {
        targets = (0..def.fields().len()).map(CopyTarget::Field).collect();
    }
    reader.blank_lines_are_records(targets.len() == 1);
    let mut builders: Vec<Builder> = targets
        .iter()
        .map(|&t| Builder::new(target_type(def, t), 0))
        .collect();
    let texts: Vec<bool> = targets
        .iter()
        .map(|&t| target_type(def, t) == DataType::Text)
        .collect();
    let mut lines = Vec::new();
    loop {
        let line = match reader.record(&mut fields) {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => return Err(data_error(e, at)),
        };
        if fields.len() != targets.len() {
            let whose = if header || named.is_some() {
                "the columns named"
            } else {
                "the component's fields"
            };
            return Err(with_line(
                line,
                None,
                format!(
                    "{} value{}, expected {} (as many as {whose})",
                    fields.len(),
                    if fields.len() == 1 { "" } else { "s" },
                    targets.len()
                ),
                at,
            ));
        }
        for (i, f) in fields.iter().enumerate() {
            // An unquoted empty field is NULL, but an empty TEXT where the column is text.
            let given = if texts[i] && !f.quoted && f.text.is_empty() {
                Given::Text("")
            } else {
                f.given()
            };
            builders[i]
                .push(given)
                .map_err(|m| with_line(line, Some(label(def, i, targets[i])), m, at))?;
        }
        row_read(&mut lines, line, targets.len(), run)?;
    }
    Ok(Read::of_text(targets, builders, lines))
}

fn data_error(e: DataError, at: Location) -> ExecError {
    with_line(e.line, e.column, e.message, at)
}

/// An error about a place in the file; `copy_from` names the file.
fn with_line(line: u64, column: Option<String>, message: String, at: Location) -> ExecError {
    ExecError::new(
        at,
        ExecErrorKind::Copy {
            path: String::new(),
            line: Some(line),
            row: None,
            column,
            message,
        },
    )
}

/// An error about a row of a columnar file; `copy_from` names the file.
#[cfg(feature = "arrow")]
fn with_row(row: u64, column: Option<String>, message: String, at: Location) -> ExecError {
    ExecError::new(
        at,
        ExecErrorKind::Copy {
            path: String::new(),
            line: None,
            row: Some(row),
            column,
            message,
        },
    )
}

/// A Parquet or Arrow IPC file's columns, matched to `id` and the fields by name (a
/// column list reads only those), each converted as an INSERT converts.
#[cfg(feature = "arrow")]
fn read_columnar(
    file: std::fs::File,
    parquet: bool,
    def: &ComponentDef,
    named: Option<&[CopyTarget]>,
    run: &Run<'_>,
) -> Result<Read> {
    use crate::transfer::arrow;
    let at = run.at;
    let (schema, batches) = arrow::read(file, parquet).map_err(|m| file_error("", at, m))?;
    // The batches as read (a compressed file grows), and the columns made of them.
    for batch in &batches {
        let cells = batch.num_rows() * batch.num_columns();
        run.budget
            .charge(batch.get_array_memory_size() + CELL_BYTES * cells, at)?;
    }
    // Which file column fills which target.
    let mut chosen: Vec<(usize, CopyTarget)> = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let target = target_named(def, field.name());
        match (target, named) {
            (Some(t), Some(named)) if !named.contains(&t) => continue,
            (None, Some(_)) => continue,
            (None, None) => {
                return Err(file_error(
                    "",
                    at,
                    format!("column {}: {}", field.name(), unknown_column(def, field.name())),
                ));
            }
            (Some(t), _) => {
                if chosen.iter().any(|(_, x)| *x == t) {
                    return Err(file_error(
                        "",
                        at,
                        format!("column {}: named twice", field.name()),
                    ));
                }
                chosen.push((i, t));
            }
        }
    }
    if let Some(named) = named
        && let Some(missing) = named.iter().find(|t| !chosen.iter().any(|(_, x)| x == *t))
    {
        let name = match missing {
            CopyTarget::Id => "id",
            CopyTarget::Field(f) => def.fields().get(*f).map_or("?", |f| f.name()),
        };
        return Err(file_error("", at, format!("the file has no column {name}")));
    }
    let len: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut columns = Vec::with_capacity(chosen.len());
    for &(i, target) in &chosen {
        let ty = target_type(def, target);
        let field = &schema.fields()[i];
        let name = field.name().clone();
        let mut column = Vector::empty(ty);
        let mut first_row = 1u64;
        for batch in &batches {
            let v = arrow::vector(batch.column(i).as_ref(), ty == DataType::Entity)
                .map_err(|m| file_error("", at, format!("column {name}: {m}")))?;
            let rows = v.len();
            let v = stored(v, ty, def, target, &name, first_row, at)?;
            column.append(&v);
            first_row += rows as u64;
        }
        columns.push(column);
    }
    Ok(Read {
        targets: chosen.into_iter().map(|(_, t)| t).collect(),
        columns,
        lines: (1..=len as u64).collect(),
        rows_are_lines: false,
    })
}

/// `v` (rows from `first_row` on) converted to the type of `target`, as an INSERT converts:
/// a NULL where only ENTITY holds one, or a value that does not convert, names its row.
#[cfg(feature = "arrow")]
fn stored(
    v: Vector<'static>,
    ty: DataType,
    def: &ComponentDef,
    target: CopyTarget,
    name: &str,
    first_row: u64,
    at: Location,
) -> Result<Vector<'static>> {
    let field = match target {
        CopyTarget::Id => "id".to_owned(),
        CopyTarget::Field(f) => format!("{}.{}", def.name(), def.fields().get(f).map_or("?", |f| f.name())),
    };
    if ty != DataType::Entity
        && let Some(bad) = (0..v.len()).find(|&r| !v.is_valid(r))
    {
        return Err(with_row(
            first_row + bad as u64,
            Some(name.to_owned()),
            format!("NULL in {field}, which is {ty} (only ENTITY fields hold NULL)"),
            at,
        ));
    }
    if v.data_type() == ty || matches!(v.data, Data::Null) {
        return Ok(v);
    }
    let len = v.len();
    match crate::vector::store_cast(crate::vector::Datum::Vector(v.clone()), ty, &field, at) {
        Ok(d) => Ok(d.into_vector(ty, len).into_owned()),
        Err(e) => {
            // The first row that does not convert, for the error's place.
            let bad = (0..len)
                .find(|&r| crate::vector::store_value(&v.get(r), ty, &field).is_err())
                .unwrap_or(0);
            let message = match crate::vector::store_value(&v.get(bad), ty, &field) {
                Err(m) => m,
                Ok(_) => e.to_string(),
            };
            Err(with_row(
                first_row + bad as u64,
                Some(name.to_owned()),
                message,
                at,
            ))
        }
    }
}

fn read_json(bytes: &[u8], def: &ComponentDef, named: Option<&[CopyTarget]>, run: &Run<'_>) -> Result<Read> {
    let at = run.at;
    let mut reader = json::Reader::new(bytes).map_err(|e| data_error(e, at))?;
    let mut members = Vec::new();
    // Every field, and `id` once an object has it; a column list keeps to its columns.
    let mut targets: Vec<CopyTarget> = match named {
        Some(named) => named.to_vec(),
        None => (0..def.fields().len()).map(CopyTarget::Field).collect(),
    };
    let mut builders: Vec<Builder> = targets
        .iter()
        .map(|&t| Builder::new(target_type(def, t), 0))
        .collect();
    let defaults: Vec<Value> = def.fields().iter().map(|f| f.default_value().clone()).collect();
    let mut seen = vec![false; targets.len() + 1];
    let mut lines: Vec<u64> = Vec::new();
    let mut by_name: HashMap<String, Option<usize>> = HashMap::new();
    loop {
        let line = match reader.object(&mut members) {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => return Err(data_error(e, at)),
        };
        seen.iter_mut().for_each(|s| *s = false);
        for (key, value) in &members {
            let slot = match by_name.get(key.as_ref()) {
                Some(slot) => *slot,
                None => {
                    let slot = match target_named(def, key) {
                        Some(t) => match targets.iter().position(|x| *x == t) {
                            Some(i) => Some(i),
                            // `id` in the first object: every row attaches.
                            None if t == CopyTarget::Id && lines.is_empty() && named.is_none() => {
                                targets.push(t);
                                builders.push(Builder::new(DataType::Entity, 0));
                                seen.push(false);
                                Some(targets.len() - 1)
                            }
                            None if t == CopyTarget::Id && named.is_none() => {
                                return Err(with_line(
                                    line,
                                    Some("id".into()),
                                    "an id, where the first object has none (every object has an id, or none does)".into(),
                                    at,
                                ));
                            }
                            None => None,
                        },
                        None if named.is_some() => None,
                        None => {
                            return Err(with_line(
                                line,
                                Some(key.to_string()),
                                unknown_column(def, key),
                                at,
                            ));
                        }
                    };
                    by_name.insert(key.to_string(), slot);
                    slot
                }
            };
            let Some(i) = slot else { continue };
            if std::mem::replace(&mut seen[i], true) {
                return Err(with_line(
                    line,
                    Some(key.to_string()),
                    format!("\"{key}\" appears twice in the object"),
                    at,
                ));
            }
            builders[i]
                .push(value.given())
                .map_err(|m| with_line(line, Some(key.to_string()), m, at))?;
        }
        for (i, &t) in targets.iter().enumerate() {
            if seen[i] {
                continue;
            }
            match t {
                CopyTarget::Field(f) => builders[i]
                    .push_value(&defaults[f])
                    .map_err(|v| ExecError::internal(at, format!("a default of another type: {v}")))?,
                CopyTarget::Id => {
                    let why = if named.is_some() {
                        "no id, which the column list names"
                    } else {
                        "no id, where the first object has one (every object has an id, or none does)"
                    };
                    return Err(with_line(line, Some("id".into()), why.into(), at));
                }
            }
        }
        row_read(&mut lines, line, targets.len(), run)?;
    }
    Ok(Read::of_text(targets, builders, lines))
}

/// `COPY C FROM 'file'`: every row read and checked, then written: spawned column by
/// column, or (with an `id` column) attached to the entities it names.
pub fn copy_from(plan: &CopyFromPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let named_file = |e: ExecError| match e {
        ExecError {
            kind:
                ExecErrorKind::Copy {
                    line,
                    row,
                    column,
                    message,
                    ..
                },
            at,
            ..
        } => ExecError::new(
            at,
            ExecErrorKind::Copy {
                path: plan.file.clone(),
                line,
                row,
                column,
                message,
            },
        ),
        e => e,
    };
    columnar_built(&plan.format, &plan.file, at)?;
    let cannot_read = |e: std::io::Error| file_error(&plan.file, at, format!("cannot read it: {e}"));
    let def = world
        .component(plan.component)
        .map_err(|e| ExecError::storage(at, e))?;
    let read = match &plan.format {
        Format::Csv { .. } | Format::Json | Format::Text { .. } => {
            let owned;
            let bytes: &[u8] = if plan.client {
                run.input.ok_or_else(|| {
                    file_error(
                        &plan.file,
                        at,
                        "COPY … FROM STDIN reads what a client of ecsql serve sends with it; here, name a file".to_owned(),
                    )
                })?
            } else {
                owned = std::fs::read(&plan.file).map_err(cannot_read)?;
                &owned
            };
            // The file's text and the columns made of it are about twice its size.
            run.budget.charge(bytes.len().saturating_mul(2), at)?;
            let named = plan.columns.as_deref();
            match &plan.format {
                Format::Csv { delimiter, header } => csv::Reader::new(bytes, *delimiter as u8, false)
                    .map_err(|e| data_error(e, at))
                    .and_then(|reader| read_records(reader, *header, def, named, &run)),
                Format::Text { delimiter } => crate::transfer::text::Reader::new(bytes, *delimiter as u8)
                    .map_err(|e| data_error(e, at))
                    .and_then(|reader| read_records(reader, false, def, named, &run)),
                _ => read_json(bytes, def, named, &run),
            }
        }
        #[cfg(feature = "arrow")]
        Format::Parquet | Format::Arrow => {
            let file = std::fs::File::open(&plan.file).map_err(cannot_read)?;
            read_columnar(
                file,
                plan.format == Format::Parquet,
                def,
                plan.columns.as_deref(),
                &run,
            )
        }
        #[cfg(not(feature = "arrow"))]
        Format::Parquet | Format::Arrow => {
            return Err(ExecError::internal(at, "no columnar files in this build"));
        }
    }
    .map_err(named_file)?;
    let len = read.lines.len();
    let component = def.name().to_owned();
    let given = |f| {
        let i = read.targets.iter().position(|t| *t == CopyTarget::Field(f))?;
        Some((read.columns[i].view(), at))
    };
    let fields = full_columns(def, len, given, at)?;
    let Some(id_column) = read.targets.iter().position(|t| *t == CopyTarget::Id) else {
        if len > 0 {
            world
                .spawn_columns(len, vec![(plan.component, fields)])
                .map_err(|e| ExecError::storage(at, e))?;
        }
        return Ok(Outcome {
            affected: len,
            ..Outcome::default()
        });
    };
    let Data::Entity(ids) = &read.columns[id_column].data else {
        return Err(ExecError::internal(at, "COPY's id column is not of ids"));
    };
    let mut first_line: HashMap<Entity, u64> = HashMap::with_capacity(len);
    for (row, id) in ids.iter().enumerate() {
        let line = read.lines[row];
        let column = match plan.format {
            Format::Csv { .. } => format!("{} (id)", id_column + 1),
            _ => "id".to_owned(),
        };
        let problem = |message: String| {
            ExecError::new(
                at,
                ExecErrorKind::Copy {
                    path: plan.file.clone(),
                    line: read.rows_are_lines.then_some(line),
                    row: (!read.rows_are_lines).then_some(line),
                    column: Some(column),
                    message,
                },
            )
        };
        let id = if read.columns[id_column].is_valid(row) {
            *id
        } else {
            None
        };
        let Some(e) = id else {
            return Err(problem(
                "the id is NULL (leave the id column out to spawn new entities)".into(),
            ));
        };
        if let Err(err) = world.locate(e) {
            return Err(problem(format!("{err}")));
        }
        if let Some(before) = first_line.insert(e, line) {
            let unit = if read.rows_are_lines { "line" } else { "row" };
            return Err(problem(format!("entity {e} is also on {unit} {before}")));
        }
        if world
            .has(e, plan.component)
            .map_err(|err| ExecError::storage(at, err))?
        {
            return Err(problem(format!("entity {e} already has {component}")));
        }
    }
    for (row, id) in ids.iter().enumerate() {
        let Some(e) = *id else { continue };
        let values = fields.iter().map(|c| c.get(row).unwrap_or(Value::Null)).collect();
        world
            .attach(e, plan.component, values)
            .map_err(|err| ExecError::storage(at, err))?;
    }
    Ok(Outcome {
        affected: len,
        ..Outcome::default()
    })
}
