//! The explorer page in a real browser: headless Chromium (Debian's `chromium`), driven by
//! playwright-core (npm) through `explorer/drive.js`, against a server running
//! examples/game_loop.sql beside a 100,000-entity crowd (1,000 of them moving), ticking 30
//! times a second. The
//! entity list filters and pages, the inspector edits a value (and the world has it),
//! the console shows a result, an error at its spot and a plan, the live view's points
//! move as the world ticks, the systems plot fills, relations show as a tree.
//! Screenshots of each panel are kept in `target/tmp/explorer/` for a person to open.
//!
//! Without Chromium, node or playwright-core the test says so and does nothing, unless
//! ECSQL_REQUIRE_BROWSER is set (`.ci/run` installs them and sets it): then it fails.

use std::path::PathBuf;
use std::process::Command;

use ecsql::Database;
use ecsql::server::Options;

/// Why the browser cannot be driven here, if it cannot.
fn missing() -> Option<String> {
    let chromium = std::env::var("ECSQL_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    if !std::path::Path::new(&chromium).exists() {
        return Some(format!(
            "no Chromium at {chromium} (apt-get install chromium, or set ECSQL_CHROMIUM)"
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("no node (apt-get install nodejs npm)".to_owned());
    }
    let modules = std::env::var("ECSQL_NODE_PATH").unwrap_or_default();
    if !PathBuf::from(&modules).join("playwright-core").exists() {
        return Some(format!(
            "no playwright-core in ECSQL_NODE_PATH ({modules:?}): npm install --prefix DIR playwright-core@1 and set ECSQL_NODE_PATH=DIR/node_modules"
        ));
    }
    None
}

#[test]
fn the_explorer_works_in_a_real_browser() {
    if let Some(why) = missing() {
        if std::env::var_os("ECSQL_REQUIRE_BROWSER").is_some() {
            panic!("the explorer's browser test cannot run ({why}), and ECSQL_REQUIRE_BROWSER is set");
        }
        eprintln!("the explorer's browser test did not run: {why}");
        return;
    }
    let db = Database::open_in_memory();
    let conn = db.connect();
    let game =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/game_loop.sql")).unwrap();
    conn.execute_batch(&game).expect("examples/game_loop.sql");
    // The named ones stand still from here, so that none of them dies while the page looks
    // at them; the crowd moves.
    conn.execute_batch(
        "UPDATE Velocity SET x = 0, y = 0 WHERE has(Name);
         CREATE COMPONENT Team (n INT);
         CREATE COMPONENT Parent (of ENTITY);
         SPAWN Position(x => (i % 400) * 2.5, y => (i / 400) * 4.0), Team(i % 3)
           FROM range(100000) AS r(i);
         INSERT INTO Velocity (id, x, y) SELECT id, 0.3, -0.2 FROM Team WHERE CAST(id AS INT) % 100 = 0;
         SPAWN Parent(4) FROM range(5) AS r(i);",
    )
    .expect("the crowd");
    let (server, http) = super::http::start_http(
        &db,
        Options {
            tick_rate: Some(30.0),
            ..Options::default()
        },
    );
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("explorer");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/server/explorer/drive.js"
        ))
        .arg(format!("http://{http}/"))
        .arg(&shots)
        .env("NODE_PATH", std::env::var("ECSQL_NODE_PATH").unwrap_or_default())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser's steps failed (screenshots in {}):\n{stderr}\n{stdout}",
        shots.display()
    );
    eprintln!(
        "explorer in Chromium: {stdout}(screenshots in {})",
        shots.display()
    );
    for panel in [
        "entities",
        "inspector",
        "console-error",
        "console-explain",
        "live",
        "systems",
        "relations",
    ] {
        let png = shots.join(format!("{panel}.png"));
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 2000,
            "{} is a picture",
            png.display()
        );
    }
    // The inspector's edit is in the world.
    let hp: i64 = conn
        .query_row(
            "SELECT Health.hp FROM Health, Name WHERE Name.value = 'troll'",
            (),
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hp, 77);
    let ticks = server.ticks();
    assert!(ticks.ran > 30 && ticks.failed == 0, "{ticks:?}");
}
