//! A soak: clients reading, writing and transferring in transactions (committed, rolled
//! back, failed, abandoned by a client that leaves), by the simple and the extended
//! protocol, with statements past their time limit, against a world ticked 100 times a
//! second. Money moves but is never made or lost (a conserved sum, read by every client
//! between its writes and after it all), and no client stalls the clock beyond what its
//! statement limit allows (a transaction's statements, each within the limit).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ecsql::Database;
use ecsql::server::{Options, Server};

use super::{connect, runtime};

const ACCOUNTS: i64 = 100;
const TOTAL: i64 = ACCOUNTS * 1000;
const CLIENTS: u64 = 8;
const RUN: Duration = Duration::from_secs(3);
const STATEMENT_LIMIT: Duration = Duration::from_millis(300);

/// xorshift: each client's own reproducible choices.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Whether a statement ran: true when it did, false when it was stopped by its time limit
/// (a statement waits for the one running before it, and that wait counts) or found the
/// world busy; any other error fails the test.
fn ran<T>(result: Result<T, tokio_postgres::Error>) -> bool {
    match result {
        Ok(_) => true,
        Err(e) => match e.as_db_error().map(|d| d.code().code()) {
            Some("57014" | "55P03") => false,
            _ => panic!("{e}"),
        },
    }
}

async fn sum(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one("SELECT sum(Account.balance) FROM Account", &[])
        .await
        .expect("a read")
        .get(0)
}

#[test]
fn clients_in_every_way_against_a_ticking_world_lose_nothing_and_stall_nothing() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(&format!(
            "CREATE COMPONENT Account (slot INT, balance INT);
             SPAWN Account(i, 1000) FROM range({ACCOUNTS}) AS r(i);
             CREATE SYSTEM drift AS UPDATE Account SET balance = Account.balance + CASE WHEN Account.slot % 2 = 0 THEN -1 ELSE 1 END"
        ))
        .unwrap();
    let server = Server::start(
        &db,
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tick_rate: Some(100.0),
            statement_timeout: Some(STATEMENT_LIMIT),
            ..Options::default()
        },
    )
    .unwrap();
    let server = Arc::new(server);
    // The clock, watched: the longest wait between two ticks.
    let done = Arc::new(AtomicBool::new(false));
    let longest_gap = Arc::new(AtomicU64::new(0));
    let watcher = std::thread::spawn({
        let (server, done, longest_gap) = (Arc::clone(&server), Arc::clone(&done), Arc::clone(&longest_gap));
        move || {
            let (mut last, mut since) = (server.ticks().ran, Instant::now());
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
                let ran = server.ticks().ran;
                if ran != last {
                    let gap = since.elapsed().as_micros() as u64;
                    longest_gap.fetch_max(gap, Ordering::Relaxed);
                    (last, since) = (ran, Instant::now());
                }
            }
        }
    });
    let tally = runtime().block_on(async {
        let mut clients = Vec::new();
        for seed in 1..=CLIENTS {
            let server = Arc::clone(&server);
            clients.push(tokio::spawn(async move {
                let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let transfer_sql = "UPDATE Account SET balance = Account.balance + CASE WHEN Account.slot = $1 THEN -$3 ELSE $3 END \
                                    WHERE Account.slot = $1 OR Account.slot = $2";
                let mut client = connect(&server).await.unwrap();
                let mut transfer = client.prepare(transfer_sql).await.unwrap();
                // (Every client prepares before any runs a long statement: no wait yet.)
                let started = Instant::now();
                let mut ops = [0u64; 7];
                while started.elapsed() < RUN {
                    let (a, b) = (dice.roll(ACCOUNTS as u64) as i64, dice.roll(ACCOUNTS as u64) as i64);
                    let amount = dice.roll(50) as i64 + 1;
                    let kind = dice.roll(100);
                    let done = match kind {
                        // A read of the whole sum, as one tick left it.
                        0..=29 => {
                            let read = client
                                .query_one("SELECT sum(Account.balance) FROM Account", &[])
                                .await;
                            if let Ok(row) = &read {
                                assert_eq!(row.get::<_, i64>(0), TOTAL, "a read saw money made or lost");
                            }
                            ran(read)
                        }
                        // A prepared transfer, one statement.
                        30..=54 => a == b || ran(client.execute(&transfer, &[&a, &b, &amount]).await),
                        // A transfer in a transaction, committed or rolled back.
                        55..=79 => {
                            let begun = ran(client
                                .batch_execute(&format!(
                                    "BEGIN;
                                     UPDATE Account SET balance = Account.balance - {amount} WHERE Account.slot = {a};
                                     UPDATE Account SET balance = Account.balance + {amount} WHERE Account.slot = {b}"
                                ))
                                .await);
                            if begun {
                                assert_eq!(sum(&client).await, TOTAL, "inside a transaction");
                            }
                            let end = if begun && kind.is_multiple_of(2) { "COMMIT" } else { "ROLLBACK" };
                            client.batch_execute(end).await.unwrap();
                            begun
                        }
                        // A transaction that fails half way: COMMIT rolls it back.
                        80..=89 => {
                            let begun = ran(client
                                .batch_execute(&format!(
                                    "BEGIN; UPDATE Account SET balance = Account.balance - {amount} WHERE Account.slot = {a}"
                                ))
                                .await);
                            if begun {
                                let e = client.simple_query("SELECT 1 / 0").await.unwrap_err();
                                assert_eq!(e.as_db_error().unwrap().code().code(), "22012");
                            }
                            client.batch_execute("COMMIT").await.unwrap();
                            begun
                        }
                        // A statement past the limit: stopped, changing nothing.
                        90..=94 => {
                            let e = client
                                .simple_query("SELECT count(*) FROM range(30000) AS x(i), range(30000) AS y(j) WHERE x.i + y.j = -1")
                                .await
                                .unwrap_err();
                            assert_eq!(e.as_db_error().unwrap().code().code(), "57014", "{e}");
                            true
                        }
                        // Leaving inside a transaction: rolled back; then back again.
                        _ => {
                            let begun = ran(client
                                .batch_execute(&format!(
                                    "BEGIN; UPDATE Account SET balance = Account.balance + {amount} WHERE Account.slot = {a}"
                                ))
                                .await);
                            drop(client);
                            client = connect(&server).await.unwrap();
                            // Preparing reads the catalog, and may wait past the limit too.
                            transfer = loop {
                                let prepared = client.prepare(transfer_sql).await;
                                if let Ok(prepared) = prepared {
                                    break prepared;
                                }
                                assert!(!ran(prepared), "prepared and failed");
                            };
                            begun
                        }
                    };
                    if !done {
                        ops[6] += 1;
                    }
                    let index = match kind {
                        0..=29 => 0,
                        30..=54 => 1,
                        55..=79 => 2,
                        80..=89 => 3,
                        90..=94 => 4,
                        _ => 5,
                    };
                    ops[index] += 1;
                }
                ops
            }));
        }
        let mut tally = [0u64; 7];
        for client in clients {
            for (t, n) in tally.iter_mut().zip(client.await.expect("a client ended without a panic")) {
                *t += n;
            }
        }
        tally
    });
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let ticks = server.ticks();
    let gap = Duration::from_micros(longest_gap.load(Ordering::Relaxed));
    eprintln!(
        "soak: {tally:?} operations (reads, prepared transfers, transactions, failed transactions, long statements, clients leaving mid-transaction; stopped by their time limit), {ticks:?}, longest wait between ticks {gap:?}"
    );
    assert_eq!(
        db.connect()
            .query_row("SELECT sum(Account.balance) FROM Account", (), |r| r
                .get::<_, i64>(0))
            .unwrap(),
        TOTAL
    );
    // A tick runs within the clients' statement limit too (clients write its systems): one
    // that waited past it for the clients' statements failed, changing nothing, and the
    // clock went on. No tick failed for anything else.
    if ticks.failed > 0 {
        let last = ticks.last_error.as_deref().unwrap_or("");
        assert!(last.contains("statement timeout"), "{ticks:?}");
    }
    assert!(ticks.ran >= 5, "the clock stopped: {ticks:?}");
    // A tick is a write: it waits for the statement running (at most the limit) and for a
    // transaction to end, whose statements (four at most here) each run or wait at most
    // the limit; a second of slack for a busy machine.
    let bound = STATEMENT_LIMIT * 4 + Duration::from_secs(1);
    assert!(gap < bound, "the clock stalled {gap:?}, more than {bound:?}");
}
