//! changed(), added() and removed() against a naive model: random UPDATEs (often writing the value a
//! row already has, or -0.0 over 0.0), spawns, despawns, attaches, detaches, moves between
//! tables, ticks and transactions that commit or roll back, read by prepared statements
//! and systems at different cadences. The model keeps, per entity, its values and the
//! step at which each field last got a different value (and Position was added), and per
//! reader the step of its last run; every read must give exactly the model's rows. Tables
//! span several blocks of marks, so the scans' skipping of unchanged blocks is exercised.
//! Losses of P are a log of (step, id) that starts when the system reading removed(P) is
//! made and drops what it has seen.

use std::collections::BTreeMap;

use ecsql::{Connection, Database, Entity, Statement};

use crate::common;

use common::Rng;

/// The draws this file makes, beside `Rng::next`.
trait Draw {
    fn below(&mut self, n: u64) -> u64;
}

impl Draw for Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Debug)]
struct Pos {
    a: i64,
    b: f32,
    added: u64,
    a_at: u64,
    b_at: u64,
}

/// The world as the model sees it: entity id → its Position (None: it has none).
type Entities = BTreeMap<u64, Option<Pos>>;

/// The model at BEGIN: entities, the prepared readers' and systems' last steps, the tick,
/// the removal log.
type Saved = (Entities, Vec<Option<u64>>, [Option<u64>; 3], u64, Vec<(u64, u64)>);

/// What each reader asks, and of which rows the model says yes; the last reads removed(P).
const READERS: [&str; 4] = ["changed(P)", "changed(P.a)", "added(P)", "removed"];
const REMOVED: usize = 3;

/// The ids the removal log holds after step `last` (all of them for `None`), in order.
fn removed_since(log: &[(u64, u64)], last: Option<u64>) -> Vec<u64> {
    log.iter()
        .filter(|&&(step, _)| last.is_none_or(|l| step > l))
        .map(|&(_, id)| id)
        .collect()
}

fn wants(reader: usize, p: &Pos, last: Option<u64>) -> bool {
    let Some(last) = last else { return true };
    match reader {
        0 => p.a_at > last || p.b_at > last,
        1 => p.a_at > last,
        _ => p.added > last,
    }
}

fn expected(entities: &Entities, reader: usize, last: Option<u64>) -> Vec<u64> {
    entities
        .iter()
        .filter_map(|(&id, p)| p.as_ref().filter(|p| wants(reader, p, last)).map(|_| id))
        .collect()
}

fn ids(statement: &mut Statement<'_>) -> Vec<u64> {
    let rows = statement.query(()).unwrap();
    rows.column::<Option<Entity>>(0)
        .unwrap()
        .iter()
        .flatten()
        .map(|e| e.to_bits())
        .collect()
}

fn all_ids(conn: &Connection, sql: &str) -> Vec<u64> {
    ids(&mut conn.prepare(sql).unwrap())
}

#[test]
fn changed_and_added_follow_a_naive_model() {
    for seed in 1..=4u64 {
        run(seed, "");
    }
}

#[test]
fn changed_and_added_of_sparse_components_follow_the_same_model() {
    for seed in 5..=7u64 {
        run(seed, " WITH (storage = sparse)");
    }
}

/// One seeded run; `with` is how P and T are declared.
fn run(seed: u64, with: &str) {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT P (a INT, b REAL){with};
         CREATE TAG T{with};
         CREATE COMPONENT Hit (sys INT, who ENTITY, t INT);
         SPAWN P(a => i % 3, b => 0) FROM range(2500) AS r(i);
         SPAWN P(a => 1, b => 1), T FROM range(300) AS r(i);"
    ))
    .unwrap();
    let mut rng = Rng(seed);
    let mut step = 0u64;
    let mut entities: Entities = BTreeMap::new();
    for id in all_ids(&conn, "SELECT id FROM P ORDER BY id") {
        let (a, b): (i64, f64) = conn
            .query_row("SELECT P.a, P.b FROM P WHERE id = ?1", (id as i64,), |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        entities.insert(
            id,
            Some(Pos {
                a,
                b: b as f32,
                added: 0,
                a_at: 0,
                b_at: 0,
            }),
        );
    }
    // Prepared readers, and two systems: 's0' logs changed(P.b) every 2 ticks, 's1'
    // logs added(P) every tick.
    let mut readers: Vec<Statement<'_>> = READERS
        .iter()
        .map(|&r| {
            let sql = match r {
                "removed" => "SELECT id FROM removed(P)".to_owned(),
                _ => format!("SELECT id FROM P WHERE {r} ORDER BY id"),
            };
            conn.prepare(&sql).unwrap()
        })
        .collect();
    let mut last: Vec<Option<u64>> = vec![None; READERS.len()];
    conn.execute_batch(
        "CREATE SYSTEM s0 EVERY 2 TICKS AS SPAWN Hit(0, id, tick()) FROM P WHERE changed(P.b);
         CREATE SYSTEM s1 AS SPAWN Hit(1, id, tick()) FROM P WHERE added(P);
         CREATE SYSTEM s2 EVERY 3 TICKS AS SPAWN Hit(2, r.id, tick()) FROM removed(P) AS r;",
    )
    .unwrap();
    let mut system_last: [Option<u64>; 3] = [None; 3];
    // The removal log: (step, id) of each loss of P, from when s2, which reads it, was made.
    let mut log: Vec<(u64, u64)> = Vec::new();
    let mut tick = 0u64;
    let mut saved: Option<Saved> = None;
    for op_no in 0..160 {
        step += 1;
        let live: Vec<u64> = entities.keys().copied().collect();
        let pick = |rng: &mut Rng| live[rng.below(live.len() as u64) as usize];
        match rng.below(12) {
            0 | 1 => {
                let (m, k, v) = (1 + rng.below(7), rng.below(7), rng.below(3) as i64);
                conn.execute(
                    &format!("UPDATE P SET a = {v} WHERE CAST(id AS INT) % {m} = {}", k % m),
                    (),
                )
                .unwrap();
                for (&id, p) in entities.iter_mut() {
                    if let Some(p) = p.as_mut().filter(|_| id % m == k % m) {
                        if p.a != v {
                            p.a_at = step;
                        }
                        p.a = v;
                    }
                }
            }
            2 => {
                let (m, k) = (1 + rng.below(50), rng.below(50));
                let v = [0.0f32, -0.0, 1.0][rng.below(3) as usize];
                conn.execute(
                    &format!("UPDATE P SET b = {v:?} WHERE CAST(id AS INT) % {m} = {}", k % m),
                    (),
                )
                .unwrap();
                for (&id, p) in entities.iter_mut() {
                    if let Some(p) = p.as_mut().filter(|_| id % m == k % m) {
                        if p.b != v {
                            p.b_at = step;
                        }
                        p.b = v;
                    }
                }
            }
            3 => {
                let n = 1 + rng.below(5);
                let new = all_ids(&conn, &format!("SPAWN P(a => 2, b => 1) FROM range({n})"));
                for id in new {
                    entities.insert(
                        id,
                        Some(Pos {
                            a: 2,
                            b: 1.0,
                            added: step,
                            a_at: step,
                            b_at: step,
                        }),
                    );
                }
            }
            4 => {
                let id = pick(&mut rng);
                conn.execute(&format!("DESPAWN {id}"), ()).unwrap();
                if entities.remove(&id).flatten().is_some() {
                    log.push((step, id));
                }
            }
            5 => {
                let id = pick(&mut rng);
                if entities[&id].is_some() {
                    conn.execute(&format!("DELETE FROM P WHERE id = {id}"), ())
                        .unwrap();
                    log.push((step, id));
                    if conn
                        .query_row(
                            &format!("SELECT count(*) FROM entities WHERE id = {id}"),
                            (),
                            |r| r.get::<_, i64>(0),
                        )
                        .unwrap()
                        == 0
                    {
                        entities.remove(&id);
                    } else {
                        entities.insert(id, None);
                    }
                } else {
                    conn.execute(&format!("INSERT INTO P (id, a, b) VALUES ({id}, 0, 0)"), ())
                        .unwrap();
                    entities.insert(
                        id,
                        Some(Pos {
                            a: 0,
                            b: 0.0,
                            added: step,
                            a_at: step,
                            b_at: step,
                        }),
                    );
                }
            }
            6 => {
                // Moves the row to another table: neither a change nor an addition.
                let id = pick(&mut rng);
                let has: bool = conn
                    .query_row(&format!("SELECT has(T) FROM entities WHERE id = {id}"), (), |r| {
                        r.get(0)
                    })
                    .unwrap();
                let sql = if has {
                    format!("DELETE FROM T WHERE id = {id}")
                } else {
                    format!("INSERT INTO T (id) VALUES ({id})")
                };
                conn.execute(&sql, ()).unwrap();
                if has
                    && conn
                        .query_row(
                            &format!("SELECT count(*) FROM entities WHERE id = {id}"),
                            (),
                            |r| r.get::<_, i64>(0),
                        )
                        .unwrap()
                        == 0
                {
                    entities.remove(&id);
                }
            }
            7 | 8 => {
                let r = rng.below(READERS.len() as u64) as usize;
                let got = ids(&mut readers[r]);
                let want = if r == REMOVED {
                    removed_since(&log, last[r])
                } else {
                    expected(&entities, r, last[r])
                };
                assert_eq!(got, want, "seed {seed} op {op_no}: reader {}", READERS[r]);
                last[r] = Some(step);
            }
            9 => {
                conn.execute("TICK", ()).unwrap();
                tick += 1;
                for sys in [0usize, 1, 2] {
                    if (sys == 0 && !tick.is_multiple_of(2)) || (sys == 2 && !tick.is_multiple_of(3)) {
                        continue;
                    }
                    if sys == 2 {
                        let mut want = removed_since(&log, system_last[2]);
                        want.sort_unstable();
                        let got = all_ids(
                            &conn,
                            &format!(
                                "SELECT Hit.who FROM Hit WHERE Hit.sys = 2 AND Hit.t = {tick} ORDER BY Hit.who"
                            ),
                        );
                        assert_eq!(got, want, "seed {seed} op {op_no}: system s2 at tick {tick}");
                        system_last[2] = Some(step);
                        continue;
                    }
                    // s0 asks changed(P.b): the model's b marks.
                    let want: Vec<u64> = entities
                        .iter()
                        .filter_map(|(&id, p)| {
                            let p = p.as_ref()?;
                            let yes = match (sys, system_last[sys]) {
                                (_, None) => true,
                                (0, Some(l)) => p.b_at > l,
                                (_, Some(l)) => p.added > l,
                            };
                            yes.then_some(id)
                        })
                        .collect();
                    let got = all_ids(
                        &conn,
                        &format!(
                            "SELECT Hit.who FROM Hit WHERE Hit.sys = {sys} AND Hit.t = {tick} ORDER BY Hit.who"
                        ),
                    );
                    assert_eq!(got, want, "seed {seed} op {op_no}: system s{sys} at tick {tick}");
                    system_last[sys] = Some(step);
                }
                // At the tick's end the log drops what s2 has seen.
                if let Some(seen) = system_last[2] {
                    log.retain(|&(s, _)| s > seen);
                }
            }
            10 => {
                if saved.is_none() {
                    conn.execute("BEGIN", ()).unwrap();
                    saved = Some((entities.clone(), last.clone(), system_last, tick, log.clone()));
                }
            }
            _ => {
                if let Some((e, l, s, t, g)) = saved.take() {
                    if rng.below(2) == 0 {
                        conn.execute("COMMIT", ()).unwrap();
                    } else {
                        conn.execute("ROLLBACK", ()).unwrap();
                        (entities, last, system_last, tick, log) = (e, l, s, t, g);
                    }
                }
            }
        }
    }
}
