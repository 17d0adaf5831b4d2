//! Subscriptions (`Connection::subscribe`) against fresh runs of their queries: random
//! worlds, random writes (autocommit, committed and rolled-back transactions, ticks of a
//! system), random queries of every shape (filters, projections, joins through an ENTITY
//! field, GROUP BY with aggregates, DISTINCT, ORDER BY … LIMIT, LEFT JOIN, subqueries).
//! After every write, the batches read so far, added up as bags, must equal the query's
//! result; a write inside a transaction makes no batch before COMMIT, a ROLLBACK none.
//! The queries are of both kinds EXPLAIN SUBSCRIBE names: those kept per entity (a
//! filter and a projection of one entity's components, read again only for the entities
//! a commit changed) and those run again; the writes include statements that fail and
//! are undone. Then each way a row leaves a result, and the ways a subscription ends.

use std::collections::HashMap;
use std::time::Duration;

use ecsql::{Connection, Database, Subscription, Value};

use crate::common::Rng;

type Bag = HashMap<String, i64>;

fn text(values: &[Value]) -> String {
    let v: Vec<String> = values.iter().map(Value::to_string).collect();
    v.join(" ")
}

/// The query's result now, as a bag of rows.
fn fresh(conn: &Connection, sql: &str) -> Bag {
    let mut stmt = conn.prepare(sql).unwrap();
    let mut bag = Bag::new();
    for row in stmt.query(()).unwrap() {
        let row = row.unwrap();
        *bag.entry(text(row.values())).or_default() += 1;
    }
    bag
}

/// Adds every waiting batch to `bag`; how many batches there were.
fn drain(sub: &Subscription, bag: &mut Bag) -> usize {
    let mut batches = 0;
    while let Some(rows) = sub.try_next().unwrap() {
        batches += 1;
        for row in rows {
            let row = row.unwrap();
            let values = row.values();
            let (cols, extra) = values.split_at(values.len() - 2);
            let Value::Int(diff) = extra[1] else {
                panic!("diff is not an INT: {extra:?}");
            };
            assert_ne!(diff, 0, "a batch row with diff 0");
            let n = bag.entry(text(cols)).or_default();
            *n += diff;
            assert!(*n >= 0, "a row's count went below 0: {}", text(cols));
            if *n == 0 {
                bag.remove(&text(cols));
            }
        }
    }
    batches
}

const SCHEMA: &str = "CREATE COMPONENT Health (hp INT);
CREATE COMPONENT Pos (x REAL, y REAL);
CREATE COMPONENT Owner (who ENTITY);
CREATE TAG Hero;
CREATE SYSTEM heal AS UPDATE Health SET hp = Health.hp + 1 WHERE Health.hp < 3;";

const QUERIES: &[&str] = &[
    "SELECT id, Health.hp FROM Health WHERE Health.hp < 5",
    "SELECT Health.hp FROM Health",
    "SELECT Health.hp % 3 AS m FROM Health WHERE has(Hero)",
    "SELECT o.id, h.hp FROM Owner AS o JOIN Health AS h ON h.id = o.who",
    "SELECT Health.hp % 4 AS k, count(*), sum(Health.hp), min(Health.hp), max(Health.hp) FROM Health GROUP BY k",
    "SELECT count(*) FROM Pos",
    "SELECT DISTINCT Health.hp FROM Health",
    "SELECT id, Health.hp FROM Health ORDER BY Health.hp DESC, id LIMIT 3",
    "SELECT p.id, o.who FROM Pos AS p LEFT JOIN Owner AS o ON o.id = p.id",
    "SELECT id FROM Health WHERE Health.hp > (SELECT avg(Health.hp) FROM Health)",
    "SELECT id, Pos.x FROM Pos WHERE Pos.x BETWEEN 1 AND 4 AND NOT has(Hero)",
    "SELECT Pos.x + Health.hp AS s FROM Pos, Health WHERE Pos.y >= 0",
    "SELECT id, Owner.who FROM Owner WHERE Owner.who IS NOT NULL",
    "SELECT id FROM Pos WHERE NOT has(Health) ORDER BY Pos.x",
    "SELECT Health.hp * 0 AS zero FROM Health",
    "SELECT count(Owner.who), min(Owner.who), max(Owner.who) FROM Owner",
    "SELECT Health.hp % 2 AS odd, count(*) AS n FROM Health GROUP BY odd HAVING count(*) > 2",
    "SELECT sum(Health.hp) AS total, count(*) FROM Health WHERE has(Hero)",
    "SELECT avg(Health.hp) FROM Health",
    "SELECT id, Health.hp FROM Health WHERE id = 3",
    "SELECT Health.hp FROM Health WHERE id IN (2, 5, 9)",
    "SELECT id FROM entities WHERE NOT has(Hero)",
    "SELECT o.id, h.hp, p.x FROM Owner AS o JOIN Health AS h ON h.id = o.who JOIN Pos AS p ON p.id = o.id WHERE h.hp > 1",
    "SELECT a.id, b.id FROM Owner AS a JOIN Owner AS b ON a.who = b.who WHERE a.id < b.id",
    "SELECT h.hp % 3 AS k, count(*), max(o.id), avg(h.hp) FROM Owner AS o JOIN Health AS h ON h.id = o.who GROUP BY k",
    "SELECT Health.hp % 2 AS k, avg(Health.hp), count(Health.hp) FROM Health GROUP BY k HAVING avg(Health.hp) > 1.5",
    "SELECT h.hp FROM Health AS h, Owner AS o WHERE o.who = h.id AND has(Hero)",
];

/// Queries subscribed a third of the way in.
const LATE: &[&str] = &[
    "SELECT id, Health.hp + 1 AS h FROM Health WHERE Health.hp > 2",
    "SELECT o.who, p.y FROM Owner AS o JOIN Pos AS p ON p.id = o.who",
    "SELECT Health.hp % 3 AS k, count(*), avg(Health.hp) FROM Health WHERE has(Hero) GROUP BY k",
];

/// Queries subscribed once for each of the values: members of one family, which reads
/// each commit's changes once for all of them and routes each row by its value.
const FAMILIES: &[(&str, &[&str])] = &[
    (
        "SELECT id, Health.hp FROM Health WHERE Health.hp % 3 = ?1",
        &["0", "1", "2", "5"],
    ),
    (
        "SELECT id, Pos.x FROM Pos, Health WHERE Pos.x > 0.5 AND Health.hp = ?1",
        &["0", "1", "2", "3", "4", "5", "6"],
    ),
    ("SELECT id FROM Health WHERE has(Hero) = ?1", &["true", "false"]),
];

fn random_write(rng: &mut Rng, spawned: &mut u64) -> String {
    let e = |rng: &mut Rng, spawned: u64| 1 + rng.next() % (spawned + 3);
    match rng.next() % 13 {
        0 => {
            *spawned += 4;
            format!(
                "SPAWN Health(i + {}), Pos(i * 0.5, 1.0), Owner({}) FROM range(4) AS r(i)",
                rng.next() % 6,
                e(rng, *spawned)
            )
        }
        1 => format!(
            "UPDATE Health SET hp = Health.hp - 2 WHERE CAST(id AS INT) % 3 = {}",
            rng.next() % 3
        ),
        2 => format!("DESPAWN {}", e(rng, *spawned)),
        3 => format!("INSERT INTO Hero (id) VALUES ({})", e(rng, *spawned)),
        4 => format!("DELETE FROM Health WHERE id = {}", e(rng, *spawned)),
        5 => format!(
            "UPDATE Owner SET who = {} WHERE id = {}",
            e(rng, *spawned),
            e(rng, *spawned)
        ),
        6 => "TICK".to_owned(),
        7 => format!("UPDATE Pos SET x = Pos.x + 1.5 WHERE id > {}", e(rng, *spawned)),
        8 => format!("INSERT INTO Health (id, hp) VALUES ({}, 2)", e(rng, *spawned)),
        // Fails (and is undone) when some hp is 2.
        10 => "UPDATE Health SET hp = 10 / (Health.hp - 2)".to_owned(),
        11 => format!("UPDATE Pos SET y = -1.0 WHERE id = {}", e(rng, *spawned)),
        12 => "DESPAWN FROM Health WHERE Health.hp < 0".to_owned(),
        _ => format!("DELETE FROM Hero WHERE id < {}", e(rng, *spawned)),
    }
}

fn run(seed: u64, steps: usize) -> Result<(), String> {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute("SPAWN Health(i), Pos(i * 1.0, 0.0) FROM range(6) AS r(i)", ())
        .unwrap();
    let mut spawned = 6;
    let mut subs: Vec<(Subscription, Bag, String)> = QUERIES
        .iter()
        .map(|q| (conn.subscribe(q, ()).unwrap(), Bag::new(), (*q).to_owned()))
        .collect();
    for (sql, values) in FAMILIES {
        for v in *values {
            let value = match *v {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                n => Value::Int(n.parse().unwrap()),
            };
            let sub = conn.subscribe(sql, (value,)).unwrap();
            subs.push((sub, Bag::new(), sql.replace("?1", v)));
        }
    }
    let mut rng = Rng(seed);
    let mut done = 0;
    for step in 0..steps {
        if step == steps / 3 {
            // Subscribed while the change log follows their components: the next commit
            // reads only what changed.
            for q in LATE {
                subs.push((conn.subscribe(q, ()).unwrap(), Bag::new(), (*q).to_owned()));
            }
            for (sub, bag, _) in &mut subs {
                drain(sub, bag);
            }
        }
        let in_tx = rng.next().is_multiple_of(5);
        if in_tx {
            conn.execute("BEGIN", ()).unwrap();
        }
        let writes = if in_tx { 1 + rng.next() % 3 } else { 1 };
        for _ in 0..writes {
            let sql = random_write(&mut rng, &mut spawned);
            // A write may fail (an id that is gone): it changes nothing.
            if conn.execute(&sql, ()).is_ok() {
                done += 1;
            }
            for (sub, bag, q) in &mut subs {
                let batches = drain(sub, bag);
                if in_tx && batches > 0 && step > 0 {
                    return Err(format!("step {step}: a batch inside a transaction for {q}"));
                }
                if batches > 1 && step > 0 {
                    return Err(format!("step {step}: {batches} batches for one commit of {q}"));
                }
            }
        }
        if in_tx {
            let end = if rng.next().is_multiple_of(2) {
                "COMMIT"
            } else {
                "ROLLBACK"
            };
            conn.execute(end, ()).unwrap();
        }
        for (sub, bag, q) in &mut subs {
            if drain(sub, bag) > 1 {
                return Err(format!("step {step}: more than one batch for one COMMIT of {q}"));
            }
            let now = fresh(&conn, q);
            if *bag != now {
                return Err(format!(
                    "step {step}: {q}\n  batches add up to {bag:?}\n  the query gives {now:?}"
                ));
            }
        }
    }
    if done < steps / 2 {
        return Err(format!("only {done} of the writes succeeded"));
    }
    Ok(())
}

#[test]
fn batches_add_up_to_the_result_after_every_commit() {
    for seed in 1..=4 {
        if let Err(e) = run(seed, 120) {
            panic!("seed {seed}: {e}");
        }
    }
}

/// The rows of one batch, sorted, without the tick.
fn batch(sub: &Subscription) -> Vec<String> {
    let rows = sub.next(Duration::from_secs(2)).unwrap().expect("a batch");
    let mut out: Vec<String> = rows
        .map(|r| {
            let r = r.unwrap();
            let v = r.values();
            let (cols, extra) = v.split_at(v.len() - 2);
            format!("{} {}", text(cols), extra[1])
        })
        .collect();
    out.sort();
    out
}

#[test]
fn rows_leave_by_update_despawn_detach_and_join_key() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Health (hp INT); CREATE COMPONENT Owner (who ENTITY);
         SPAWN Health(1); SPAWN Health(2);
         SPAWN Owner(1); SPAWN Owner(2);",
    )
    .unwrap();
    let low = conn
        .subscribe("SELECT id, Health.hp FROM Health WHERE Health.hp < 5", ())
        .unwrap();
    let owned = conn
        .subscribe(
            "SELECT o.id, h.hp FROM Owner AS o JOIN Health AS h ON h.id = o.who",
            (),
        )
        .unwrap();
    assert_eq!(batch(&low), ["1 1 1", "2 2 1"]);
    assert_eq!(batch(&owned), ["3 1 1", "4 2 1"]);
    // A projected value changes: -old +new.
    conn.execute("UPDATE Health SET hp = 3 WHERE id = 1", ()).unwrap();
    assert_eq!(batch(&low), ["1 1 -1", "1 3 1"]);
    assert_eq!(batch(&owned), ["3 1 -1", "3 3 1"]);
    // Out of the filter.
    conn.execute("UPDATE Health SET hp = 9 WHERE id = 2", ()).unwrap();
    assert_eq!(batch(&low), ["2 2 -1"]);
    assert_eq!(batch(&owned), ["4 2 -1", "4 9 1"]);
    // The join key moves.
    conn.execute("UPDATE Owner SET who = 2 WHERE id = 3", ()).unwrap();
    assert!(low.try_next().unwrap().is_none(), "Health did not change");
    assert_eq!(batch(&owned), ["3 3 -1", "3 9 1"]);
    // Detached, despawned.
    conn.execute("DELETE FROM Owner WHERE id = 4", ()).unwrap();
    assert_eq!(batch(&owned), ["4 9 -1"]);
    conn.execute("DESPAWN 1", ()).unwrap();
    assert_eq!(batch(&low), ["1 3 -1"]);
    // A write that changes nothing the query reads makes no batch.
    conn.execute("UPDATE Owner SET who = 2 WHERE id = 3", ()).unwrap();
    assert!(owned.try_next().unwrap().is_none());
}

#[test]
fn a_transaction_makes_one_batch_at_commit_and_none_at_rollback() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(1);")
        .unwrap();
    let all = conn.subscribe("SELECT Health.hp FROM Health", ()).unwrap();
    assert_eq!(batch(&all), ["1 1"]);
    conn.execute_batch(
        "BEGIN; SPAWN Health(2); SPAWN Health(2); UPDATE Health SET hp = 5 WHERE Health.hp = 1;",
    )
    .unwrap();
    assert!(all.try_next().unwrap().is_none(), "nothing before COMMIT");
    conn.execute("COMMIT", ()).unwrap();
    assert_eq!(batch(&all), ["1 -1", "2 2", "5 1"]);
    conn.execute_batch("BEGIN; DESPAWN 1; ROLLBACK;").unwrap();
    assert!(all.try_next().unwrap().is_none(), "a ROLLBACK makes no batch");
    assert!(
        conn.execute_batch("BEGIN").is_ok() && conn.subscribe("SELECT 1", ()).is_err(),
        "subscribing inside a transaction is refused"
    );
    conn.execute("ROLLBACK", ()).unwrap();
}

#[test]
fn a_subscription_ends_when_its_query_stops_binding() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(1);")
        .unwrap();
    let all = conn.subscribe("SELECT Health.hp FROM Health", ()).unwrap();
    conn.execute("SPAWN Health(2)", ()).unwrap();
    conn.execute("DROP COMPONENT Health", ()).unwrap();
    assert_eq!(batch(&all), ["1 1"]);
    assert_eq!(batch(&all), ["2 1"]);
    let end = all.try_next().unwrap_err().to_string();
    assert!(end.contains("no longer runs") && end.contains("Health"), "{end}");
    assert!(conn.subscribe("SPAWN Health(1)", ()).is_err(), "only queries");
    // Made again with other fields in one transaction: the query binds, to other
    // columns, which batches of the first cannot carry.
    conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(1);")
        .unwrap();
    for sql in ["SELECT * FROM Health", "SELECT * FROM Health LIMIT 10"] {
        let all = conn.subscribe(sql, ()).unwrap();
        assert_eq!(batch(&all).len(), 1);
        conn.execute_batch(
            "BEGIN; DROP COMPONENT Health; CREATE COMPONENT Health (hp TEXT, mp INT); COMMIT;",
        )
        .unwrap();
        let end = all.try_next().unwrap_err().to_string();
        assert!(
            end.contains(
                "its columns are now (id ENTITY, Health.hp TEXT, Health.mp INT), not (id ENTITY, Health.hp INT)"
            ),
            "{sql}: {end}"
        );
        conn.execute_batch("DROP COMPONENT Health; CREATE COMPONENT Health (hp INT); SPAWN Health(1);")
            .unwrap();
    }
}

#[test]
fn events_the_columnar_door_and_load_make_batches_too() {
    let folder = crate::common::Folder::new("live");
    let file = folder.file("slot.ecsql").to_string_lossy().into_owned();
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Health (hp INT); CREATE EVENT Hit (dmg INT);
         SPAWN Health(1);",
    )
    .unwrap();
    let hits = conn.subscribe("SELECT Hit.dmg FROM Hit", ()).unwrap();
    let all = conn.subscribe("SELECT Health.hp FROM Health", ()).unwrap();
    assert!(batch(&hits).is_empty(), "no event yet");
    assert_eq!(batch(&all), ["1 1"]);
    conn.execute("INSERT INTO Hit (dmg) VALUES (5), (5)", ()).unwrap();
    assert_eq!(batch(&hits), ["5 2"]);
    conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    conn.with_world_mut(|w| {
        let id = w.component_by_name("Health").unwrap().id();
        let field = w.field(id, "hp").unwrap();
        let e = ecsql::Entity::from_bits(1).unwrap();
        w.set(e, field, Value::Int(7)).unwrap();
    })
    .unwrap();
    assert_eq!(batch(&all), ["1 -1", "7 1"]);
    conn.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
    assert_eq!(batch(&all), ["1 1", "7 -1"]);
    assert!(
        hits.try_next().unwrap().is_none(),
        "the events loaded are the ones saved"
    );
}

#[test]
fn batches_name_the_tick_and_a_slow_reader_is_ended_after_its_batches() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Health (hp INT); SPAWN Health(0);
         CREATE SYSTEM up AS UPDATE Health SET hp = Health.hp + 1;",
    )
    .unwrap();
    let all = conn.subscribe("SELECT Health.hp FROM Health", ()).unwrap();
    // Waiting for ever finds the first batch waiting (and the deadline overflows not).
    let first = all.next(Duration::MAX).unwrap().expect("the first batch");
    assert_eq!(first.count(), 1);
    // Each tick of TICK 3 is a commit: a batch each, naming its tick.
    conn.execute("TICK 3", ()).unwrap();
    for tick in 1..=3_i64 {
        let rows = all
            .next(Duration::from_secs(10))
            .unwrap()
            .expect("a batch per tick");
        let got: Vec<(i64, i64, i64)> = rows
            .map(|r| {
                let r = r.unwrap();
                (r.get(0).unwrap(), r.get(1).unwrap(), r.get(2).unwrap())
            })
            .collect();
        assert_eq!(got, [(tick - 1, tick, -1), (tick, tick, 1)], "tick {tick}");
    }
    assert!(all.try_next().unwrap().is_none());
    // Waiting from inside the database's own hold would wait for nothing.
    let inside = conn
        .with_world(|_| all.next(Duration::from_secs(5)).is_err())
        .unwrap();
    assert!(inside, "next is refused where no commit can come");
    // A reader that falls behind gets the batches waiting merged: fewer, and exact.
    assert_eq!(
        conn.query_row("PRAGMA max_pending_batches", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        ecsql::DEFAULT_MAX_PENDING as i64
    );
    conn.execute("PRAGMA max_pending_batches = 4", ()).unwrap();
    let mut kept = Bag::new();
    kept.insert(
        format!(
            "{}",
            conn.query_row("SELECT Health.hp FROM Health", (), |r| r.get::<_, i64>(0))
                .unwrap()
        ),
        1,
    );
    for _ in 0..11 {
        conn.execute("UPDATE Health SET hp = Health.hp + 1", ()).unwrap();
    }
    conn.execute("SPAWN Health(-1)", ()).unwrap();
    conn.execute("DESPAWN FROM Health WHERE Health.hp = -1", ())
        .unwrap();
    let batches = drain(&all, &mut kept);
    // 13 commits: the fifth waiting merges all five into one, the ninth again, the
    // thirteenth again: one merged batch is left.
    assert_eq!(batches, 1, "the waiting batches are merged past the limit");
    assert_eq!(kept, fresh(&conn, "SELECT Health.hp FROM Health"));
    conn.execute("UPDATE Health SET hp = 0", ()).unwrap();
    let rows = all.try_next().unwrap().expect("a batch");
    let ticks: Vec<i64> = rows.map(|r| r.unwrap().get(1).unwrap()).collect();
    assert_eq!(ticks.len(), 2, "-old +new");
    let merged_at: i64 = conn.query_row("SELECT tick()", (), |r| r.get(0)).unwrap();
    assert!(ticks.iter().all(|&t| t == merged_at));
    let zero = conn
        .execute("PRAGMA max_pending_batches = 0", ())
        .unwrap_err()
        .to_string();
    assert!(zero.contains("at least 1"), "{zero}");
}

#[test]
fn waiting_batches_merge_into_one_whose_rows_that_cancel_are_gone() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(1); PRAGMA max_pending_batches = 2;")
        .unwrap();
    let all = conn.subscribe("SELECT Health.hp FROM Health", ()).unwrap();
    // Waiting: the first batch, then a SPAWN of 5, which makes three: merged.
    conn.execute("SPAWN Health(5)", ()).unwrap();
    conn.execute("DESPAWN FROM Health WHERE Health.hp = 5", ())
        .unwrap();
    assert_eq!(batch(&all), ["1 1"], "5 came and went: its diffs sum to 0");
    assert!(all.try_next().unwrap().is_none());
}

#[test]
fn a_file_database_ticks_one_batch_a_tick() {
    let folder = crate::common::Folder::new("live-file");
    let db = Database::open(folder.file("game.ecsql")).unwrap();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Health (hp INT); SPAWN Health(0);
         CREATE SYSTEM up AS UPDATE Health SET hp = Health.hp + 1;",
    )
    .unwrap();
    let all = conn.subscribe("SELECT Health.hp FROM Health", ()).unwrap();
    assert_eq!(batch(&all), ["0 1"]);
    assert_eq!(conn.tick(2).unwrap(), 2);
    assert_eq!(batch(&all), ["0 -1", "1 1"]);
    assert_eq!(batch(&all), ["1 -1", "2 1"]);
    assert!(all.try_next().unwrap().is_none());
}

#[test]
fn the_same_query_subscribed_twice_is_kept_once_and_each_gets_every_batch() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(1); SPAWN Health(8);")
        .unwrap();
    let sql = "SELECT Health.hp FROM Health WHERE Health.hp < ?1";
    let a = conn.subscribe(sql, (5,)).unwrap();
    assert_eq!(batch(&a), ["1 1"]);
    conn.execute("UPDATE Health SET hp = 2 WHERE Health.hp = 1", ())
        .unwrap();
    // The second starts from the result as it is now, not as the first one began.
    let b = conn.subscribe(&format!("SUBSCRIBE {sql}"), (5,)).unwrap();
    let other = conn.subscribe(sql, (10,)).unwrap();
    assert_eq!(batch(&b), ["2 1"]);
    assert_eq!(batch(&other), ["2 1", "8 1"]);
    assert_eq!(batch(&a), ["1 -1", "2 1"]);
    conn.execute("UPDATE Health SET hp = 3 WHERE Health.hp = 8", ())
        .unwrap();
    assert_eq!(batch(&a), ["3 1"]);
    assert_eq!(batch(&b), ["3 1"]);
    assert_eq!(batch(&other), ["3 1", "8 -1"]);
    drop(a);
    conn.execute("DESPAWN FROM Health WHERE Health.hp = 2", ())
        .unwrap();
    assert_eq!(batch(&b), ["2 -1"]);
    assert_eq!(batch(&other), ["2 -1"]);
}

#[test]
fn subscribe_takes_one_query_and_a_statement_run_refuses_subscribe() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT Health (hp INT);").unwrap();
    let refused = |sql: &str| conn.subscribe(sql, ()).map(|_| ()).unwrap_err().to_string();
    assert!(refused("SELECT 1; SELECT 2").contains("more than one statement"));
    assert!(refused("  ").contains("holds none"));
    assert!(refused("SUBSCRIBE DESPAWN 1").contains("expected a query"));
    assert!(refused("UPDATE Health SET hp = 1").contains("not to UPDATE"));
    let run = conn.execute("SUBSCRIBE SELECT 1", ()).unwrap_err().to_string();
    assert!(run.contains("Connection::subscribe"), "{run}");
    let explained: Vec<String> = conn
        .prepare("EXPLAIN SUBSCRIBE SELECT Health.hp FROM Health")
        .unwrap()
        .query(())
        .unwrap()
        .map(|r| r.unwrap().get::<_, String>(0).unwrap())
        .collect();
    assert!(
        explained[0].starts_with("Subscription kept per entity"),
        "{explained:?}"
    );
    assert!(explained[1].starts_with("  Project Health.hp"), "{explained:?}");
    let analyzed = conn
        .execute("EXPLAIN ANALYZE SUBSCRIBE SELECT 1", ())
        .unwrap_err()
        .to_string();
    assert!(analyzed.contains("not SUBSCRIBE"), "{analyzed}");
}

#[test]
fn an_avg_of_ints_stays_what_a_run_gives_past_exact_float_sums() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT G (k INT, v INT); SPAWN G(1, 1); SPAWN G(2, 1);")
        .unwrap();
    let queries = [
        "SELECT avg(G.v) FROM G",
        "SELECT G.k, avg(G.v), count(*) FROM G GROUP BY G.k",
    ];
    let subs: Vec<_> = queries.iter().map(|q| conn.subscribe(q, ()).unwrap()).collect();
    let mut bags = vec![Bag::new(); queries.len()];
    // Kept per group while exact; then, in one commit, group 1 empties as group 2 passes
    // 2^53, where a run adds its values as floats in the order it meets them (2^53 + 1 +
    // 1 is 2^53 that way): the query is run again from then on, its first comparison
    // with the rows as they were at the commit before (group 1's among them).
    for write in [
        "UPDATE G SET v = 4 WHERE G.k = 2",
        "SPAWN G(2, 3)",
        "UPDATE G SET k = 2, v = 9007199254740992 WHERE G.k = 1",
        "SPAWN G(2, 1)",
        "SPAWN G(3, -9007199254740991)",
        "DESPAWN FROM G WHERE G.v > 100",
        "SPAWN G(1, 5)",
    ] {
        conn.execute(write, ()).unwrap();
        for ((sub, bag), q) in subs.iter().zip(&mut bags).zip(queries) {
            drain(sub, bag);
            assert_eq!(*bag, fresh(&conn, q), "after {write}: {q}");
        }
    }
    // Subscribed past 2^53 (the large value met first): run again from the first batch.
    conn.execute_batch("SPAWN G(4, 9007199254740992); SPAWN G(4, 1); SPAWN G(4, 1);")
        .unwrap();
    let (sub, mut bag) = (conn.subscribe(queries[1], ()).unwrap(), Bag::new());
    conn.execute("SPAWN G(4, 1)", ()).unwrap();
    drain(&sub, &mut bag);
    assert_eq!(bag, fresh(&conn, queries[1]));
}

#[test]
fn subscriptions_that_differ_in_a_constant_come_and_go_apart() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT Team (n INT); SPAWN Team(i % 4) FROM range(12) AS r(i);")
        .unwrap();
    let sql = "SELECT id, Team.n FROM Team WHERE Team.n = ?1";
    let mut subs: Vec<Option<(Subscription, Bag)>> = (0..4)
        .map(|k| Some((conn.subscribe(sql, (k,)).unwrap(), Bag::new())))
        .collect();
    let check = |subs: &mut Vec<Option<(Subscription, Bag)>>, after: &str| {
        for (k, sub) in subs.iter_mut().enumerate() {
            if let Some((sub, bag)) = sub {
                drain(sub, bag);
                let now = fresh(&conn, &sql.replace("?1", &k.to_string()));
                assert_eq!(*bag, now, "after {after}: team {k}");
            }
        }
    };
    check(&mut subs, "subscribing");
    for (i, write) in [
        "UPDATE Team SET n = (Team.n + 1) % 4 WHERE CAST(id AS INT) % 3 = 0",
        "drop 2",
        "UPDATE Team SET n = 2 WHERE CAST(id AS INT) < 5",
        "again 2",
        "UPDATE Team SET n = 1 WHERE CAST(id AS INT) > 9",
        "DESPAWN FROM Team WHERE Team.n = 2",
        "SPAWN Team(2) FROM range(3)",
    ]
    .into_iter()
    .enumerate()
    {
        match write {
            "drop 2" => subs[2] = None,
            "again 2" => subs[2] = Some((conn.subscribe(sql, (2,)).unwrap(), Bag::new())),
            sql => {
                conn.execute(sql, ()).unwrap();
            }
        }
        check(&mut subs, &format!("step {i}, {write}"));
    }
}
