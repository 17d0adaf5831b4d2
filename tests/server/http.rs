//! The HTTP side's JSON API as a program sees it over a socket: the shape of every
//! answer, pages of a large result that add up to it, errors with their SQLSTATE and
//! position, the password and the checks that keep other origins out, the limits, and a
//! live query's Server-Sent Events against the query run again (a differential).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use ecsql::Database;
use ecsql::server::{Options, Server};
use serde_json::{Value, json};

/// A server on `db` with its HTTP side on loopback, as `options` say otherwise.
pub(crate) fn start_http(db: &Database, options: Options) -> (Server, SocketAddr) {
    let server = super::start_with(
        db,
        Options {
            http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            ..options
        },
    );
    let http = server.http_addr().expect("the HTTP side listens");
    (server, http)
}

/// An HTTP answer: its status, its headers (names in lower case) and its body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request (`Connection: close`) with the `extra` header lines; its reply.
fn request(addr: SocketAddr, method: &str, path: &str, extra: &[&str], body: &str) -> Reply {
    let mut socket = TcpStream::connect(addr).expect("connect");
    socket.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    socket.write_all(head.as_bytes()).unwrap();
    // A server that refuses a body (413) may close before it has all been sent.
    let _ = socket.write_all(body.as_bytes());
    let mut raw = Vec::new();
    socket.read_to_end(&mut raw).expect("the reply");
    let text = String::from_utf8(raw).expect("UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    let body = if chunked { unchunk(body) } else { body.to_owned() };
    Reply {
        status,
        headers,
        body,
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

const JSON: &str = "Content-Type: application/json";

/// The whole reply to `GET /api/clock` sent with `Host: host`.
fn clock_as(addr: SocketAddr, host: &str) -> String {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket
        .write_all(format!("GET /api/clock HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut reply = String::new();
    socket.read_to_string(&mut reply).unwrap();
    reply
}

fn query(addr: SocketAddr, body: Value) -> Reply {
    request(addr, "POST", "/api/query", &[JSON], &body.to_string())
}

fn world() -> Database {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Position (x REAL, y REAL);
             CREATE COMPONENT Health (hp INT DEFAULT 100);
             CREATE COMPONENT Name (value TEXT);
             CREATE COMPONENT Parent (of ENTITY);
             CREATE TAG Enemy;
             CREATE EVENT Hit (who ENTITY, damage INT);
             CREATE INDEX by_hp ON Health (hp);
             SPAWN Name('root'), Position(0, 0);
             SPAWN Name('child ' || i), Position(i, 2 * i), Health(10 * i), Parent(1), Enemy FROM range(1, 2500) AS r(i);
             CREATE SYSTEM fall AS UPDATE Position SET y = Position.y - 1;
             CREATE SYSTEM heal IN PHASE post_update AS UPDATE Health SET hp = Health.hp + 1 WHERE Health.hp < 50;
             TICK 3;",
        )
        .expect("the world");
    db
}

#[test]
fn every_answer_has_its_shape() {
    let db = world();
    let (_server, addr) = start_http(&db, Options::default());

    let catalog = request(addr, "GET", "/api/catalog", &[], "");
    assert_eq!(catalog.status, 200, "{}", catalog.body);
    assert_eq!(catalog.header("content-type"), Some("application/json"));
    let c = catalog.json();
    assert_eq!(c["tick"], 3);
    let position = c["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Position")
        .expect("Position");
    assert_eq!(position["kind"], "component");
    assert_eq!(position["entities"], 2500);
    assert_eq!(
        position["fields"],
        json!([{"name": "x", "type": "REAL"}, {"name": "y", "type": "REAL"}])
    );
    let enemy = c["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Enemy")
        .unwrap();
    assert_eq!(enemy["kind"], "tag");
    assert_eq!(enemy["fields"], json!([]));
    let parent = c["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Parent")
        .unwrap();
    assert_eq!(parent["fields"], json!([{"name": "of", "type": "ENTITY"}]));
    assert_eq!(
        c["events"],
        json!([{"name": "Hit", "rows": 0, "fields": [{"name": "who", "type": "ENTITY"}, {"name": "damage", "type": "INT"}]}])
    );
    let systems: Vec<&str> = c["systems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(systems, ["fall", "heal"]);
    assert_eq!(c["systems"][0]["runs"], 3);
    assert_eq!(c["systems"][0]["writes"], "Position.y");
    assert_eq!(c["phases"], json!(["update", "post_update"]));
    assert_eq!(c["indexes"][0]["name"], "by_hp");
    assert_eq!(c["indexes"][0]["component"], "Health");

    let e = request(addr, "GET", "/api/entity/2", &[], "").json();
    assert_eq!(e["id"], 2);
    assert_eq!(e["tick"], 3);
    assert_eq!(
        e["components"],
        json!([
            {"name": "Enemy", "fields": []},
            {"name": "Health", "fields": [{"name": "hp", "type": "INT", "value": 13}]},
            {"name": "Name", "fields": [{"name": "value", "type": "TEXT", "value": "child 1"}]},
            {"name": "Parent", "fields": [{"name": "of", "type": "ENTITY", "value": 1}]},
            {"name": "Position", "fields": [{"name": "x", "type": "REAL", "value": 1.0}, {"name": "y", "type": "REAL", "value": -1.0}]},
        ])
    );
    let gone = request(addr, "GET", "/api/entity/99999", &[], "");
    assert_eq!(gone.status, 404);
    assert!(
        gone.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no entity 99999")
    );
    assert_eq!(request(addr, "GET", "/api/entity/x", &[], "").status, 400);

    let s = request(addr, "GET", "/api/systems", &[], "").json();
    assert_eq!(s["tick"], 3);
    assert_eq!(s["systems"][1]["name"], "heal");
    let fall = s["runs"]["fall"].as_array().unwrap();
    assert_eq!(fall.len(), 3);
    for (i, run) in fall.iter().enumerate() {
        assert_eq!(run[0], i as i64 + 1, "the tick");
        assert!(run[1].as_f64().unwrap() >= 0.0, "the time in ms");
        assert_eq!(run[2], 2500, "the rows it wrote");
    }
    // heal writes the Health below 50: child 1..4 (10..40, +1 a tick) each tick.
    assert_eq!(s["runs"]["heal"][0][2], 4);

    let clock = request(addr, "GET", "/api/clock", &[], "").json();
    assert_eq!(clock["tick"], 3);
    assert_eq!(clock["tick_rate"], Value::Null);
    assert_eq!(clock["ticks_run"], 0);

    // A write answers what it wrote; the next read sees it.
    let w = query(
        addr,
        json!({"sql": "UPDATE Health SET hp = ?1 WHERE id = ?2", "params": [7, 2]}),
    )
    .json();
    assert_eq!(w["verb"], "UPDATE");
    assert_eq!(w["affected"], 1);
    assert_eq!(w["rows"], json!([]));
    let r = query(
        addr,
        json!({"sql": "SELECT id, Health.hp, Name.value, Position.x, Parent.of, :big AS big, 1.5 AS f, true AS b, NULL AS n FROM Health, Name, Position, Parent WHERE id = :who", "params": {":who": 2, "big": 9007199254740993i64}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = r.json();
    assert_eq!(
        r["columns"],
        json!([
            {"name": "id", "type": "ENTITY"}, {"name": "Health.hp", "type": "INT"},
            {"name": "Name.value", "type": "TEXT"}, {"name": "Position.x", "type": "REAL"},
            {"name": "Parent.of", "type": "ENTITY"}, {"name": "big", "type": "INT"},
            {"name": "f", "type": "FLOAT"}, {"name": "b", "type": "BOOL"}, {"name": "n", "type": "NULL"}
        ])
    );
    // An integer JavaScript's numbers cannot hold exactly comes as its digits.
    assert_eq!(
        r["rows"],
        json!([[2, 7, "child 1", 1.0, 1, "9007199254740993", 1.5, true, null]])
    );
    assert_eq!(
        (r["row_count"].clone(), r["next"].clone()),
        (json!(1), Value::Null)
    );
}

#[test]
fn a_large_result_comes_in_pages_that_add_up_to_it() {
    let db = world();
    let (_server, addr) = start_http(&db, Options::default());
    let sql = "SELECT id, Name.value FROM Name ORDER BY id";
    let first = query(addr, json!({"sql": sql})).json();
    assert_eq!(first["row_count"], 2500);
    assert_eq!(first["offset"], 0);
    assert_eq!(
        first["rows"].as_array().unwrap().len(),
        1000,
        "1,000 rows a page unless asked"
    );
    let mut rows = first["rows"].as_array().unwrap().clone();
    let mut next = first["next"].as_str().map(str::to_owned);
    let mut pages = 1;
    while let Some(path) = next {
        let page = request(addr, "GET", &path, &[], "");
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let page = page.json();
        assert_eq!(page["columns"], first["columns"]);
        assert_eq!(page["offset"], rows.len());
        rows.extend(page["rows"].as_array().unwrap().iter().cloned());
        next = page["next"].as_str().map(str::to_owned);
        pages += 1;
    }
    assert_eq!(pages, 3);
    let conn = db.connect();
    let mut stmt = conn.prepare(sql).unwrap();
    let direct: Vec<Value> = stmt
        .query(())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            json!([r.get::<_, i64>(0).unwrap(), r.get::<_, String>(1).unwrap()])
        })
        .collect();
    assert_eq!(rows, direct);
    // A page asked for: of 7 rows, from an offset.
    let small = query(addr, json!({"sql": sql, "page_size": 7})).json();
    assert_eq!(small["rows"].as_array().unwrap().len(), 7);
    let next = small["next"].as_str().unwrap();
    assert!(next.ends_with("offset=7&page_size=7"), "{next}");
    let id = next.trim_start_matches("/api/result/").split('?').next().unwrap();
    let later = request(
        addr,
        "GET",
        &format!("/api/result/{id}?offset=2495&page_size=7"),
        &[],
        "",
    )
    .json();
    assert_eq!(later["rows"].as_array().unwrap().len(), 5);
    assert_eq!(later["next"], Value::Null);
    for bad in [json!(0), json!(100_001), json!("x"), json!(-1)] {
        let r = query(addr, json!({"sql": sql, "page_size": bad}));
        assert_eq!(r.status, 400, "page_size {bad}");
        assert!(r.body.contains("page_size"), "{}", r.body);
    }
    let r = request(addr, "GET", &format!("/api/result/{id}?page_size=0"), &[], "");
    assert_eq!(r.status, 400);
    let r = request(addr, "GET", "/api/result/424242", &[], "");
    assert_eq!(r.status, 404);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("run the statement again")
    );
}

#[test]
fn errors_say_what_and_where() {
    let db = world();
    let (_server, addr) = start_http(&db, Options::default());
    let e = |sql: &str| {
        let r = query(addr, json!({"sql": sql}));
        assert_eq!(r.status, 400, "{sql}: {}", r.body);
        r.json()["error"].clone()
    };
    let unknown = e("SELECT id,\n  Position.z FROM Position");
    assert_eq!(unknown["sqlstate"], "42703");
    assert_eq!(
        (unknown["line"].clone(), unknown["column"].clone()),
        (json!(2), json!(12))
    );
    assert_eq!(
        unknown["position"], 23,
        "the character, from 1, as PostgreSQL counts"
    );
    assert_eq!(e("SELEC 1")["sqlstate"], "42601");
    assert_eq!(e("BEGIN")["sqlstate"], "0A000");
    assert_eq!(e("SUBSCRIBE SELECT id FROM Health")["sqlstate"], "0A000");
    assert_eq!(e("COPY Health TO STDOUT")["sqlstate"], "0A000");
    let save = e("SAVE TO '/tmp/anything.ecsql'");
    assert_eq!(save["sqlstate"], "42501");
    assert!(save["message"].as_str().unwrap().contains("--files"));
    assert_eq!(e("PRAGMA memory_limit = 1")["sqlstate"], "42501");
    let missing = query(addr, json!({"sql": "SELECT ?1 + 1"}));
    assert_eq!(missing.status, 400);
    // The request itself.
    let r = request(addr, "POST", "/api/query", &[JSON], "{not json");
    assert_eq!(r.status, 400);
    assert!(r.body.contains("not JSON"));
    let r = query(addr, json!({"statement": "SELECT 1"}));
    assert_eq!(r.status, 400);
    assert!(r.body.contains("\\\"sql\\\""), "{}", r.body);
    let r = query(addr, json!({"sql": "SELECT ?1", "params": [[1]]}));
    assert_eq!(r.status, 400);
    assert!(r.body.contains("params[0]"));
    let r = request(addr, "POST", "/api/query", &[JSON], &" ".repeat(2 << 20));
    assert_eq!(r.status, 413);
    let r = request(
        addr,
        "POST",
        "/api/query",
        &["Content-Type: text/plain"],
        "{\"sql\": \"SELECT 1\"}",
    );
    assert_eq!(r.status, 415);
    let r = request(addr, "GET", "/api/query", &[], "");
    assert_eq!(r.status, 405);
    let r = request(addr, "POST", "/api/catalog", &[JSON], "{}");
    assert_eq!(r.status, 405);
    let r = request(addr, "GET", "/nothing", &[], "");
    assert_eq!(r.status, 404);
    assert!(r.body.contains("/api/query"));
    // Nothing of those ran.
    let hp: i64 = db
        .connect()
        .query_row("SELECT Health.hp FROM Health WHERE id = 2", (), |r| r.get(0))
        .unwrap();
    assert_eq!(hp, 13);
}

#[test]
fn another_origin_cannot_use_it_and_a_password_is_asked_for() {
    let db = world();
    let (_server, addr) = start_http(&db, Options::default());
    // A name that is not this server (a DNS rebinding) is refused without a password.
    let reply = clock_as(addr, "attacker.example:80");
    assert!(reply.starts_with("HTTP/1.1 403"), "{reply}");
    for host in ["localhost", "127.0.0.1", "[::1]:8080", "localhost:1"] {
        let reply = clock_as(addr, host);
        assert!(reply.starts_with("HTTP/1.1 200"), "{host}: {reply}");
    }
    // A write from a page of another origin.
    let r = request(
        addr,
        "POST",
        "/api/query",
        &[JSON, "Origin: http://attacker.example"],
        "{\"sql\": \"DESPAWN FROM Health\"}",
    );
    assert_eq!(r.status, 403);
    let own = format!("Origin: http://{addr}");
    let r = request(
        addr,
        "POST",
        "/api/query",
        &[JSON, &own],
        "{\"sql\": \"SELECT 1\"}",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        db.connect()
            .query_row("SELECT count(*) FROM Health", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        2499
    );

    // With a password: every request carries it (Basic, any user name).
    let (_locked, addr) = start_http(
        &db,
        Options {
            password: Some("s3cret".into()),
            ..Options::default()
        },
    );
    let r = request(addr, "GET", "/api/catalog", &[], "");
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    let wrong = "Authorization: Basic dXNlcjp3cm9uZw=="; // user:wrong
    assert_eq!(request(addr, "GET", "/api/catalog", &[wrong], "").status, 401);
    assert_eq!(
        request(addr, "GET", "/", &[wrong], "").status,
        401,
        "the page too"
    );
    let right = "Authorization: Basic YW55b25lOnMzY3JldA=="; // anyone:s3cret
    assert_eq!(request(addr, "GET", "/api/catalog", &[right], "").status, 200);
    let page = request(addr, "GET", "/", &[right], "");
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains("default-src 'self'")
    );

    // Beyond loopback, not without a password or trust.
    let refused = Server::start(
        &db,
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            http: Some(SocketAddr::from(([0, 0, 0, 0], 0))),
            ..Options::default()
        },
    );
    assert!(matches!(refused, Err(ecsql::server::ServerError::NotLoopback(_))));
}

#[test]
fn connections_past_the_limit_are_told_why() {
    let db = world();
    let (_server, addr) = start_http(
        &db,
        Options {
            max_connections: 2,
            ..Options::default()
        },
    );
    let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(100));
    let r = request(addr, "GET", "/api/clock", &[], "");
    assert_eq!(r.status, 503);
    assert!(r.body.contains("too many connections"));
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = request(addr, "GET", "/api/clock", &[], "");
        if r.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the seats were never given back");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A stream of Server-Sent Events being read: what was read of a line, and of an event,
/// stays between calls (a read may stop anywhere).
struct Events {
    reader: BufReader<TcpStream>,
    line: Vec<u8>,
    name: String,
    data: String,
}

impl Events {
    fn open(addr: SocketAddr, path: &str) -> (u16, Events) {
        Events::open_with(addr, path, &[])
    }

    fn open_with(addr: SocketAddr, path: &str, extra: &[&str]) -> (u16, Events) {
        let socket = TcpStream::connect(addr).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let mut writer = socket.try_clone().unwrap();
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
        for line in extra {
            head.push_str(line);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        writer.write_all(head.as_bytes()).unwrap();
        let mut events = Events {
            reader: BufReader::new(socket),
            line: Vec::new(),
            name: String::new(),
            data: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            match events.read_line(deadline) {
                Some(line) if line.starts_with("HTTP/1.1 ") => break line[9..12].parse().unwrap_or(0),
                Some(_) => {}
                None => break 0,
            }
        };
        // The rest of the head.
        while let Some(line) = events.read_line(deadline) {
            if line.is_empty() {
                break;
            }
        }
        (status, events)
    }

    /// The next whole line (without its end), if one comes before `deadline`.
    fn read_line(&mut self, deadline: Instant) -> Option<String> {
        while Instant::now() < deadline {
            match self.reader.read_until(b'\n', &mut self.line) {
                Ok(0) => return None,
                Ok(_) if self.line.ends_with(b"\n") => {
                    let line = String::from_utf8_lossy(&self.line)
                        .trim_end_matches(['\r', '\n'])
                        .to_owned();
                    self.line.clear();
                    return Some(line);
                }
                // A line cut by the timeout: what was read stays in `self.line`.
                _ => {}
            }
        }
        None
    }

    /// The next event's name and data, if one comes within `wait`.
    fn next(&mut self, wait: Duration) -> Option<(String, Value)> {
        let deadline = Instant::now() + wait;
        while let Some(line) = self.read_line(deadline) {
            // Chunked transfer: each chunk's size line stands alone.
            if let Some(n) = line.strip_prefix("event: ") {
                self.name = n.to_owned();
            } else if let Some(d) = line.strip_prefix("data: ") {
                self.data = d.to_owned();
            } else if line.is_empty() && !self.name.is_empty() {
                let name = std::mem::take(&mut self.name);
                let data = std::mem::take(&mut self.data);
                return Some((
                    name,
                    serde_json::from_str(&data).expect("an event's data is JSON"),
                ));
            }
        }
        None
    }
}

#[test]
fn a_live_query_streams_batches_that_add_up_to_the_query_run_again() {
    let db = world();
    let (_server, addr) = start_http(&db, Options::default());
    let sql = "SELECT id, Health.hp, Position.y FROM Health, Position WHERE Health.hp BETWEEN ?1 AND ?2";
    let path = format!(
        "/api/subscribe?sql={}&params=%5B20%2C+60%5D",
        sql.replace(' ', "%20").replace(',', "%2C")
    );
    let (status, mut events) = Events::open(addr, &path);
    assert_eq!(status, 200);
    let (name, columns) = events.next(Duration::from_secs(10)).expect("the columns");
    assert_eq!(name, "columns");
    let names: Vec<&str> = columns["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["id", "Health.hp", "Position.y", "tick", "diff"]);
    // Writes and ticks (each moving every y and healing some): the bag of rows the
    // batches add up to is the query's result run again.
    let conn = db.connect();
    let mut bag: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let fold = |bag: &mut std::collections::HashMap<String, i64>, batch: &Value| {
        for row in batch["rows"].as_array().unwrap() {
            let row = row.as_array().unwrap();
            let key = serde_json::to_string(&row[..3]).unwrap();
            let diff = row[4].as_i64().unwrap();
            *bag.entry(key).or_default() += diff;
        }
        bag.retain(|_, n| *n != 0);
    };
    for step in 0..40 {
        let sql = match step % 5 {
            4 => "TICK 2".to_owned(),
            0 => format!(
                "UPDATE Health SET hp = hp + 7 WHERE CAST(id AS INT) % 11 = {}",
                step % 11
            ),
            1 => format!("DESPAWN FROM Health WHERE CAST(id AS INT) % 97 = {}", step % 97),
            2 => format!(
                "SPAWN Health({}), Position(0, {step}) FROM range(5) AS r(i)",
                20 + step
            ),
            _ => "UPDATE Health SET hp = 40 WHERE CAST(id AS INT) % 13 = 0".to_owned(),
        };
        conn.execute(&sql, ()).unwrap();
        while let Some((name, batch)) = events.next(Duration::from_millis(1)) {
            assert_eq!(name, "batch");
            fold(&mut bag, &batch);
        }
    }
    let expected = {
        let mut stmt = conn.prepare(sql).unwrap();
        let mut expected: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        for r in stmt.query((20, 60)).unwrap() {
            let r = r.unwrap();
            let key = serde_json::to_string(&json!([
                r.get::<_, i64>(0).unwrap(),
                r.get::<_, i64>(1).unwrap(),
                r.get::<_, f64>(2).unwrap()
            ]))
            .unwrap();
            *expected.entry(key).or_default() += 1;
        }
        expected
    };
    assert!(!expected.is_empty());
    // What is still on its way comes within the deadline.
    let deadline = Instant::now() + Duration::from_secs(20);
    while bag != expected && Instant::now() < deadline {
        if let Some((_, batch)) = events.next(Duration::from_millis(100)) {
            fold(&mut bag, &batch);
        }
    }
    assert_eq!(bag, expected, "the batches add up to the result");
}

#[test]
fn a_live_query_that_cannot_run_is_an_error_and_streams_are_bounded() {
    let db = world();
    let (_server, addr) = start_http(&db, Options::default());
    let r = request(
        addr,
        "GET",
        "/api/subscribe?sql=SELECT%20nope%20FROM%20Health",
        &[],
        "",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["sqlstate"], "42703");
    let r = request(addr, "GET", "/api/subscribe", &[], "");
    assert_eq!(r.status, 400);
    let r = request(addr, "GET", "/api/subscribe?sql=SELECT%201&params=%5B", &[], "");
    assert_eq!(r.status, 400);
    // A component the query reads is dropped: the stream says why, and ends.
    let (status, mut events) = Events::open(addr, "/api/subscribe?sql=SELECT%20id%20FROM%20Name");
    assert_eq!(status, 200);
    assert_eq!(
        events.next(Duration::from_secs(10)).expect("columns").0,
        "columns"
    );
    assert_eq!(
        events.next(Duration::from_secs(10)).expect("the first batch").0,
        "batch"
    );
    db.connect().execute("DROP COMPONENT Name", ()).unwrap();
    let (name, error) = events.next(Duration::from_secs(10)).expect("the error");
    assert_eq!(name, "error");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("Name"),
        "{error}"
    );
}

#[test]
fn pages_of_other_sites_and_names_that_are_not_this_server_are_refused() {
    let db = world();
    let (_server, addr) = start_http(
        &db,
        Options {
            trust: true,
            ..Options::default()
        },
    );
    // A page of another site, whatever the method: its browser says where it comes from.
    for path in [
        "/api/catalog",
        "/api/subscribe?sql=SELECT%201",
        "/api/entity/2",
        "/",
    ] {
        let r = request(addr, "GET", path, &["Sec-Fetch-Site: cross-site"], "");
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        let r = request(addr, "GET", path, &["Origin: http://attacker.example"], "");
        assert_eq!(r.status, 403, "{path}: {}", r.body);
    }
    // The page's own requests (same origin), and programs (no such headers) are answered.
    let own = format!("Origin: http://{addr}");
    assert_eq!(
        request(
            addr,
            "GET",
            "/api/clock",
            &["Sec-Fetch-Site: same-origin", &own],
            ""
        )
        .status,
        200
    );
    assert_eq!(
        request(addr, "GET", "/api/clock", &["Sec-Fetch-Site: none"], "").status,
        200
    );
    // Without a password (trusted or not), a name other than localhost is refused; an
    // address is not a name a stranger's DNS can point here.
    for (host, status) in [
        ("attacker.example", 403),
        ("attacker.example:8080", 403),
        ("10.1.2.3:80", 200),
        ("[::1]", 200),
    ] {
        let reply = clock_as(addr, host);
        assert!(
            reply.starts_with(&format!("HTTP/1.1 {status}")),
            "{host}: {reply}"
        );
    }
    // The wrong method is told the right one.
    let r = request(addr, "DELETE", "/api/entity/2", &[], "");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET"));
    assert_eq!(
        request(addr, "GET", "/api/query", &[], "").header("allow"),
        Some("POST")
    );
}

#[test]
fn a_password_beyond_loopback_needs_tls_and_any_case_of_basic_will_do() {
    let db = world();
    let refused = Server::start(
        &db,
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            http: Some(SocketAddr::from(([0, 0, 0, 0], 0))),
            password: Some("s3cret".into()),
            ..Options::default()
        },
    );
    match refused {
        Err(e @ ecsql::server::ServerError::PasswordInClear(_)) => {
            assert!(e.to_string().contains("--tls-cert"), "{e}");
        }
        other => panic!("expected PasswordInClear, got {other:?}"),
    }
    let (_server, addr) = start_http(
        &db,
        Options {
            password: Some("s3cret".into()),
            ..Options::default()
        },
    );
    let lower = "Authorization: basic YW55b25lOnMzY3JldA==";
    assert_eq!(request(addr, "GET", "/api/clock", &[lower], "").status, 200);
    // A wrong password is answered after a pause.
    let started = Instant::now();
    let r = request(addr, "GET", "/api/clock", &["Authorization: Basic YTpi"], "");
    assert_eq!(r.status, 401);
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn streams_are_bounded() {
    let db = world();
    let (_server, addr) = start_http(
        &db,
        Options {
            max_connections: 100,
            ..Options::default()
        },
    );
    let open: Vec<(u16, Events)> = (0..64)
        .map(|_| Events::open(addr, "/api/subscribe?sql=SELECT%20id%20FROM%20Name%20LIMIT%201"))
        .collect();
    assert!(open.iter().all(|(status, _)| *status == 200));
    let r = request(addr, "GET", "/api/subscribe?sql=SELECT%201", &[], "");
    assert_eq!(r.status, 503);
    assert!(r.body.contains("64 live queries"), "{}", r.body);
    drop(open);
    // Their seats come back once their threads see the clients gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _events) = Events::open(addr, "/api/subscribe?sql=SELECT%201");
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the streams' seats were never given back"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_statement_whose_client_went_away_is_stopped() {
    let db = world();
    let (_server, addr) = start_http(
        &db,
        Options {
            max_connections: 1,
            ..Options::default()
        },
    );
    // A statement of minutes (the server's limit is 30 s), its client gone at once.
    let body =
        json!({"sql": "SELECT count(*) FROM range(100000) AS a(i), range(100000) AS b(j)"}).to_string();
    let mut socket = TcpStream::connect(addr).unwrap();
    socket
        .write_all(
            format!(
                "POST /api/query HTTP/1.1\r\nHost: {addr}\r\n{JSON}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(socket);
    // It held the one statement a client may run at once: the next request is answered
    // as soon as it stops, not at its end.
    let started = Instant::now();
    let deadline = started + Duration::from_secs(10);
    loop {
        let r = request(addr, "POST", "/api/query", &[JSON], "{\"sql\": \"SELECT 1\"}");
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(
            Instant::now() < deadline,
            "the statement went on without its client"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn with_tls_the_http_side_takes_only_https() {
    if Command::new("curl").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("ECSQL_REQUIRE_CLIENTS").is_none(),
            "no curl, and ECSQL_REQUIRE_CLIENTS is set: apt-get install curl"
        );
        eprintln!("with_tls_the_http_side_takes_only_https did not run: no curl (apt-get install curl)");
        return;
    }
    let db = world();
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/tls");
    let (_server, addr) = start_http(
        &db,
        Options {
            tls: Some(ecsql::server::TlsFiles {
                cert: dir.join("cert.pem"),
                key: dir.join("key.pem"),
            }),
            ..Options::default()
        },
    );
    let curl = |url: String| {
        Command::new("curl")
            .args(["-sk", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", &url])
            .output()
            .expect("curl runs")
    };
    let https = curl(format!("https://{addr}/api/clock"));
    let text = String::from_utf8_lossy(&https.stdout);
    assert!(text.ends_with("\n200") && text.contains("\"tick\":3"), "{text}");
    let plain = curl(format!("http://{addr}/api/clock"));
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(!text.ends_with("\n200"), "answered without TLS: {text}");
}
