//! The schedule's side of the API: ticks, the clock, the schedule as SQL, and systems
//! written in Rust, each handed to the engine's client.

use super::Connection;
use crate::error::Result;
use crate::exec::Clock;
use crate::storage::World;

impl Connection {
    /// Runs `n` ticks: every enabled system once per tick, in order; each tick is atomic
    /// and `n` stops at the first that fails (the ticks before it stay). Returns how many
    /// ran. The tick's length (`delta_time()`) stays as it was.
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute_batch(
    ///     "CREATE COMPONENT Clock (t FLOAT); SPAWN Clock(0.0);
    ///      CREATE SYSTEM advance AS UPDATE Clock SET t = Clock.t + delta_time();",
    /// )?;
    /// assert_eq!(conn.tick(60)?, 60);
    /// let t: f64 = conn.query_row("SELECT t FROM Clock", (), |r| r.get(0))?;
    /// assert!((t - 1.0).abs() < 1e-9);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn tick(&self, n: u64) -> Result<u64> {
        self.client.tick(n)
    }

    /// `tick`, with each tick `dt` seconds long from now on (`TICK n WITH dt = …`).
    pub fn tick_with_dt(&self, n: u64, dt: f64) -> Result<u64> {
        self.client.tick_with_dt(n, dt)
    }

    /// The statements that make the schedule again: `CREATE PHASE` for each phase made,
    /// `CREATE SYSTEM` for each SQL system in creation order (so that each names only
    /// systems made before it, and ties in the run order fall the same way), and `ALTER
    /// SYSTEM … DISABLE` for those disabled. A Rust system is a comment: the program
    /// registers it again. `.schema` and `.dump` write these.
    pub fn schedule_sql(&self) -> Result<Vec<String>> {
        self.client.schedule_sql()
    }

    /// The clock: the last tick run (0 before any) and the tick's length in seconds.
    pub fn clock(&self) -> Result<Clock> {
        self.client.clock()
    }

    /// Registers a Rust closure as a system named `name`, ordered among the SQL ones by
    /// `clauses` (what may follow the name in `CREATE SYSTEM`: `IN PHASE p`, `BEFORE s`,
    /// `AFTER s`, `EVERY n TICKS`, `WHEN (condition)`; empty for none). Each tick it runs,
    /// it gets the world (the columnar door) and the tick's clock; an error it returns, or
    /// a panic, fails the tick, which is then undone whole.
    ///
    /// ```
    /// # use ecsql::{Database, Value};
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(10);")?;
    /// conn.execute("CREATE SYSTEM poison AS UPDATE Health SET hp = Health.hp - 1", ())?;
    /// conn.create_system("heal", "AFTER poison", |world, _clock| {
    ///     let health = world.component_by_name("Health")?.id();
    ///     let hp = world.field(health, "hp")?;
    ///     for table in world.matching_tables(&ecsql::Filter::new().with(health))? {
    ///         if let Some(mut table) = world.table_mut(table) {
    ///             for v in table.slice_mut::<i64>(hp)? {
    ///                 *v += 2;
    ///             }
    ///         }
    ///     }
    ///     Ok(())
    /// })?;
    /// conn.tick(3)?;
    /// assert_eq!(conn.query_row("SELECT hp FROM Health", (), |r| r.get::<_, i64>(0))?, 13);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn create_system<F>(&self, name: &str, clauses: &str, f: F) -> Result<()>
    where
        F: FnMut(&mut World, Clock) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>
            + Send
            + 'static,
    {
        self.client.create_system(name, clauses, f)
    }
}
