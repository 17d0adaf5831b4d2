//! EXPLAIN ANALYZE's measurements: per part of a plan (a query, a select, its window
//! stage, an entity scan), found by the part's address, how often it ran, the rows it gave
//! and read, the time it took and the tables and index a scan read. A run keeps them
//! only when its `Run::profile` is set; otherwise nothing here is touched.
//!
//! Times are inclusive (a query's holds its select's) and summed over runs (a correlated
//! subquery runs many times). The threads of a parallel scan record into the same
//! profile, behind its lock.

use std::time::{Duration, Instant};

use hashbrown::HashMap;
use parking_lot::Mutex;

use crate::storage::TableId;

#[derive(Debug, Default)]
pub struct Profile {
    parts: Mutex<HashMap<usize, Stats>>,
    /// Whether EXPLAIN ANALYZE prints the times (`TIMING false`: not, so that the same
    /// statement prints the same text).
    pub timing: bool,
    /// Set once the run is over: printing the plan reads some parts again (how a scan
    /// would split), which must not count.
    done: std::sync::atomic::AtomicBool,
}

/// What one part of a plan did, over all its runs.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub runs: u64,
    /// Rows it gave.
    pub rows: u64,
    /// Rows it was given (a select: before WHERE).
    pub read: u64,
    /// A select whose query's ORDER BY … LIMIT set aside, as they were made, the rows
    /// that could no longer be among the first (a top-k): the rows it made, of which it
    /// gave (kept) `rows`. `None` for a select of no top-k.
    pub topped: Option<u64>,
    pub time: Duration,
    /// A scan's tables, with the rows read of each.
    pub tables: Vec<(TableId, u64)>,
    /// A scan with an index: runs that read through it, and runs that walked the tables
    /// instead (it would have found too many rows, or could not be used).
    pub indexed: u64,
    pub walked: u64,
    /// A scan with zone conditions: the tables, and the blocks of rows in the tables
    /// read, that zone maps ruled out.
    pub zone_tables: u64,
    pub zone_blocks: u64,
}

fn key<T>(part: &T) -> usize {
    std::ptr::from_ref(part) as usize
}

impl Profile {
    pub fn new(timing: bool) -> Profile {
        Profile {
            parts: Mutex::default(),
            timing,
            done: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Ends the run: nothing is recorded after.
    pub fn finish(&self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// What `part` did, as EXPLAIN ANALYZE appends it to its line: `(actual: 3 runs, 120
    /// rows, 1.204 ms)`. `None` when it never ran.
    pub fn actual<T>(&self, part: &T) -> Option<String> {
        let s = self.of(part)?;
        let mut parts = Vec::new();
        if s.runs != 1 {
            parts.push(format!("{} runs", s.runs));
        }
        // A select under a top-k made `topped` rows; the Sort line says how many it kept.
        parts.push(rows(s.topped.unwrap_or(s.rows)));
        if self.timing {
            parts.push(time(s.time));
        }
        Some(format!("(actual: {})", parts.join(", ")))
    }

    pub fn record<T>(&self, part: &T, f: impl FnOnce(&mut Stats)) {
        if self.done.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        f(self.parts.lock().entry(key(part)).or_default());
    }

    pub fn of<T>(&self, part: &T) -> Option<Stats> {
        self.parts.lock().get(&key(part)).cloned()
    }
}

/// Runs `f`, recording into `part`'s stats one run, its time and the rows `rows` counts
/// of its result, when there is a profile.
pub fn timed<T, R, E>(
    profile: Option<&Profile>,
    part: &T,
    rows: impl Fn(&R) -> usize,
    f: impl FnOnce() -> Result<R, E>,
) -> Result<R, E> {
    let Some(profile) = profile else {
        return f();
    };
    let start = Instant::now();
    let result = f();
    let time = start.elapsed();
    let n = result.as_ref().map_or(0, &rows) as u64;
    profile.record(part, |s| {
        s.runs += 1;
        s.rows += n;
        s.time += time;
    });
    result
}

/// `1 row`, `120 rows`.
pub fn rows(n: u64) -> String {
    format!("{n} row{}", if n == 1 { "" } else { "s" })
}

/// A time in milliseconds, to the microsecond.
pub fn time(t: Duration) -> String {
    format!("{:.3} ms", t.as_secs_f64() * 1e3)
}
