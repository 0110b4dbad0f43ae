//! Unit tests of `capture` (kept in their own file so the module stays readable).

use super::*;

fn db() -> Connection {
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch(
        "CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT UNIQUE, amount REAL, data BLOB);
         CREATE TABLE child (code TEXT PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE);",
    )
    .expect("schema");
    conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
    install(&conn).expect("install");
    conn
}

fn contents(conn: &Connection) -> Vec<String> {
    let mut out = Vec::new();
    for t in ["parent", "child"] {
        let mut stmt = conn
            .prepare(&format!("SELECT rowid, * FROM {t} ORDER BY rowid"))
            .expect("select");
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| r.get::<_, Value>(i).map(|v| format!("{v:?}")))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .expect("query");
        for r in rows {
            out.push(format!("{t}: {}", r.expect("row").join("|")));
        }
    }
    out
}

/// Runs `sql` on `source` in one transaction and replays its changeset on `replica`.
fn ship(source: &mut Connection, replica: &mut Connection, sql: &str, seq: u64) -> Changeset {
    let tx = source.transaction().expect("tx");
    clear(&tx).expect("clear");
    tx.execute_batch(sql).expect("sql");
    let cs = collect(&tx).expect("collect");
    clear(&tx).expect("clear");
    tx.commit().expect("commit");
    let wire: Changeset =
        serde_json::from_slice(&serde_json::to_vec(&cs).expect("encode")).expect("decode");
    apply(replica, &wire, seq).expect("apply");
    cs
}

#[test]
fn replay_reproduces_inserts_updates_deletes_and_cascades() {
    let (mut a, mut b) = (db(), db());
    ship(
        &mut a,
        &mut b,
        "INSERT INTO parent VALUES (1, 'x', 1.0, X'00ff'), (2, 'y', 2.5, NULL);
         INSERT INTO child VALUES ('c1', 1), ('c2', 2);",
        1,
    );
    assert_eq!(contents(&a), contents(&b));
    // A unique swap, a cascade delete and an update in one transaction.
    ship(
        &mut a,
        &mut b,
        "UPDATE parent SET name = 'tmp' WHERE id = 1;
         UPDATE parent SET name = 'x' WHERE id = 2;
         UPDATE parent SET name = 'y' WHERE id = 1;
         DELETE FROM parent WHERE id = 2;
         INSERT INTO parent VALUES (3, 'x', 0.1, NULL);",
        2,
    );
    assert_eq!(contents(&a), contents(&b));
    assert_eq!(seq(&b).expect("seq"), 2);
    assert!(contents(&b).iter().any(|r| r.contains("Real(1.0)")));
}

#[test]
fn replay_is_idempotent_and_empty_transactions_ship_nothing() {
    let (mut a, mut b) = (db(), db());
    let cs = ship(
        &mut a,
        &mut b,
        "INSERT INTO parent VALUES (7, 'z', NULL, NULL);",
        1,
    );
    apply(&mut b, &cs, 1).expect("again");
    assert_eq!(contents(&a), contents(&b));
    let empty = ship(&mut a, &mut b, "SELECT 1;", 2);
    assert!(empty.is_empty());
}

#[test]
fn a_fence_advances_the_version_and_changes_nothing() {
    let (mut a, mut b) = (db(), db());
    ship(
        &mut a,
        &mut b,
        "INSERT INTO parent VALUES (1, 'x', 1.0, NULL);",
        1,
    );
    let mut fence = Changeset::fence("attempt-1", 0);
    // Even a fence that (wrongly) carried rows would change nothing.
    fence.tables = vec![TableChanges {
        name: "parent".into(),
        columns: ["id", "name", "amount", "data"].map(String::from).to_vec(),
        rows: vec![vec![
            Json::from(5),
            Json::from(5),
            "y".into(),
            Json::Null,
            Json::Null,
        ]],
        deleted: vec![1],
    }];
    let wire = serde_json::to_vec(&fence).expect("encode");
    let read: Changeset = serde_json::from_slice(&wire).expect("decode");
    assert!(read.aborted);
    let before = contents(&b);
    apply(&mut b, &read, 2).expect("apply fence");
    assert_eq!(contents(&b), before);
    assert_eq!(seq(&b).expect("seq"), 2);
}

#[test]
fn entries_written_before_fences_existed_still_parse_as_changes() {
    let old = r#"{"format":1,"attempt":"a","schema":0,"tables":[]}"#;
    let read: Changeset = serde_json::from_str(old).expect("old entry");
    assert!(!read.aborted);
    let ordinary = serde_json::to_string(&read).expect("encode");
    assert!(!ordinary.contains("aborted"), "{ordinary}");
}

#[test]
fn rolled_back_changes_are_not_captured() {
    let mut a = db();
    {
        let tx = a.transaction().expect("tx");
        tx.execute("INSERT INTO parent VALUES (9, 'q', NULL, NULL)", [])
            .expect("insert");
    }
    let tx = a.transaction().expect("tx");
    assert!(collect(&tx).expect("collect").is_empty());
}

#[test]
fn a_replacement_never_lowers_an_id_sequence() {
    let schema = "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT);";
    // The checkpoint: ids 1 and 2 used, 2 deleted (its sequence says 2).
    let path = std::env::temp_dir().join(format!("checkpoint-{}.db", uuid::Uuid::new_v4()));
    let cp = Connection::open(&path).expect("open");
    cp.execute_batch(schema).expect("schema");
    cp.execute_batch("INSERT INTO note (body) VALUES ('a'), ('b'); DELETE FROM note WHERE id = 2;")
        .expect("rows");
    drop(cp);
    // The live database went on to id 5 after the checkpoint.
    let mut conn = Connection::open_in_memory().expect("open");
    conn.execute_batch(schema).expect("schema");
    install(&conn).expect("install");
    conn.execute_batch("INSERT INTO note (body) VALUES ('a'), ('b'), ('c'), ('d'), ('e');")
        .expect("rows");
    apply_file(&mut conn, &path, 1, &[], |_| Ok(())).expect("restore");
    let next = |conn: &Connection| -> i64 {
        conn.execute("INSERT INTO note (body) VALUES ('new')", [])
            .expect("insert");
        conn.last_insert_rowid()
    };
    assert_eq!(next(&conn), 6, "ids 3 to 5 were seen before the restore");
    // The entry's sequences (the writer's) win when higher; a lower one changes nothing.
    apply_file(
        &mut conn,
        &path,
        2,
        &[("note".into(), 9), ("gone".into(), 4)],
        |_| Ok(()),
    )
    .expect("restore");
    assert_eq!(next(&conn), 10);
    // A fresh database takes the checkpoint's own sequence: 2 was used there.
    let mut fresh = Connection::open_in_memory().expect("open");
    fresh.execute_batch(schema).expect("schema");
    install(&fresh).expect("install");
    apply_file(&mut fresh, &path, 1, &[], |_| Ok(())).expect("restore");
    assert_eq!(next(&fresh), 3);
    let _ = std::fs::remove_file(&path);
}

/// A restore entry's sequences are computed without replacing a row (so that a
/// restore's lost race costs no replace): they must equal what the replace leaves, whatever
/// main held, including a checkpoint table that was not AUTOINCREMENT (no sequence of its
/// own, only its ids).
#[test]
fn restored_sequences_are_what_the_replace_leaves() {
    let schema = "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT);
                  CREATE TABLE tag (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT);
                  CREATE TABLE plain (id INTEGER PRIMARY KEY, v TEXT);";
    let path = std::env::temp_dir().join(format!("checkpoint-{}.db", uuid::Uuid::new_v4()));
    let cp = Connection::open(&path).expect("open");
    // An older schema: `tag` without AUTOINCREMENT, so only its ids tell.
    cp.execute_batch(
        "CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT);
         CREATE TABLE tag (id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE plain (id INTEGER PRIMARY KEY, v TEXT);
         INSERT INTO note (id, body) VALUES (7, 'a'); DELETE FROM note;
         INSERT INTO note (body) VALUES ('b');
         INSERT INTO tag (id, name) VALUES (12, 'x'); INSERT INTO plain VALUES (40, 'p');",
    )
    .expect("checkpoint");
    drop(cp);
    for live in [
        "",
        "INSERT INTO note (id, body) VALUES (20, 'z')",
        "INSERT INTO tag (id, name) VALUES (3, 'y')",
    ] {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(schema).expect("schema");
        install(&conn).expect("install");
        conn.execute_batch(live).expect("live rows");
        attach(&conn, &path, SOURCE).expect("attach");
        let predicted = merge_sequences(
            &sequences(&conn, "main").expect("main"),
            &restored_sequences(&conn, SOURCE).expect("source"),
        );
        // The replace alone (no entry sequences to raise to) leaves exactly the prediction.
        apply_attached(&mut conn, SOURCE, 1, &[], |_| Ok(())).expect("restore");
        let left = sequences(&conn, "main").expect("after");
        assert_eq!(predicted, left, "live rows {live:?}");
        detach(&conn, SOURCE);
    }
    let _ = std::fs::remove_file(&path);
}
