//! What a prepared statement keeps between runs, measured as the live heap: the vectors
//! of its parameters and its last small result, never a large value, whether given as
//! a parameter or returned, nor anything of a result once it is parked in the cache.
//! One test, so that nothing else allocates while it counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use ecsql::Database;

/// Counts the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is
// kept beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
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

    // A statement parked in the cache keeps no result, not even a small one.
    let ten_kb = "y".repeat(10_000);
    conn.prepare_cached("SELECT ?1")?.query(["warm"])?.next()?;
    let before = live();
    {
        let mut cached = conn.prepare_cached("SELECT ?1")?;
        assert_eq!(echoed_len(&mut cached, &ten_kb)?, ten_kb.len());
    }
    assert!(live() - before < 4096, "kept {} bytes", live() - before);
    Ok(())
}
