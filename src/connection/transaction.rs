//! `Transaction`, rusqlite's guard over BEGIN … COMMIT: `commit` keeps what ran through
//! it, `rollback` or a drop undoes it.
//!
//! Invariants:
//! - A guard ends only its own transaction: one its connection ended and began again
//!   (a COMMIT run through `execute`, then a BEGIN) is not rolled back by its drop.

use super::Connection;
use crate::error::Result;

impl Connection {
    /// Begins a transaction, as rusqlite's `transaction()`: `commit` keeps it, `rollback`
    /// (or dropping the guard, as an early `?` return does) undoes it.
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute("CREATE COMPONENT Gold (n INT)", ())?;
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("SPAWN Gold(10)", ())?;
    ///     tx.commit()?;
    /// }
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("SPAWN Gold(99)", ())?;
    ///     // Dropped without commit: undone.
    /// }
    /// assert_eq!(conn.query_row("SELECT sum(n) FROM Gold", (), |r| r.get::<_, i64>(0))?, 10);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        self.execute("BEGIN", ())?;
        Ok(Transaction {
            conn: self,
            open: true,
            serial: self.client.tx_serial(),
        })
    }
}

/// An open transaction (`Connection::transaction`): its statements run through it (it
/// derefs to the `Connection`); `commit` keeps them, `rollback` or a drop undoes them.
#[derive(Debug)]
pub struct Transaction<'c> {
    conn: &'c Connection,
    open: bool,
    /// Which of the connection's transactions it is (a COMMIT run through it by hand,
    /// then a BEGIN, makes another that is not the guard's to roll back).
    serial: u64,
}

impl Transaction<'_> {
    /// Keeps the transaction's changes (COMMIT). When COMMIT fails, the guard, dropped,
    /// rolls back what is still open.
    pub fn commit(mut self) -> Result<()> {
        self.conn.execute("COMMIT", ())?;
        self.open = false;
        Ok(())
    }

    /// Undoes the transaction's changes (ROLLBACK).
    pub fn rollback(mut self) -> Result<()> {
        self.conn.execute("ROLLBACK", ())?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    /// A transaction neither committed nor rolled back is rolled back.
    fn drop(&mut self) {
        let own = self.conn.client.tx_serial() == self.serial;
        if self.open && own && !self.conn.is_autocommit() {
            let _ = self.conn.execute("ROLLBACK", ());
        }
    }
}
