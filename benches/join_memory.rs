//! Join memory: `SELECT count(*) FROM A JOIN B ON A.x < B.y` over n × n entities (n =
//! 5,000, 10,000, 20,000: 25 to 400 million pairs, half of them kept by ON), timed, with
//! the peak of live heap bytes the statement added, counted by a global allocator. The
//! target is a peak that does not grow with the pair count: the join's pairs stream into
//! the count a chunk at a time. SQLite's time for the same count is printed beside it.
//! Not a criterion bench: it measures bytes and one long statement, once per size.
//!
//! Run: `cargo bench -p ecsql-benches --bench join_memory`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ecsql::Database;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator with the same arguments; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    println!("| n × n | pairs | ecsql time | ecsql peak heap added | SQLite time |");
    println!("|---|---:|---:|---:|---:|");
    for n in [5_000i64, 10_000, 20_000] {
        let conn = Database::open_in_memory().connect();
        conn.execute_batch(&format!(
            "CREATE COMPONENT A (x INT); CREATE COMPONENT B (y INT);
             SPAWN A(i) FROM range({n}) AS r(i); SPAWN B(i) FROM range({n}) AS r(i);"
        ))
        .expect("the bench's world is valid");
        let sql = "SELECT count(*) FROM A JOIN B ON A.x < B.y";
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let began = Instant::now();
        let count: i64 = conn.query_row(sql, (), |r| r.get(0)).expect("the count runs");
        let took = began.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - before;
        assert_eq!(count, n * (n - 1) / 2);

        let db = rusqlite::Connection::open_in_memory().expect("SQLite opens");
        db.execute_batch(&format!(
            "CREATE TABLE a (x INTEGER); CREATE TABLE b (y INTEGER);
             WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < {n})
             INSERT INTO a SELECT i FROM r;
             INSERT INTO b SELECT x FROM a;"
        ))
        .expect("SQLite's tables fill");
        let began = Instant::now();
        let sqlite: i64 = db
            .query_row("SELECT count(*) FROM a JOIN b ON a.x < b.y", (), |r| r.get(0))
            .expect("SQLite counts");
        let sqlite_took = began.elapsed();
        assert_eq!(sqlite, count);
        println!(
            "| {n} × {n} | {} | {:.2} s | {:.1} MiB | {:.2} s |",
            n * n,
            took.as_secs_f64(),
            peak as f64 / (1 << 20) as f64,
            sqlite_took.as_secs_f64()
        );
    }
}
