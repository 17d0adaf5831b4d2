//! `Connection::subscribe`: a live query, read as batches of what changed.

use std::sync::Arc;
use std::time::Duration;

use super::{Connection, Params, Rows};
use crate::engine::Feed;
use crate::error::Result;
use crate::location::Location;

/// A live query: after every commit that changes its result, a batch of rows is waiting,
/// each row the query's columns followed by `tick` (the clock's tick at the commit, as
/// `tick()` reads it) and `diff`: `+n` for a row that came (`n` copies), `-n` for one
/// that left. A row whose values changed leaves and comes again. The first batch is the
/// whole result when subscribing; adding up every batch read gives the result at the
/// last commit. A write inside a transaction makes no batch; its COMMIT one for all of
/// it; a ROLLBACK none.
///
/// A reader that falls behind by more than `PRAGMA max_pending_batches` batches
/// (`DEFAULT_MAX_PENDING` at first) finds the waiting ones merged into one, each row's
/// diffs summed: fewer, larger batches whose sum is still exact.
///
/// Dropping it ends the subscription. It ends with an error (after the batches before
/// it, each still read first) when its query stops running (a component it reads was
/// dropped, or a row makes it fail), or when its result grows past `PRAGMA
/// memory_limit`. Subscriptions to the same query with the same parameters share one
/// evaluation; those to one statement that differ only in the value of `?1`, read by
/// `x = ?1` alone in its WHERE, share one pass over each commit's changes. See
/// docs/embedding.md, "Live queries".
///
/// ```
/// # use ecsql::Database;
/// # use std::time::Duration;
/// let conn = Database::open_in_memory().connect();
/// conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(10); SPAWN Health(3);")?;
/// let low = conn.subscribe("SELECT id, Health.hp FROM Health WHERE Health.hp < 5", ())?;
/// let first: Vec<(i64, i64)> = low
///     .try_next()?
///     .expect("the first batch")
///     .map(|r| { let r = r?; Ok((r.get(1)?, r.get(3)?)) })
///     .collect::<ecsql::Result<_>>()?;
/// assert_eq!(first, [(3, 1)]);
/// conn.execute("UPDATE Health SET hp = 1 WHERE Health.hp = 10", ())?;
/// let mut next: Vec<(i64, i64)> = low
///     .next(Duration::from_secs(1))?
///     .expect("a batch after the UPDATE")
///     .map(|r| { let r = r?; Ok((r.get(1)?, r.get(3)?)) })
///     .collect::<ecsql::Result<_>>()?;
/// next.sort();
/// assert_eq!(next, [(1, 1)]);
/// assert!(low.try_next()?.is_none(), "nothing else changed");
/// # Ok::<(), ecsql::Error>(())
/// ```
#[derive(Debug)]
pub struct Subscription {
    feed: Arc<Feed>,
}

impl Subscription {
    /// The next batch, if one is waiting; `Err` once the subscription has ended with an
    /// error and every batch before it was read.
    pub fn try_next(&self) -> Result<Option<Rows>> {
        Ok(self.feed.try_next()?.map(rows))
    }

    /// The next batch, waiting up to `timeout` for one (`Duration::MAX`: for ever);
    /// `Ok(None)` when none came. Refused on a thread that holds the database (inside
    /// `with_world`, a Rust system), where no commit can come: use `try_next` there.
    pub fn next(&self, timeout: Duration) -> Result<Option<Rows>> {
        Ok(self.feed.next(timeout)?.map(rows))
    }
}

fn rows(outcome: crate::exec::Outcome) -> Rows {
    Rows::new(outcome.columns.into_arc(), outcome.rows)
}

impl Connection {
    /// Subscribes to a query, written alone or as `SUBSCRIBE query`: see
    /// `Subscription`. Refused for a statement that is not a query, and inside a
    /// transaction.
    ///
    /// One subscription per team, of a join of each unit to its squad:
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute_batch(
    ///     "CREATE COMPONENT Squad (name TEXT); CREATE COMPONENT Unit (team INT, squad ENTITY);
    ///      SPAWN Squad('red'); SPAWN Squad('blue');
    ///      SPAWN Unit(i % 2, 1 + i % 2) FROM range(4) AS r(i);",
    /// )?;
    /// let sql = "SELECT u.id, s.name FROM Unit AS u JOIN Squad AS s ON s.id = u.squad WHERE u.team = ?1";
    /// let teams: Vec<_> = (0..2).map(|t| conn.subscribe(sql, (t,))).collect::<ecsql::Result<_>>()?;
    /// for team in &teams {
    ///     assert_eq!(team.try_next()?.expect("the first batch").count(), 2);
    /// }
    /// // A unit moves to team 1: it leaves team 0's result and joins team 1's.
    /// conn.execute("UPDATE Unit SET team = 1 WHERE id = 3", ())?;
    /// let diffs = |i: usize| -> ecsql::Result<Vec<i64>> {
    ///     teams[i].try_next()?.expect("a batch").map(|r| r?.get(3)).collect()
    /// };
    /// assert_eq!(diffs(0)?, [-1]);
    /// assert_eq!(diffs(1)?, [1]);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn subscribe(&self, sql: &str, params: impl Params) -> Result<Subscription> {
        self.subscribe_at(sql, Location::new(1, 1), params)
    }

    /// `subscribe` for text that begins at `start` in a larger file, so that the
    /// locations in errors are places in that file.
    pub fn subscribe_at(&self, sql: &str, start: Location, params: impl Params) -> Result<Subscription> {
        let values = params.into_values();
        let feed = self.client.subscribe(sql, start, &values)?;
        Ok(Subscription { feed })
    }
}
