//! Events against a naive model: random sequences of emits (ad hoc and by a system),
//! ticks, readers disabled and enabled, ticks that fail and are undone, and transactions
//! rolled back. After every step each reader has logged every event exactly once, in
//! emission order, the queue holds what the model keeps, and the count of rows dropped
//! unseen agrees.

use std::collections::VecDeque;

use ecsql::{Connection, Database};

/// How many ticks E keeps a row.
const KEEP: u64 = 4;

/// Readers r0 (before the emitter), r1 (after it), r2 (post_update, every 2 ticks).
const EVERY: [u64; 3] = [1, 1, 2];

#[derive(Clone, Debug, Default)]
struct Model {
    tick: u64,
    /// (n, tick emitted), in emission order; the first has sequence number `first`.
    queue: VecDeque<(i64, u64)>,
    first: u64,
    cursors: [u64; 3],
    enabled: [bool; 3],
    log: Vec<(i64, i64)>,
    dropped_unseen: i64,
    /// How many rows the emitter system emits per tick.
    sources: i64,
}

impl Model {
    fn end(&self) -> u64 {
        self.first + self.queue.len() as u64
    }

    fn read(&mut self, r: usize) {
        if !self.enabled[r] || !self.tick.is_multiple_of(EVERY[r]) {
            return;
        }
        let start = self.cursors[r].saturating_sub(self.first) as usize;
        for &(n, _) in self.queue.iter().skip(start) {
            self.log.push((r as i64, n));
        }
        self.cursors[r] = self.end();
    }

    fn tick(&mut self) {
        self.tick += 1;
        self.read(0);
        for k in 0..self.sources {
            self.queue.push_back((self.tick as i64 * 1000 + k, self.tick));
        }
        self.read(1);
        self.read(2);
        // End of tick: drop what all three readers saw, and what expired.
        let seen = self
            .cursors
            .iter()
            .map(|&c| c.saturating_sub(self.first) as usize)
            .min()
            .unwrap_or(0)
            .min(self.queue.len());
        let expired = self
            .queue
            .iter()
            .take_while(|(_, t)| t + KEEP <= self.tick)
            .count();
        let count = seen.max(expired);
        self.dropped_unseen += (count - seen) as i64;
        self.queue.drain(..count);
        self.first += count as u64;
    }
}

struct Rng(u64);

/// The draws this file makes, beside `Rng::next`.
trait Draw {
    fn below(&mut self, n: u64) -> u64;
}

impl Draw for Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn setup() -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE EVENT E (n INT) WITH (keep = {KEEP} TICKS);
         CREATE COMPONENT Log (r INT, n INT);
         CREATE COMPONENT Src (k INT);
         CREATE COMPONENT Flag (ok INT);
         SPAWN Flag(1);
         CREATE SYSTEM r0 AS SPAWN Log(r => 0, n => E.n) FROM E;
         CREATE SYSTEM emitter AFTER r0 AS INSERT INTO E (n) SELECT tick() * 1000 + Src.k FROM Src;
         CREATE SYSTEM r1 AFTER emitter AS SPAWN Log(r => 1, n => E.n) FROM E;
         CREATE SYSTEM r2 IN PHASE post_update EVERY 2 TICKS AS SPAWN Log(r => 2, n => E.n) FROM E;
         CREATE SYSTEM failer IN PHASE post_update AS UPDATE Flag SET ok = 1 / Flag.ok;"
    ))
    .unwrap();
    conn
}

fn pairs(conn: &Connection, sql: &str) -> Vec<(i64, i64)> {
    let mut s = conn.prepare(sql).unwrap();
    let rows = s.query(()).unwrap();
    rows.map(|r| {
        let r = r.unwrap();
        (r.get(0).unwrap(), r.get(1).unwrap())
    })
    .collect()
}

fn check(conn: &Connection, model: &Model, step: &str) {
    assert_eq!(
        pairs(conn, "SELECT r, n FROM Log"),
        model.log,
        "the readers' logs (in the order the rows were spawned) after {step}"
    );
    let kept: Vec<(i64, i64)> = model.queue.iter().map(|&(n, _)| (n, 0)).collect();
    assert_eq!(
        pairs(conn, "SELECT n, 0 FROM E"),
        kept,
        "the rows kept after {step}"
    );
    let unseen: i64 = conn
        .query_row("SHOW EVENTS", (), |r| r.get("dropped_unseen"))
        .unwrap();
    assert_eq!(unseen, model.dropped_unseen, "rows dropped unseen after {step}");
    assert_eq!(conn.clock().unwrap().tick, model.tick, "the tick after {step}");
}

fn run_seed(seed: u64, steps: usize) {
    let conn = setup();
    let mut model = Model {
        enabled: [true; 3],
        ..Model::default()
    };
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut adhoc = 0i64;
    let mut saved: Option<Model> = None;
    for step in 0..steps {
        let what = match rng.below(10) {
            0 => {
                let ns: Vec<i64> = (0..1 + rng.below(3))
                    .map(|_| {
                        adhoc += 1;
                        -adhoc
                    })
                    .collect();
                let values: Vec<String> = ns.iter().map(|n| format!("({n})")).collect();
                conn.execute(&format!("INSERT INTO E (n) VALUES {}", values.join(", ")), ())
                    .unwrap();
                model.queue.extend(ns.iter().map(|&n| (n, model.tick)));
                "an ad-hoc emit"
            }
            1 => {
                if rng.below(2) == 0 && model.sources < 4 {
                    conn.execute(&format!("SPAWN Src({})", model.sources), ())
                        .unwrap();
                    model.sources += 1;
                } else if model.sources > 0 {
                    model.sources -= 1;
                    conn.execute(&format!("DESPAWN FROM Src WHERE Src.k = {}", model.sources), ())
                        .unwrap();
                }
                "a change of sources"
            }
            2 => {
                let r = 1 + rng.below(2) as usize;
                let enable = !model.enabled[r];
                let word = if enable { "ENABLE" } else { "DISABLE" };
                conn.execute(&format!("ALTER SYSTEM r{r} {word}"), ()).unwrap();
                model.enabled[r] = enable;
                "a reader enabled or disabled"
            }
            3 => {
                conn.execute("UPDATE Flag SET ok = 0", ()).unwrap();
                let e = conn.tick(1 + rng.below(2)).unwrap_err();
                assert!(e.to_string().contains("system failer failed"), "{e}");
                conn.execute("UPDATE Flag SET ok = 1", ()).unwrap();
                "a failing tick"
            }
            4 if saved.is_none() => {
                conn.execute("BEGIN", ()).unwrap();
                saved = Some(model.clone());
                "BEGIN"
            }
            5 if saved.is_some() => {
                conn.execute("ROLLBACK", ()).unwrap();
                model = saved.take().unwrap_or_default();
                "ROLLBACK"
            }
            6 if saved.is_some() => {
                conn.execute("COMMIT", ()).unwrap();
                saved = None;
                "COMMIT"
            }
            _ => {
                let n = 1 + rng.below(3);
                assert_eq!(conn.tick(n).unwrap(), n);
                for _ in 0..n {
                    model.tick();
                }
                "ticks"
            }
        };
        check(&conn, &model, &format!("step {step} ({what}) of seed {seed}"));
    }
}

#[test]
fn every_reader_sees_every_event_exactly_once_against_a_model() {
    for seed in 1..=8 {
        run_seed(seed, 150);
    }
}
