//! Opening SQLite connections the one way every database here is opened: WAL, foreign keys,
//! a busy timeout, the DECIMAL collation, and a schema (the tenant's, or the registry's)
//! migrated to its newest version.

use crate::money::decimal_collation;
use crate::{Error, Result};
use rusqlite::{Connection, OptionalExtension};
use std::cell::Cell;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Tenant schema migrations, applied in order; `PRAGMA user_version` records how many ran.
/// Append new files; never edit one that has shipped (the registry's migrations run
/// 0010_idempotency_keys too).
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_foundation",
        include_str!("migrations/0001_foundation.sql"),
    ),
    ("0002_billing", include_str!("migrations/0002_billing.sql")),
    ("0003_usage", include_str!("migrations/0003_usage.sql")),
    ("0004_revenue", include_str!("migrations/0004_revenue.sql")),
    (
        "0005_ids_and_commands",
        include_str!("migrations/0005_ids_and_commands.sql"),
    ),
    ("0006_sandbox", include_str!("migrations/0006_sandbox.sql")),
    (
        "0007_usage_pair_index",
        include_str!("migrations/0007_usage_pair_index.sql"),
    ),
    (
        "0008_usage_one_row",
        include_str!("migrations/0008_usage_one_row.sql"),
    ),
    (
        "0009_billing_lifecycle",
        include_str!("migrations/0009_billing_lifecycle.sql"),
    ),
    (
        "0010_idempotency_keys",
        include_str!("migrations/0010_idempotency_keys.sql"),
    ),
    (
        "0011_ids_never_reused",
        include_str!("migrations/0011_ids_never_reused.sql"),
    ),
    (
        "0012_sandbox_undo",
        include_str!("migrations/0012_sandbox_undo.sql"),
    ),
    (
        "0013_billing_policy",
        include_str!("migrations/0013_billing_policy.sql"),
    ),
    (
        "0014_invoice_lines",
        include_str!("migrations/0014_invoice_lines.sql"),
    ),
    (
        "0015_autopay_outcome",
        include_str!("migrations/0015_autopay_outcome.sql"),
    ),
    (
        "0016_recurring_billed_to",
        include_str!("migrations/0016_recurring_billed_to.sql"),
    ),
    (
        "0017_runs_with_clock",
        include_str!("migrations/0017_runs_with_clock.sql"),
    ),
    (
        "0018_idempotency_result",
        include_str!("migrations/0018_idempotency_result.sql"),
    ),
    (
        "0019_usage_sequence_first",
        include_str!("migrations/0019_usage_sequence_first.sql"),
    ),
];

/// The AUTOINCREMENT tables whose rows of `sqlite_sequence` stand first, in this order.
/// SQLite finds a table's sequence by scanning `sqlite_sequence` from its first row on every
/// execution of an INSERT; posting usage runs a few multi-row INSERTs per call, the most
/// frequent inserts of a tenant (migration 0019).
const SEQUENCES_FIRST: &[&str] = &["usage_events"];

/// Opens (creating if needed) a connection with the store's pragmas and collation.
pub fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    Ok(conn)
}

/// How long a connection waits for a lock another connection (of this process or another)
/// holds before answering busy.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Applies the pragmas and collation to a fresh connection.
pub fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Switching a new file to WAL needs its exclusive lock, and SQLite may answer busy at
    // once (without the busy handler) when another connection is switching or creating the
    // schema at that moment: servers starting together on one fresh data dir. Retried until
    // the busy timeout, like any other lock wait.
    while_busy(|| conn.pragma_update(None, "journal_mode", "WAL"))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.create_collation("DECIMAL", decimal_collation)?;
    // A bill run prepares (cached) some twenty statements per account it bills; with
    // rusqlite's default of 16 the least recently used are evicted before their next use and
    // every account parses them again. 64 holds a run's working set with room to spare.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Prepared statements each connection keeps (see [`configure`]).
const STATEMENT_CACHE: usize = 64;

/// Runs `f` again while it answers busy (or locked), for up to [`BUSY_TIMEOUT`] in all: for
/// the steps where SQLite answers busy at once instead of waiting in its busy handler (a
/// journal-mode switch racing another connection's). The pauses grow from 1 ms to 50 ms.
pub fn while_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() + pause < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Runs `f` in one IMMEDIATE transaction on `conn` and commits it: the write lock is taken
/// at BEGIN, where SQLite's busy handler waits for it, so a schema step racing another
/// connection's (servers starting together on one data dir) waits instead of failing when
/// a deferred transaction would have to upgrade. `f` must check again, inside the
/// transaction, whether its work is still to be done: another connection may have done it
/// while this one waited.
pub fn exclusively<T>(
    conn: &mut Connection,
    f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
) -> Result<T> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Virtual machine steps between two looks at the deadline (see [`until_deadline`]): small
/// enough that even short statements look (most take a few dozen steps), and a look is one
/// thread-local read and a clock read.
const PROGRESS_STEPS: std::ffi::c_int = 64;

thread_local! {
    /// When statements run on this thread by [`until_deadline`] are interrupted.
    static INTERRUPT_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Installs on `conn` (a writer) the progress handler [`until_deadline`] relies on.
pub fn interrupt_at_deadlines(conn: &Connection) {
    conn.progress_handler(
        PROGRESS_STEPS,
        Some(|| INTERRUPT_AT.with(|at| at.get().is_some_and(|at| Instant::now() >= at))),
    );
}

/// Runs `f`, whose statements run on this thread on a connection with
/// [`interrupt_at_deadlines`], so that a statement running when `deadline` passes, or started
/// after it, is interrupted (SQLite's safe point: `SQLITE_INTERRUPT`, the statement undone).
/// If the deadline has passed when `f` ends, the answer is [`Error::Unavailable`] "nothing
/// was applied" whatever `f` answered: the caller, which runs `f` inside its transaction,
/// then drops the transaction (a rollback) instead of committing it. A statement interrupted
/// inside a transaction may make SQLite roll the transaction back at once; `f` then fails
/// (every error is propagated here), and the check above holds if it did not. The commit
/// itself runs after `f`, without the handler armed, so it is never cut in half.
pub fn until_deadline<T>(deadline: Option<Instant>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let Some(deadline) = deadline else {
        return f();
    };
    struct Disarm(Option<Instant>);
    impl Drop for Disarm {
        fn drop(&mut self) {
            INTERRUPT_AT.with(|at| at.set(self.0));
        }
    }
    let _disarm = Disarm(INTERRUPT_AT.with(|at| at.replace(Some(deadline))));
    let out = f();
    if Instant::now() >= deadline {
        return Err(Error::Unavailable(
            "the request's deadline passed while its write ran; the write was interrupted and rolled back, nothing was applied"
                .into(),
        ));
    }
    out
}

/// Brings a tenant database to the newest schema, each migration in its own transaction; a
/// new database gets the newest schema at once instead ([`NewSchema`]).
pub fn migrate(conn: &mut Connection) -> Result<()> {
    static NEW: OnceLock<Option<NewSchema>> = OnceLock::new();
    // Only a database at version 0 may be new: any other (a cold start's restored snapshot,
    // a cached file) is not worth building the schema for, which migrates a database in
    // memory step by step. `create_in` checks again inside its transaction.
    let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version == 0 {
        let new = NEW.get_or_init(|| match NewSchema::of(MIGRATIONS) {
            Ok(schema) => Some(schema),
            Err(e) => {
                tracing::warn!(error = %e, "no schema for new tenant databases; every new one is migrated step by step");
                None
            }
        });
        if let Some(new) = new {
            if new.create_in(conn)? {
                return Ok(());
            }
        }
    }
    migrate_with(conn, MIGRATIONS)
}

/// What running every migration leaves in a new database, read once per process from one
/// migrated step by step in memory: the statements of its `sqlite_master` and the rows of its
/// `sqlite_sequence`. A new tenant database is given these directly, in one transaction.
///
/// Why: the step-by-step way rebuilds some forty tables (0005, 0008, 0011), and every
/// `ALTER TABLE ... RENAME` makes SQLite parse the whole schema again: about 150 ms of a
/// debug build's CPU per new tenant (most of creating an empty one), against a few ms here.
///
/// Invariants: the database this makes has the same objects with the same SQL text, the same
/// `sqlite_sequence` rows (rowids included: their order matters, see [`SEQUENCES_FIRST`]) and
/// the same `user_version` as the step-by-step way (the test `a_new_database_gets_the_schema_the_migrations_make`);
/// it is built only when the migrations leave no row in any other table, and it is used
/// only on a database with no object and version 0, checked inside the transaction that
/// creates it, so a database another connection is migrating or has migrated is left to
/// [`migrate_with`] (which then finds nothing to do, or finishes the job).
struct NewSchema {
    /// CREATE statements: tables, then indexes, views and triggers, each kind in creation
    /// order (an index needs its table; a trigger's body may name a table made later).
    statements: Vec<String>,
    /// `sqlite_sequence` rows: rowid, name, seq.
    sequences: Vec<(i64, String, i64)>,
    version: usize,
}

impl NewSchema {
    fn of(migrations: &[(&str, &str)]) -> Result<NewSchema> {
        let mut conn = Connection::open_in_memory()?;
        configure(&conn)?;
        migrate_with(&mut conn, migrations)?;
        let mut statements = Vec::new();
        let mut of_kind = conn.prepare(
            "SELECT sql FROM sqlite_master WHERE type = ?1 AND sql IS NOT NULL
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
        )?;
        for kind in ["table", "index", "view", "trigger"] {
            let sqls = of_kind
                .query_map([kind], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            statements.extend(sqls);
        }
        for table in user_tables(&conn)? {
            let rows: bool = conn
                .prepare(&format!("SELECT 1 FROM \"{table}\" LIMIT 1"))?
                .exists([])?;
            if rows {
                return Err(Error::Internal(format!(
                    "the migrations leave rows in {table}; new databases are migrated step by step"
                )));
            }
        }
        let sequenced = conn
            .prepare(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'",
            )?
            .exists([])?;
        let sequences = if sequenced {
            conn.prepare("SELECT rowid, name, seq FROM sqlite_sequence ORDER BY rowid")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        Ok(NewSchema {
            statements,
            sequences,
            version: migrations.len(),
        })
    }

    /// Gives the database on `conn` this schema if it is new (version 0 and no object):
    /// true. False, without a change, for any other database.
    fn create_in(&self, conn: &mut Connection) -> Result<bool> {
        exclusively(conn, |tx| {
            let version: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            let any_object = tx.prepare("SELECT 1 FROM sqlite_master")?.exists([])?;
            if version != 0 || any_object {
                return Ok(false);
            }
            for sql in &self.statements {
                tx.execute_batch(sql)?;
            }
            for (rowid, name, seq) in &self.sequences {
                tx.execute(
                    "INSERT INTO sqlite_sequence (rowid, name, seq) VALUES (?1, ?2, ?3)",
                    rusqlite::params![rowid, name, seq],
                )?;
            }
            tx.pragma_update(None, "user_version", self.version)?;
            Ok(true)
        })
    }
}

/// Brings a database to the newest version of `migrations` (named SQL files, applied in
/// order; `PRAGMA user_version` records how many ran), each in its own transaction: the
/// tenant schema ([`migrate`]) and the registry's (`store::registry`). A database of a newer
/// version than `migrations` knows is refused ([`Error::NewerSchema`]).
pub fn migrate_with(conn: &mut Connection, migrations: &[(&str, &str)]) -> Result<()> {
    let current: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current > migrations.len() {
        // A snapshot made by a newer deployment (rolling deploy): not a bug, and not for
        // ever. See "Schema versions" in docs/storage.md.
        return Err(Error::NewerSchema(format!(
            "This data was written by a newer deployment with schema version {current}; this \
             function runs schema version {mine} and serves it again once it is deployed at \
             schema version {current} or later. Retry later.",
            mine = migrations.len()
        )));
    }
    if current == migrations.len() {
        return Ok(());
    }
    // Rebuilding a table (0005) drops it: with foreign keys on, that would cascade into or
    // fail on the tables that reference it. The switch works only outside a transaction;
    // each migration checks the keys itself before it commits.
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let applied = apply_migrations(conn, migrations, current);
    conn.pragma_update(None, "foreign_keys", "ON")?;
    applied
}

fn apply_migrations(
    conn: &mut Connection,
    migrations: &[(&str, &str)],
    current: usize,
) -> Result<()> {
    for (version, (name, sql)) in migrations.iter().enumerate().skip(current) {
        exclusively(conn, |tx| apply_migration(tx, version, name, sql))?;
    }
    Ok(())
}

/// Applies migration number `version` (0-based) inside `tx`, unless another connection
/// applied it while this one waited for the write lock.
fn apply_migration(
    tx: &rusqlite::Transaction<'_>,
    version: usize,
    name: &str,
    sql: &str,
) -> Result<()> {
    let now: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if now > version {
        return Ok(());
    }
    tx.execute_batch(sql)
        .map_err(|e| Error::Internal(format!("migration {name}: {e}")))?;
    let broken: Option<String> = tx
        .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
        .optional()?;
    if let Some(table) = broken {
        return Err(Error::Internal(format!(
            "migration {name} left a broken foreign key in table {table}"
        )));
    }
    tx.pragma_update(None, "user_version", version + 1)?;
    tracing::debug!(migration = name, "applied");
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

/// Deletes every row of every user table, inside the caller's transaction, and restarts the
/// id sequences (a reset tenant is numbered as a new one; see docs/storage.md).
pub fn clear_all(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.pragma_update(None, "defer_foreign_keys", "ON")?;
    for table in user_tables(tx)? {
        tx.execute(&format!("DELETE FROM \"{table}\""), [])?;
    }
    let sequences = tx
        .prepare_cached(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'",
        )?
        .exists([])?;
    if sequences {
        tx.execute("DELETE FROM sqlite_sequence", [])?;
        // Made again at 0 (numbering restarts at 1) so that they stand first: the rows of
        // other tables come after them as those tables are inserted into.
        let tables = user_tables(tx)?;
        for name in SEQUENCES_FIRST
            .iter()
            .filter(|n| tables.iter().any(|t| t == *n))
        {
            tx.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES (?1, 0)",
                [name],
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a new database is given at once ([`NewSchema`]) is what the migrations make step
    /// by step: the same objects with the same SQL, the same `sqlite_sequence` rows in the
    /// same order, the same version; and a database that is not new is left alone.
    #[test]
    fn a_new_database_gets_the_schema_the_migrations_make() {
        type Shape = (
            Vec<(String, String, String, Option<String>)>,
            Vec<(i64, String, i64)>,
            i64,
        );
        fn shape(conn: &Connection) -> Shape {
            let objects = conn
                .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            let sequences = conn
                .prepare("SELECT rowid, name, seq FROM sqlite_sequence ORDER BY rowid")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            let version = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            (objects, sequences, version)
        }
        let fresh = || {
            let conn = Connection::open_in_memory().unwrap();
            configure(&conn).unwrap();
            conn
        };
        let mut stepwise = fresh();
        migrate_with(&mut stepwise, MIGRATIONS).unwrap();
        let mut at_once = fresh();
        let schema = NewSchema::of(MIGRATIONS).unwrap();
        assert!(schema.create_in(&mut at_once).unwrap());
        let expected = shape(&stepwise);
        assert!(
            expected.0.len() > 100,
            "the whole schema: {}",
            expected.0.len()
        );
        assert_eq!(
            expected.1.first().map(|s| s.1.as_str()),
            Some("usage_events")
        );
        assert_eq!(shape(&at_once), expected);
        for check in ["integrity_check", "foreign_key_check"] {
            let found: Vec<String> = at_once
                .prepare(&format!("PRAGMA {check}"))
                .unwrap()
                .query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            assert!(found.iter().all(|f| f == "ok"), "{check}: {found:?}");
        }
        // `migrate` on either finds nothing to do; `create_in` touches neither again.
        migrate(&mut at_once).unwrap();
        assert_eq!(shape(&at_once), expected);
        assert!(!schema.create_in(&mut stepwise).unwrap());
        // One part-way migrated is finished step by step, not given the schema.
        let mut part = at_version(5);
        assert!(!schema.create_in(&mut part).unwrap());
        migrate(&mut part).unwrap();
        assert_eq!(shape(&part).2, expected.2);
    }

    /// Invoices made before invoice lines existed get one AMOUNT line of their whole
    /// amount, so every invoice's amount is the sum of its lines.
    #[test]
    fn invoices_made_before_lines_get_one_amount_line() {
        let before_lines = MIGRATIONS
            .iter()
            .position(|(name, _)| *name == "0014_invoice_lines")
            .expect("the invoice lines migration");
        let mut conn = at_version(before_lines);
        conn.execute_batch(
            "INSERT INTO billing_accounts (id, account_num, name) VALUES (1, 'A-1', 'A');
             INSERT INTO invoices (id, invoice_num, billing_account_id, amount, amount_to_pay,
                 occurred_on, status) VALUES (3, 'INV-3', 1, '12.50', '12.50', 't', 'OPEN');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let line: (i64, i64, String, String) = conn
            .query_row(
                "SELECT invoice_id, line_num, line_type, amount FROM invoice_lines",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(line, (3, 1, "AMOUNT".to_string(), "12.50".to_string()));
    }

    /// A database as an older build left it: only the first `version` migrations applied.
    #[test]
    fn schema_8_keeps_the_charges_of_events_stored_before_it() {
        let mut conn = at_version(7);
        // An event and its charge as posting stored them before 0008 (both numbered 5).
        conn.execute_batch(
            "INSERT INTO billing_accounts (id, account_num, name) VALUES (1, 'A-1', 'A');
             INSERT INTO products (id, name) VALUES (1, 'P');
             INSERT INTO charge_categories (id, name, charge_category_type)
                 VALUES (1, 'Usage', 'Usage');
             INSERT INTO usage_rules (id, product_id, position, name, charge_category_id, uom,
                 rate_kind) VALUES (1, 1, 1, 'r', 1, 'HOUR', 'FLAT');
             INSERT INTO usage_events (id, request_id, service_resource_identifier,
                 billing_account_id, start_time, end_time, usage_uom, usage_amount,
                 reference_id, sequence_id, total_charge, created_at)
                 VALUES (5, 'r', 's', 1, 't', 't', 'HOUR', '2', 'a', '1', '1.5', 't');
             INSERT INTO usage_event_charges (id, usage_event_id, usage_rule_id,
                 charge_category_id, charge, rate, usage_uom, usage_amount)
                 VALUES (5, 5, 1, 1, '1.5', '0.75', 'HOUR', '2');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        // A new event carries its charge in its own row.
        conn.execute(
            "INSERT INTO usage_events (request_id, service_resource_identifier, start_time,
                 end_time, usage_uom, usage_amount, reference_id, sequence_id, total_charge,
                 created_at, usage_rule_id, charge_category_id, charge_rate, charge_usage_uom,
                 charge_usage_amount)
             VALUES ('r2', 's', 't', 't', 'HOUR', '4', 'a', '2', '3', 't', 1, 1, '0.75',
                 'HOUR', '4')",
            [],
        )
        .unwrap();
        let charges: Vec<(i64, i64, String, String)> = conn
            .prepare("SELECT id, usage_event_id, charge, rate FROM usage_charges ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            charges,
            vec![
                (5, 5, "1.5".to_string(), "0.75".to_string()),
                (6, 6, "3".to_string(), "0.75".to_string())
            ]
        );
        let references: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_foreign_key_list('usage_events')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(references, 0, "no foreign-key probes on usage events");
        let indexes: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_events'
                 ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            indexes,
            [
                "usage_events_account",
                "usage_events_pair",
                "usage_events_period",
                "usage_events_request"
            ]
        );
        // The pair rule survived the rebuild: a second live event of ('a', '1') is refused.
        let refused = conn.execute(
            "INSERT INTO usage_events (request_id, service_resource_identifier, start_time,
                 end_time, usage_uom, usage_amount, reference_id, sequence_id, total_charge,
                 created_at) VALUES ('r3', 's', 't', 't', 'HOUR', '1', 'a', '1', '0', 't')",
            [],
        );
        assert!(refused.is_err());
    }

    fn at_version(version: usize) -> Connection {
        let old = Connection::open_in_memory().unwrap();
        configure(&old).unwrap();
        for (name, sql) in &MIGRATIONS[..version] {
            old.execute_batch(sql)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        old.pragma_update(None, "user_version", version).unwrap();
        old
    }

    fn ids(conn: &Connection, table: &str) -> Vec<i64> {
        conn.prepare(&format!("SELECT id FROM {table} ORDER BY id"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn an_old_schema_database_keeps_its_ids_and_never_hands_out_a_used_one() {
        let mut conn = at_version(4);
        conn.execute_batch(
            "INSERT INTO chart_of_accounts (id, name) VALUES (1, 'COA');
             INSERT INTO ledgers (id, name) VALUES (3, 'A'), (7, 'B'), (9, 'C');
             INSERT INTO billing_account_categories (id, name, description, status)
                 VALUES (1, 'c', 'c', 'BA_CATEGORY_ACTIVE');
             INSERT INTO ledger_categories VALUES (7, 1);
             INSERT INTO calendar_nodes (id, ledger_id, type) VALUES (20, 7, 'CALENDAR');
             INSERT INTO calendar_nodes (id, ledger_id, type, parent_id) VALUES (21, 7, 'YEAR', 20);
             DELETE FROM ledgers WHERE id = 9;",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let version: usize = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len());
        assert_eq!(ids(&conn, "ledgers"), vec![3, 7]);
        assert_eq!(ids(&conn, "calendar_nodes"), vec![20, 21]);
        // the rebuild neither cascaded into nor broke the tables that reference ledgers
        let kept: i64 = conn
            .query_row("SELECT COUNT(*) FROM ledger_categories", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 1);
        let fk: bool = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert!(fk, "foreign keys are on again");
        // 9 was deleted before the migration: the database no longer knew it, so the
        // sequence starts after the current maximum; from now on nothing is reused
        conn.execute("INSERT INTO ledgers (name) VALUES ('D')", [])
            .unwrap();
        assert_eq!(conn.last_insert_rowid(), 8);
        conn.execute("DELETE FROM ledgers WHERE id = 8", [])
            .unwrap();
        conn.execute("INSERT INTO ledgers (name) VALUES ('E')", [])
            .unwrap();
        assert_eq!(conn.last_insert_rowid(), 9);
        // a cascade from the rebuilt parent still works
        conn.execute("DELETE FROM ledgers WHERE id = 7", [])
            .unwrap();
        assert_eq!(ids(&conn, "calendar_nodes"), Vec::<i64>::new());
    }

    /// Tables with an `id` of their own that keep max(rowid) + 1 numbering, and why: no
    /// client sees their ids (0011 says more).
    const NOT_AUTOINCREMENT: &[&str] = &[
        "billing_policy",
        "idempotency_keys",
        "sandbox_clock",
        "sandbox_faults",
        "sandbox_undo",
        "usage_event_charges",
    ];

    #[test]
    fn every_table_whose_ids_a_client_sees_keeps_its_highest_id() {
        let mut conn = Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        migrate(&mut conn).unwrap();
        let tables: Vec<(String, String)> = conn
            .prepare(
                "SELECT m.name, m.sql FROM sqlite_master m
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
                   AND EXISTS (SELECT 1 FROM pragma_table_info(m.name)
                               WHERE name = 'id' AND pk = 1 AND type = 'INTEGER')
                 ORDER BY m.name",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(tables.len() > 30, "{tables:?}");
        for (table, sql) in &tables {
            let kept = sql.contains("AUTOINCREMENT");
            assert_eq!(
                kept,
                !NOT_AUTOINCREMENT.contains(&table.as_str()),
                "{table}: a table whose ids a client sees is declared AUTOINCREMENT"
            );
        }
    }

    #[test]
    fn schema_11_keeps_rows_ids_references_and_indexes_and_numbers_after_the_highest() {
        let mut conn = at_version(10);
        conn.execute_batch(
            "INSERT INTO billing_account_categories (id, name, description, status)
                 VALUES (1, 'c', 'c', 'BA_CATEGORY_ACTIVE');
             INSERT INTO billing_accounts (id, account_num, name, billing_account_category_id)
                 VALUES (3, 'A-3', 'A', 1), (7, 'A-7', 'B', 1);
             INSERT INTO payments (id, billing_account_id, amount, occurred_on,
                 unapplied_amount, received_amount) VALUES (5, 7, '1', 't', '1', '1');
             INSERT INTO products (id, name) VALUES (1, 'P');
             INSERT INTO agreements (id, name) VALUES (1, 'G'), (2, 'H');
             UPDATE agreements SET next_agreement_id = 2 WHERE id = 1;
             INSERT INTO services (id, billing_account_id, product_id, start_date)
                 VALUES (4, 7, 1, 't');
             INSERT INTO service_resources (id, service_id, identifier) VALUES (1, 4, 'r');
             INSERT INTO service_resources (id, service_id, identifier, parent_id)
                 VALUES (2, 4, 'r-child', 1);
             INSERT INTO usage_events (id, request_id, service_resource_identifier,
                 billing_account_id, start_time, end_time, usage_uom, usage_amount,
                 reference_id, sequence_id, total_charge, created_at, usage_rule_id,
                 charge_category_id) VALUES (9, 'r', 'r', 7, 't', 't', 'HOUR', '2', 'a', '1',
                 '1.5', 't', 1, 1);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(ids(&conn, "billing_accounts"), vec![3, 7]);
        assert_eq!(ids(&conn, "payments"), vec![5]);
        // Rows, references (self-references too) and the view over usage events survive.
        let (parent, next, charge): (i64, i64, i64) = conn
            .query_row(
                "SELECT (SELECT parent_id FROM service_resources WHERE id = 2),
                        (SELECT next_agreement_id FROM agreements WHERE id = 1),
                        (SELECT id FROM usage_charges)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((parent, next, charge), (1, 2, 9));
        let refused = conn.execute(
            "INSERT INTO payments (billing_account_id, amount, occurred_on, unapplied_amount,
                 received_amount) VALUES (99, '1', 't', '1', '1')",
            [],
        );
        assert!(
            refused.is_err(),
            "payments still references billing_accounts"
        );
        let indexes: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'
                 AND name IN ('usage_events_pair', 'billing_accounts_bill_cycle',
                              'service_resources_identifier', 'services_billing_account')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexes, 4);
        // The newest account deleted: the next one is numbered after it all the same.
        conn.execute("DELETE FROM payments", []).unwrap();
        conn.execute("DELETE FROM service_resources", []).unwrap();
        conn.execute("DELETE FROM services", []).unwrap();
        conn.execute("DELETE FROM billing_accounts WHERE id = 7", [])
            .unwrap();
        conn.execute(
            "INSERT INTO billing_accounts (account_num, name) VALUES ('A-8', 'C')",
            [],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 8);
    }

    /// The first row of `sqlite_sequence`, and the value of usage_events' sequence.
    fn first_sequence(conn: &Connection) -> (String, i64) {
        let first: String = conn
            .query_row(
                "SELECT name FROM sqlite_sequence ORDER BY rowid LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let seq = conn
            .query_row(
                "SELECT seq FROM sqlite_sequence WHERE name = 'usage_events'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (first, seq)
    }

    /// usage_events' sequence is the first row SQLite scans on every insert of an event:
    /// after migration 0019 on a database that held events (its value kept), in a new
    /// database, in a snapshot and after a reset. Before 0019 it was the 38th.
    #[test]
    fn the_usage_events_sequence_stands_first() {
        let mut conn = at_version(18);
        conn.execute_batch(
            "INSERT INTO billing_accounts (id, account_num, name) VALUES (7, 'A-7', 'B');
             INSERT INTO ledgers (name) VALUES ('L');
             INSERT INTO usage_events (id, request_id, service_resource_identifier,
                 billing_account_id, start_time, end_time, usage_uom, usage_amount,
                 total_charge, created_at, usage_rule_id, charge_category_id)
                 VALUES (9, 'r', 'r', 7, 't', 't', 'HOUR', '2', '1.5', 't', 1, 1);
             DELETE FROM usage_events;",
        )
        .unwrap();
        let position: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_sequence
                 WHERE rowid <= (SELECT rowid FROM sqlite_sequence WHERE name = 'usage_events')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(position > 1, "before 0019 it is row {position}");
        migrate(&mut conn).unwrap();
        assert_eq!(first_sequence(&conn), ("usage_events".to_string(), 9));

        let mut fresh = Connection::open_in_memory().unwrap();
        configure(&fresh).unwrap();
        migrate(&mut fresh).unwrap();
        assert_eq!(first_sequence(&fresh).0, "usage_events");

        let copy = std::env::temp_dir().join(format!(
            "sandbox-sequence-first-{}-{:?}.db",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&copy);
        conn.execute("VACUUM main INTO ?1", [copy.to_str().unwrap()])
            .unwrap();
        assert_eq!(
            first_sequence(&open(&copy).unwrap()),
            ("usage_events".to_string(), 9)
        );
        let _ = std::fs::remove_file(&copy);

        let tx = conn.transaction().unwrap();
        clear_all(&tx).unwrap();
        tx.execute("INSERT INTO ledgers (name) VALUES ('L')", [])
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(first_sequence(&conn), ("usage_events".to_string(), 0));
    }

    #[test]
    fn a_reset_restarts_the_sequences_and_a_snapshot_keeps_them() {
        let mut conn = Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO ledgers (name) VALUES ('A'), ('B');
             DELETE FROM ledgers WHERE id = 2;",
        )
        .unwrap();
        let copy = std::env::temp_dir().join(format!(
            "sandbox-sequence-{}-{:?}.db",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&copy);
        conn.execute("VACUUM main INTO ?1", [copy.to_str().unwrap()])
            .unwrap();
        let snapshot = open(&copy).unwrap();
        snapshot
            .execute("INSERT INTO ledgers (name) VALUES ('C')", [])
            .unwrap();
        assert_eq!(
            snapshot.last_insert_rowid(),
            3,
            "VACUUM INTO copies sqlite_sequence"
        );
        drop(snapshot);
        let _ = std::fs::remove_file(&copy);
        let tx = conn.transaction().unwrap();
        clear_all(&tx).unwrap();
        tx.execute("INSERT INTO ledgers (name) VALUES ('A')", [])
            .unwrap();
        assert_eq!(tx.last_insert_rowid(), 1);
    }
}
