//! What a prepared statement keeps between runs, measured as the live heap: the vectors
//! of its parameters and its last small result, never a large value, whether given as
//! a parameter or returned, nor anything of a result once it is parked in the cache but
//! one of at most a row of numbers (a point read's); and that a kept statement's point read (as a game's `get` by
//! id) allocates nothing once its first run is past, whether the program keeps the
//! statement or takes it from the cache each time; and that rows kept from `query_map`
//! cost a few copies, not one a row, while a few rows kept hold only their own values. One test, so that nothing else
//! allocates while it counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use ecsql::Database;

/// Counts the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
/// Allocations made (reallocations counted), ever.
static MADE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is
// kept beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        MADE.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        MADE.fetch_add(1, Ordering::Relaxed);
        if !q.is_null() {
            LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The length of the text `stmt` (`SELECT ?1`) gives back for `text`.
fn echoed_len(stmt: &mut ecsql::Statement<'_>, text: &str) -> ecsql::Result<usize> {
    Ok(stmt
        .query([text])?
        .next()?
        .expect("a row")
        .get::<_, String>(0)?
        .len())
}

/// Far more than a kept result or parameter vector of small values holds.
const SLACK: isize = 256 * 1024;

#[test]
fn a_prepared_statement_keeps_no_large_value_between_runs() -> ecsql::Result<()> {
    let conn = Database::open_in_memory().connect();
    let big = "x".repeat(20 << 20);

    // A long text returned: the result is dropped with its rows, not kept for the next run.
    let mut echo = conn.prepare("SELECT ?1")?;
    echo.query(["warm"])?.next()?;
    let before = live();
    assert_eq!(echoed_len(&mut echo, &big)?, big.len());
    assert!(live() - before < SLACK, "kept {} bytes", live() - before);
    // A small one is kept, and reused.
    echo.query(["small"])?.next()?;
    let before = live();
    for _ in 0..100 {
        echo.query(["small"])?.next()?;
    }
    assert!(live() - before < SLACK, "grew {} bytes", live() - before);

    // A long text given: not kept until the next run.
    let mut length = conn.prepare("SELECT length(?1)")?;
    length.query_row(["warm"], |r| r.get::<_, i64>(0))?;
    let before = live();
    assert_eq!(
        length.query_row([big.as_str()], |r| r.get::<_, i64>(0))?,
        big.len() as i64
    );
    assert!(live() - before < SLACK, "kept {} bytes", live() - before);

    // A long text read by a point read (written over the last result's memory): not
    // kept either, by query_row or by query.
    conn.execute_batch("CREATE COMPONENT Note (text TEXT)")?;
    let small: ecsql::Entity = conn.query_row("SPAWN Note('small')", (), |r| r.get(0))?;
    let long: ecsql::Entity = conn.query_row("SPAWN Note(?1)", [big.as_str()], |r| r.get(0))?;
    let mut note = conn.prepare("SELECT Note.text FROM Note WHERE id = ?1")?;
    let read =
        |note: &mut ecsql::Statement<'_>, id| note.query_row([id], |r| Ok(r.get::<_, String>(0)?.len()));
    for _ in 0..3 {
        assert_eq!(read(&mut note, small)?, 5);
    }
    let before = live();
    assert_eq!(read(&mut note, long)?, big.len());
    assert!(live() - before < SLACK, "kept {} bytes", live() - before);
    assert_eq!(read(&mut note, small)?, 5);
    let before = live();
    let len = note
        .query([long])?
        .next()?
        .expect("a row")
        .get::<_, String>(0)?
        .len();
    assert_eq!(len, big.len());
    assert!(live() - before < SLACK, "kept {} bytes", live() - before);

    // A statement parked in the cache keeps no result, not even a small one (but for a
    // point read's row of numbers, below).
    let ten_kb = "y".repeat(10_000);
    conn.prepare_cached("SELECT ?1")?.query(["warm"])?.next()?;
    let before = live();
    {
        let mut cached = conn.prepare_cached("SELECT ?1")?;
        assert_eq!(echoed_len(&mut cached, &ten_kb)?, ten_kb.len());
    }
    assert!(live() - before < 4096, "kept {} bytes", live() - before);

    // A kept point read, by query_row and by query/next/get: past its first run, a read
    // by id allocates nothing (its row is written over the last one's memory).
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL, z REAL);
         SPAWN Position(i * 0.5, 0, 0) FROM range(1000) AS r(i);",
    )?;
    let mut ids = Vec::new();
    {
        let mut all = conn.prepare("SELECT id FROM Position")?;
        let mut rows = all.query(())?;
        while let Some(row) = rows.next()? {
            ids.push(row.get::<_, ecsql::Entity>(0)?);
        }
    }
    let mut x_of = conn.prepare("SELECT Position.x FROM Position WHERE id = ?1")?;
    let mut sum = 0.0;
    for &id in &ids[..3] {
        sum += x_of.query_row([id], |r| r.get::<_, f64>(0))?;
        sum += x_of.query([id])?.next()?.expect("a row").get::<_, f64>(0)?;
    }
    let before = MADE.load(Ordering::Relaxed);
    for &id in &ids {
        sum += x_of.query_row([id], |r| r.get::<_, f64>(0))?;
    }
    let by_query_row = MADE.load(Ordering::Relaxed) - before;
    let before = MADE.load(Ordering::Relaxed);
    for &id in &ids {
        sum += x_of.query([id])?.next()?.expect("a row").get::<_, f64>(0)?;
    }
    let by_query = MADE.load(Ordering::Relaxed) - before;
    assert_eq!(sum, 2.0 * 0.5 * (0..1000).sum::<i32>() as f64 + 2.0 * 0.5 * 3.0);
    // A read of an entity that is gone between reads of live ones: no row, and its
    // vectors kept for the next.
    let gone: ecsql::Entity = conn.query_row("SPAWN Position(0, 0, 0)", (), |r| r.get(0))?;
    conn.execute("DESPAWN ?1", [gone])?;
    let mut missed = 0;
    let mut sum_around = 0.0;
    let before = MADE.load(Ordering::Relaxed);
    for &id in &ids {
        match x_of.query_row([gone], |r| r.get::<_, f64>(0)) {
            Err(ecsql::Error::QueryReturnedNoRows) => missed += 1,
            other => panic!("a read of a gone entity gave {other:?}"),
        }
        sum_around += x_of.query_row([id], |r| r.get::<_, f64>(0))?;
    }
    let around_misses = MADE.load(Ordering::Relaxed) - before;
    assert_eq!((missed, sum_around), (1000, 0.5 * (0..1000).sum::<i32>() as f64));
    // The same read through `prepare_cached` each time, as rusqlite's users write it.
    let cached_read = |id| -> ecsql::Result<f64> {
        conn.prepare_cached("SELECT Position.x FROM Position WHERE id = ?1")?
            .query_row([id], |r| r.get::<_, f64>(0))
    };
    let mut cached_sum = 0.0;
    for &id in &ids[..3] {
        cached_sum += cached_read(id)?;
    }
    let before = MADE.load(Ordering::Relaxed);
    for &id in &ids {
        cached_sum += cached_read(id)?;
    }
    let by_cache = MADE.load(Ordering::Relaxed) - before;
    assert_eq!(cached_sum, 0.5 * (0..1000).sum::<i32>() as f64 + 0.5 * 3.0);
    assert_eq!(
        (by_query_row, by_query, around_misses, by_cache),
        (0, 0, 0, 0),
        "allocations in 1,000 point reads by query_row, by query, between misses, and by prepare_cached"
    );

    // Every row of a large result kept from query_map: the rows share the result (one
    // row is copied, by the first clone), rather than each row copying its own values.
    let mut all = conn
        .prepare("SELECT i, i * 0.5, CASE WHEN i % 3 = 0 THEN NULL ELSE i END FROM range(10000) AS r(i)")?;
    all.query(())?.next()?;
    let before = MADE.load(Ordering::Relaxed);
    let rows: Vec<ecsql::Row> = all
        .query_map((), |r| Ok(r.clone()))?
        .collect::<ecsql::Result<_>>()?;
    let kept_rows = MADE.load(Ordering::Relaxed) - before;
    let sum: i64 = rows
        .iter()
        .map(|r| r.get::<_, Option<i64>>(2).map(Option::unwrap_or_default))
        .sum::<ecsql::Result<_>>()?;
    assert_eq!(sum, (0..10_000).filter(|i| i % 3 != 0).sum::<i64>());
    // A copy of each row would be some 60,000.
    assert!(kept_rows < 1_000, "{kept_rows} allocations to keep 10,000 rows");
    drop(rows);
    // Two rows kept of a large result hold their own values, not the whole result.
    let mut texts =
        conn.prepare("SELECT i, 'row ' || i || ' of a result of ten thousand' FROM range(10000) AS r(i)")?;
    texts.query(())?.next()?;
    let before = live();
    let few: Vec<ecsql::Row> = texts
        .query_map((), |r| Ok((r.get::<_, i64>(0)? % 5000 == 7).then(|| r.clone())))?
        .collect::<ecsql::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let held = live() - before;
    assert_eq!(
        few.iter()
            .map(|r| r.get::<_, String>(1))
            .collect::<ecsql::Result<Vec<_>>>()?,
        [
            "row 7 of a result of ten thousand",
            "row 5007 of a result of ten thousand"
        ]
    );
    assert!(held < 16 << 10, "two rows kept hold {held} bytes");
    Ok(())
}
