//! The protocol written by hand, byte by byte, for what no driver sends: parameters and
//! results in text and binary chosen per column, and malformed messages from a stranger —
//! each answered with an error, the connection going on or dropped, nothing else touched.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ecsql::Database;

use super::{connect, rows, runtime, start};

/// A client that writes the protocol's messages itself.
struct Raw {
    stream: TcpStream,
}

/// A message from the server: its type byte and its body.
type Message = (u8, Vec<u8>);

impl Raw {
    /// Connected and past startup (no password asked on loopback).
    fn connect(addr: std::net::SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut raw = Raw { stream };
        let mut body = 196608_i32.to_be_bytes().to_vec();
        body.extend(b"user\0test\0database\0ecsql\0\0");
        let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        startup.extend(body);
        raw.stream.write_all(&startup).unwrap();
        let answer = raw.until_ready();
        assert!(answer.iter().any(|(t, _)| *t == b'R'), "authentication ok");
        raw
    }

    fn send(&mut self, tag: u8, body: &[u8]) {
        let mut message = vec![tag];
        message.extend(((body.len() + 4) as i32).to_be_bytes());
        message.extend(body);
        self.stream.write_all(&message).unwrap();
    }

    fn parse(&mut self, sql: &str, types: &[u32]) {
        let mut body = b"\0".to_vec();
        body.extend(sql.as_bytes());
        body.push(0);
        body.extend((types.len() as i16).to_be_bytes());
        for t in types {
            body.extend(t.to_be_bytes());
        }
        self.send(b'P', &body);
    }

    fn bind(&mut self, formats: &[i16], params: &[Option<&[u8]>], results: &[i16]) {
        let mut body = b"\0\0".to_vec();
        body.extend((formats.len() as i16).to_be_bytes());
        for f in formats {
            body.extend(f.to_be_bytes());
        }
        body.extend((params.len() as i16).to_be_bytes());
        for p in params {
            match p {
                None => body.extend((-1_i32).to_be_bytes()),
                Some(bytes) => {
                    body.extend((bytes.len() as i32).to_be_bytes());
                    body.extend(*bytes);
                }
            }
        }
        body.extend((results.len() as i16).to_be_bytes());
        for r in results {
            body.extend(r.to_be_bytes());
        }
        self.send(b'B', &body);
    }

    /// Parse, Bind, Describe (portal), Execute and Sync: the server's answer.
    fn run(&mut self, sql: &str, formats: &[i16], params: &[Option<&[u8]>], results: &[i16]) -> Vec<Message> {
        self.parse(sql, &[]);
        self.bind(formats, params, results);
        self.send(b'D', b"P\0");
        self.send(b'E', b"\0\0\0\0\0");
        self.send(b'S', b"");
        self.until_ready()
    }

    /// The next message; `None` when the server closed the connection. Waiting longer
    /// than the read timeout fails the test (a hang).
    fn read(&mut self) -> Option<Message> {
        let mut head = [0; 5];
        if let Err(e) = self.stream.read_exact(&mut head) {
            return closed(e);
        }
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0; len.saturating_sub(4)];
        if let Err(e) = self.stream.read_exact(&mut body) {
            return closed(e);
        }
        Some((head[0], body))
    }

    /// The type of the message that starts a COPY FROM STDIN (CopyInResponse), or of an
    /// error instead.
    fn until_copy_in(&mut self) -> u8 {
        loop {
            let (kind, _) = self.read().expect("an answer");
            if matches!(kind, b'G' | b'E') {
                return kind;
            }
        }
    }

    /// The messages up to and including ReadyForQuery.
    fn until_ready(&mut self) -> Vec<Message> {
        let mut seen = Vec::new();
        while let Some(m) = self.read() {
            let ready = m.0 == b'Z';
            seen.push(m);
            if ready {
                return seen;
            }
        }
        panic!("the connection closed before ReadyForQuery: {seen:?}");
    }
}

/// `None` for a connection the server closed; a panic for a read that timed out.
fn closed(e: std::io::Error) -> Option<Message> {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            panic!("the server neither answered nor closed the connection: {e}")
        }
        _ => None,
    }
}

/// The SQLSTATE of the first error among `messages`.
fn sqlstate(messages: &[Message]) -> Option<String> {
    let (_, body) = messages.iter().find(|(t, _)| *t == b'E')?;
    let mut fields = body.split(|b| *b == 0);
    fields.find_map(|f| {
        f.strip_prefix(b"C")
            .map(|c| String::from_utf8_lossy(c).into_owned())
    })
}

/// The values of each data row among `messages` (`None` for NULL).
fn data(messages: &[Message]) -> Vec<Vec<Option<Vec<u8>>>> {
    messages
        .iter()
        .filter(|(t, _)| *t == b'D')
        .map(|(_, body)| {
            let count = i16::from_be_bytes([body[0], body[1]]) as usize;
            let mut at = 2;
            (0..count)
                .map(|_| {
                    let len = i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
                    at += 4;
                    (len >= 0).then(|| {
                        let value = body[at..at + len as usize].to_vec();
                        at += len as usize;
                        value
                    })
                })
                .collect()
        })
        .collect()
}

fn world() -> (Database, ecsql::server::Server) {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Unit (hp INT, speed REAL, name TEXT, alive BOOL, x FLOAT);
             SPAWN Unit(i, i + 0.5, 'u' || i, i % 2 = 0, i * 0.25) FROM range(10) AS r(i)",
        )
        .unwrap();
    let server = start(&db, 8);
    (db, server)
}

#[test]
fn parameters_and_results_in_text_and_binary_chosen_per_column() {
    let (_db, server) = world();
    let mut raw = Raw::connect(server.local_addr());
    let sql = "SELECT Unit.hp, Unit.speed, Unit.name, Unit.alive, Unit.x FROM Unit \
               WHERE Unit.hp = $1 AND Unit.alive = $2 AND Unit.x = $3 AND Unit.speed = $4 AND Unit.name = $5";
    // Every parameter in text, every result in text.
    let answer = raw.run(
        sql,
        &[],
        &[Some(b"4"), Some(b"true"), Some(b"1"), Some(b"4.5"), Some(b"u4")],
        &[],
    );
    assert_eq!(sqlstate(&answer), None, "{answer:?}");
    assert_eq!(
        data(&answer),
        [[
            Some(b"4".to_vec()),
            Some(b"4.5".to_vec()),
            Some(b"u4".to_vec()),
            Some(b"t".to_vec()),
            Some(b"1".to_vec())
        ]]
    );
    // Each parameter in its own format, each result column in its own.
    let answer = raw.run(
        sql,
        &[1, 0, 1, 1, 0],
        &[
            Some(&6_i64.to_be_bytes()),
            Some(b"t"),
            Some(&1.5_f64.to_be_bytes()),
            Some(&6.5_f32.to_be_bytes()),
            Some(b"u6"),
        ],
        &[1, 0, 0, 1, 1],
    );
    assert_eq!(sqlstate(&answer), None, "{answer:?}");
    assert_eq!(
        data(&answer),
        [[
            Some(6_i64.to_be_bytes().to_vec()),
            Some(b"6.5".to_vec()),
            Some(b"u6".to_vec()),
            Some(vec![1]),
            Some(1.5_f64.to_be_bytes().to_vec()),
        ]]
    );
    // A type the client names (int4, in binary) is read as that type.
    raw.parse("SELECT Unit.name FROM Unit WHERE Unit.hp = $1", &[23]);
    raw.bind(&[1], &[Some(&3_i32.to_be_bytes())], &[]);
    raw.send(b'E', b"\0\0\0\0\0");
    raw.send(b'S', b"");
    let answer = raw.until_ready();
    assert_eq!(data(&answer), [[Some(b"u3".to_vec())]], "{answer:?}");
}

#[test]
fn a_malformed_bind_is_answered_with_an_error_and_the_connection_goes_on() {
    let (_db, server) = world();
    let mut raw = Raw::connect(server.local_addr());
    let sql = "SELECT Unit.name FROM Unit WHERE Unit.hp = $1";
    // Parameter formats, parameters, result formats, and the SQLSTATE answered.
    type Case<'a> = (&'a [i16], &'a [Option<&'a [u8]>], &'a [i16], &'a str);
    let cases: [Case; 6] = [
        // Three result formats for one column.
        (&[], &[Some(b"1")], &[0, 1, 0], "08P01"),
        // Two parameters for one.
        (&[], &[Some(b"1"), Some(b"2")], &[], "08P01"),
        // Two parameter formats for one parameter.
        (&[0, 1], &[Some(b"1")], &[], "08P01"),
        // An int8 of three bytes.
        (&[1], &[Some(&[0, 0, 1])], &[], "22P02"),
        // Not a number.
        (&[], &[Some(b"abc")], &[], "22P02"),
        // Not UTF-8.
        (&[], &[Some(&[0xff, 0xfe])], &[], "22P02"),
    ];
    for (formats, params, results, code) in cases {
        let answer = raw.run(sql, formats, params, results);
        assert_eq!(sqlstate(&answer).as_deref(), Some(code), "{params:?}: {answer:?}");
        let answer = raw.run(sql, &[], &[Some(b"2")], &[]);
        assert_eq!(data(&answer), [[Some(b"u2".to_vec())]], "the connection goes on");
    }
}

#[test]
fn a_client_keeps_a_bounded_number_of_prepared_statements() {
    let (_db, server) = world();
    let mut raw = Raw::connect(server.local_addr());
    let parse = |raw: &mut Raw, name: &str| {
        let mut body = format!("{name}\0SELECT 1\0").into_bytes();
        body.extend(0_i16.to_be_bytes());
        raw.send(b'P', &body);
    };
    // Ten thousand named statements are kept.
    for i in 0..10_000 {
        parse(&mut raw, &format!("s{i}"));
    }
    raw.send(b'S', b"");
    let answer = raw.until_ready();
    assert_eq!(answer.iter().filter(|(t, _)| *t == b'1').count(), 10_000);
    assert!(sqlstate(&answer).is_none(), "{:?}", sqlstate(&answer));
    // One more is refused (54000); one of the same name replaces it; one closed frees a place.
    parse(&mut raw, "one more");
    raw.send(b'S', b"");
    assert_eq!(sqlstate(&raw.until_ready()).as_deref(), Some("54000"));
    parse(&mut raw, "s7");
    raw.send(b'S', b"");
    assert!(sqlstate(&raw.until_ready()).is_none());
    raw.send(b'C', b"Ss0\0");
    parse(&mut raw, "one more");
    raw.send(b'S', b"");
    let answer = raw.until_ready();
    assert!(sqlstate(&answer).is_none(), "{:?}", sqlstate(&answer));
    assert!(answer.iter().any(|(t, _)| *t == b'3'), "CloseComplete");
    // DEALLOCATE and DISCARD ALL, as drivers and pools send them, forget statements.
    let simple = |raw: &mut Raw, sql: &str| {
        raw.send(b'Q', format!("{sql}\0").as_bytes());
        raw.until_ready()
    };
    let tag = |answer: &[Message]| answer.iter().find(|(t, _)| *t == b'C').map(|(_, b)| b.clone());
    assert_eq!(
        tag(&simple(&mut raw, "DEALLOCATE s1")),
        Some(b"DEALLOCATE\0".to_vec())
    );
    assert_eq!(
        sqlstate(&simple(&mut raw, "DEALLOCATE s1")).as_deref(),
        Some("26000")
    );
    assert_eq!(
        tag(&simple(&mut raw, "deallocate prepare all;")),
        Some(b"DEALLOCATE ALL\0".to_vec())
    );
    for i in 0..10_000 {
        parse(&mut raw, &format!("again{i}"));
    }
    raw.send(b'S', b"");
    assert!(
        sqlstate(&raw.until_ready()).is_none(),
        "room again after DEALLOCATE ALL"
    );
    simple(&mut raw, "SET application_name = 'pooled'");
    assert_eq!(
        tag(&simple(&mut raw, "DISCARD ALL")),
        Some(b"DISCARD ALL\0".to_vec())
    );
    let shown = simple(&mut raw, "SHOW application_name");
    assert!(
        shown.iter().any(|(t, b)| *t == b'D' && b == &[0, 1, 0, 0, 0, 0]),
        "{shown:?}"
    );
    parse(&mut raw, "again1");
    raw.send(b'S', b"");
    assert!(sqlstate(&raw.until_ready()).is_none());
}

#[test]
fn a_client_sending_garbage_is_dropped_and_nobody_else_notices() {
    let (_db, server) = world();
    runtime().block_on(async {
        let other = connect(&server).await.unwrap();
        other
            .batch_execute("BEGIN; UPDATE Unit SET hp = Unit.hp + 100")
            .await
            .unwrap();
        // Garbage where a startup message belongs, and garbage after one.
        for after_startup in [false, true] {
            let mut raw = if after_startup {
                Raw::connect(server.local_addr())
            } else {
                let stream = TcpStream::connect(server.local_addr()).unwrap();
                stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                Raw { stream }
            };
            let _ = raw
                .stream
                .write_all(&[0xff, 0xff, 0xff, 0xff, b'x', 1, 2, 3, 4, 5, 6, 7]);
            // An error, if any, then the end of the connection; never a hang (`read`
            // fails the test on one).
            let mut seen = Vec::new();
            while let Some(m) = raw.read() {
                seen.push(m);
            }
            assert!(seen.iter().all(|(t, _)| *t == b'E'), "{seen:?}");
        }
        // The other client's transaction is whole, and commits.
        other.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            rows(&other, "SELECT min(Unit.hp) FROM Unit").await,
            [[Some("100".to_owned())]]
        );
    });
}

#[test]
fn copy_in_a_simple_query_is_answered_as_postgresql_answers_psql() {
    let (_db, server) = world();
    let mut raw = Raw::connect(server.local_addr());
    let query = |raw: &mut Raw, sql: &str| {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        raw.send(b'Q', &body);
    };
    // Out: one CopyData a row, then CopyDone and the count.
    query(
        &mut raw,
        "COPY (SELECT Unit.hp FROM Unit WHERE Unit.hp < 3 ORDER BY Unit.hp) TO STDOUT",
    );
    let answer = raw.until_ready();
    let kinds: Vec<u8> = answer.iter().map(|(t, _)| *t).collect();
    assert_eq!(kinds, b"HdddcCZ", "{answer:?}");
    assert_eq!(answer[1].1, b"0\n");
    assert_eq!(answer[5].1, b"COPY 3\0");
    // The CopyOutResponse says how many columns the rows have (a driver splits them by
    // it): text format, 2 columns, each text.
    query(
        &mut raw,
        "COPY (SELECT Unit.hp, Unit.hp * 2 FROM Unit WHERE Unit.hp = 1) TO STDOUT",
    );
    let answer = raw.until_ready();
    assert_eq!(answer[0], (b'H', vec![0, 0, 2, 0, 0, 0, 0]), "{answer:?}");
    assert_eq!(answer[1].1, b"1\t2\n");
    // With a header: it goes with the first row, and the count is the rows'.
    query(
        &mut raw,
        "COPY (SELECT Unit.hp FROM Unit WHERE Unit.hp < 2 ORDER BY Unit.hp) TO STDOUT (FORMAT csv, HEADER true)",
    );
    let answer = raw.until_ready();
    assert_eq!(answer[1].1, b"hp\n0\n");
    assert!(
        answer.iter().any(|(t, b)| *t == b'C' && b == b"COPY 2\0"),
        "{answer:?}"
    );
    // In: CopyInResponse, the data in any pieces, CopyDone, then the count.
    query(&mut raw, "COPY Unit (hp, name) FROM STDIN (FORMAT csv)");
    let answer = raw.until_copy_in();
    assert_eq!(answer, b'G');
    raw.send(b'd', b"100,a\n10");
    raw.send(b'd', b"1,b\n");
    raw.send(b'c', b"");
    let answer = raw.until_ready();
    assert!(
        answer.iter().any(|(t, b)| *t == b'C' && b == b"COPY 2\0"),
        "{answer:?}"
    );
    // Inside a transaction block, the client is told the block is still open after it
    // (psycopg then commits it; told idle, it sent nothing and the rows were lost).
    query(&mut raw, "BEGIN");
    raw.until_ready();
    query(&mut raw, "COPY Unit (hp, name) FROM STDIN (FORMAT csv)");
    assert_eq!(raw.until_copy_in(), b'G');
    raw.send(b'd', b"5,in block\n");
    raw.send(b'c', b"");
    let answer = raw.until_ready();
    assert_eq!(answer.last(), Some(&(b'Z', b"T".to_vec())), "{answer:?}");
    query(&mut raw, "ROLLBACK");
    let answer = raw.until_ready();
    assert_eq!(answer.last(), Some(&(b'Z', b"I".to_vec())), "{answer:?}");
    // Abandoned with CopyFail: an error, nothing written, and the connection goes on.
    query(&mut raw, "COPY Unit (hp) FROM STDIN");
    assert_eq!(raw.until_copy_in(), b'G');
    raw.send(b'd', b"7\n");
    raw.send(b'f', b"the user stopped it\0");
    let answer = raw.until_ready();
    assert_eq!(sqlstate(&answer).as_deref(), Some("57014"), "{answer:?}");
    let answer = raw.run("SELECT count(*) FROM Unit", &[], &[], &[]);
    assert_eq!(data(&answer), [[Some(b"12".to_vec())]]);
    // Not the last statement of its query: refused, before anything of it runs.
    query(
        &mut raw,
        "SPAWN Unit(1000, 0.5, 'x', true, 1.0); COPY Unit (hp) FROM STDIN; SELECT 1",
    );
    let answer = raw.until_ready();
    assert_eq!(sqlstate(&answer).as_deref(), Some("0A000"), "{answer:?}");
    let answer = raw.run("SELECT count(*) FROM Unit", &[], &[], &[]);
    assert_eq!(data(&answer), [[Some(b"12".to_vec())]], "the SPAWN before it ran");
}

#[test]
fn after_an_error_in_a_pipeline_the_rest_is_skipped_until_sync() {
    let (db, server) = world();
    let mut raw = Raw::connect(server.local_addr());
    // A statement that fails, then a write, then Sync: the write is skipped, as
    // PostgreSQL skips what follows an error until Sync.
    raw.parse("SELECT 1 / 0", &[]);
    raw.bind(&[], &[], &[]);
    raw.send(b'E', b"\0\0\0\0\0");
    raw.parse("SPAWN Unit(99, 0.5, 'late', true, 1.0)", &[]);
    raw.bind(&[], &[], &[]);
    raw.send(b'E', b"\0\0\0\0\0");
    raw.send(b'S', b"");
    let answer = raw.until_ready();
    assert_eq!(sqlstate(&answer).as_deref(), Some("22012"), "{answer:?}");
    let count = |db: &Database| {
        db.connect()
            .query_row("SELECT count(*) FROM Unit", (), |r| r.get::<_, i64>(0))
            .unwrap()
    };
    assert_eq!(count(&db), 10, "the write after the error ran");
    // A Bind whose formats do not fit a write: refused before it runs.
    let answer = raw.run(
        "SPAWN Unit(98, 0.5, 'x', true, 1.0) RETURNING id",
        &[],
        &[],
        &[0, 1, 0],
    );
    assert_eq!(sqlstate(&answer).as_deref(), Some("08P01"), "{answer:?}");
    assert_eq!(count(&db), 10, "a write whose Bind was refused ran");
}

#[test]
fn nothing_sent_after_a_failed_login_runs() {
    let db = Database::open_in_memory();
    let server = ecsql::server::Server::start(
        &db,
        ecsql::server::Options {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            password: Some("pencil".to_owned()),
            ..ecsql::server::Options::default()
        },
    )
    .unwrap();
    let stream = TcpStream::connect(server.local_addr()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut raw = Raw { stream };
    let mut body = 196608_i32.to_be_bytes().to_vec();
    body.extend(b"user\0x\0\0");
    let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    startup.extend(body);
    raw.stream.write_all(&startup).unwrap();
    // A well-formed SASL answer naming a mechanism the server does not offer (login
    // fails), then a query at once, pipelined.
    let mut sasl = b"BOGUS\0".to_vec();
    sasl.extend((-1_i32).to_be_bytes());
    raw.send(b'p', &sasl);
    raw.send(b'Q', b"CREATE COMPONENT Pwned (x INT)\0");
    while raw.read().is_some() {}
    std::thread::sleep(Duration::from_millis(200));
    let made = db.connect().component_names().unwrap();
    assert!(
        !made.iter().any(|n| n == "Pwned"),
        "a query ran without a login: {made:?}"
    );
}
