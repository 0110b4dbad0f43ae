//! Private caches in S3 mode (two stores sharing a cache directory corrupted each other): every store owns its own cache
//! directory, even two stores of one process on one data directory (the case of two
//! containers sharing a volume, each running as PID 1), and snapshots are made by SQLite.

use e2e::s3::{reason_names, try_insert_reason, Moto};
use shared::store::s3::Bucket;
use shared::store::{Store, TenantDb};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The names in `reasons`, read on a connection opened for this read: reads nest deeper
/// than the idle pool, so the innermost one opens the file at its path anew.
fn fresh_read(store: &Store, tenant: &str) -> Vec<String> {
    fn nest(db: &TenantDb, depth: usize) -> shared::Result<Vec<String>> {
        db.read_blocking(|c| {
            if depth > 0 {
                return nest(db, depth - 1);
            }
            let mut stmt = c.prepare("SELECT name FROM reasons ORDER BY name")?;
            let names = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(names)
        })
    }
    let db = store.tenant_db(tenant).expect("tenant db");
    nest(&db, 6).expect("nested read")
}

/// The cache directories under `data_dir/s3-cache`.
fn caches(data_dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data_dir.join("s3-cache"))
        .expect("s3-cache")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn two_stores_on_one_data_dir_in_one_process_never_share_files() {
    let moto = Moto::start();
    let config = moto.bucket("one-dir");
    let dir = tempfile::tempdir().expect("dir");
    let a = Store::open_with(dir.path(), Some(config.clone())).expect("store a");
    let (tenant, _) = a.registry().create_tenant("shared", "UTC").expect("tenant");
    let id = tenant.id.as_str();
    try_insert_reason(&a, id, "a-1").expect("a-1");
    assert_eq!(reason_names(&a, id), vec!["a-1"]);

    // Same data dir, same PID: the second store must not touch the first one's files.
    let b = Store::open_with(dir.path(), Some(config.clone())).expect("store b");
    assert_eq!(reason_names(&b, id), vec!["a-1"]);
    try_insert_reason(&a, id, "a-2").expect("a-2");
    assert_eq!(
        fresh_read(&a, id),
        vec!["a-1", "a-2"],
        "a store reads its own acknowledged write, on a new connection too"
    );
    try_insert_reason(&b, id, "b-1").expect("b-1");
    assert_eq!(fresh_read(&a, id), vec!["a-1", "a-2", "b-1"]);
    assert_eq!(fresh_read(&b, id), vec!["a-1", "a-2", "b-1"]);

    let owned = caches(dir.path());
    assert_eq!(owned.len(), 2, "one private cache per store: {owned:?}");
    for cache in &owned {
        assert!(cache.join("registry.db").is_file(), "{cache:?}");
        assert!(cache.join("tenants").join(format!("{id}.db")).is_file());
        let name = cache.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(
            !name.chars().all(|c| c.is_ascii_digit()),
            "not keyed by PID"
        );
        assert!(dir
            .path()
            .join("s3-cache")
            .join(format!("{name}.lock"))
            .is_file());
    }

    // A store that goes away removes its own cache and nothing else; a new one starts
    // beside the survivor.
    drop(b);
    assert_eq!(caches(dir.path()).len(), 1);
    let c = Store::open_with(dir.path(), Some(config)).expect("store c");
    try_insert_reason(&a, id, "a-3").expect("a-3");
    assert_eq!(fresh_read(&a, id), vec!["a-1", "a-2", "a-3", "b-1"]);
    assert_eq!(fresh_read(&c, id), vec!["a-1", "a-2", "a-3", "b-1"]);
    assert_eq!(caches(dir.path()).len(), 2);
}

#[test]
fn a_snapshot_is_a_sqlite_copy_that_carries_its_version() {
    let moto = Moto::start();
    let mut config = moto.bucket("vacuum-into");
    config.compact_every = 3;
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open_with(dir.path(), Some(config.clone())).expect("store");
    let (tenant, _) = store
        .registry()
        .create_tenant("snap", "UTC")
        .expect("tenant");
    for i in 0..3 {
        try_insert_reason(&store, &tenant.id, &format!("r{i}")).expect("write");
    }
    let prefix = format!("sandbox/tenants/{}/snapshots/", tenant.id);
    let deadline = Instant::now() + Duration::from_secs(30);
    let key = loop {
        if let Some(k) = moto.keys("vacuum-into", &prefix).pop() {
            break k;
        }
        assert!(Instant::now() < deadline, "no snapshot was made");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(key.ends_with("/00000000000000000003.db"), "{key}");
    let bucket = Bucket::connect(config).expect("bucket");
    let file = dir.path().join("downloaded.db");
    let relative = key.strip_prefix("sandbox/").expect("prefix");
    bucket.get_to_file(relative, &file).expect("download");
    let conn = rusqlite::Connection::open(&file).expect("open snapshot");
    let version: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .expect("header");
    assert_eq!(version, 3, "the snapshot's header names its version");
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM reasons", [], |r| r.get(0))
        .expect("rows");
    assert_eq!(rows, 3);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity");
    assert_eq!(check, "ok");
}
