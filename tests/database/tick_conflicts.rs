//! The conflict table of a tick, checked against ticks. Each seed makes random components
//! (dense and sparse, with tags), entities and events, and systems of every statement
//! kind (UPDATE with FROM, WHERE, subqueries, `changed()`, `random()`; SPAWN; DESPAWN;
//! attaching and detaching tags; emitting and reading events; `removed()`; WHEN).
//! EXPLAIN TICK names the waves of systems that may run at the same time; any order that
//! runs the waves one after another, in any order within each, must give the declared
//! order's tick. So a second database makes the same systems in such an order (each wave's
//! systems last first) and both tick once: they must both succeed or both fail, and leave
//! the same world, byte for byte (values, ids, tables, events and their rows' order). A
//! pair the table wrongly calls independent shows up as a difference.
//!
//! Then the executor: per seed, systems of one UPDATE (the kind that runs together) and
//! Rust systems that declare the field they write, mixed with every other kind, with
//! random clauses (phases, BEFORE/AFTER, EVERY, WHEN,
//! two-statement bodies), ticked 100 times by a database that runs them one after another
//! and by one that runs together those it may (`tick_threads = 2`, however few the rows):
//! each tick must end the same way (the same error, naming the first failing system in
//! run order) and leave the same world, change marks, removal logs and write tick. A
//! failed tick is undone whole, so the system it names is then disabled in both and the
//! ticks go on.
//!
//! `ECSQL_SEED=N` replays one seed; `ECSQL_TICK_SEEDS=N` runs N.

use ecsql::{Connection, Database};

use crate::common::{Rng, seeds};

trait Draw {
    fn below(&mut self, n: u64) -> u64;
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str;
    fn chance(&mut self, percent: u64) -> bool;
}

impl Draw for Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const SCHEMA: &str = "CREATE COMPONENT P (x INT, y INT);
CREATE COMPONENT Q (a INT, b INT);
CREATE COMPONENT H (hp INT);
CREATE COMPONENT S (v INT) WITH (storage = sparse);
CREATE COMPONENT R (r REAL, s REAL);
CREATE TAG T1;
CREATE TAG T2;
CREATE EVENT E1 (n INT);
CREATE EVENT E2 (who ENTITY);";

/// Each component's fields.
const FIELDS: [(&str, &[&str]); 4] = [
    ("P", &["x", "y"]),
    ("Q", &["a", "b"]),
    ("H", &["hp"]),
    ("S", &["v"]),
];

/// The set-up: the schema, entities of random components and a few events.
fn setup(rng: &mut Rng) -> String {
    let mut sql = String::from(SCHEMA);
    for _ in 0..(10 + rng.below(30)) {
        let mut parts = Vec::new();
        for (c, fields) in FIELDS {
            if rng.chance(45) {
                let values: Vec<String> = fields.iter().map(|_| rng.below(10).to_string()).collect();
                parts.push(format!("{c}({})", values.join(", ")));
            }
        }
        // R's REAL fields take the UPDATEs that cannot fail, which write as they compute.
        if rng.chance(45) {
            parts.push(format!("R({}, {})", rng.below(10), rng.below(4)));
        }
        for tag in ["T1", "T2"] {
            if rng.chance(30) {
                parts.push(tag.to_owned());
            }
        }
        if parts.is_empty() {
            parts.push("H(1)".to_owned());
        }
        sql.push_str(&format!("\nSPAWN {};", parts.join(", ")));
    }
    sql.push_str("\nINSERT INTO E1 (n) VALUES (1), (2), (3);");
    sql
}

/// A component and one of its fields.
fn field(rng: &mut Rng) -> (&'static str, &'static str) {
    let (c, fields) = FIELDS[rng.below(FIELDS.len() as u64) as usize];
    (c, fields[rng.below(fields.len() as u64) as usize])
}

/// A condition on the rows of `c` (which may name `other`, when the statement joins it).
fn condition(rng: &mut Rng, c: &str, f: &str) -> String {
    match rng.below(6) {
        0 => format!(" WHERE has({})", rng.pick(&["T1", "T2"])),
        1 => format!(" WHERE NOT has({})", rng.pick(&["T1", "T2"])),
        2 => format!(" WHERE {c}.{f} > {}", rng.below(8)),
        3 => format!(" WHERE changed({c}.{f})"),
        4 => format!(" WHERE has(T1) AND {c}.{f} < {}", rng.below(8)),
        _ => String::new(),
    }
}

/// One statement a system runs.
fn statement(rng: &mut Rng) -> String {
    let (c, f) = field(rng);
    match rng.below(12) {
        0..=3 => {
            let (d, g) = field(rng);
            let value = match rng.below(6) {
                0 => format!("{c}.{f} + 1"),
                1 => format!("{c}.{f} + (SELECT count(*) FROM {d})"),
                2 => format!("{c}.{f} + CAST(random() * 4 AS INT)"),
                3 => format!("{c}.{f} + (SELECT count(*) FROM E1)"),
                4 => format!("{c}.{f} % 7 + (SELECT count(*) FROM removed({d}))"),
                _ if d != c => {
                    return format!(
                        "UPDATE {c} SET {f} = {c}.{f} - {d}.{g} FROM {d}{}",
                        condition(rng, d, g)
                    );
                }
                _ => format!("{c}.{f} * 2 % 11"),
            };
            format!("UPDATE {c} SET {f} = {value}{}", condition(rng, c, f))
        }
        4 => format!(
            "INSERT INTO E1 (n) SELECT {c}.{f} FROM {c}{}",
            condition(rng, c, f)
        ),
        5 => format!("INSERT INTO E2 (who) SELECT id FROM {c}{}", condition(rng, c, f)),
        6 => format!("UPDATE {c} SET {f} = {c}.{f} + 1 FROM E2 WHERE E2.who = id"),
        7 => {
            let tag = rng.pick(&["T1", "T2", ""]);
            let tag = if tag.is_empty() {
                String::new()
            } else {
                format!(", {tag}")
            };
            let (d, _) = field(rng);
            let more = if d != c && d != "S" && c != "S" {
                let fields = FIELDS.iter().find(|(n, _)| *n == d).map_or(1, |(_, f)| f.len());
                format!(", {d}({})", vec!["1"; fields].join(", "))
            } else {
                String::new()
            };
            let fields = FIELDS.iter().find(|(n, _)| *n == c).map_or(1, |(_, f)| f.len());
            format!("SPAWN {c}({}){more}{tag}", vec!["2"; fields].join(", "))
        }
        8 => format!("DESPAWN FROM {c} WHERE {c}.{f} > {}", 5 + rng.below(6)),
        9 => {
            let tag = rng.pick(&["T1", "T2"]);
            format!(
                "INSERT INTO {tag} (id) SELECT id FROM {c} WHERE {c}.{f} < {} AND NOT has({tag})",
                rng.below(6)
            )
        }
        10 => {
            let tag = rng.pick(&["T1", "T2"]);
            format!(
                "DELETE FROM {tag} WHERE id IN (SELECT id FROM {c} WHERE {c}.{f} > {})",
                rng.below(8)
            )
        }
        _ => format!("SELECT count(*) FROM {c}{}", condition(rng, c, f)),
    }
}

/// `CREATE SYSTEM` texts, by name, in the declared order.
fn systems(rng: &mut Rng) -> Vec<(String, String)> {
    (0..(3 + rng.below(8)))
        .map(|i| {
            let name = format!("s{i}");
            let when = if rng.chance(15) {
                format!(
                    " WHEN ((SELECT count(*) FROM {}) > {})",
                    field(rng).0,
                    rng.below(10)
                )
            } else {
                String::new()
            };
            let body = if rng.chance(30) {
                format!("BEGIN {}; {}; END", statement(rng), statement(rng))
            } else {
                statement(rng)
            };
            let text = format!("CREATE SYSTEM {name}{when} AS {body}");
            (name, text)
        })
        .collect()
}

fn database(setup: &str, systems: &[&(String, String)]) -> Result<Connection, String> {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(setup).map_err(|e| format!("set-up: {e}"))?;
    for (name, text) in systems {
        match text.strip_prefix(RUST) {
            Some(rest) => {
                let (clauses, field) = rest.split_once(" | ").unwrap_or(("", rest));
                bump(&conn, name, clauses, field);
            }
            None => {
                conn.execute(text, ()).map_err(|e| format!("{text}: {e}"))?;
            }
        }
    }
    Ok(conn)
}

/// A system text that stands for a Rust system registered with its access:
/// `RUST <clauses> | Component.field` or `RUST <clauses> | Component.field <- Other.field`
/// (`bump`).
const RUST: &str = "RUST ";

/// Registers the Rust system `name`, which adds 1 to `field` (`C.f`, an INT) of every
/// entity through a view that declares it writes it; or, for `C.f <- D.g`, adds `D.g` to
/// `C.f` of every entity holding both (declaring it reads `D.g`), and fails when some
/// `D.g` is 9.
fn bump(conn: &Connection, name: &str, clauses: &str, field: &str) {
    let (written, read) = match field.split_once(" <- ") {
        Some((w, r)) => (w, Some(r)),
        None => (field, None),
    };
    let mut access = ecsql::SystemAccess::new().writes(written);
    if let Some(read) = read {
        access = access.reads(read);
    }
    let split = |f: &str| {
        let (c, f) = f.split_once('.').unwrap();
        (c.to_owned(), f.to_owned())
    };
    let (wc, wf) = split(written);
    let read = read.map(split);
    conn.create_system_with_access(name, clauses.trim(), access, move |view, _| {
        let c = view.component_by_name(&wc)?.id();
        let f = view.field(c, &wf)?;
        let Some((rc, rf)) = &read else {
            for table in view.matching_tables(&ecsql::Filter::new().with(c))? {
                if let Some(mut table) = view.table_mut(table) {
                    for v in table.slice_mut::<i64>(f)? {
                        *v = v.wrapping_add(1) % 1000;
                    }
                }
            }
            return Ok(());
        };
        let d = view.component_by_name(rc)?.id();
        let g = view.field(d, rf)?;
        for table in view.matching_tables(&ecsql::Filter::new().with(c).with(d))? {
            let mut table = view.table_mut(table).unwrap();
            let [f, g] = table.columns([f, g])?;
            let (f, g) = (f.into_mut::<i64>()?, g.into_ref::<i64>()?);
            if g.contains(&9) {
                return Err("a 9 was read".into());
            }
            for (f, g) in f.iter_mut().zip(g) {
                *f = f.wrapping_add(*g) % 1000;
            }
        }
        Ok(())
    })
    .unwrap();
}

/// The waves EXPLAIN TICK names: `May run at the same time: a, b; then c`.
fn waves(conn: &Connection) -> Vec<Vec<String>> {
    let mut explain = conn.prepare("EXPLAIN TICK").unwrap();
    let lines: Vec<String> = explain
        .query(())
        .unwrap()
        .map(|r| r.unwrap().get::<_, String>(0).unwrap())
        .collect();
    let Some(line) = lines
        .iter()
        .find_map(|l| l.strip_prefix("May run at the same time: "))
    else {
        return Vec::new();
    };
    line.split("; then ")
        .map(|wave| wave.split(", ").map(str::to_owned).collect())
        .collect()
}

fn tick(conn: &Connection) -> (Result<u64, String>, String) {
    let ran = conn.tick(1).map_err(|e| e.to_string());
    let digest = conn.with_world(|w| w.digest()).unwrap();
    (ran, digest)
}

/// What one case showed: its systems ran in another order than the declared one, and
/// whether the tick failed (alike in both orders).
struct Checked {
    reordered: bool,
    failed: bool,
}

/// Ticks the systems once in the declared order and once in the waves' order (each wave's
/// systems last first): both must fail or both succeed, and leave the same world. `None`
/// when a system does not bind.
fn check(setup: &str, systems: &[(String, String)]) -> Option<Result<Checked, String>> {
    let declared: Vec<&(String, String)> = systems.iter().collect();
    let first = database(setup, &declared).ok()?;
    let waves = waves(&first);
    let mut other_order: Vec<&(String, String)> = Vec::new();
    for wave in &waves {
        for name in wave.iter().rev() {
            other_order.push(systems.iter().find(|(n, _)| n == name)?);
        }
    }
    let script = || {
        let texts: Vec<&str> = declared.iter().map(|(_, t)| t.as_str()).collect();
        format!("{setup}\n{};\n-- waves: {waves:?}", texts.join(";\n"))
    };
    if other_order.len() != systems.len() {
        return Some(Err(format!("a system is in no wave\n{}", script())));
    }
    let reordered = other_order.iter().zip(&declared).any(|(a, b)| a.0 != b.0);
    let second = match database(setup, &other_order) {
        Ok(conn) => conn,
        Err(e) => return Some(Err(e)),
    };
    let (ran_first, world_first) = tick(&first);
    let (ran_second, world_second) = tick(&second);
    if ran_first.is_ok() != ran_second.is_ok() {
        return Some(Err(format!(
            "{ran_first:?} in the declared order, {ran_second:?} in the waves' order\n{}",
            script()
        )));
    }
    if world_first != world_second {
        return Some(Err(format!(
            "the worlds differ after a tick in the waves' order\n{}",
            script()
        )));
    }
    Some(Ok(Checked {
        reordered,
        failed: ran_first.is_err(),
    }))
}

fn named(systems: &[&str]) -> Vec<(String, String)> {
    systems
        .iter()
        .enumerate()
        .map(|(i, body)| (format!("s{i}"), format!("CREATE SYSTEM s{i} AS {body}")))
        .collect()
}

#[test]
fn a_tick_in_any_order_the_conflict_table_allows_is_the_declared_order_s_tick() {
    let mut reordered = 0;
    let mut failed = 0;
    for seed in seeds("ECSQL_TICK_SEEDS", 300) {
        let mut rng = Rng(seed);
        let setup = setup(&mut rng);
        let systems = systems(&mut rng);
        match check(&setup, &systems) {
            // A system that does not bind (a type that does not fit) is refused alike.
            None => {}
            Some(Ok(checked)) => {
                reordered += usize::from(checked.reordered);
                failed += usize::from(checked.failed);
            }
            Some(Err(e)) => panic!("seed {seed}: {e}"),
        }
    }
    // The seeds must exercise the table: orders that differ from the declared one.
    if std::env::var_os("ECSQL_SEED").is_none() {
        assert!(
            reordered > 100,
            "only {reordered} seeds ran their systems in another order"
        );
        assert!(failed < 100, "{failed} ticks failed");
    }
}

#[test]
fn tables_a_spawn_of_the_tick_makes_are_judged_as_if_they_were_there() {
    // No entity has both tags yet: the two UPDATEs meet only in the table the SPAWN makes,
    // so they keep their order ((1 + 1) * 2, not 1 * 2 + 1).
    let setup = format!("{SCHEMA}\nSPAWN H(1), T1; SPAWN H(1), T2;");
    let systems = named(&[
        "SPAWN H(1), T1, T2",
        "UPDATE H SET hp = H.hp + 1 WHERE has(T1)",
        "UPDATE H SET hp = H.hp * 2 WHERE has(T2)",
    ]);
    let checked = check(&setup, &systems).expect("the systems bind");
    assert!(checked.is_ok(), "{}", checked.err().unwrap_or_default());
    // Without the SPAWN, the two do not meet: they share the first wave.
    let conn = database(&setup, &systems[1..].iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(waves(&conn), [vec!["s1".to_owned(), "s2".to_owned()]]);
}

/// A system for the parallel ticks: mostly one UPDATE of one component (the systems that
/// run together), with the other kinds between them.
fn update_system(rng: &mut Rng) -> String {
    if rng.chance(25) {
        return statement(rng);
    }
    if rng.chance(35) {
        let tag = rng.pick(&["T1", "T2"]);
        return match rng.below(4) {
            0 => "UPDATE R SET r = R.r + R.s * delta_time()".to_owned(),
            1 => format!("UPDATE R SET s = R.s * 0.5 WHERE has({tag})"),
            2 => format!("UPDATE R SET r = R.r - 1.5 WHERE NOT has({tag})"),
            _ => "UPDATE R SET r = R.r * 2.0 WHERE R.r > 4.0".to_owned(),
        };
    }
    let (c, f) = field(rng);
    let value = match rng.below(6) {
        0 => format!("{c}.{f} + 1"),
        1 => format!("{c}.{f} + CAST(random() * 4 AS INT)"),
        2 => format!("({c}.{f} * 3 + (SELECT count(*) FROM P)) % 13"),
        3 => format!("{c}.{f} % 5 + 1"),
        4 => format!("{c}.{f} / ({c}.{f} - {})", 3 + rng.below(8)),
        _ => format!("{c}.{f} - 1"),
    };
    format!("UPDATE {c} SET {f} = {value}{}", condition(rng, c, f))
}

/// The clauses of the `i`th system of a parallel tick: now and then a phase, an order
/// among the systems before it in the same phase (`phases` holds each one's), an EVERY or
/// a WHEN.
fn clauses(rng: &mut Rng, i: u64, phases: &mut Vec<&'static str>) -> String {
    let mut clauses = String::new();
    let phase = if rng.chance(10) {
        rng.pick(&["pre_update", "post_update"])
    } else {
        "update"
    };
    if phase != "update" {
        clauses += &format!(" IN PHASE {phase}");
    }
    let same: Vec<usize> = (0..phases.len()).filter(|&j| phases[j] == phase).collect();
    if !same.is_empty() && rng.chance(15) {
        let j = same[rng.below(same.len() as u64) as usize];
        clauses += &format!(" {} s{j}", rng.pick(&["BEFORE", "AFTER"]));
    }
    debug_assert_eq!(phases.len() as u64, i);
    phases.push(phase);
    if rng.chance(10) {
        clauses += &format!(" EVERY {} TICKS", 2 + rng.below(3));
    }
    if rng.chance(10) {
        let (c, f) = field(rng);
        clauses += &format!(
            " WHEN ((SELECT count(*) FROM {c} WHERE {c}.{f} > {}) > 0)",
            rng.below(8)
        );
    }
    clauses
}

/// What a database shows after a tick: the tick's outcome and the world, marks and write
/// tick included.
fn exact_tick(conn: &Connection) -> (Result<u64, String>, String) {
    let ran = conn.tick(1).map_err(|e| e.to_string());
    let digest = conn.with_world(|w| w.digest_exact()).unwrap();
    (ran, digest)
}

/// The system a failed tick names (`… was undone: system s4 failed at …`).
fn failing_system(error: &str) -> Option<&str> {
    error.split("system ").nth(1)?.split(' ').next()
}

#[test]
fn ticks_that_run_systems_at_the_same_time_are_the_serial_ticks() {
    let (mut failed, mut together, mut compared) = (0, 0, 0);
    let seeds = seeds("ECSQL_TICK_SEEDS", 120);
    for &seed in &seeds {
        let mut rng = Rng(seed);
        let setup = setup(&mut rng);
        let mut phases = Vec::new();
        let systems: Vec<(String, String)> = (0..(4 + rng.below(9)))
            .map(|i| {
                let clauses = clauses(&mut rng, i, &mut phases);
                if rng.chance(12) {
                    let fields = ["P.x", "P.y", "Q.a", "H.hp"];
                    let field = rng.pick(&fields);
                    let read = rng.pick(&fields);
                    let field = match rng.chance(50) && read != field {
                        true => format!("{field} <- {read}"),
                        false => field.to_owned(),
                    };
                    return (format!("s{i}"), format!("{RUST}{clauses} | {field}"));
                }
                let body = if rng.chance(15) {
                    format!(
                        "BEGIN {}; {}; END",
                        update_system(&mut rng),
                        update_system(&mut rng)
                    )
                } else {
                    update_system(&mut rng)
                };
                (format!("s{i}"), format!("CREATE SYSTEM s{i}{clauses} AS {body}"))
            })
            .collect();
        let declared: Vec<&(String, String)> = systems.iter().collect();
        let serial = match database(&setup, &declared) {
            Ok(serial) => serial,
            // A body that does not bind (a field of the wrong type for its arithmetic, a
            // tag with no field): the seed makes no schedule.
            Err(e) if e.contains("type mismatch") || e.contains("has no field") => continue,
            Err(e) => panic!("seed {seed}: a system the generator made was refused: {e}"),
        };
        compared += 1;
        serial.execute("PRAGMA tick_threads = 1", ()).unwrap();
        let together_conn = database(&setup, &declared).unwrap();
        together_conn
            .execute_batch("PRAGMA tick_threads = 2; PRAGMA min_parallel_rows = 1;")
            .unwrap();
        for tick in 1..=100 {
            let (ran_serial, world_serial) = exact_tick(&serial);
            let (ran_together, world_together) = exact_tick(&together_conn);
            let script = || {
                let texts: Vec<&str> = declared.iter().map(|(_, t)| t.as_str()).collect();
                format!("{setup}\n{};", texts.join(";\n"))
            };
            assert_eq!(ran_serial, ran_together, "seed {seed}, tick {tick}\n{}", script());
            assert!(
                world_serial == world_together,
                "seed {seed}, tick {tick}: the worlds differ\n{}",
                script()
            );
            // A failed tick is undone whole, so the next would fail the same way: the
            // failing system is disabled in both, and the ticks go on without it.
            if let Err(e) = &ran_serial {
                failed += 1;
                let system = failing_system(e).unwrap_or_else(|| panic!("no system named in {e}"));
                for conn in [&serial, &together_conn] {
                    conn.execute(&format!("ALTER SYSTEM {system} DISABLE"), ())
                        .unwrap();
                }
            }
        }
        together += runs_together(&together_conn);
    }
    eprintln!("{compared} seeds of 100 ticks compared: {failed} ticks failed, {together} runs together");
    // Most seeds make their systems; failing ticks, whose error names the first failing
    // system in run order, are met too (each one a different system's first failure);
    // and systems did run together (on a machine of two cores or more).
    if seeds.len() >= 60 {
        assert!(
            compared * 10 >= seeds.len() * 9,
            "only {compared} seeds made their systems"
        );
        assert!(failed * 4 > seeds.len(), "only {failed} ticks failed");
        if ecsql_cores() >= 2 {
            assert!(
                together > seeds.len() as i64 * 20,
                "only {together} runs computed together"
            );
        } else {
            eprintln!("one core: systems never run together here, so only serial ticks were compared");
        }
    }
}

/// How many system runs of `conn` computed beside other systems (SHOW SYSTEMS' together).
fn runs_together(conn: &Connection) -> i64 {
    let mut show = conn.prepare("SHOW SYSTEMS").unwrap();
    show.query(())
        .unwrap()
        .map(|r| r.unwrap().get::<_, i64>("together").unwrap())
        .sum()
}

/// Two databases made alike by `make`, one ticking its systems one after another and one
/// letting them run together: each of `ticks` ticks must give the same outcome and world
/// (marks and write tick included). Gives how many runs computed together.
fn serial_and_together(make: impl Fn(&Connection), ticks: u64) -> i64 {
    let serial = Database::open_in_memory().connect();
    make(&serial);
    serial.execute("PRAGMA tick_threads = 1", ()).unwrap();
    let together = Database::open_in_memory().connect();
    make(&together);
    together
        .execute_batch("PRAGMA tick_threads = 2; PRAGMA min_parallel_rows = 1;")
        .unwrap();
    for tick in 1..=ticks {
        let (ran_serial, world_serial) = exact_tick(&serial);
        let (ran_together, world_together) = exact_tick(&together);
        assert_eq!(ran_serial, ran_together, "tick {tick}");
        assert!(world_serial == world_together, "tick {tick}: the worlds differ");
    }
    runs_together(&together)
}

const INC_AND_DOUBLE: &str = "CREATE SYSTEM inc AS UPDATE H SET hp = H.hp + 1 WHERE has(T1);
CREATE SYSTEM dbl AS UPDATE H SET hp = H.hp * 2 WHERE has(T2);";

#[test]
fn a_system_that_runs_every_n_ticks_keeps_the_tables_it_may_make_in_view() {
    // The tagger runs in even ticks only; when it runs, an entity with T1 gets T2, and the
    // two UPDATEs then meet in its table: they must keep their order in every tick.
    let together = serial_and_together(
        |conn| {
            conn.execute_batch(&format!(
                "{SCHEMA}
                 SPAWN H(1), T1; SPAWN H(1), T2;
                 CREATE SYSTEM tagger EVERY 2 TICKS AS
                   INSERT INTO T2 (id) SELECT id FROM H WHERE has(T1) AND NOT has(T2);
                 {INC_AND_DOUBLE}
                 PRAGMA tick = 1;"
            ))
            .unwrap();
        },
        4,
    );
    assert_eq!(together, 0, "inc and dbl may meet, so they never run together");
}

#[test]
fn a_rust_system_may_make_any_table_so_it_keeps_every_group_in_view() {
    let make = |conn: &Connection| {
        conn.execute_batch(&format!("{SCHEMA}\nSPAWN H(1), T1; SPAWN H(1), T2;"))
            .unwrap();
        // Attaches T2 to every entity with T1, as INSERT INTO T2 would, through the door.
        conn.create_system("tag_all", "", |world, _| {
            let t1 = world.component_by_name("T1")?.id();
            let t2 = world.component_by_name("T2")?.id();
            let ids: Vec<ecsql::Entity> = world
                .matching_tables(&ecsql::Filter::new().with(t1).without(t2))?
                .into_iter()
                .filter_map(|t| world.table(t).map(|t| t.entities().to_vec()))
                .flatten()
                .collect();
            for id in ids {
                world.attach(id, t2, vec![])?;
            }
            Ok(())
        })
        .unwrap();
        conn.execute_batch(INC_AND_DOUBLE).unwrap();
    };
    assert_eq!(serial_and_together(make, 3), 0);
    let conn = Database::open_in_memory().connect();
    make(&conn);
    let lines = explain_tick(&conn);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("waits for inc: inc and dbl both write H.hp")),
        "{lines:#?}"
    );
}

#[test]
fn systems_whose_staged_values_would_pass_the_memory_limit_run_one_after_another() {
    // One after another, each UPDATE writes as it computes and holds nothing; together,
    // their staged values would hold more than the limit: the tick must not fail for it.
    // With room for them, the same systems run together.
    for (limit, runs_together) in [("65536", 0), ("'64MB'", 4)] {
        let together = serial_and_together(
            |conn| {
                conn.execute_batch(&format!(
                    "{SCHEMA}
                     SPAWN R(1.0, 1.0), Q(1, 1) FROM range(5000) AS r(i);
                     CREATE SYSTEM halve_r AS UPDATE R SET r = R.r * 0.5;
                     CREATE SYSTEM halve_s AS UPDATE R SET s = R.s * 0.5;
                     PRAGMA memory_limit = {limit};"
                ))
                .unwrap();
            },
            2,
        );
        if runs_together == 0 || ecsql_cores() >= 2 {
            assert_eq!(
                together, runs_together,
                "memory_limit = {limit}: two systems, two ticks"
            );
        }
    }
}

#[test]
fn updates_over_many_morsels_computed_together_are_the_serial_ones() {
    // 70,000 rows: more than one batch of what a staged UPDATE computes at once, each
    // batch many morsels, one UPDATE with a WHERE that picks rows in each.
    let together = serial_and_together(
        |conn| {
            conn.execute_batch(&format!(
                "{SCHEMA}
                 SPAWN R(i % 7, i % 5) FROM range(70000) AS r(i);
                 CREATE SYSTEM halve_r AS UPDATE R SET r = R.r * 0.5 + 1.0 WHERE R.r > 2.5;
                 CREATE SYSTEM grow_s AS UPDATE R SET s = R.s + 0.25;"
            ))
            .unwrap();
        },
        3,
    );
    if ecsql_cores() >= 2 {
        assert_eq!(together, 6);
    }
}

#[test]
fn compound_updates_read_from_their_tables_computed_together_are_the_serial_ones() {
    // `e` a field times delta_time(), before `f` (`e + f`): computed together, each
    // table's new column is built from its columns in one pass; serially, the 70,000-row
    // table is written in place (two looks at the interrupt apart) and the 10-row one in a
    // pack. NaNs of both signs meet in either order (x86 keeps the first operand's), R.r
    // is tracked for changes (a later system reads changed()), and one table is emptied.
    let together = serial_and_together(
        |conn| {
            conn.execute_batch(&format!(
                "{SCHEMA}
                 SPAWN R(i % 7, i % 5), H(i) FROM range(70000) AS r(i);
                 SPAWN R(CAST('NaN' AS REAL), -CAST('NaN' AS REAL)), T1 FROM range(10) AS r(i);
                 SPAWN R(-CAST('NaN' AS REAL), CAST('NaN' AS REAL)), T2 FROM range(300) AS r(i);
                 SPAWN R(1, 1), P(1, 1) FROM range(5) AS r(i);
                 DESPAWN FROM P;
                 CREATE SYSTEM move_r AS UPDATE R SET r = R.s * delta_time() + R.r;
                 CREATE SYSTEM count_h AS UPDATE H SET hp = H.hp + 1;
                 CREATE SYSTEM watch AS UPDATE H SET hp = H.hp * 2 WHERE changed(R.r) AND H.hp < 10;"
            ))
            .unwrap();
        },
        3,
    );
    if ecsql_cores() >= 2 {
        assert_eq!(together, 6);
    }
}

#[test]
fn compound_updates_of_two_fields_scaled_apart_computed_together_are_the_serial_ones() {
    // Two written fields, each a third field times a scale of its own (`delta_time()` and
    // a constant): computed together, each table's new columns are built from its
    // columns, each scale computed once for all the tables; serially, the small tables
    // take a pass each too and the large one is written in place.
    let together = serial_and_together(
        |conn| {
            conn.execute_batch(&format!(
                "{SCHEMA}
                 CREATE COMPONENT M (a REAL, b REAL, c REAL);
                 SPAWN M(i % 7, i % 5, i % 3 - 1), H(i) FROM range(5000) AS r(i);
                 SPAWN M(i, -i, 0.5), T1 FROM range(40) AS r(i);
                 SPAWN M(1, 2, 3), T2 FROM range(300) AS r(i);
                 CREATE SYSTEM move_m AS
                   UPDATE M SET a = M.a + M.c * delta_time(), b = M.b - M.c * CAST(2.5 AS REAL);
                 CREATE SYSTEM count_h AS UPDATE H SET hp = H.hp + 1;"
            ))
            .unwrap();
        },
        3,
    );
    if ecsql_cores() >= 2 {
        assert_eq!(together, 6);
    }
}

#[test]
fn random_draws_over_many_morsels_computed_together_are_the_serial_ones() {
    // Two random() draws per row: batch by batch, so a value would move with the batch's
    // size if a batch of many morsels were computed where the serial tick computes one.
    let together = serial_and_together(
        |conn| {
            conn.execute_batch(&format!(
                "{SCHEMA}
                 SPAWN R(0.0, 0.0), H(1) FROM range(10000) AS r(i);
                 CREATE SYSTEM draw AS UPDATE R SET r = random(), s = random() * 2.0;
                 CREATE SYSTEM count AS UPDATE H SET hp = H.hp + 1;"
            ))
            .unwrap();
        },
        2,
    );
    if ecsql_cores() >= 2 {
        assert_eq!(together, 4);
    }
}

fn ecsql_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Adds 1 to every H.hp through a view that declares `access`.
fn bump_hp(conn: &Connection, name: &str, clauses: &str, access: ecsql::SystemAccess) {
    conn.create_system_with_access(name, clauses, access, |view, _| {
        let h = view.component_by_name("H")?.id();
        let hp = view.field(h, "hp")?;
        for table in view.matching_tables(&ecsql::Filter::new().with(h))? {
            if let Some(mut table) = view.table_mut(table) {
                for v in table.slice_mut::<i64>(hp)? {
                    *v += 1;
                }
            }
        }
        Ok(())
    })
    .unwrap();
}

/// EXPLAIN TICK's lines.
fn explain_tick(conn: &Connection) -> Vec<String> {
    crate::common::lines(conn, "EXPLAIN TICK")
}

#[test]
fn a_rust_system_that_declares_its_access_runs_in_its_turn_among_systems_that_run_together() {
    let make = |conn: &Connection| {
        conn.execute_batch(&format!(
            "{SCHEMA}
             SPAWN R(1.0, 1.0), H(1) FROM range(50) AS r(i);
             CREATE SYSTEM halve_r AS UPDATE R SET r = R.r * 0.5;"
        ))
        .unwrap();
        // Changes tracked, so that each write's tick is in the marks: a system run out of
        // its turn would leave other marks than the serial tick.
        let mut tracker = conn
            .prepare("SELECT count(*) FROM H, R WHERE changed(H) OR changed(R)")
            .unwrap();
        tracker.query(()).unwrap();
        bump_hp(conn, "bump", "", ecsql::SystemAccess::new().writes("H.hp"));
        conn.execute("CREATE SYSTEM halve_s AS UPDATE R SET s = R.s * 0.5", ())
            .unwrap();
    };
    let together = serial_and_together(make, 3);
    if ecsql_cores() >= 2 {
        // The two UPDATEs computed together, three ticks; the Rust system ran in its turn.
        assert_eq!(together, 6);
    }
    let conn = Database::open_in_memory().connect();
    make(&conn);
    assert_eq!(waves(&conn), [vec!["halve_r", "bump", "halve_s"]]);
    let lines = explain_tick(&conn);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("a Rust closure, given the fields it declared (writes H.hp)")),
        "{lines:#?}"
    );
    conn.tick(2).unwrap();
    assert_eq!(
        conn.query_row("SELECT DISTINCT hp FROM H", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        3
    );
}

#[test]
fn a_rust_system_is_kept_apart_by_what_it_declares_and_refused_what_it_does_not() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "{SCHEMA}
         SPAWN R(1.0, 1.0), H(1) FROM range(5) AS r(i);
         CREATE SYSTEM heal AS UPDATE H SET hp = H.hp + 10;"
    ))
    .unwrap();
    bump_hp(&conn, "bump", "", ecsql::SystemAccess::new().writes("H.hp"));
    let lines = explain_tick(&conn);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("waits for heal: heal and bump both write H.hp")),
        "{lines:#?}"
    );

    // Declared to read R only: a write of R.r, a read of H.hp, and a column lent to read
    // taken to write are each refused, and the tick is undone.
    // (The write tick moves on past an undone tick; the world is what it was.)
    let world_before = conn.with_world(|w| w.digest()).unwrap();
    // Each attempt with its system's declaration, and the field and the way it is refused.
    let attempts = [
        ("write", "R", "writes R.r"),
        ("read", "R", "reads H.hp"),
        ("columns", "R", "writes R.r"),
        ("rows", "R", "writes R.r"),
        ("values", "R", "writes R.r"),
        ("table read", "R", "reads H.hp"),
        ("other field", "R.r", "reads R.s"),
    ];
    for (i, (attempt, declared, refused)) in attempts.into_iter().enumerate() {
        let name = format!("peek{i}");
        let access = ecsql::SystemAccess::new().reads(declared);
        conn.create_system_with_access(&name, "", access, move |view, _| {
            let (r, h) = (
                view.component_by_name("R")?.id(),
                view.component_by_name("H")?.id(),
            );
            let (rr, rs, hp) = (view.field(r, "r")?, view.field(r, "s")?, view.field(h, "hp")?);
            for id in view.matching_tables(&ecsql::Filter::new().with(r).with(h))? {
                if attempt == "table read" {
                    view.table(id).unwrap().slice::<i64>(hp)?;
                    continue;
                }
                let mut table = view.table_mut(id).unwrap();
                match attempt {
                    "write" => table.slice_mut::<f32>(rr)?[0] = 9.0,
                    "read" => drop(table.slice::<i64>(hp)?),
                    "rows" => table.rows_mut::<f32>(rr, 0..1)?[0] = 9.0,
                    "values" => table.write(rr, 0, ecsql::Column::Real(vec![9.0]))?,
                    "other field" => {
                        table.slice::<f32>(rr)?;
                        table.slice::<f32>(rs)?;
                    }
                    _ => {
                        let [rr] = table.columns([rr])?;
                        rr.into_mut::<f32>()?[0] = 9.0;
                    }
                }
            }
            Ok(())
        })
        .unwrap();
        let error = conn.tick(1).unwrap_err();
        assert!(
            matches!(
                &error,
                ecsql::Error::Schedule(ecsql::ScheduleError::System { source, .. })
                    if matches!(**source, ecsql::ScheduleError::Storage(ecsql::StorageError::Undeclared { .. }))
            ),
            "{attempt}: {error:?}"
        );
        let (how, field) = refused.split_once(' ').unwrap();
        let expected = format!(
            "system {name} {refused}, which the access it was registered with does not declare (add .{how}(\"{field}\")"
        );
        assert!(error.to_string().contains(&expected), "{attempt}: {error}");
        assert_eq!(
            conn.with_world(|w| w.digest()).unwrap(),
            world_before,
            "{attempt}"
        );
        conn.execute(&format!("DROP SYSTEM {name}"), ()).unwrap();
    }

    // Tables of no declared component are not the view's to look at.
    conn.create_system_with_access("nosy", "", ecsql::SystemAccess::new().reads("R"), |view, _| {
        let h = view.component_by_name("H")?.id();
        view.matching_tables(&ecsql::Filter::new().with(h))?;
        Ok(())
    })
    .unwrap();
    let error = conn.tick(1).unwrap_err().to_string();
    assert!(
        error.contains("system nosy looks for tables by components its access does not declare"),
        "{error}"
    );
    conn.execute("DROP SYSTEM nosy", ()).unwrap();

    // A column lent to read only is not marked changed; one lent to write is.
    let mut changed = conn
        .prepare(
            "SELECT (SELECT count(*) FROM H WHERE changed(H)), (SELECT count(*) FROM R WHERE changed(R))",
        )
        .unwrap();
    changed.query(()).unwrap();
    let access = ecsql::SystemAccess::new().reads("H").writes("R.r");
    conn.create_system_with_access("copy", "", access, |view, _| {
        let (r, h) = (
            view.component_by_name("R")?.id(),
            view.component_by_name("H")?.id(),
        );
        let (rr, hp) = (view.field(r, "r")?, view.field(h, "hp")?);
        for id in view.matching_tables(&ecsql::Filter::new().with(r).with(h))? {
            let mut table = view.table_mut(id).unwrap();
            let [rr, hp] = table.columns([rr, hp])?;
            let (rr, hp) = (rr.into_mut::<f32>()?, hp.into_ref::<i64>()?);
            for (r, h) in rr.iter_mut().zip(hp) {
                *r = *h as f32;
            }
        }
        Ok(())
    })
    .unwrap();
    conn.execute("DROP SYSTEM heal", ()).unwrap();
    conn.execute("DROP SYSTEM bump", ()).unwrap();
    conn.tick(1).unwrap();
    let counts: (i64, i64) = {
        let mut rows = changed.query(()).unwrap();
        let row = rows.next().unwrap().unwrap();
        (row.get(0).unwrap(), row.get(1).unwrap())
    };
    assert_eq!(counts, (0, 5), "H read, R.r written, of 5 entities");
    conn.execute("DROP SYSTEM copy", ()).unwrap();

    // A field its component does not have is refused when the system is registered.
    let refused = conn
        .create_system_with_access("typo", "", ecsql::SystemAccess::new().writes("H.hq"), |_, _| {
            Ok(())
        })
        .unwrap_err()
        .to_string();
    // Written in Rust, it has no line and column to point at.
    assert_eq!(
        refused,
        "system typo cannot be registered: its SystemAccess .writes(\"H.hq\"): component H has no field hq"
    );
    // A declaration that names no such component runs alone, and its run fails naming it.
    bump_hp(&conn, "bump2", "", ecsql::SystemAccess::new().writes("H"));
    bump_hp(&conn, "ghost", "", ecsql::SystemAccess::new().writes("Nope.hp"));
    let lines = explain_tick(&conn);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("ghost runs alone (its declared access names no such component or field)")),
        "{lines:#?}"
    );
    let error = conn.tick(1).unwrap_err().to_string();
    assert!(
        error.contains("system ghost failed: its SystemAccess .writes(\"Nope.hp\"): unknown component Nope"),
        "{error}"
    );
}
