//! A file database (`Database::open`): closed and opened again, it is exactly the world it
//! was (the world's exact digest: values, ids and generations, change marks, removal
//! logs, write tick; the clock, the systems and what they have seen, the indexes), after
//! any mix of statements, prepared statements, transactions, rollbacks, ticks and
//! checkpoints. A journal cut anywhere in its last record opens at the commit before it;
//! damage anywhere else, in the journal or the snapshot, is refused naming the file and
//! the offset; a second opener is refused; a folder is no database.

use std::path::{Path, PathBuf};

use ecsql::{Connection, Database, Error, FileError};

use crate::common;
use common::Folder;

fn journal_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-journal");
    PathBuf::from(name)
}

/// Everything a reopened database must have the same: the world to its marks, the clock,
/// the systems, the indexes.
fn state(conn: &Connection) -> String {
    let world = conn.with_world(|w| w.digest_exact()).unwrap();
    // Each row's values but those of columns `skip`.
    let rows_but = |sql: &str, skip: &[usize]| -> String {
        let mut s = conn.prepare(sql).unwrap();
        let rows: Vec<String> = s
            .query(())
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (0..r.len())
                    .filter(|i| !skip.contains(i))
                    .map(|i| format!("{:?}", r.get::<_, ecsql::Value>(i).unwrap()))
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect();
        rows.join("\n")
    };
    let rows = |sql: &str| rows_but(sql, &[]);
    let clock = rows("SELECT tick(), delta_time()");
    // Not the spatial grid's cell size (chosen for the rows there when it is built).
    let indexes = rows_but("SHOW INDEXES", &[5]);
    // Not how many runs computed beside others, nor how long each system took last (what
    // this process saw, not what the files keep).
    let systems = rows_but("SHOW SYSTEMS", &[6, 7]);
    format!("{world}\n{clock}\n{indexes}\n{systems}")
}

/// A workload touching every kind of thing a journal must replay exactly.
fn workload(conn: &Connection, round: i64) {
    if round == 0 {
        conn.execute_batch(
            "CREATE COMPONENT Position (x REAL, y REAL);
             CREATE COMPONENT Name (v TEXT, f FLOAT, b BOOL, parent ENTITY);
             CREATE COMPONENT Health (hp INT) WITH (storage = sparse);
             CREATE TAG Frozen;
             CREATE EVENT Hit (who ENTITY, dmg INT);
             CREATE COMPONENT Seen (n INT, moved INT);
             SPAWN Seen(0, 0);
             CREATE SPATIAL INDEX ON Position (x, y);
             CREATE INDEX by_hp ON Health (hp);
             CREATE SYSTEM hits AS UPDATE Seen SET n = Seen.n + (SELECT count(*) FROM Hit);
             CREATE SYSTEM moves AS UPDATE Seen SET moved = Seen.moved + (SELECT count(*) FROM Position WHERE changed(Position));
             CREATE SYSTEM wander EVERY 2 TICKS AS UPDATE Position SET x = Position.x + random() % 3 WHERE Position.y < 2;",
        )
        .unwrap();
    }
    conn.execute(
        "SPAWN Position(x => i, y => -0.0), Health(i + ?1) FROM range(20) AS r(i)",
        [round],
    )
    .unwrap();
    conn.execute_batch(
        "SPAWN Name('naïve', CAST('NaN' AS FLOAT), TRUE, 3), Frozen;
         SPAWN Name('it''s', CAST('-inf' AS FLOAT), FALSE, NULL);",
    )
    .unwrap();
    let mut despawn = conn
        .prepare("DESPAWN FROM Health WHERE Health.hp % 7 = ?1")
        .unwrap();
    despawn.execute([round % 7]).unwrap();
    // A prepared reader: what it writes depends on what it saw last time.
    let mut bump = conn
        .prepare("UPDATE Health SET hp = Health.hp + 1 FROM Position WHERE changed(Position)")
        .unwrap();
    bump.execute(()).unwrap();
    conn.execute(
        "UPDATE Position SET y = random() % 5 WHERE Position.x > ?1",
        [round * 2],
    )
    .unwrap();
    bump.execute(()).unwrap();
    conn.execute("INSERT INTO Hit (who, dmg) VALUES (2, ?1), (NULL, 1)", [round])
        .unwrap();
    // A transaction kept, and one undone.
    conn.execute_batch("BEGIN; SPAWN Position(100, 100); UPDATE Seen SET n = Seen.n * 2; COMMIT;")
        .unwrap();
    conn.execute_batch("BEGIN; DESPAWN FROM Position; SPAWN Frozen; ROLLBACK;")
        .unwrap();
    // A statement that fails changes nothing and is not journaled.
    assert!(
        conn.execute("INSERT INTO Health (id, hp) VALUES (999999, 1)", ())
            .is_err()
    );
    // Texts that differ only in their constants share one plan (PRAGMA parameterize),
    // each run with its own values; the journal keeps each as its shape's statement with
    // the text's values (or as written, where the shape's plan does not serve it).
    for k in 0..3 {
        conn.execute(
            &format!("UPDATE Seen SET moved = Seen.moved + {k} WHERE Seen.n >= {k}"),
            (),
        )
        .unwrap();
        conn.execute(&format!("SPAWN Position(x => {k}.5, y => -{k}.25)"), ())
            .unwrap();
        let last: i64 = conn
            .query_row("SELECT CAST(max(id) AS INT) FROM Position", (), |r| r.get(0))
            .unwrap();
        conn.execute(&format!("DESPAWN {last}"), ()).unwrap();
    }
    // A value the shape's cast refuses fails as the text would, and is not journaled.
    for hp in ["7", "2.5", "-3"] {
        let set = conn.execute(&format!("UPDATE Health SET hp = {hp} WHERE Health.hp > 30"), ());
        assert_eq!(set.is_err(), hp == "2.5", "SET hp = {hp}: {set:?}");
    }
    conn.execute("TICK 3 WITH dt = 0.25", ()).unwrap();
    conn.tick(2).unwrap();
    conn.execute("DELETE FROM Frozen WHERE has(Name)", ()).unwrap();
}

#[test]
fn a_database_reopens_as_it_was() {
    let folder = Folder::new("reopen");
    let path = folder.file("game.ecsql");
    let mut expected = String::new();
    for round in 0..4 {
        let db = Database::open(&path).unwrap();
        let conn = db.connect();
        if round > 0 {
            assert_eq!(state(&conn), expected, "reopened before round {round}");
        }
        workload(&conn, round);
        if round == 2 {
            conn.execute("CHECKPOINT", ()).unwrap();
            workload(&conn, 10);
        }
        expected = state(&conn);
    }
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(state(&conn), expected);
    // The systems go on from where they stood: four more ticks of the reopened database
    // and of a save slot of it loaded elsewhere give the same world (their readers saw
    // the same events and changes).
    let slot = folder.file("slot.ecsql");
    conn.execute(&format!("SAVE TO '{}'", slot.display()), ())
        .unwrap();
    let elsewhere = Database::open_in_memory().connect();
    elsewhere
        .execute(&format!("LOAD FROM '{}'", slot.display()), ())
        .unwrap();
    conn.execute("TICK 4", ()).unwrap();
    elsewhere.execute("TICK 4", ()).unwrap();
    let seen = |c: &Connection| -> (i64, i64) {
        c.query_row("SELECT n, moved FROM Seen", (), |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
    };
    assert_eq!(seen(&conn), seen(&elsewhere));
    assert_eq!(
        conn.with_world(|w| w.digest()).unwrap(),
        elsewhere.with_world(|w| w.digest()).unwrap()
    );
}

#[test]
fn a_second_opener_is_refused_until_the_first_closes() {
    let folder = Folder::new("lock");
    let path = folder.file("one.ecsql");
    let db = Database::open(&path).unwrap();
    match Database::open(&path) {
        Err(Error::File(FileError::Locked { path: p })) => assert_eq!(p, path.display().to_string()),
        other => panic!("expected the lock to refuse: {other:?}"),
    }
    drop(db);
    Database::open(&path).unwrap();
}

/// A process started while a database is open holds copies of its descriptors, and so its
/// files' locks, from its fork until its exec. A database closed in that moment lets go of
/// its locks by hand, so it opens again at once, not refused as another process's.
#[cfg(unix)]
#[test]
fn a_database_closed_while_a_process_starts_opens_again() {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    let folder = Folder::new("fork");
    let path = folder.file("one.ecsql");
    let db = Database::open(&path).unwrap();
    let (mut forked, told) = std::io::pipe().unwrap();
    let starter = std::thread::spawn(move || {
        let mut child = std::process::Command::new("true");
        // Safety: between fork and exec the child only writes to a pipe and sleeps (both
        // system calls safe there); it allocates nothing and takes no lock.
        unsafe {
            child.pre_exec(move || {
                (&told).write_all(&[1])?;
                std::thread::sleep(std::time::Duration::from_millis(100));
                Ok(())
            });
        }
        child.status().unwrap()
    });
    // The child is between its fork and its exec, holding the database's locks.
    let mut byte = [0];
    assert_eq!(forked.read(&mut byte).unwrap(), 1, "the child was not started");
    drop(db);
    let again = Database::open(&path);
    assert!(again.is_ok(), "{:?}", again.err());
    assert!(starter.join().unwrap().success());
}

/// As above, for an open refused (a damaged file) and for a SAVE: each lets go of the
/// locks it took, so the file put right, or saved, opens at once though processes are
/// started all the while.
#[cfg(unix)]
#[test]
fn a_refused_open_or_a_save_leaves_no_lock_behind_while_processes_start() {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let folder = Folder::new("fork_refused");
    let path = folder.file("one.ecsql");
    // Large, so that each refused open holds its locks while it reads some megabytes.
    let db = Database::open(&path).unwrap();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Blob (t TEXT);
             SPAWN Blob(t => repeat('x', 1000) || i) FROM range(8000) AS r(i);
             CHECKPOINT;",
        )
        .unwrap();
    drop(db);
    let good = std::fs::read(&path).unwrap();
    let slot = folder.file("slot.ecsql");
    let mut newer = good.clone();
    newer[8] = 99;
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let started = std::sync::Arc::new(AtomicUsize::new(0));
    let starter = std::thread::spawn({
        let (stop, started) = (stop.clone(), started.clone());
        move || {
            while !stop.load(Ordering::Relaxed) {
                let mut child = std::process::Command::new("true");
                // Safety: the child only sleeps between its fork and its exec.
                unsafe {
                    child.pre_exec(|| {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        Ok(())
                    });
                }
                // (A system out of processes for a moment only starts fewer.)
                if child.status().is_ok() {
                    started.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    // The processes stop with the test, whether it passes or not.
    struct Stop(std::sync::Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stopping = Stop(stop);
    // Refused without the locks let go of by hand within the first few rounds, here. At
    // least 20 rounds, and on until some processes were started meanwhile.
    for round in 0..200 {
        if round >= 20 && started.load(Ordering::Relaxed) >= 3 {
            break;
        }
        std::fs::write(&path, &newer).unwrap();
        let err = Database::open(&path).unwrap_err();
        assert!(err.to_string().contains("version 99 is newer"), "{err}");
        std::fs::write(&path, &good).unwrap();
        let again = Database::open(&path);
        assert!(again.is_ok(), "round {round}: {:?}", again.err());
        let conn = again.unwrap().connect();
        conn.execute("SAVE TO ?1", [slot.display().to_string()]).unwrap();
        let saved = Database::open(&slot);
        assert!(saved.is_ok(), "round {round}, saved: {:?}", saved.err());
        drop(saved);
        std::fs::remove_file(&slot).unwrap();
    }
    drop(stopping);
    starter.join().unwrap();
    assert!(
        started.load(Ordering::Relaxed) > 0,
        "no process was started meanwhile"
    );
}

#[test]
fn a_folder_is_no_database() {
    let folder = Folder::new("folder");
    let err = Database::open(&folder.0).unwrap_err().to_string();
    assert!(err.contains("it is a folder"), "{err}");
    let path = folder.file("x.ecsql");
    std::fs::create_dir_all(journal_of(&path)).unwrap();
    let err = Database::open(&path).unwrap_err().to_string();
    assert!(err.contains("journal is a folder"), "{err}");
}

/// A database with `commits` one-row commits after its last checkpoint, the state after
/// each and the journal's length then (index 0: before any), and its journal's bytes.
fn journaled(folder: &Folder, commits: i64) -> (PathBuf, Vec<(String, usize)>, Vec<u8>) {
    let path = folder.file("j.ecsql");
    let db = Database::open(&path).unwrap();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT C (n INT, t TEXT); CHECKPOINT;")
        .unwrap();
    let len = || {
        record_ends(&std::fs::read(journal_of(&path)).unwrap())
            .last()
            .copied()
            .unwrap_or(0)
    };
    let mut states = vec![(state(&conn), len())];
    for i in 0..commits {
        conn.execute("SPAWN C(?1, ?2)", (i, format!("row {i}"))).unwrap();
        states.push((state(&conn), len()));
    }
    drop(conn);
    drop(db);
    let mut bytes = std::fs::read(journal_of(&path)).unwrap();
    // Without the zeros written ahead of the records.
    bytes.truncate(len_of(&bytes));
    (path, states, bytes)
}

/// Where the header and each record of a journal end (its format: a 24-byte header, then
/// records of a 12-byte frame, whose first 4 bytes are the payload's length, the payload
/// and a 4-byte trailer), up to the zeros written ahead of them.
fn record_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = vec![24];
    let mut at = 24;
    while let Some(len) = bytes.get(at..at + 4) {
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        if len == 0 || at + 12 + len + 4 > bytes.len() {
            break;
        }
        at += 12 + len + 4;
        ends.push(at);
    }
    ends
}

fn len_of(bytes: &[u8]) -> usize {
    record_ends(bytes).last().copied().unwrap_or(0)
}

/// Opens `path` with its journal replaced by `bytes`.
fn open_with_journal(path: &Path, bytes: &[u8]) -> ecsql::Result<Database> {
    std::fs::write(journal_of(path), bytes).unwrap();
    Database::open(path)
}

#[test]
fn every_cut_of_the_last_record_opens_at_the_commit_before() {
    let folder = Folder::new("torn");
    let (path, states, bytes) = journaled(&folder, 3);
    let snapshot = std::fs::read(&path).unwrap();
    // Where the last record starts.
    let last = states[2].1;
    assert_eq!(states[3].1, bytes.len());
    // Up to its trailer (its checksum again, written last): the record is not all there.
    for cut in last..bytes.len() - 4 {
        std::fs::write(&path, &snapshot).unwrap();
        let db = open_with_journal(&path, &bytes[..cut]).unwrap();
        assert_eq!(state(&db.connect()), states[2].0, "cut at {cut}");
        drop(db);
        // The torn tail was cut off: the journal goes on from the commit before.
        assert_eq!(std::fs::metadata(journal_of(&path)).unwrap().len(), last as u64);
    }
    // Inside its trailer only: the record is whole, and kept.
    for cut in bytes.len() - 4..bytes.len() {
        std::fs::write(&path, &snapshot).unwrap();
        let db = open_with_journal(&path, &bytes[..cut]).unwrap();
        assert_eq!(state(&db.connect()), states[3].0, "cut at {cut}");
    }
    std::fs::write(&path, &snapshot).unwrap();
    let db = open_with_journal(&path, &bytes).unwrap();
    assert_eq!(state(&db.connect()), states[3].0);
}

#[test]
fn damage_in_a_record_written_whole_is_refused_with_the_offset() {
    let folder = Folder::new("flip");
    let (path, states, bytes) = journaled(&folder, 4);
    let snapshot = std::fs::read(&path).unwrap();
    let journal = journal_of(&path).display().to_string();
    assert_eq!(states[4].1, bytes.len());
    // Every byte of the records, the last one's too (the header's 24 bytes included), but
    // the trailers (which only tell a whole record from a cut one) and the last record's
    // frame (a flip there reads as a write cut short).
    let ends = record_ends(&bytes);
    let trailer = |at: usize| ends[1..].iter().any(|&e| (e - 4..e).contains(&at));
    let last_start = states[3].1;
    let last_frame = last_start..last_start + 12;
    for at in (0..bytes.len())
        .filter(|&at| !trailer(at) && !last_frame.contains(&at))
        .step_by(7)
    {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        std::fs::write(&path, &snapshot).unwrap();
        match open_with_journal(&path, &damaged) {
            Err(Error::File(FileError::Journal { path: p, offset, .. })) => {
                assert_eq!(p, journal);
                assert!(offset as usize <= at, "flip at {at} reported at {offset}");
            }
            // The checkpoint's number: a journal of another checkpoint, read as stale.
            Ok(_) if (12..20).contains(&at) => {}
            other => panic!("flip at {at}: {other:?}"),
        }
    }
}

#[test]
fn a_damaged_or_newer_snapshot_is_refused_with_the_file() {
    let folder = Folder::new("snapshot");
    let (path, _, journal) = journaled(&folder, 2);
    let snapshot = std::fs::read(&path).unwrap();
    let name = path.display().to_string();
    for at in [20, snapshot.len() / 2, snapshot.len() - 3] {
        let mut damaged = snapshot.clone();
        damaged[at] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        let err = open_with_journal(&path, &journal).unwrap_err();
        assert!(
            matches!(&err, Error::File(FileError::Snapshot { path: p, .. }) if *p == name),
            "{err}"
        );
        assert!(err.to_string().contains("byte"), "{err}");
    }
    let mut newer = snapshot.clone();
    newer[8] = 99;
    std::fs::write(&path, &newer).unwrap();
    let err = open_with_journal(&path, &journal).unwrap_err().to_string();
    assert!(err.contains("version 99 is newer"), "{err}");
    std::fs::write(&path, &snapshot[..snapshot.len() / 3]).unwrap();
    let err = open_with_journal(&path, &journal).unwrap_err().to_string();
    assert!(err.contains(&name) && err.contains("cut short"), "{err}");
    // Put back, it opens.
    std::fs::write(&path, &snapshot).unwrap();
    open_with_journal(&path, &journal).unwrap();
}

#[test]
fn a_checkpoint_interrupted_before_the_journal_restarted_is_not_replayed_twice() {
    let folder = Folder::new("stale");
    let path = folder.file("s.ecsql");
    let db = Database::open(&path).unwrap();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1); SPAWN C(2);")
        .unwrap();
    let old_journal = std::fs::read(journal_of(&path)).unwrap();
    conn.execute("CHECKPOINT", ()).unwrap();
    let expected = state(&conn);
    drop(conn);
    drop(db);
    // As if the machine stopped after the new snapshot's rename, before the journal
    // was started over: the old journal's records are in the snapshot already.
    let db = open_with_journal(&path, &old_journal).unwrap();
    assert_eq!(state(&db.connect()), expected);
}

#[test]
fn checkpoints_come_on_their_own_past_the_size() {
    let folder = Folder::new("auto");
    let path = folder.file("a.ecsql");
    let db = Database::open(&path).unwrap();
    let conn = db.connect();
    conn.execute("PRAGMA checkpoint_size = 4096", ()).unwrap();
    conn.execute("CREATE COMPONENT C (n INT, t TEXT)", ()).unwrap();
    let mut most = 0;
    for i in 0..400 {
        conn.execute("SPAWN C(?1, 'some text to fill the journal')", [i])
            .unwrap();
        // Its records: zeros written ahead of them follow.
        let bytes = std::fs::read(journal_of(&path)).unwrap();
        most = most.max(bytes.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1));
    }
    assert!(most < 4096 + 512, "the journal's records grew to {most} bytes");
    let expected = state(&conn);
    drop(conn);
    drop(db);
    assert_eq!(state(&Database::open(&path).unwrap().connect()), expected);
}

#[test]
fn a_checkpoint_refused_for_a_transaction_begun_on_the_world_says_where() {
    let folder = Folder::new("checkpoint-busy");
    let conn = Database::open(folder.file("b.ecsql")).unwrap().connect();
    conn.execute("CREATE COMPONENT C (n INT)", ()).unwrap();
    conn.with_world_mut(|w| w.begin()).unwrap().unwrap();
    let e = conn.execute_batch("SPAWN C(1);\n  CHECKPOINT;").unwrap_err();
    assert!(matches!(e, ecsql::Error::Busy { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "a checkpoint waits for the open transaction to end at line 2, column 3: COMMIT or ROLLBACK it"
    );
}

#[test]
fn the_columnar_door_and_load_are_kept_by_a_checkpoint() {
    let folder = Folder::new("door");
    let path = folder.file("d.ecsql");
    let slot = folder.file("slot.ecsql");
    let expected = {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
            .unwrap();
        conn.execute(&format!("SAVE TO '{}'", slot.display()), ())
            .unwrap();
        conn.execute("SPAWN C(2)", ()).unwrap();
        conn.execute(&format!("LOAD FROM '{}'", slot.display()), ())
            .unwrap();
        let c = conn
            .with_world(|w| w.component_by_name("C").unwrap().id())
            .unwrap();
        conn.with_world_mut(|w| w.spawn_values(vec![(c, vec![ecsql::Value::Int(7)])]).unwrap())
            .unwrap();
        conn.execute("SPAWN C(3)", ()).unwrap();
        state(&conn)
    };
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(state(&conn), expected);
    let n: i64 = conn.query_row("SELECT sum(n) FROM C", (), |r| r.get(0)).unwrap();
    assert_eq!(n, 1 + 7 + 3);
}

#[test]
fn rust_systems_are_registered_before_the_journal_runs() {
    let folder = Folder::new("rust");
    let path = folder.file("r.ecsql");
    let register = |conn: &Connection| {
        conn.create_system("heal", "", |world, _clock| {
            let c = world.component_by_name("H")?.id();
            let f = world.field(c, "hp")?;
            for t in world.matching_tables(&ecsql::Filter::new().with(c))? {
                if let Some(mut t) = world.table_mut(t) {
                    for v in t.slice_mut::<i64>(f)? {
                        *v += 5;
                    }
                }
            }
            Ok(())
        })
    };
    let expected = {
        let db = Database::open_with(&path, register).unwrap();
        let conn = db.connect();
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(1); TICK 3;")
            .unwrap();
        state(&conn)
    };
    let err = Database::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("Rust system heal") && err.contains("open_with"),
        "{err}"
    );
    let conn = Database::open_with(&path, register).unwrap().connect();
    assert_eq!(state(&conn), expected);
    let hp: i64 = conn.query_row("SELECT hp FROM H", (), |r| r.get(0)).unwrap();
    assert_eq!(hp, 16);
}

#[test]
fn a_last_record_that_fails_again_was_never_acknowledged_and_is_cut_off() {
    // A statement's record is written before it runs and cut off when it fails; a crash
    // in between leaves it last in the journal. Here a Rust system copies the journal
    // while its tick's record is there; a SQL system after it then fails the tick.
    let folder = Folder::new("failed-last");
    let path = folder.file("f.ecsql");
    let copy = folder.file("journal-copy");
    let (journal, copied) = (journal_of(&path), copy.clone());
    let copies = move |conn: &Connection| {
        let (journal, copied) = (journal.clone(), copied.clone());
        conn.create_system("copies", "", move |_, _| {
            std::fs::copy(&journal, &copied)?;
            Ok(())
        })
    };
    let expected = {
        let conn = Database::open_with(&path, &copies).unwrap().connect();
        conn.execute_batch(
            "CREATE COMPONENT C (n INT); CREATE TAG T; SPAWN C(1);
             CREATE SYSTEM breaks AFTER copies AS UPDATE C SET n = n * 9223372036854775807 WHERE has(T);
             SPAWN C(2), T;",
        )
        .unwrap();
        let err = conn.execute("TICK", ()).unwrap_err().to_string();
        assert!(err.contains("breaks") && err.contains("out of range"), "{err}");
        // (The undone tick moved the write tick on; nothing else.)
        without_write_tick(&state(&conn))
    };
    std::fs::copy(&copy, journal_of(&path)).unwrap();
    let conn = Database::open_with(&path, &copies).unwrap().connect();
    assert_eq!(
        without_write_tick(&state(&conn)),
        expected,
        "the failed tick is not there"
    );
    // And the journal goes on from before it.
    conn.execute("SPAWN C(3)", ()).unwrap();
    let expected = state(&conn);
    drop(conn);
    assert_eq!(
        state(&Database::open_with(&path, &copies).unwrap().connect()),
        expected
    );
}

fn without_write_tick(state: &str) -> String {
    state
        .lines()
        .filter(|l| !l.starts_with("write tick"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_snapshot_older_than_its_journal_is_refused() {
    let folder = Folder::new("older");
    let path = folder.file("o.ecsql");
    let conn = Database::open(&path).unwrap().connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
        .unwrap();
    let old = std::fs::read(&path).unwrap();
    conn.execute_batch("CHECKPOINT; SPAWN C(2);").unwrap();
    drop(conn);
    // A backup of the snapshot put back beside the newer journal.
    std::fs::write(&path, &old).unwrap();
    let err = Database::open(&path).unwrap_err();
    // Refused, and not called damage: nothing is damaged, only out of step.
    assert!(
        matches!(&err, Error::File(FileError::Invalid { path: p, .. }) if *p == journal_of(&path).display().to_string())
            && err.to_string().contains("the snapshot is older than its journal")
            && !err.to_string().contains("damaged"),
        "{err}"
    );
    // The journal was not touched.
    assert!(std::fs::read(journal_of(&path)).unwrap().len() > 24);
}

#[test]
fn the_columnar_door_inside_a_transaction_is_kept_with_it() {
    let folder = Folder::new("door-tx");
    let path = folder.file("t.ecsql");
    let expected = {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(1); BEGIN;")
            .unwrap();
        let c = conn
            .with_world(|w| w.component_by_name("H").unwrap().id())
            .unwrap();
        conn.with_world_mut(|w| {
            let hp = w.field(c, "hp").unwrap();
            for t in w.matching_tables(&ecsql::Filter::new().with(c)).unwrap() {
                let mut t = w.table_mut(t).unwrap();
                t.slice_mut::<i64>(hp).unwrap().iter_mut().for_each(|v| *v = 100);
            }
        })
        .unwrap();
        conn.execute_batch("UPDATE H SET hp = hp + 1; COMMIT;").unwrap();
        let hp: i64 = conn.query_row("SELECT hp FROM H", (), |r| r.get(0)).unwrap();
        assert_eq!(hp, 101);
        state(&conn)
    };
    assert_eq!(state(&Database::open(&path).unwrap().connect()), expected);
}

#[test]
fn open_with_set_up_registers_systems_and_writes_nothing() {
    let folder = Folder::new("setup");
    let path = folder.file("s.ecsql");
    let err = Database::open_with(&path, |conn| {
        conn.execute("CREATE COMPONENT X (n INT)", ()).map(drop)
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("open_with's set-up"), "{err}");
    let err = Database::open_with(&path, |conn| conn.tick(1).map(drop))
        .unwrap_err()
        .to_string();
    assert!(err.contains("open_with's set-up"), "{err}");
    // Reading is fine there.
    Database::open_with(&path, |conn| {
        conn.query_row("SELECT 1", (), |r| r.get::<_, i64>(0)).map(drop)
    })
    .unwrap();
}

#[test]
fn save_to_the_database_s_own_file_is_refused() {
    let folder = Folder::new("own");
    let path = folder.file("own.ecsql");
    let conn = Database::open(&path).unwrap().connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
        .unwrap();
    for target in [path.clone(), journal_of(&path)] {
        let err = conn
            .execute("SAVE TO ?1", [target.display().to_string()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("this database's own file"), "{err}");
    }
    drop(conn);
    let n: i64 = Database::open(&path)
        .unwrap()
        .connect()
        .query_row("SELECT count(*) FROM C", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn ticks_and_statements_checkpoint_when_due_without_failing() {
    let folder = Folder::new("due");
    let path = folder.file("d.ecsql");
    let conn = Database::open(&path).unwrap().connect();
    conn.execute_batch(
        "PRAGMA checkpoint_size = 1; CREATE COMPONENT C (n INT); SPAWN C(1);
         CREATE SYSTEM up AS UPDATE C SET n = n + 1;",
    )
    .unwrap();
    assert_eq!(conn.execute("TICK 2", ()).unwrap(), 2);
    conn.tick(1).unwrap();
    let expected = state(&conn);
    drop(conn);
    // Every commit checkpointed: the journal holds no record.
    assert_eq!(len_of(&std::fs::read(journal_of(&path)).unwrap()), 24);
    assert_eq!(state(&Database::open(&path).unwrap().connect()), expected);
}

/// Registers the Rust system `double` (every H.hp doubled) on `conn`.
fn double(conn: &Connection) -> ecsql::Result<()> {
    double_named(conn, "double")
}

/// `double`, registered under `name`.
fn double_named(conn: &Connection, name: &str) -> ecsql::Result<()> {
    conn.create_system(name, "", |world, _clock| {
        let c = world.component_by_name("H")?.id();
        let f = world.field(c, "hp")?;
        for t in world.matching_tables(&ecsql::Filter::new().with(c))? {
            if let Some(mut t) = world.table_mut(t) {
                t.slice_mut::<i64>(f)?.iter_mut().for_each(|v| *v *= 2);
            }
        }
        Ok(())
    })
}

fn hp(conn: &Connection) -> i64 {
    conn.query_row("SELECT hp FROM H", (), |r| r.get(0)).unwrap()
}

#[test]
fn rust_systems_keep_their_place_enabled_state_and_order_across_checkpoints() {
    // Registered before the last checkpoint (in the snapshot), and after it (in the
    // journal).
    rust_systems_keep_their_place(true);
    rust_systems_keep_their_place(false);
}

fn rust_systems_keep_their_place(second_checkpoint: bool) {
    let folder = Folder::new(&format!("rust-place-{second_checkpoint}"));
    let path = folder.file("p.ecsql");
    // In memory, the same steps: the reference.
    let mirror = Database::open_in_memory().connect();
    let steps = |conn: &Connection, checkpoint: bool| {
        let second = checkpoint && second_checkpoint;
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(1);")
            .unwrap();
        double(conn).unwrap();
        // Made after `double`, unordered against it: runs after it.
        conn.execute("CREATE SYSTEM dec AS UPDATE H SET hp = hp - 1", ())
            .unwrap();
        if checkpoint {
            conn.execute("CHECKPOINT", ()).unwrap();
        }
        conn.execute("TICK", ()).unwrap();
        // A Rust system registered after the checkpoint, and another disabled.
        conn.create_system("late", "AFTER dec", |_, _| Ok(())).unwrap();
        conn.create_system("off", "", |_, _| Err("never runs".into()))
            .unwrap();
        conn.execute("ALTER SYSTEM off DISABLE", ()).unwrap();
        if second {
            conn.execute("CHECKPOINT", ()).unwrap();
        }
    };
    steps(&mirror, false);
    let register = |conn: &Connection| {
        double(conn)?;
        conn.create_system("late", "AFTER dec", |_, _| Ok(()))?;
        conn.create_system("off", "", |_, _| Err("never runs".into()))
    };
    {
        // The first run registers its Rust systems as it goes.
        let conn = Database::open(&path).unwrap().connect();
        steps(&conn, true);
        assert_eq!(state(&conn), state(&mirror));
    }
    // Later runs register them all up front: each takes its place.
    let conn = Database::open_with(&path, register).unwrap().connect();
    let systems = |c: &Connection| {
        let mut s = c.prepare("SHOW SYSTEMS").unwrap();
        s.query(())
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                format!(
                    "{} {} {}",
                    r.get::<_, String>(0).unwrap(),
                    r.get::<_, i64>(2).unwrap(),
                    r.get::<_, bool>(3).unwrap()
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(systems(&conn), systems(&mirror));
    conn.execute("TICK 3", ()).unwrap();
    mirror.execute("TICK 3", ()).unwrap();
    assert_eq!(hp(&conn), hp(&mirror), "the same systems in the same order");
    // double then dec keeps 1 at 1; dec then double would give 0.
    assert_eq!(hp(&conn), 1);
}

#[test]
fn a_rust_system_in_the_file_waits_for_its_closure() {
    let folder = Folder::new("rust-wait");
    let path = folder.file("w.ecsql");
    {
        let conn = Database::open_with(&path, double).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(3); CHECKPOINT;")
            .unwrap();
    }
    // Opened without it: the tick says which closure is missing, and changes nothing.
    let conn = Database::open(&path).unwrap().connect();
    let err = conn.execute("TICK", ()).unwrap_err().to_string();
    assert!(err.contains("double") && err.contains("not registered"), "{err}");
    assert_eq!(hp(&conn), 3);
    // Registered once open, it takes its place.
    double(&conn).unwrap();
    conn.execute("TICK", ()).unwrap();
    assert_eq!(hp(&conn), 6);
}

#[test]
fn a_system_that_no_longer_binds_is_kept_by_a_checkpoint() {
    let folder = Folder::new("unbound");
    let path = folder.file("u.ecsql");
    {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch(
            "CREATE COMPONENT H (hp INT); CREATE SYSTEM heal AS UPDATE H SET hp = hp + 1;
             DROP COMPONENT H; CHECKPOINT;",
        )
        .unwrap();
    }
    let conn = Database::open(&path).unwrap().connect();
    conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(1); TICK 2;")
        .unwrap();
    assert_eq!(hp(&conn), 3, "heal was kept, and binds to H made again");
}

#[test]
fn load_gives_the_file_s_rust_systems_the_running_closures() {
    let folder = Folder::new("rust-load");
    let slot = folder.file("slot.ecsql");
    let saver = Database::open_in_memory().connect();
    double(&saver).unwrap();
    saver
        .execute_batch(
            "CREATE COMPONENT H (hp INT); SPAWN H(1); CREATE SYSTEM dec AS UPDATE H SET hp = hp - 1;",
        )
        .unwrap();
    saver.execute("SAVE TO ?1", [slot.display().to_string()]).unwrap();
    // A database whose program has `double`: it runs where the file put it (before dec).
    let with = Database::open_in_memory().connect();
    double(&with).unwrap();
    with.execute("LOAD FROM ?1", [slot.display().to_string()])
        .unwrap();
    with.execute("TICK", ()).unwrap();
    assert_eq!(hp(&with), 1);
    // One without: the file's Rust system goes (the program's, not the file's).
    let without = Database::open_in_memory().connect();
    without
        .execute("LOAD FROM ?1", [slot.display().to_string()])
        .unwrap();
    without.execute("TICK", ()).unwrap();
    assert_eq!(hp(&without), 0);
}

#[test]
fn concurrent_commits_reopen_in_the_order_they_were_made() {
    let folder = Folder::new("threads");
    let path = folder.file("t.ecsql");
    let db = Database::open(&path).unwrap();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT C (thread INT, n INT); CREATE COMPONENT Total (sum INT); SPAWN Total(0);",
        )
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..4i64 {
            let db = db.clone();
            s.spawn(move || {
                let conn = db.connect();
                conn.set_busy_timeout(std::time::Duration::from_secs(30));
                let mut spawn = conn.prepare("SPAWN C(?1, ?2)").unwrap();
                for n in 0..100i64 {
                    if n % 2 == 0 {
                        spawn.execute((t, n)).unwrap();
                    } else {
                        conn.execute_batch(&format!(
                            "BEGIN; SPAWN C({t}, {n}); UPDATE Total SET sum = sum + {n}; COMMIT;"
                        ))
                        .unwrap();
                    }
                }
            });
        }
    });
    let expected = state(&db.connect());
    drop(db);
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(state(&conn), expected);
    let count: i64 = conn
        .query_row("SELECT count(*) FROM C", (), |r| r.get(0))
        .unwrap();
    assert_eq!(count, 400);
}

#[test]
fn create_system_inside_with_world_is_refused_not_a_hang() {
    let db = Database::open_in_memory();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let conn = db.connect();
        let got = conn
            .with_world(|_| {
                conn.create_system("x", "", |_, _| Ok(()))
                    .map_err(|e| e.to_string())
            })
            .unwrap();
        let _ = tx.send(got);
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("create_system inside with_world hangs");
    assert!(got.unwrap_err().contains("inside with_world"));
}

#[test]
fn a_rust_system_made_and_ticked_in_one_transaction_replays() {
    let folder = Folder::new("rust-tx");
    let path = folder.file("x.ecsql");
    let expected = {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(2); BEGIN;")
            .unwrap();
        double(&conn).unwrap();
        conn.execute_batch("TICK; COMMIT;").unwrap();
        assert_eq!(hp(&conn), 4);
        state(&conn)
    };
    // Registered under another case: the same system.
    let reg = |conn: &Connection| double_named(conn, "DOUBLE");
    let conn = Database::open_with(&path, reg).unwrap().connect();
    assert_eq!(state(&conn), expected);
}

#[test]
fn an_acknowledged_tick_whose_rust_system_now_fails_is_refused_not_cut() {
    let folder = Folder::new("rust-fails");
    let path = folder.file("f.ecsql");
    {
        let conn = Database::open_with(&path, double).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(2); TICK;")
            .unwrap();
    }
    let broken = |conn: &Connection| conn.create_system("double", "", |_, _| Err("changed".into()));
    let err = Database::open_with(&path, broken).unwrap_err().to_string();
    assert!(err.contains("changed") && err.contains("TICK"), "{err}");
    // Nothing was cut: with the closure that ran, the tick is there.
    let conn = Database::open_with(&path, double).unwrap().connect();
    assert_eq!(hp(&conn), 4);
    let tick: i64 = conn.query_row("SELECT tick()", (), |r| r.get(0)).unwrap();
    assert_eq!(tick, 1);
}

#[test]
fn a_rust_system_dropped_comes_back_from_the_set_up_with_or_without_a_checkpoint() {
    for checkpoint in [false, true] {
        let folder = Folder::new(&format!("rust-drop-{checkpoint}"));
        let path = folder.file("d.ecsql");
        {
            let conn = Database::open_with(&path, double).unwrap().connect();
            conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(1); DROP SYSTEM double;")
                .unwrap();
            if checkpoint {
                conn.execute("CHECKPOINT", ()).unwrap();
            }
        }
        let conn = Database::open_with(&path, double).unwrap().connect();
        conn.execute("TICK", ()).unwrap();
        assert_eq!(hp(&conn), 2, "checkpoint: {checkpoint}");
    }
}

#[test]
fn the_set_up_cannot_move_the_clock() {
    let folder = Folder::new("setup-clock");
    let path = folder.file("c.ecsql");
    for pragma in ["PRAGMA delta_time = 1.0", "PRAGMA tick = 9"] {
        let err = Database::open_with(&path, |conn| conn.execute(pragma, ()).map(drop))
            .unwrap_err()
            .to_string();
        assert!(err.contains("open_with's set-up"), "{err}");
    }
    Database::open_with(&path, |conn| conn.execute("PRAGMA tick", ()).map(drop)).unwrap();
}

#[test]
fn a_path_in_a_missing_folder_is_named_as_given() {
    let folder = Folder::new("no-folder");
    let path = folder.file("nowhere/game.ecsql");
    let err = Database::open(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&path.display().to_string()) && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn a_journal_replays_the_same_world_on_any_number_of_threads() {
    // UPDATEs split among threads (in place, one tick each) and a reader of changes: the
    // world reopened on one thread, or on two, is the one written on two, to its marks
    // and write tick.
    let dir = Folder::new("threads-replay");
    let path = dir.file("world.db");
    let before = {
        let db = Database::open(&path).unwrap();
        let conn = db.connect();
        conn.set_threads(2);
        conn.set_min_parallel_rows(32_768);
        conn.execute_batch(
            "CREATE COMPONENT P (x FLOAT, y REAL);
             CREATE COMPONENT Q (n INT);
             SPAWN P(i * 0.25, 1.5) FROM range(140000) AS r(i);
             SPAWN P(i * 0.5, 2.5), Q(i) FROM range(1000) AS r(i);",
        )
        .unwrap();
        let mut reader = conn.prepare("SELECT count(*) FROM Q WHERE changed(Q)").unwrap();
        let split = [
            "UPDATE P SET x = P.x * 2 + 1, y = P.y - 0.5",
            "UPDATE P SET x = 0.0 WHERE P.x > 1000",
        ];
        for sql in split {
            let plan = conn
                .prepare(&format!("EXPLAIN {sql}"))
                .unwrap()
                .query(())
                .unwrap()
                .map(|r| format!("{:?}", r.unwrap().values()))
                .collect::<Vec<_>>()
                .join("\n");
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            assert_eq!(plan.contains("split among"), cores >= 2, "{sql}: {plan}");
            conn.execute(sql, ()).unwrap();
            reader.query(()).unwrap();
            conn.execute("UPDATE Q SET n = Q.n + 1 WHERE Q.n % 2 = 0", ())
                .unwrap();
        }
        conn.execute_batch("BEGIN; UPDATE P SET y = 9.5 WHERE P.x < 50000; ROLLBACK;")
            .unwrap();
        conn.execute_batch("BEGIN; UPDATE P SET y = 7.5 WHERE P.x < 50000; COMMIT;")
            .unwrap();
        reader.query(()).unwrap();
        state(&conn)
    };
    for threads in [1, 2] {
        let db = Database::open_with(&path, |c| {
            c.set_threads(threads);
            Ok(())
        })
        .unwrap();
        assert_eq!(state(&db.connect()), before, "reopened on {threads} threads");
    }
}

/// The rows of C, as a reopened database has them.
fn reopened_ns(path: &Path) -> Vec<i64> {
    let conn = Database::open(path).unwrap().connect();
    let mut s = conn.prepare("SELECT n FROM C ORDER BY n").unwrap();
    s.query(())
        .unwrap()
        .map(|r| r.unwrap().get::<_, i64>(0).unwrap())
        .collect()
}

#[test]
fn no_way_of_writing_a_file_reaches_the_open_database_s_files_by_any_name() {
    let folder = Folder::new("identity");
    let path = folder.file("w.ecsql");
    std::fs::create_dir_all(folder.file("sub")).unwrap();
    let db = Database::open(&path).unwrap();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
        .unwrap();
    // Names that reach the two files: as given, through `..`, a link, a second hard link
    // made while the database is open.
    let link = folder.file("link.ecsql");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let journal_link = folder.file("journal-link");
    std::os::unix::fs::symlink(journal_of(&path), &journal_link).unwrap();
    let hard = folder.file("hard.ecsql");
    std::fs::hard_link(&path, &hard).unwrap();
    let targets = [
        path.clone(),
        journal_of(&path),
        folder.file("sub/../w.ecsql"),
        folder.file("sub/../w.ecsql-journal"),
        link,
        journal_link,
        hard.clone(),
    ];
    for (k, target) in targets.iter().enumerate() {
        let name = target.display().to_string();
        // Every write is refused, naming the database it would break; the session goes on
        // committing.
        for sql in [
            "COPY (SELECT n FROM C) TO ?1",
            "COPY (SELECT n FROM C) TO ?1 (FORMAT json)",
            "SAVE TO ?1",
        ] {
            let e = conn.execute(sql, [name.as_str()]).unwrap_err().to_string();
            assert!(
                e.contains("this database's own file")
                    || e.contains("w.ecsql, which is open in this process"),
                "{sql} to {name}: {e}"
            );
        }
        let e = ecsql::script::write_atomically(target, b"-- a dump\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("which is open in this process"), "dump to {name}: {e}");
        let e = ecsql::script::create_output(target).unwrap_err().to_string();
        assert!(
            e.contains("which is open in this process"),
            "output to {name}: {e}"
        );
        conn.execute("SPAWN C(?1)", [k as i64 + 2]).unwrap();
    }
    // A checkpoint replaces the snapshot: the new one is guarded as the old one was.
    conn.execute("CHECKPOINT", ()).unwrap();
    let e = conn
        .execute("COPY (SELECT n FROM C) TO ?1", [path.display().to_string()])
        .unwrap_err();
    assert!(e.to_string().contains("open in this process"), "{e}");
    drop(conn);
    drop(db);
    std::fs::remove_file(&hard).unwrap();
    assert_eq!(reopened_ns(&path), (1..=8).collect::<Vec<_>>());
}

#[test]
fn a_second_database_cannot_write_an_open_one_s_files() {
    let folder = Folder::new("another");
    let path = folder.file("w.ecsql");
    let owner = Database::open(&path).unwrap().connect();
    owner
        .execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
        .unwrap();
    // Another database (in memory) writes files: not these.
    let other = Database::open_in_memory().connect();
    other
        .execute_batch("CREATE COMPONENT C (n INT); SPAWN C(99);")
        .unwrap();
    for target in [path.clone(), journal_of(&path)] {
        let name = target.display().to_string();
        for sql in ["SAVE TO ?1", "COPY (SELECT n FROM C) TO ?1"] {
            let e = other.execute(sql, [name.as_str()]).unwrap_err().to_string();
            assert!(e.contains("open in this process"), "{sql} to {name}: {e}");
        }
    }
    owner.execute("SPAWN C(2)", ()).unwrap();
    drop(owner);
    assert_eq!(reopened_ns(&path), vec![1, 2]);
    // Closed, it is a file like any other.
    other.execute("SAVE TO ?1", [path.display().to_string()]).unwrap();
    std::fs::remove_file(journal_of(&path)).unwrap();
    assert_eq!(reopened_ns(&path), vec![99]);
}

#[test]
fn a_link_to_a_database_opens_that_database_with_its_journal_and_its_lock() {
    let folder = Folder::new("link");
    let path = folder.file("real.ecsql");
    let link = folder.file("link.ecsql");
    std::os::unix::fs::symlink("real.ecsql", &link).unwrap();
    {
        let db = Database::open(&path).unwrap();
        db.connect()
            .execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
            .unwrap();
        match Database::open(&link) {
            Err(Error::File(FileError::Locked { path: p })) => assert_eq!(p, link.display().to_string()),
            other => panic!("expected the lock to refuse the link: {other:?}"),
        }
    }
    {
        // Through the link: the same journal (no journal of the link's own), and a
        // checkpoint there keeps every commit the real name made.
        let conn = Database::open(&link).unwrap().connect();
        conn.execute("SPAWN C(2)", ()).unwrap();
        assert!(Database::open(&path).is_err());
        conn.execute("CHECKPOINT", ()).unwrap();
        conn.execute("SPAWN C(3)", ()).unwrap();
    }
    assert!(!journal_of(&link).exists());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(reopened_ns(&path), vec![1, 2, 3]);
    assert_eq!(reopened_ns(&link), vec![1, 2, 3]);
}

#[test]
fn a_database_file_with_two_names_is_refused_not_forked() {
    let folder = Folder::new("hardlink");
    let path = folder.file("a.ecsql");
    {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
            .unwrap();
    }
    let other = folder.file("b.ecsql");
    std::fs::hard_link(&path, &other).unwrap();
    for name in [&path, &other] {
        let e = Database::open(name).unwrap_err().to_string();
        assert!(e.contains("2 names (hard links)"), "{e}");
    }
    assert!(!journal_of(&other).exists(), "a refused open leaves no journal");
    std::fs::remove_file(&other).unwrap();
    assert_eq!(reopened_ns(&path), vec![1]);
}

#[test]
fn a_refused_open_leaves_no_file_it_made_and_an_empty_file_is_called_empty() {
    let folder = Folder::new("refused");
    let empty = folder.file("empty.ecsql");
    std::fs::write(&empty, b"").unwrap();
    let e = Database::open(&empty).unwrap_err().to_string();
    assert!(e.contains("it is empty (0 bytes)") && !e.contains("text"), "{e}");
    let text = folder.file("notes.txt");
    std::fs::write(&text, "CREATE COMPONENT C (n INT);\n").unwrap();
    let e = Database::open(&text).unwrap_err().to_string();
    assert!(e.contains("it is text"), "{e}");
    // A new database whose set-up fails: neither file stays.
    let new = folder.file("new.ecsql");
    let e = Database::open_with(&new, |_| Err(Error::External("no".into())));
    assert!(e.is_err());
    let mut left: Vec<String> = std::fs::read_dir(&folder.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["empty.ecsql", "notes.txt"]);
}

#[test]
fn opening_removes_what_a_killed_checkpoint_or_save_left_beside_the_file() {
    let folder = Folder::new("leftovers");
    let path = folder.file("w.ecsql");
    drop(Database::open(&path).unwrap());
    // What a killed writer leaves: its temporary file, no longer locked by anyone.
    let leftover = folder.file(".w.ecsql.ecsql-4242-7.tmp");
    std::fs::write(&leftover, vec![0u8; 1 << 20]).unwrap();
    let someone_else_s = folder.file(".other.ecsql.ecsql-4242-7.tmp");
    std::fs::write(&someone_else_s, b"x").unwrap();
    drop(Database::open(&path).unwrap());
    assert!(!leftover.exists());
    assert!(someone_else_s.exists());
}

/// Systems whose statements once printed as text that did not read back (a constant past
/// FLOAT's range printed as `inf`; `OR IGNORE` printed as an `ON CONFLICT` that read as a
/// join's ON): kept by checkpoints and SAVE files, they open and tick as they did.
#[test]
fn systems_kept_as_text_read_back_after_checkpoints_and_saves() {
    let folder = Folder::new("printed");
    let path = folder.file("p.ecsql");
    let slot = folder.file("slot.ecsql").display().to_string();
    let ticks = |conn: &Connection| -> (String, i64) {
        let far: f64 = conn.query_row("SELECT f FROM Far", (), |r| r.get(0)).unwrap();
        let e: i64 = conn
            .query_row("SELECT count(*) FROM E", (), |r| r.get(0))
            .unwrap();
        (format!("{far}"), e)
    };
    let before = {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch(
            "CREATE COMPONENT Far (f FLOAT); CREATE TAG R; CREATE TAG E;
             SPAWN Far(0); SPAWN R; SPAWN R;
             CREATE SYSTEM far AS UPDATE Far SET f = 1e309;
             CREATE SYSTEM mark AS INSERT OR IGNORE INTO E (id) SELECT id FROM R LEFT JOIN E;
             TICK;
             CHECKPOINT;
             TICK 2;",
        )
        .unwrap();
        conn.execute("SAVE TO ?1", [slot.as_str()]).unwrap();
        ticks(&conn)
    };
    assert_eq!(before, ("inf".into(), 2));
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(ticks(&conn), before);
    assert_eq!(
        conn.query_row("SELECT tick()", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        3
    );
    conn.execute("LOAD FROM ?1", [slot.as_str()]).unwrap();
    conn.execute("TICK", ()).unwrap();
    assert_eq!(ticks(&conn), before);
}

/// A closure that panics halfway through the columnar door leaves a write in memory that
/// no commit made: the file database takes no more statements (each says why and how to
/// go on), and opened again it is as of its last commit. In memory there is no file to
/// disagree with, and the database goes on.
#[test]
fn a_panic_inside_the_columnar_door_never_leaves_memory_and_file_apart() {
    let folder = Folder::new("door-panic");
    let path = folder.file("p.ecsql");
    let half_write = |w: &mut ecsql::World| {
        let c = w.component_by_name("C").unwrap().id();
        let n = w.field(c, "n").unwrap();
        let first = w.matching_tables(&ecsql::Filter::new().with(c)).unwrap()[0];
        let mut table = w.table_mut(first).unwrap();
        let [col] = table.columns([n]).unwrap();
        col.into_mut::<i64>().unwrap()[0] = 1001;
        panic!("the program's bug, halfway through");
    };
    let ns = |conn: &Connection| -> ecsql::Result<Vec<i64>> {
        let mut s = conn.prepare("SELECT n FROM C ORDER BY id")?;
        let rows = s.query(())?;
        rows.map(|r| r.and_then(|r| r.get::<_, i64>(0))).collect()
    };
    {
        let db = Database::open(&path).unwrap();
        let conn = db.connect();
        conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(2); SPAWN C(3);")
            .unwrap();
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.with_world_mut(half_write)));
        assert!(caught.is_err());
        for e in [
            ns(&conn).unwrap_err(),
            conn.execute("SPAWN C(4)", ()).unwrap_err(),
            conn.execute("CHECKPOINT", ()).unwrap_err(),
            db.connect().with_world(|_| ()).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("can no longer be used here: a closure given to with_world_mut panicked")
                    && e.contains("open the database again"),
                "{e}"
            );
        }
    }
    assert_eq!(ns(&Database::open(&path).unwrap().connect()).unwrap(), [2, 3]);
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(2); SPAWN C(3);")
        .unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.with_world_mut(half_write)));
    assert!(caught.is_err());
    assert_eq!(ns(&conn).unwrap(), [1001, 3]);
}

/// A database whose journal holds `ticks` ticks of a system over 200 rows, closed.
fn long_journal(folder: &Folder, ticks: i64) -> PathBuf {
    let path = folder.file("long.ecsql");
    let conn = Database::open(&path).unwrap().connect();
    conn.execute_batch(
        "PRAGMA synchronous = off;
         CREATE COMPONENT P (x FLOAT); SPAWN P(i) FROM range(200) AS r(i);
         CREATE SYSTEM drift AS UPDATE P SET x = P.x + 1;",
    )
    .unwrap();
    conn.execute("TICK ?1", [ticks]).unwrap();
    path
}

/// The files of the database at `path`, byte for byte.
fn files_of(path: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(path).unwrap(),
        std::fs::read(journal_of(path)).unwrap(),
    )
}

#[test]
fn opening_tells_how_far_its_journal_has_run_and_stops_when_told_changing_nothing() {
    let folder = Folder::new("progress");
    let path = long_journal(&folder, 3000);
    let before = files_of(&path);
    // Told to stop at its first word (mid-way, or at its end on a quick machine): it
    // stops, and the files are as they were.
    let mut heard = Vec::new();
    let stopped = Database::options()
        .progress(|p| {
            heard.push(*p);
            false
        })
        .open(&path);
    match stopped {
        Err(Error::File(FileError::OpenInterrupted { replayed, total, .. })) => {
            assert!(replayed <= total && total > 200_000, "{replayed} of {total}");
        }
        other => panic!("expected the open to stop: {other:?}"),
    }
    assert_eq!(heard.len(), 1);
    assert_eq!(files_of(&path), before, "a stopped open changed the files");
    // Let run: told as it goes (bytes and records only grow), last with all of it run.
    let mut heard = Vec::new();
    let db = Database::options()
        .progress(|p| {
            heard.push(*p);
            true
        })
        .open(&path)
        .unwrap();
    let last = heard.last().unwrap();
    assert_eq!(
        (last.replayed_bytes, last.replayed_records),
        (last.journal_bytes, last.records)
    );
    assert!(last.records > 3000, "{last:?}");
    assert!(
        heard
            .windows(2)
            .all(|w| w[0].replayed_bytes <= w[1].replayed_bytes)
    );
    let x: f64 = db
        .connect()
        .query_row("SELECT x FROM P WHERE id = 1", (), |r| r.get(0))
        .unwrap();
    assert_eq!(x, 3000.0);
}

/// An open whose journal took long to run checkpoints at once, so that the next open
/// runs none of it again (told to after no time here; 1 s unless told). Told never, the
/// journal stays and each open runs it.
#[test]
fn an_open_that_ran_a_long_journal_checkpoints_so_the_next_runs_nothing() {
    let folder = Folder::new("replay-checkpoint");
    let path = long_journal(&folder, 300);
    let records_run = |after: std::time::Duration| -> u64 {
        let mut last = None;
        let db = Database::options()
            .progress(|p| {
                last = Some(p.replayed_records);
                true
            })
            .checkpoint_after_replay(after)
            .open(&path)
            .unwrap();
        let x: f64 = db
            .connect()
            .query_row("SELECT x FROM P WHERE id = 1", (), |r| r.get(0))
            .unwrap();
        assert_eq!(x, 300.0);
        last.unwrap_or(0)
    };
    assert!(records_run(std::time::Duration::MAX) > 300);
    assert!(
        records_run(std::time::Duration::MAX) > 300,
        "told never, it checkpointed"
    );
    assert!(records_run(std::time::Duration::ZERO) > 300);
    assert_eq!(
        records_run(std::time::Duration::MAX),
        0,
        "the journal ran again after its checkpoint"
    );
}

#[test]
fn an_interrupt_from_another_thread_stops_an_open_changing_nothing() {
    let folder = Folder::new("open-interrupt");
    let path = long_journal(&folder, 20000);
    let before = files_of(&path);
    let options = Database::options();
    let handle = options.interrupt_handle();
    let (said, heard) = std::sync::mpsc::channel();
    let (done, interrupted) = std::sync::mpsc::channel();
    let mut once = Some(said);
    let stopper = std::thread::spawn(move || {
        // Once the journal has begun to run (the first word of progress), interrupt.
        heard.recv().unwrap();
        handle.interrupt();
        done.send(()).unwrap();
    });
    // At the first word of progress (partway, or at the end on a quick machine), the
    // other thread interrupts; the open stops there.
    let opened = options
        .progress(|_| {
            if let Some(said) = once.take() {
                said.send(()).unwrap();
                interrupted.recv().unwrap();
            }
            true
        })
        .open(&path);
    stopper.join().unwrap();
    match opened {
        Err(Error::File(FileError::OpenInterrupted { replayed, total, .. })) => assert!(replayed <= total),
        other => panic!("expected the open to stop: {other:?}"),
    }
    assert_eq!(files_of(&path), before, "an interrupted open changed the files");
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(
        conn.query_row("SELECT tick()", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        20000
    );
}

/// Writes of the database's file race its checkpoints (each renames a new snapshot over
/// the name, then lets the old one's lock go): not one of them gets through, and the
/// database opens with every commit.
#[test]
fn writes_racing_checkpoints_never_reach_the_live_snapshot() {
    let folder = Folder::new("race");
    let path = folder.file("r.ecsql");
    let db = Database::open(&path).unwrap();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(0);")
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (path, stop) = (path.clone(), std::sync::Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut got_through = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if ecsql::script::write_atomically(&path, b"-- not a database\n").is_ok() {
                        got_through += 1;
                    }
                }
                got_through
            })
        })
        .collect();
    let started = std::time::Instant::now();
    let mut n = 1;
    while started.elapsed() < std::time::Duration::from_millis(1500) {
        conn.execute("SPAWN C(?1)", [n]).unwrap();
        conn.execute("CHECKPOINT", ()).unwrap();
        n += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let through: i32 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    drop(conn);
    drop(db);
    assert_eq!(through, 0, "writes reached the live database's file");
    assert_eq!(reopened_ns(&path), (0..n).collect::<Vec<_>>());
}

/// `TICK 0 WITH dt = …` sets dt and runs no tick, in a file as in memory, and the file
/// keeps it.
#[test]
fn tick_zero_with_dt_sets_dt_in_a_file_too() {
    let folder = Folder::new("tick-zero");
    let path = folder.file("t.ecsql");
    let dt = |conn: &Connection| {
        conn.query_row("SELECT delta_time()", (), |r| r.get::<_, f64>(0))
            .unwrap()
    };
    {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute("TICK 0 WITH dt = 0.5", ()).unwrap();
        assert_eq!(dt(&conn), 0.5);
    }
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(dt(&conn), 0.5);
    assert_eq!(
        conn.query_row("SELECT tick()", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        0
    );
}

/// A tick after one that failed (undone, and not in the journal, but past the write tick
/// it took) replays at the write tick it ran at: the world reopened is the one left, to
/// its change marks and write tick. One tick of each kind of record, `TICK ?1` and
/// `TICK ?1 WITH dt = ?2`.
#[test]
fn a_tick_after_a_failed_one_replays_at_its_own_write_tick() {
    let folder = Folder::new("tick-after-failed");
    let path = folder.file("t.ecsql");
    let expected = {
        let conn = Database::open(&path).unwrap().connect();
        conn.execute_batch(
            "CREATE COMPONENT C (n INT, x FLOAT); SPAWN C(1, 0.5) FROM range(3);
             CREATE SYSTEM grows AS UPDATE C SET n = C.n + CAST(delta_time() * 1e18 AS INT), x = C.x + 1;",
        )
        .unwrap();
        // A reader of changes turns C's tracking on: the marks are in the state.
        conn.query_row("SELECT count(*) FROM C WHERE changed(C)", (), |r| {
            r.get::<_, i64>(0)
        })
        .unwrap();
        for tick in [
            "TICK WITH dt = 100",
            "TICK WITH dt = 0.5",
            "TICK WITH dt = 1000",
            "TICK",
        ] {
            conn.execute(tick, ()).unwrap_or_else(|e| {
                assert!(e.to_string().contains("grows"), "{tick}: {e}");
                0
            });
        }
        state(&conn)
    };
    assert!(expected.contains("1000000000000000001"), "{expected}");
    let conn = Database::open(&path).unwrap().connect();
    assert_eq!(state(&conn), expected);
}

/// A journal an older ecsql kept beside a link (not beside the file the link leads to) is
/// refused, saying where it belongs, rather than passed over with its commits.
#[test]
fn a_journal_left_beside_a_link_is_refused_not_passed_over() {
    let folder = Folder::new("old-link-journal");
    let real = folder.file("real.ecsql");
    let link = folder.file("link.ecsql");
    {
        let conn = Database::open(&real).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
            .unwrap();
    }
    std::os::unix::fs::symlink("real.ecsql", &link).unwrap();
    std::fs::rename(journal_of(&real), journal_of(&link)).unwrap();
    let e = Database::open(&link).unwrap_err().to_string();
    assert!(
        e.contains("beside the link") && e.contains("real.ecsql-journal"),
        "{e}"
    );
    std::fs::rename(journal_of(&link), journal_of(&real)).unwrap();
    assert_eq!(reopened_ns(&link), vec![1]);
}

/// EXPLAIN ANALYZE of a write runs it and undoes it: nothing reaches the journal, the
/// database reopens without it, and a transaction around it goes on as it was; with
/// KEEP the write stays, and is there after reopening. Its text gives the time of each
/// part in milliseconds.
#[test]
fn explain_analyze_of_a_write_leaves_the_database_as_it_was() {
    let folder = Folder::new("explain-analyze");
    let path = folder.file("world.db");
    let count = |conn: &Connection, sql: &str| -> i64 {
        conn.query_row(sql, (), |r| r.get(0)).expect("the count runs")
    };
    {
        let conn = Database::open(&path).expect("opened").connect();
        conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1); SPAWN C(2);")
            .expect("made");
        let journal = std::fs::metadata(journal_of(&path)).map(|m| m.len()).unwrap_or(0);
        let mut stmt = conn
            .prepare("EXPLAIN ANALYZE UPDATE C SET n = C.n * 10 WHERE C.n > 0")
            .expect("planned");
        let lines: Vec<String> = stmt
            .query_map((), |r| r.get(0))
            .expect("it runs")
            .collect::<ecsql::Result<_>>()
            .expect("its lines");
        let last = lines.last().expect("a last line");
        assert!(
            last.starts_with("Changed 2 rows, then undone") && last.ends_with(" ms"),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("(actual: 2 rows read")),
            "{lines:?}"
        );
        assert_eq!(count(&conn, "SELECT sum(C.n) FROM C"), 3);
        assert_eq!(
            std::fs::metadata(journal_of(&path)).map(|m| m.len()).unwrap_or(0),
            journal,
            "EXPLAIN ANALYZE wrote to the journal"
        );
        conn.execute("BEGIN", ()).expect("begun");
        conn.execute("SPAWN C(3)", ()).expect("spawned");
        conn.execute("EXPLAIN ANALYZE DESPAWN FROM C WHERE C.n > 0", ())
            .expect("explained");
        assert_eq!(count(&conn, "SELECT count(*) FROM C"), 3);
        conn.execute("COMMIT", ()).expect("committed");
        // KEEP keeps the write, journaled as any other.
        conn.execute(
            "EXPLAIN (ANALYZE, KEEP) UPDATE C SET n = C.n + 100 WHERE C.n = 3",
            (),
        )
        .expect("explained and kept");
    }
    let conn = Database::open(&path).expect("reopened").connect();
    assert_eq!(count(&conn, "SELECT sum(C.n) FROM C"), 106);
}

#[test]
fn a_rust_system_registered_with_its_access_keeps_it_when_the_file_is_opened_again() {
    let folder = crate::common::Folder::new("declared-rust");
    let path = folder.file("world.ecsql");
    let register = |conn: &Connection| {
        let access = ecsql::SystemAccess::new().writes("H.hp");
        conn.create_system_with_access("bump", "", access, |view, _clock| {
            let c = view.component_by_name("H")?.id();
            let f = view.field(c, "hp")?;
            for t in view.matching_tables(&ecsql::Filter::new().with(c))? {
                if let Some(mut t) = view.table_mut(t) {
                    for v in t.slice_mut::<i64>(f)? {
                        *v += 1;
                    }
                }
            }
            Ok(())
        })
    };
    {
        let conn = Database::open_with(&path, register).unwrap().connect();
        conn.execute_batch("CREATE COMPONENT H (hp INT); SPAWN H(1); TICK 2;")
            .unwrap();
    }
    // Opened again: first from the journal, which made the system, then, after a
    // checkpoint, from the snapshot that holds it waiting for its closure.
    for (hp, checkpoint) in [(4, true), (6, false)] {
        let conn = Database::open_with(&path, register).unwrap().connect();
        let lines = crate::common::lines(&conn, "EXPLAIN TICK");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("given the fields it declared (writes H.hp)")),
            "{lines:#?}"
        );
        conn.tick(1).unwrap();
        conn.tick(1).unwrap();
        assert_eq!(
            conn.query_row("SELECT hp FROM H", (), |r| r.get::<_, i64>(0))
                .unwrap(),
            hp + 1
        );
        if checkpoint {
            conn.execute("CHECKPOINT", ()).unwrap();
        }
    }
}
