//! What the seeded random tests share: SplitMix64, small and seedable, good enough to pick
//! operations and values. Each test adds the draws it needs in a trait of its own, so that
//! one file's `below` or `pick` is never another's.

pub mod cells;

#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The seeds a seeded test runs: `ECSQL_SEED=N` replays one; else 1 to the count that
/// the variable `count_var` gives, or `default`.
#[allow(dead_code)]
pub fn seeds(count_var: &str, default: u64) -> Vec<u64> {
    let number = |name: &str| std::env::var(name).ok().and_then(|s| s.parse().ok());
    match number("ECSQL_SEED") {
        Some(seed) => vec![seed],
        None => (1..=number(count_var).unwrap_or(default)).collect(),
    }
}

/// A folder of a test's own in the system's temporary folder, empty when made and removed
/// when the test ends. Each is its own, though two tests of one binary give one name: the
/// folder is named by the name, the process and a count.
#[allow(dead_code)]
pub struct Folder(pub std::path::PathBuf);

#[allow(dead_code)]
impl Folder {
    pub fn new(name: &str) -> Folder {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ecsql-test-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Folder(dir)
    }

    pub fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every row of `sql`'s result, each as `show` writes it, or the error's text.
#[allow(dead_code)]
pub fn result_rows(
    conn: &ecsql::Connection,
    sql: &str,
    show: impl Fn(&ecsql::Row) -> String,
) -> Result<Vec<String>, String> {
    let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
    let rows = stmt.query(()).map_err(|e| e.to_string())?;
    rows.map(|row| row.map(|r| show(&r)).map_err(|e| e.to_string()))
        .collect()
}

/// The first column of every row of `sql`'s result, as text (EXPLAIN's lines).
#[allow(dead_code)]
pub fn lines(conn: &ecsql::Connection, sql: &str) -> Vec<String> {
    let mut statement = conn.prepare(sql).unwrap();
    statement
        .query(())
        .unwrap()
        .map(|r| r.unwrap().get::<_, String>(0).unwrap())
        .collect()
}
