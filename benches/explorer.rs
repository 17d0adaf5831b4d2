//! What the explorer's live view costs the server, per tick: the game of
//! examples/game_loop.sql beside a crowd of 100,000 entities (Position, Velocity, Team),
//! served with its HTTP side. Each iteration is one TICK; with the view open it is the
//! TICK and its batch read whole by a client of the live view's stream (`GET
//! /api/subscribe` of `SELECT id, Position.x, Position.y, has(Health) FROM Position`, as
//! the page asks), so the time is the tick's and the delta's, as the page receives it.
//!
//! - `explorer_tick_all_move`: every one of the 100,000 moves each tick (each batch holds
//!   200,000 rows: every point leaves and comes again).
//! - `explorer_tick_1000_move`: 1,000 of them move (the view's batches hold 2,000 rows).
//!
//! Each group: `alone` (the server, no page); `live_view_sampled`, the view as the page
//! opens it at this size (one entity in 11 by id: about 10,000 points); and
//! `live_view_every_point` (its "every point" box ticked). Run: `cargo bench -p ecsql-benches --bench explorer`.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::Database;
use ecsql::server::{Options, Server};

const CROWD: i64 = 100_000;
const VIEW: &str = "SELECT id, Position.x, Position.y, has(Health) FROM Position";
/// The view as the page asks for it by default at this size: one entity in 11 (about
/// 10,000 points).
const SAMPLED: &str =
    "SELECT id, Position.x, Position.y, has(Health) FROM Position WHERE CAST(id AS INT) % 11 = 0";

fn world(moving: i64) -> Database {
    let db = Database::open_in_memory();
    let conn = db.connect();
    let game = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/game_loop.sql"))
        .expect("examples/game_loop.sql");
    conn.execute_batch(&game).expect("the game");
    conn.execute_batch(&format!(
        "UPDATE Velocity SET x = 0, y = 0 WHERE has(Name);
         CREATE COMPONENT Team (n INT);
         SPAWN Position(x => (i % 400) * 2.5, y => (i / 400) * 4.0), Team(i % 3) FROM range({CROWD}) AS r(i);
         INSERT INTO Velocity (id, x, y) SELECT id, 0.1, -0.1 FROM Team WHERE CAST(id AS INT) % {CROWD} < {moving};"
    ))
    .expect("the crowd");
    db
}

/// Reads the stream of `view` in a thread of its own, counting the batches read whole;
/// the stream ends when the returned socket is shut down.
fn open_view(http: SocketAddr, view: &str) -> (Arc<AtomicU64>, TcpStream) {
    let socket = TcpStream::connect(http).expect("connects");
    let mut writer = socket.try_clone().expect("a second handle");
    let encoded: String = view
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let path = format!("/api/subscribe?sql={encoded}");
    writer
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: {http}\r\n\r\n").as_bytes())
        .expect("the request");
    let batches = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&batches);
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(1 << 20, socket);
        let mut line = Vec::new();
        let mut in_batch = false;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.starts_with(b"event: batch") {
                in_batch = true;
            } else if in_batch && line.starts_with(b"data: ") {
                in_batch = false;
                counted.fetch_add(1, Ordering::Release);
            }
        }
    });
    (batches, writer)
}

fn bench(c: &mut Criterion, name: &str, moving: i64) {
    let db = world(moving);
    let server = Server::start(
        &db,
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            ..Options::default()
        },
    )
    .expect("the server starts");
    let http = server.http_addr().expect("the HTTP side");
    let conn = db.connect();
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("alone", |b| b.iter(|| conn.tick(1).expect("a tick")));
    for (label, view) in [("live_view_sampled", SAMPLED), ("live_view_every_point", VIEW)] {
        let (batches, socket) = open_view(http, view);
        let deadline = Instant::now() + Duration::from_secs(60);
        while batches.load(Ordering::Acquire) == 0 {
            assert!(Instant::now() < deadline, "the view's first batch never came");
            std::thread::sleep(Duration::from_millis(5));
        }
        group.bench_function(label, |b| {
            b.iter(|| {
                let before = batches.load(Ordering::Acquire);
                conn.tick(1).expect("a tick");
                let deadline = Instant::now() + Duration::from_secs(60);
                while batches.load(Ordering::Acquire) == before {
                    assert!(Instant::now() < deadline, "the tick's batch never came");
                    std::hint::spin_loop();
                }
            })
        });
        let _ = socket.shutdown(std::net::Shutdown::Both);
        // The server lets the stream go (and stops keeping its query) at a later commit.
        std::thread::sleep(Duration::from_millis(500));
        conn.tick(1).expect("a tick");
    }
    group.finish();
    drop(server);
}

fn explorer(c: &mut Criterion) {
    bench(c, "explorer_tick_1000_move", 1000);
    bench(c, "explorer_tick_all_move", CROWD);
}

criterion_group!(benches, explorer);
criterion_main!(benches);
