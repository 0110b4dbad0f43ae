//! What the domain's unit tests share: a real tenant database (in memory, configured and
//! migrated like a stored one) loaded with the demo seed.

use rusqlite::Connection;

/// A migrated in-memory tenant database with the demo seed applied in `tz`.
pub(crate) fn demo_db(tz: chrono_tz::Tz) -> Connection {
    let mut conn = Connection::open_in_memory().expect("in-memory database");
    crate::store::sqlite::configure(&conn).expect("configure");
    crate::store::sqlite::migrate(&mut conn).expect("migrate");
    let tx = conn.transaction().expect("transaction");
    crate::seed::apply(&tx, crate::seed::Seed::Demo, tz).expect("demo seed");
    tx.commit().expect("commit");
    conn
}
