//! Opening SQLite connections the one way every database here is opened: WAL, foreign keys,
//! a busy timeout, the DECIMAL collation, and the tenant schema migrated to the newest version.

use crate::money::decimal_collation;
use crate::{Error, Result};
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Tenant schema migrations, applied in order; `PRAGMA user_version` records how many ran.
/// Append new files; never edit one that has shipped.
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_foundation",
        include_str!("migrations/0001_foundation.sql"),
    ),
    ("0002_billing", include_str!("migrations/0002_billing.sql")),
    ("0003_usage", include_str!("migrations/0003_usage.sql")),
    ("0004_revenue", include_str!("migrations/0004_revenue.sql")),
    ("0005_sandbox", include_str!("migrations/0005_sandbox.sql")),
];

/// Opens (creating if needed) a connection with the store's pragmas and collation.
pub fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    Ok(conn)
}

/// Applies the pragmas and collation to a fresh connection.
pub fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.create_collation("DECIMAL", decimal_collation)?;
    Ok(())
}

/// Brings a tenant database to the newest schema, each migration in its own transaction.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current > MIGRATIONS.len() {
        // A snapshot made by a newer deployment (rolling deploy): not a bug, and not for
        // ever. See "Schema versions" in docs/storage.md.
        return Err(Error::NewerSchema(format!(
            "This data was written by a newer deployment with schema version {current}; this \
             function runs schema version {mine} and serves it again once it is deployed at \
             schema version {current} or later. Retry later.",
            mine = MIGRATIONS.len()
        )));
    }
    for (version, (name, sql)) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)
            .map_err(|e| Error::Internal(format!("migration {name}: {e}")))?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
        tracing::debug!(migration = name, "applied");
    }
    Ok(())
}

/// Every user table of a tenant database, for reset and content hashing.
pub fn user_tables(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// Deletes every row of every user table, inside the caller's transaction.
pub fn clear_all(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.pragma_update(None, "defer_foreign_keys", "ON")?;
    for table in user_tables(tx)? {
        tx.execute(&format!("DELETE FROM \"{table}\""), [])?;
    }
    Ok(())
}
