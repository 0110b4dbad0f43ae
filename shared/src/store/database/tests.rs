//! Unit tests of `database` (kept in their own file so the module stays readable).

use super::*;

#[test]
fn a_wal_past_the_threshold_is_checkpointed_off_the_write_path() {
    let dir = std::env::temp_dir().join(format!("wal-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("t.db");
    let db = Database::open(
        &path,
        |c| Ok(c.execute_batch("CREATE TABLE t (x BLOB)")?),
        None,
    )
    .expect("open");
    let autocheckpoint = |db: &Database| -> i64 {
        // the writer's own automatic checkpoint is off
        db.inner
            .writer
            .lock()
            .pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .expect("pragma")
    };
    assert_eq!(autocheckpoint(&db), 0);
    // about 1,300 pages of 4 KiB in one commit: past the threshold
    let size = 5 * 1024 * 1024;
    let file_len = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    // The background pass starts by taking a connection from the reader pool: holding the
    // pool's lock keeps it from starting. A checkpoint run on the write path (inline, on
    // the writer) needs no reader and would copy the rows before the write returns.
    let pool = lock(&db.inner.readers);
    db.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (zeroblob(?1))", [size])?))
        .expect("write");
    assert!(
        file_len() < size as u64,
        "the write copied its WAL into the database file before answering: inline checkpoint"
    );
    assert!(
        db.inner.checkpointing.load(Ordering::SeqCst),
        "the write started no background checkpoint"
    );
    drop(pool);
    // the database file holds the rows only once the background checkpoint copied them
    let deadline = Instant::now() + Duration::from_secs(10);
    while file_len() < size as u64 {
        assert!(Instant::now() < deadline, "no checkpoint within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rows: i64 = db
        .read(|c| Ok(c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))?))
        .expect("read");
    assert_eq!(rows, 1);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A local database in a new scratch directory with `schema`, for the memo's tests.
fn memo_test_database(schema: &str) -> (std::path::PathBuf, Database) {
    let dir = std::env::temp_dir().join(format!("memo-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let db =
        Database::open(&dir.join("t.db"), |c| Ok(c.execute_batch(schema)?), None).expect("open");
    (dir, db)
}

#[test]
fn every_write_retires_what_the_memo_kept() {
    let (dir, db) = memo_test_database("CREATE TABLE t (x INTEGER)");
    let v = db.memo_version().expect("local mode");
    db.remember(v, "k".into(), Arc::new(1_i64));
    assert_eq!(db.recall::<i64>("k").as_deref(), Some(&1));
    assert!(db.recall::<String>("k").is_none(), "another type is a miss");
    db.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (1)", [])?))
        .expect("write");
    assert!(db.recall::<i64>("k").is_none(), "a write retires the entry");
    db.remember(v, "k".into(), Arc::new(2_i64));
    assert!(
        db.recall::<i64>("k").is_none(),
        "an answer read before the write is not kept after it"
    );
    let v = db.memo_version().expect("local mode");
    db.remember(v, "k".into(), Arc::new(3_i64));
    let failed = db.write(|_| -> Result<()> { Err(Error::Internal("refused".into())) });
    assert!(failed.is_err());
    assert!(db.recall::<i64>("k").is_none(), "so does a failed write");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_watched_answer_outlives_writes_to_other_tables_only() {
    let (dir, db) =
        memo_test_database("CREATE TABLE t (x INTEGER); CREATE TABLE sandbox_faults (x INTEGER);");
    let watched = MemoScope::Watched;
    let keep = |value: i64| {
        let v = db.scoped_version(watched).expect("local mode");
        db.remember_scoped(watched, v, "rules".into(), Arc::new(value));
    };
    let kept = || db.recall_scoped::<i64>(watched, "rules").map(|v| *v);
    keep(1);
    db.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (1)", [])?))
        .expect("write");
    assert_eq!(kept(), Some(1), "a write to another table keeps it");
    db.write(|tx| Ok(tx.execute("INSERT INTO sandbox_faults VALUES (1)", [])?))
        .expect("write");
    assert_eq!(kept(), None, "an insert into a watched table retires it");
    keep(2);
    db.write(|tx| Ok(tx.execute("UPDATE sandbox_faults SET x = 2", [])?))
        .expect("write");
    assert_eq!(kept(), None, "so does an update");
    keep(3);
    // A DELETE without WHERE (a reset) would skip row-by-row work in SQLite without the
    // trigger (the truncate optimisation): it must retire the answer all the same.
    db.write(|tx| Ok(tx.execute("DELETE FROM sandbox_faults", [])?))
        .expect("write");
    assert_eq!(kept(), None, "so does a delete of every row");
    keep(4);
    let failed = db.write(|tx| -> Result<()> {
        tx.execute("INSERT INTO sandbox_faults VALUES (9)", [])?;
        Err(Error::Internal("refused".into()))
    });
    assert!(failed.is_err());
    assert_eq!(
        kept(),
        None,
        "a rolled-back change retires it too (early is safe)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_catalogue_entry_is_kept_across_writes_until_a_catalogue_row_changes() {
    let (dir, db) = memo_test_database(
        "CREATE TABLE t (x INTEGER);
         CREATE TABLE billing_accounts (id INTEGER PRIMARY KEY, currency_code TEXT, pending TEXT);
         INSERT INTO billing_accounts VALUES (1, 'USD', '0');",
    );
    let catalogue = MemoScope::Catalogue;
    assert!(
        write_memo(catalogue, "c", || 0_u8).is_none(),
        "outside a write there is none"
    );
    // The entry a write got, as a pointer: the same one again means it was kept.
    let entry = |sql: &'static str| {
        db.write(move |tx| {
            tx.execute_batch(sql)?;
            Ok(write_memo(catalogue, "c", || 0_u8).map(|e| Arc::as_ptr(&e) as usize))
        })
        .expect("write")
    };
    let first = entry("").expect("an entry in local mode");
    assert_eq!(
        entry("INSERT INTO t VALUES (1)"),
        Some(first),
        "other tables"
    );
    assert_eq!(
        entry("UPDATE billing_accounts SET pending = '5' WHERE id = 1"),
        Some(first),
        "an account's pending charges are not the catalogue"
    );
    assert_eq!(
        entry("UPDATE billing_accounts SET currency_code = 'EUR' WHERE id = 1"),
        None,
        "the write that changed a catalogue row gets none"
    );
    let second = entry("").expect("a new entry");
    assert_ne!(second, first, "the change retired the old entry");
    assert_eq!(entry(""), Some(second));
    let _ = std::fs::remove_dir_all(&dir);
}
