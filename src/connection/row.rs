//! Results as the API hands them out: `Rows` (an iterator of `Row`), and typed reads of a
//! row's values with `row.get::<_, T>(index or name)`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::exec::{Chunk, ColumnSlice};
use crate::plan::{DataType, OutputColumn};
use crate::storage::{Entity, Value};
use crate::vector::Vector;

/// The rows a statement returned, materialized; iterate them, or ask for the columns.
#[derive(Debug)]
pub struct Rows {
    results: Arc<Results>,
    next: usize,
}

/// A result's columns and values, shared by `Rows` and every `Row` taken from it, so a
/// row costs a reference count and an index rather than a copy of its values.
#[derive(Clone, Debug, Default)]
struct Results {
    columns: Arc<[OutputColumn]>,
    chunk: Chunk,
}

/// A prepared statement's last result, kept when it is small (at most `KEPT_ROWS` rows
/// and `KEPT_BYTES` of values), so that the next run writes its result into the same
/// memory once every `Rows` and `Row` of the last one is gone: a point read run again
/// allocates nothing for its result. A larger result is not kept, and its memory goes
/// with its last `Rows`/`Row`. `query_row`'s point reads write theirs into a result of
/// their own, which only the statement holds between calls, as the row it lends (`lent`,
/// always `Held::Lent`), with the `Value`s a closure asked for (`Row::values`) until the
/// next run or until the statement is parked.
#[derive(Debug, Default)]
pub(crate) struct Recycler {
    last: Option<Arc<Results>>,
    lent: Option<Row>,
}

/// What `Recycler::lend_point` lends `query_row`'s closure.
pub(crate) enum Lent<'r> {
    /// The statement's own row, rewritten in place; it stays with the statement.
    Kept(&'r Row),
    /// A row past what is kept (a long text read), the caller's to drop.
    Taken(Box<Row>),
    /// The result has no row.
    Empty,
}

/// The most rows a kept result has.
const KEPT_ROWS: usize = 64;
/// The most bytes of values a kept result holds (`Vector::bytes`).
const KEPT_BYTES: usize = 16 * 1024;
/// The most columns of the one row a statement parked in the cache keeps.
const PARKED_COLUMNS: usize = 16;

impl Recycler {
    /// The last result's rows, for the next result to reuse the memory of, when nothing
    /// reads them any more.
    pub(crate) fn spare(&mut self) -> Option<Chunk> {
        let results = Arc::get_mut(self.last.as_mut()?)?;
        Some(std::mem::take(&mut results.chunk))
    }

    /// `Rows` over the kept result rewritten in place by `fill` (given its columns and
    /// rows to overwrite), when nothing else holds it and `fill` says it wrote it; `None`
    /// otherwise (`fill` may then have changed the kept rows, then memory only: `spare`
    /// takes them).
    #[inline]
    pub(crate) fn refill(
        &mut self,
        fill: impl FnOnce(&mut Arc<[OutputColumn]>, &mut Chunk) -> bool,
    ) -> Option<Rows> {
        let last = self.last.as_mut()?;
        let kept = Arc::get_mut(last)?;
        if !fill(&mut kept.columns, &mut kept.chunk) {
            return None;
        }
        // A row past what is kept (a long text read) goes with its last `Rows`/`Row`.
        let results = match too_big(&kept.chunk) {
            true => self.last.take()?,
            false => Arc::clone(last),
        };
        Some(Rows { results, next: 0 })
    }

    /// The statement's own result rewritten in place by `fill`, as `refill` does, and its
    /// first row lent: the row the statement keeps (`Lent::Kept`), or one the caller
    /// drops when it holds more than a statement keeps (`Lent::Taken`), or `Lent::Empty`.
    /// Only the statement holds that result between calls, so nothing is counted or
    /// checked, and the row stays where it is: the closure's answer is the caller's to
    /// return, with nothing to give back. Its memory is the last result's, taken over on
    /// the first call when nothing else holds it and `point` says the statement keeps a
    /// point read (a scan's result stays where the next run reuses it). `None` when
    /// `refill` would give no rows.
    #[inline]
    pub(crate) fn lend_point(
        &mut self,
        point: impl FnOnce() -> bool,
        fill: impl FnOnce(&mut Arc<[OutputColumn]>, &mut Chunk) -> bool,
    ) -> Option<Lent<'_>> {
        if self.lent.is_none() {
            let last = self.last.take_if(|_| point())?;
            match Arc::try_unwrap(last) {
                Ok(results) => {
                    self.lent = Some(Row {
                        held: Held::Lent(Box::new(results), AtomicBool::new(false)),
                        index: 0,
                        values: OnceLock::new(),
                    })
                }
                Err(last) => {
                    self.last = Some(last);
                    return None;
                }
            }
        }
        let row = self.lent.as_mut()?;
        let Held::Lent(kept, _) = &mut row.held else {
            debug_assert!(false, "the statement's kept row is always lent");
            return None;
        };
        if !fill(&mut kept.columns, &mut kept.chunk) {
            return None;
        }
        // The values the last closure asked for as `Value`s were the last row's.
        row.values.take();
        if kept.chunk.len == 0 {
            return Some(Lent::Empty);
        }
        if too_big(&kept.chunk) {
            return self.lent.take().map(|row| Lent::Taken(Box::new(row)));
        }
        self.lent.as_ref().map(Lent::Kept)
    }

    /// Forgets the kept result unless it is at most one row of at most `PARKED_COLUMNS`
    /// fixed-width values (a point read's, a few hundred bytes at most): what a statement
    /// parked in the cache keeps, for its next use's row to be written over.
    pub(crate) fn keep_one_small_row(&mut self) {
        let small = |r: &Results| {
            r.chunk.len <= 1
                && r.chunk.columns.len() <= PARKED_COLUMNS
                && r.chunk.columns.iter().all(|v| v.data_type() != DataType::Text)
        };
        if !self.last.as_deref().is_some_and(small) {
            self.last = None;
        }
        match &mut self.lent {
            // The values its last closure asked for as `Value`s go (they are made again
            // from the row if asked for).
            Some(row) if small(row.results()) => drop(row.values.take()),
            _ => self.lent = None,
        }
    }

    /// `Rows` over `chunk`: in the kept result's allocation when nothing else holds it,
    /// and kept for the next run when it is small.
    pub(crate) fn rows(&mut self, columns: Arc<[OutputColumn]>, chunk: Chunk) -> Rows {
        if too_big(&chunk) {
            self.last = None;
            return Rows::new(columns, chunk);
        }
        let fresh = Results { columns, chunk };
        let last = self.last.get_or_insert_with(Arc::default);
        match Arc::get_mut(last) {
            Some(kept) => *kept = fresh,
            None => *last = Arc::new(fresh),
        }
        Rows {
            results: Arc::clone(last),
            next: 0,
        }
    }
}

/// Whether `chunk` is past what a statement keeps of its last result. A row of a few
/// columns none of which is TEXT (a point read's) is within it without adding up bytes.
#[inline]
fn too_big(chunk: &Chunk) -> bool {
    if chunk.len > KEPT_ROWS {
        return true;
    }
    // At most 16 bytes and a validity byte a fixed-width value.
    let fixed = |v: &Vector| v.data_type() != DataType::Text;
    if chunk.len.saturating_mul(chunk.columns.len()).saturating_mul(17) <= KEPT_BYTES
        && chunk.columns.iter().all(fixed)
    {
        // Each vector holds `chunk.len` values and validity bytes at most.
        debug_assert!(chunk.columns.iter().map(Vector::bytes).sum::<usize>() <= KEPT_BYTES);
        return false;
    }
    chunk.columns.iter().map(Vector::bytes).sum::<usize>() > KEPT_BYTES
}

impl Rows {
    pub(crate) fn new(columns: Arc<[OutputColumn]>, chunk: Chunk) -> Rows {
        Rows {
            results: Arc::new(Results { columns, chunk }),
            next: 0,
        }
    }

    /// The rows left, to be lent one at a time (`LentRows`).
    pub(crate) fn lend(self) -> LentRows {
        let results = match Arc::try_unwrap(self.results) {
            Ok(results) => Lender::Own(Some(Box::new(results))),
            Err(shared) => Lender::Shared(shared),
        };
        LentRows {
            results,
            next: self.next,
            copies: 0,
        }
    }

    /// The names of the columns, in order.
    pub fn column_names(&self) -> Vec<&str> {
        self.results.columns.iter().map(|c| c.name.as_str()).collect()
    }

    /// The types of the columns, in order.
    pub fn column_types(&self) -> Vec<DataType> {
        self.results.columns.iter().map(|c| c.ty).collect()
    }

    /// The number of columns.
    pub fn column_count(&self) -> usize {
        self.results.columns.len()
    }

    /// Column `index` (a position or a name) of every row, as one typed slice: the way to
    /// read a large result without a boxed value per row. `T` must be the column's type
    /// (`f32` for REAL, `Option<Entity>` for ENTITY, …) and the column must hold no NULL
    /// (ENTITY NULLs are `None`). Row iteration is not consumed.
    pub fn column<T: ColumnSlice>(&self, index: impl RowIndex) -> Result<&[T]> {
        let i = index.position(&self.results.columns)?;
        let vector = &self.results.chunk.columns[i];
        vector.typed().ok_or_else(|| Error::InvalidColumnType {
            column: self.results.columns[i].name.clone(),
            found: match T::of(&vector.data) {
                None => format!("{} values", vector.data_type()),
                Some(_) => "NULLs".into(),
            },
            wanted: T::NAME,
        })
    }

    /// The rows not read yet, as the columns they are held in (what a server sends), and
    /// the first of them.
    #[cfg(feature = "server")]
    pub(crate) fn unread(&self) -> (&Chunk, usize) {
        (&self.results.chunk, self.next)
    }

    /// Rows not yet read.
    pub fn remaining(&self) -> usize {
        self.results.chunk.len - self.next
    }

    /// The whole result as one Arrow record batch (with the `arrow` feature), columns
    /// named as the result's, whatever was iterated already: INT is Int64, FLOAT Float64,
    /// REAL Float32, BOOL Boolean, TEXT Utf8, and an id UInt64 with the field metadata
    /// `ecsql:type = ENTITY`. Nullable throughout. [`arrow_array`](crate::arrow_array) is
    /// re-exported, so the types match.
    ///
    /// ```
    /// # use ecsql::Database;
    /// # use ecsql::arrow_array::{Array, cast::AsArray, types::Float32Type};
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute_batch("CREATE COMPONENT Position (x REAL, y REAL);
    ///                     SPAWN Position(x => i, y => 2 * i) FROM range(3) AS r(i);")?;
    /// let mut stmt = conn.prepare("SELECT id, Position.x FROM Position ORDER BY id")?;
    /// let batch = stmt.query(())?.record_batch()?;
    /// assert_eq!((batch.num_rows(), batch.num_columns()), (3, 2));
    /// assert_eq!(batch.schema().field(1).name(), "Position.x");
    /// assert_eq!(batch.column(1).as_primitive::<Float32Type>().values(), &[0.0, 1.0, 2.0]);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    #[cfg(feature = "arrow")]
    pub fn record_batch(&self) -> Result<arrow_array::RecordBatch> {
        let columns = &self.results.columns;
        let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        let types: Vec<DataType> = columns.iter().map(|c| c.ty).collect();
        let schema = crate::transfer::arrow::schema(&names, &types);
        let vectors = &self.results.chunk.columns[..columns.len().min(self.results.chunk.columns.len())];
        crate::transfer::arrow::record_batch(&schema, vectors).map_err(|m| {
            Error::Exec(crate::exec::ExecError::internal(
                crate::location::Location::default(),
                format!("the result does not fit its Arrow schema: {m}"),
            ))
        })
    }
}

impl Rows {
    /// The next row, or `None` after the last: rusqlite's `Rows::next`. (Iterating `Rows`
    /// — `for row in rows`, `map`, `collect` — gives the same rows, each a `Result<Row>`.)
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// let mut stmt = conn.prepare("SELECT i FROM range(1, 3) AS r(i)")?;
    /// let mut rows = stmt.query(())?;
    /// let mut sum = 0;
    /// while let Some(row) = rows.next()? {
    ///     sum += row.get::<_, i64>(0)?;
    /// }
    /// assert_eq!(sum, 3);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Row>> {
        Iterator::next(self).transpose()
    }
}

impl Iterator for Rows {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        if self.next >= self.results.chunk.len {
            return None;
        }
        let index = self.next;
        self.next += 1;
        Some(Ok(Row {
            held: Held::Shared(Arc::clone(&self.results)),
            index,
            values: OnceLock::new(),
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining(), Some(self.remaining()))
    }
}

/// `query_row`'s result of a text, kept by its connection between calls when small (as a
/// statement's `Recycler` keeps its last one): the next text's point read writes its row
/// into this one's memory, and the row is lent from it, so a text read anew allocates
/// nothing for its result.
#[derive(Default)]
pub(crate) struct TextResult(Option<Box<Results>>);

/// Its size only: a connection's `Debug` prints no values of the user's.
impl std::fmt::Debug for TextResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = self.0.as_ref().map_or(0, |r| r.chunk.len);
        write!(f, "TextResult {{ kept rows: {rows} }}")
    }
}

impl TextResult {
    /// The last result's rows, for the next run to write over.
    pub(crate) fn spare(&mut self) -> Option<Chunk> {
        self.0.as_mut().map(|r| std::mem::take(&mut r.chunk))
    }

    /// `f` on the first row of the result `columns` and `chunk` (lent: no count raised),
    /// the result kept for the next call when small; `QueryReturnedNoRows` for none.
    pub(crate) fn first_row<T>(
        &mut self,
        columns: Arc<[OutputColumn]>,
        chunk: Chunk,
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<T> {
        let mut results = self.0.take().unwrap_or_default();
        results.columns = columns;
        results.chunk = chunk;
        if results.chunk.len == 0 {
            self.keep(results);
            return Err(Error::QueryReturnedNoRows);
        }
        let row = Row {
            held: Held::Lent(results, AtomicBool::new(false)),
            index: 0,
            values: OnceLock::new(),
        };
        let answer = f(&row);
        if let Held::Lent(results, _) = row.held {
            self.keep(results);
        }
        answer
    }

    fn keep(&mut self, results: Box<Results>) {
        if !too_big(&results.chunk) {
            self.0 = Some(results);
        }
    }
}

/// One result row.
#[derive(Debug)]
pub struct Row {
    held: Held,
    index: usize,
    /// The row's values as `Value`s, made on the first call that lends one out.
    values: OnceLock<Vec<Value>>,
}

/// A row's result: shared with its `Rows` (and the statement, to write its next result
/// over), or lent: by `query_row`, the row the statement keeps with its own result
/// (`Recycler::lend_point`), which stays with the statement, or a text's, from the
/// connection's last text result (`TextResult::first_row`); by `query_map` and
/// `query_as`, from a result only they hold (`LentRows`), taken back when the closure
/// returns. Either way no count is raised or checked. A lent row's flag is set when it
/// is cloned, for `LentRows` to count the copies (the statement's kept row never reads
/// it).
#[derive(Debug)]
enum Held {
    Shared(Arc<Results>),
    Lent(Box<Results>, AtomicBool),
}

impl Clone for Row {
    /// A row of a shared result shares it; a lent row (whose result its lender writes
    /// over or takes back) is copied, its own values only, and its flag set (`LentRows`
    /// shares the rest of its result once most rows are copied).
    fn clone(&self) -> Row {
        let (held, index) = match &self.held {
            Held::Shared(results) => (Held::Shared(Arc::clone(results)), self.index),
            Held::Lent(results, cloned) => {
                cloned.store(true, Ordering::Relaxed);
                (Held::Shared(Arc::new(results.one_row(self.index))), 0)
            }
        };
        Row {
            held,
            index,
            values: self.values.clone(),
        }
    }
}

impl Results {
    /// Row `index` alone, copied.
    fn one_row(&self, index: usize) -> Results {
        Results {
            columns: Arc::clone(&self.columns),
            chunk: Chunk {
                columns: self
                    .chunk
                    .columns
                    .iter()
                    .map(|v| v.slice(index, index + 1))
                    .collect(),
                len: 1,
            },
        }
    }
}

/// A result's rows lent one at a time (`Statement::query_map`, `query_as`): a result only
/// the caller holds (a large one, which the statement does not keep) goes from row to row
/// in one box, with no count raised and dropped per row; one shared with the statement
/// gives each row a share, as `Rows` does. A closure that keeps rows (clones them) has
/// each copied, its own values only, so that a few rows kept do not hold the whole
/// result; once it has kept `SHARE_AFTER_COPIES` rows and at least one in four of those
/// lent, the rest of the result is shared instead, so keeping every row costs a few
/// copies, not one a row.
pub(crate) struct LentRows {
    results: Lender,
    next: usize,
    /// The lent rows cloned so far.
    copies: usize,
}

/// How many lent rows are copied before the rest of a result may be shared.
const SHARE_AFTER_COPIES: usize = 8;

enum Lender {
    Own(Option<Box<Results>>),
    Shared(Arc<Results>),
}

impl LentRows {
    /// The rows left.
    pub(crate) fn remaining(&self) -> usize {
        let len = match &self.results {
            Lender::Own(results) => results.as_ref().map_or(0, |r| r.chunk.len),
            Lender::Shared(results) => results.chunk.len,
        };
        len.saturating_sub(self.next)
    }

    /// The next row lent to `f`, and `f`'s answer; `None` past the last row.
    #[inline]
    pub(crate) fn next_with<T>(&mut self, f: impl FnOnce(&Row) -> T) -> Option<T> {
        let index = self.next;
        match &mut self.results {
            Lender::Own(results) => {
                let lent = results.take_if(|r| index < r.chunk.len)?;
                self.next += 1;
                let row = Row {
                    held: Held::Lent(lent, AtomicBool::new(false)),
                    index,
                    values: OnceLock::new(),
                };
                let out = f(&row);
                if let Held::Lent(lent, cloned) = row.held {
                    self.copies += usize::from(cloned.into_inner());
                    match self.copies >= SHARE_AFTER_COPIES && self.copies * 4 >= self.next {
                        // A closure that keeps most rows would copy each: share them.
                        true => self.results = Lender::Shared(Arc::from(lent)),
                        false => *results = Some(lent),
                    }
                }
                Some(out)
            }
            Lender::Shared(shared) => {
                if index >= shared.chunk.len {
                    return None;
                }
                self.next += 1;
                Some(f(&Row {
                    held: Held::Shared(Arc::clone(shared)),
                    index,
                    values: OnceLock::new(),
                }))
            }
        }
    }
}

/// `Statement::query_map`'s iterator: each row lent to the closure in turn.
pub(crate) struct MappedRows<F> {
    pub(crate) rows: LentRows,
    pub(crate) f: F,
}

impl<T, F: FnMut(&Row) -> Result<T>> Iterator for MappedRows<F> {
    type Item = Result<T>;

    #[inline]
    fn next(&mut self) -> Option<Result<T>> {
        let f = &mut self.f;
        self.rows.next_with(|row| f(row))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.rows.remaining(), Some(self.rows.remaining()))
    }
}

impl Row {
    #[inline]
    fn results(&self) -> &Results {
        match &self.held {
            Held::Shared(results) => results,
            Held::Lent(results, _) => results,
        }
    }

    /// The value at `index` (a position or a column name) as `T`: `row.get::<_, f32>(1)`, or
    /// `row.get(1)` where the type is known, as in rusqlite.
    #[inline]
    pub fn get<I: RowIndex, T: FromValue>(&self, index: I) -> Result<T> {
        let results = self.results();
        let i = index.position(&results.columns)?;
        let column = &results.chunk.columns[i];
        T::from_cell(Cell {
            column,
            row: self.index,
        })
        .map_err(|wanted| wrong_type(&results.columns[i], &column.get(self.index), wanted))
    }

    /// The value of one column, as it is.
    pub fn get_value(&self, index: impl RowIndex) -> Result<&Value> {
        let i = index.position(&self.results().columns)?;
        Ok(&self.values()[i])
    }

    /// Every value of the row, in column order.
    pub fn values(&self) -> &[Value] {
        self.values.get_or_init(|| self.results().chunk.row(self.index))
    }

    /// The number of values (the number of columns).
    pub fn len(&self) -> usize {
        self.results().columns.len()
    }

    /// True for a row of no columns.
    pub fn is_empty(&self) -> bool {
        self.results().columns.is_empty()
    }

    /// The number of columns, as `Rows::column_count` says it (the same as `len`).
    pub fn column_count(&self) -> usize {
        self.results().columns.len()
    }

    /// The names of the columns, in order.
    pub fn column_names(&self) -> Vec<&str> {
        self.results().columns.iter().map(|c| c.name.as_str()).collect()
    }

    /// The position of the column a struct's field `name` reads (`#[derive(FromRow)]`):
    /// the column of that name, or else the one field of that name (`Unit.hp` for `hp`)
    /// when only one column is.
    #[doc(hidden)]
    pub fn field_position(&self, name: &str) -> Result<usize> {
        let columns = &self.results().columns;
        if let Ok(i) = name.position(columns) {
            return Ok(i);
        }
        let mut fields = columns.iter().enumerate().filter(|(_, c)| {
            c.name
                .rsplit_once('.')
                .is_some_and(|(_, field)| field.eq_ignore_ascii_case(name))
        });
        match (fields.next(), fields.next()) {
            (Some((i, _)), None) => Ok(i),
            (Some((_, a)), Some((_, b))) => Err(Error::InvalidColumn(format!(
                "{name}: both {} and {} are fields of that name (name the column: AS {name}, or the field: #[ecsql(name = \"…\")])",
                a.name, b.name
            ))),
            _ => name.position(columns),
        }
    }
}

/// A column position or name.
pub trait RowIndex {
    /// The column's position among `columns`, or an error naming the columns there are.
    fn position(&self, columns: &[OutputColumn]) -> Result<usize>;
}

impl RowIndex for usize {
    #[inline]
    fn position(&self, columns: &[OutputColumn]) -> Result<usize> {
        if *self < columns.len() {
            Ok(*self)
        } else {
            Err(no_column(*self, columns.len()))
        }
    }
}

/// `value`, of `column`, asked for as the Rust type `wanted`, which cannot hold it.
#[cold]
fn wrong_type(column: &OutputColumn, value: &Value, wanted: &'static str) -> Error {
    Error::InvalidColumnType {
        column: column.name.clone(),
        found: value.describe(),
        wanted,
    }
}

/// Column number `i` asked of a row of `len` columns.
#[cold]
fn no_column(i: usize, len: usize) -> Error {
    Error::InvalidColumn(format!("#{i} (there are {len})"))
}

impl RowIndex for &str {
    fn position(&self, columns: &[OutputColumn]) -> Result<usize> {
        columns
            .iter()
            .position(|c| c.name == *self)
            .or_else(|| columns.iter().position(|c| c.name.eq_ignore_ascii_case(self)))
            .ok_or_else(|| {
                let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
                Error::InvalidColumn(format!("{self} (the columns are {})", names.join(", ")))
            })
    }
}

/// A Rust type a whole result row converts to: a tuple of [`FromValue`] types (the row's
/// columns by position, `(i64, String)`), or a struct of the program's own, whose
/// `from_row` reads the columns it wants by name. [`Statement::query_as`] maps every row.
/// With the `derive` feature, `#[derive(FromRow)]` writes it: a struct's field reads the
/// column of its name (or `#[ecsql(name = "…")]`), or the one field of its name
/// (`Unit.hp` for `hp`); a tuple struct's fields read the columns by position. A column
/// missing, or of a type that does not fit, is an error naming the column.
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use ecsql::{Database, Entity, FromRow};
///
/// #[derive(FromRow, Debug, PartialEq)]
/// struct Unit { id: Entity, name: String, #[ecsql(name = "health")] hp: i64 }
///
/// let conn = Database::open_in_memory().connect();
/// conn.execute_batch("CREATE COMPONENT Unit (name TEXT, hp INT); SPAWN Unit('ada', 70);")?;
/// let mut stmt = conn.prepare("SELECT id, Unit.name, Unit.hp AS health FROM Unit")?;
/// let units: Vec<Unit> = stmt.query_as(())?;
/// assert_eq!((units[0].name.as_str(), units[0].hp), ("ada", 70));
/// // A column that does not fit its field's type says which.
/// let mut wrong = conn.prepare("SELECT id, Unit.name, Unit.name AS health FROM Unit")?;
/// let e = wrong.query_as::<Unit>(()).unwrap_err().to_string();
/// assert!(e.contains("health"), "{e}");
/// # }
/// # Ok::<(), ecsql::Error>(())
/// ```
///
///
/// [`Statement::query_as`]: crate::Statement::query_as
///
/// ```
/// # use ecsql::{Database, FromRow, Row};
/// struct Unit {
///     name: String,
///     hp: i64,
/// }
///
/// impl FromRow for Unit {
///     fn from_row(row: &Row) -> ecsql::Result<Unit> {
///         Ok(Unit { name: row.get("name")?, hp: row.get("hp")? })
///     }
/// }
///
/// let conn = Database::open_in_memory().connect();
/// conn.execute_batch("CREATE COMPONENT Unit (name TEXT, hp INT);
///                     SPAWN Unit('ziggy', 50); SPAWN Unit('ada', 70);")?;
/// let mut stmt = conn.prepare("SELECT Unit.name AS name, Unit.hp AS hp FROM Unit ORDER BY hp DESC")?;
/// let units: Vec<Unit> = stmt.query_as(())?;
/// assert_eq!((units[0].name.as_str(), units[0].hp), ("ada", 70));
/// let pairs: Vec<(String, i64)> = stmt.query_as(())?;
/// assert_eq!(pairs[1], ("ziggy".to_owned(), 50));
/// // A tuple takes every column: one of another length is an error.
/// assert!(matches!(
///     stmt.query_as::<(String,)>(()),
///     Err(ecsql::Error::InvalidColumnCount { wanted: 1, found: 2 })
/// ));
/// # Ok::<(), ecsql::Error>(())
/// ```
pub trait FromRow: Sized {
    /// The row as `Self`.
    fn from_row(row: &Row) -> Result<Self>;
}

macro_rules! tuple_from_row {
    ($n:literal: $($t:ident $i:tt),+) => {
        impl<$($t: FromValue),+> FromRow for ($($t,)+) {
            fn from_row(row: &Row) -> Result<Self> {
                // Every column, as rusqlite's tuples take them: a shorter tuple would drop some.
                if row.len() != $n {
                    return Err(Error::InvalidColumnCount {
                        wanted: $n,
                        found: row.len(),
                    });
                }
                Ok(($(row.get::<_, $t>($i)?,)+))
            }
        }
    };
}

tuple_from_row!(1: A 0);
tuple_from_row!(2: A 0, B 1);
tuple_from_row!(3: A 0, B 1, C 2);
tuple_from_row!(4: A 0, B 1, C 2, D 3);
tuple_from_row!(5: A 0, B 1, C 2, D 3, E 4);
tuple_from_row!(6: A 0, B 1, C 2, D 3, E 4, F 5);
tuple_from_row!(7: A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_from_row!(8: A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// A Rust type a result value converts to. `Err` names the type, for the message.
pub trait FromValue: Sized {
    /// The value as `Self`; `Err` names the Rust type, for the error message.
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str>;

    /// The value of one cell of a result as `Self`, read where it is: the library's own
    /// types read a number or a flag straight from its column, without making a
    /// [`Value`] (a point read's row read this way costs a few instructions, not the
    /// dozens a `Value` made and dropped did). Others need not write it: it makes the
    /// cell's `Value` and calls `from_value`.
    #[doc(hidden)]
    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        Self::from_value(&cell.value())
    }
}

/// One cell of a result, where it is: what [`FromValue::from_cell`] reads.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Cell<'a> {
    column: &'a Vector<'static>,
    row: usize,
}

impl Cell<'_> {
    /// The cell's value, made.
    pub fn value(&self) -> Value {
        self.column.get(self.row)
    }

    /// Whether the cell is NULL.
    #[inline]
    fn is_null(&self) -> bool {
        !self.column.is_valid(self.row)
    }

    /// The cell as `T` when its column holds `T`s and the cell is not NULL: the one
    /// check and load a typed read needs.
    #[inline]
    fn typed<T: ColumnSlice + Copy>(&self) -> Option<T> {
        match &self.column.valid {
            Some(valid) if !valid[self.row] => None,
            _ => T::of(&self.column.data).map(|v| v[self.row]),
        }
    }
}

impl FromValue for Value {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        Ok(value.clone())
    }
}

impl FromValue for i64 {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Int(i) => Ok(*i),
            // Ids read as integers: the form they print in.
            Value::Entity(e) => i64::try_from(e.to_bits()).map_err(|_| "i64"),
            _ => Err("i64"),
        }
    }

    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        match cell.typed::<i64>() {
            Some(i) => Ok(i),
            None => Self::from_value(&cell.value()),
        }
    }
}

impl FromValue for i32 {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        i64::from_value(value)
            .ok()
            .and_then(|i| i32::try_from(i).ok())
            .ok_or("i32")
    }
}

impl FromValue for u64 {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Int(i) => u64::try_from(*i).map_err(|_| "u64"),
            Value::Entity(e) => Ok(e.to_bits()),
            _ => Err("u64"),
        }
    }
}

impl FromValue for f64 {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Float(x) => Ok(*x),
            Value::Real(x) => Ok(f64::from(*x)),
            Value::Int(i) => Ok(*i as f64),
            _ => Err("f64"),
        }
    }

    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        match (cell.typed::<f64>(), cell.typed::<f32>()) {
            (Some(x), _) => Ok(x),
            (_, Some(x)) => Ok(f64::from(x)),
            _ => Self::from_value(&cell.value()),
        }
    }
}

impl FromValue for f32 {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Real(x) => Ok(*x),
            // A finite FLOAT past f32's range is refused, not read as an infinity.
            Value::Float(x) => crate::vector::float_to_real(*x).ok_or("f32"),
            Value::Int(i) => Ok(*i as f32),
            _ => Err("f32"),
        }
    }

    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        match cell.typed::<f32>() {
            Some(x) => Ok(x),
            None => Self::from_value(&cell.value()),
        }
    }
}

impl FromValue for bool {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Bool(b) => Ok(*b),
            _ => Err("bool"),
        }
    }

    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        match cell.typed::<bool>() {
            Some(b) => Ok(b),
            None => Self::from_value(&cell.value()),
        }
    }
}

impl FromValue for String {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Text(s) => Ok(s.clone()),
            _ => Err("String"),
        }
    }
}

impl FromValue for Entity {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Entity(e) => Ok(*e),
            Value::Int(i) => u64::try_from(*i).ok().and_then(Entity::from_bits).ok_or("Entity"),
            _ => Err("Entity"),
        }
    }

    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        match cell.typed::<Option<Entity>>() {
            Some(Some(e)) => Ok(e),
            _ => Self::from_value(&cell.value()),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value) -> std::result::Result<Self, &'static str> {
        match value {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }

    #[inline]
    fn from_cell(cell: Cell<'_>) -> std::result::Result<Self, &'static str> {
        match cell.is_null() {
            true => Ok(None),
            false => T::from_cell(cell).map(Some),
        }
    }
}
