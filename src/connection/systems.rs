//! The schedule's side of the API: ticks, the clock, the schedule as SQL, and systems
//! written in Rust, each handed to the engine's client.

use super::Connection;
use super::typed::{Query, QueryData, QueryFilter, access_of};
use crate::error::Result;
use crate::exec::Clock;
use crate::schedule::{SystemAccess, SystemView};
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

    /// Registers a Rust closure as a system that reads and writes only what `access`
    /// declares: each tick it runs, it gets a view of the world (`SystemView`) that lends
    /// the declared fields, to read, and those it declares it writes, to write; reaching
    /// any other field is an error (`StorageError::Undeclared`) that fails the tick, which
    /// is then undone whole. It cannot make, end or move entities (a system that does is
    /// registered with `create_system`, and runs alone).
    ///
    /// The tick judges it by its declaration, as it judges a SQL system by its plan: it
    /// runs in its turn (on the tick's thread) among UPDATEs that compute at the same
    /// time, without keeping them apart, and `EXPLAIN TICK` and `SHOW SYSTEMS` show what
    /// it reads and writes. The view shows only the tables that hold a component the
    /// declaration names.
    ///
    /// ```
    /// # use ecsql::{Database, Filter, SystemAccess};
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute_batch(
    ///     "CREATE COMPONENT Position (x REAL); CREATE COMPONENT Velocity (dx REAL);
    ///      SPAWN Position(0), Velocity(2);",
    /// )?;
    /// let access = SystemAccess::new().reads("Velocity").writes("Position.x");
    /// conn.create_system_with_access("movement", "", access, |view, clock| {
    ///     let position = view.component_by_name("Position")?.id();
    ///     let velocity = view.component_by_name("Velocity")?.id();
    ///     let (x, dx) = (view.field(position, "x")?, view.field(velocity, "dx")?);
    ///     for table in view.matching_tables(&Filter::new().with(position).with(velocity))? {
    ///         let Some(mut table) = view.table_mut(table) else { continue };
    ///         let [x, dx] = table.columns([x, dx])?;
    ///         let (x, dx) = (x.into_mut::<f32>()?, dx.into_ref::<f32>()?);
    ///         for (x, dx) in x.iter_mut().zip(dx) {
    ///             *x += dx * clock.dt as f32;
    ///         }
    ///     }
    ///     Ok(())
    /// })?;
    /// conn.execute("TICK 1 WITH dt = 0.5", ())?;
    /// assert_eq!(conn.query_row("SELECT x FROM Position", (), |r| r.get::<_, f64>(0))?, 1.0);
    ///
    /// // A write it did not declare fails the tick, which is undone.
    /// let access = SystemAccess::new().reads("Velocity");
    /// conn.create_system_with_access("sneaky", "", access, |view, _| {
    ///     let velocity = view.component_by_name("Velocity")?.id();
    ///     let dx = view.field(velocity, "dx")?;
    ///     for table in view.matching_tables(&Filter::new().with(velocity))? {
    ///         if let Some(mut table) = view.table_mut(table) {
    ///             table.slice_mut::<f32>(dx)?[0] = 0.0;
    ///         }
    ///     }
    ///     Ok(())
    /// })?;
    /// let error = conn.tick(1).unwrap_err().to_string();
    /// assert!(error.contains("system sneaky writes Velocity.dx, which the access it was registered with does not declare"), "{error}");
    /// assert_eq!(conn.query_row("SELECT dx FROM Velocity", (), |r| r.get::<_, f64>(0))?, 2.0);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn create_system_with_access<F>(
        &self,
        name: &str,
        clauses: &str,
        access: SystemAccess,
        f: F,
    ) -> Result<()>
    where
        F: FnMut(
                &mut SystemView<'_>,
                Clock,
            ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>
            + Send
            + 'static,
    {
        self.client
            .create_system_with_access(name, clauses, access, Box::new(f))
    }

    /// Registers a Rust closure as a system that runs a typed query each tick: `f` gets
    /// the `Query` (of `Q`, filtered by `F`) and the tick's `Clock`. What it reads and
    /// writes is known from `Q` and `F` (a component asked as `&mut T` is written; as
    /// `&T`, or named in a filter, read), so the tick judges it as it judges a SQL
    /// system: the UPDATEs around it still compute at the same time, and `EXPLAIN TICK`
    /// and `SHOW SYSTEMS` show its access. `Changed<T>` and `Added<T>` count what
    /// happened since its last run (its first run sees every row), and a failed tick puts
    /// that back as it puts a SQL system's back. It cannot make, end or move entities.
    ///
    /// ```
    /// # #[cfg(feature = "derive")] {
    /// use ecsql::{Changed, Component, Database, Entity, Query};
    ///
    /// #[derive(Component)]
    /// struct Position { x: f32, y: f32 }
    /// #[derive(Component)]
    /// struct Velocity { x: f32, y: f32 }
    ///
    /// let conn = Database::open_in_memory().connect();
    /// conn.register::<Position>()?;
    /// conn.register::<Velocity>()?;
    /// conn.execute("SPAWN Position(0, 0), Velocity(1, 2) FROM range(10)", ())?;
    /// conn.create_query_system("movement", "", |mut q: Query<(&mut Position, &Velocity)>, clock| {
    ///     for (mut p, v) in q.iter() {
    ///         p.x += v.x * clock.dt as f32;
    ///         p.y += v.y * clock.dt as f32;
    ///     }
    ///     Ok(())
    /// })?;
    /// conn.tick_with_dt(3, 0.5)?;
    /// let x: f32 = conn.query_row("SELECT max(Position.x) FROM Position", (), |r| r.get(0))?;
    /// assert_eq!(x, 1.5);
    /// # }
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn create_query_system<Q, F, S>(&self, name: &str, clauses: &str, mut f: S) -> Result<()>
    where
        Q: QueryData + 'static,
        F: QueryFilter + 'static,
        S: for<'w> FnMut(
                Query<'w, Q, F>,
                Clock,
            ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>
            + Send
            + 'static,
    {
        self.create_system_with_access(name, clauses, access_of::<Q, F>(), move |view, clock| {
            let mut query = view.world_mut().query_filtered::<Q, F>()?;
            if let Some(since) = clock.changes_since() {
                query = query.since(since);
            }
            f(query, clock)
        })
    }
}
