//! The object-store contract (`shared/src/store/object_store.rs`), one set of cases run on
//! both implementations: the in-memory bucket of the simulation (`memory.rs`, a plain bucket:
//! [`Faults::NONE`]) and S3 through the AWS client (`aws.rs`) against moto. The simulation's
//! findings hold for S3 only as far as the in-memory bucket answers like S3; these cases are
//! where that is checked. Each case is one function of a [`Bucket`] (the facade the store
//! holds), called once per implementation on a fresh bucket; a case that holds on one and
//! fails on the other fails the suite, and every failing case is named with its bucket.
//!
//! Covered: conditional create (a free key, a taken key with its body unchanged, a deleted
//! key free again, racing creators of which exactly one wins); `put_file` creating and
//! replacing; `get` and `get_to_file` (the whole object, a missing key is `NotFound` and
//! leaves no file); `list_after` (ascending byte order, prefix, start_after, limit, more
//! than one S3 page of 1,000 keys, and read-after-write: writes, deletes and copies made just
//! before are seen); `delete` (a missing key is not an error); `copy` (replaces its target, a
//! missing source is `NotFound`, a copy onto itself is refused as S3 refuses it); a call
//! made after its [`with_deadline`] passed answers `DeadlinePassed` and sends nothing.
//!
//! S3 only: an unreachable endpoint (a closed loopback port) answers `Unavailable`. The
//! in-memory bucket has no endpoint and no network: its `Unavailable` comes from the
//! simulation's injected faults (a dropped request, a lost answer), not from a plain bucket.
//!
//! Run: `cargo test -p e2e --test store contract` (needs moto, tests/requirements.txt).

use e2e::s3::{free_port, set_aws_env, Moto};
use shared::store::memory::{Faults, World};
use shared::store::s3::{with_deadline, Bucket, S3Error};
use shared::store::S3Config;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// One case of the contract: it panics (asserts) when the bucket breaks it.
type Case = fn(&Bucket);

/// Every case, by name (the name also names the case's moto bucket).
const CASES: &[(&str, Case)] = &[
    (
        "conditional-create",
        conditional_create_takes_a_free_key_only,
    ),
    ("create-race", one_of_racing_conditional_creates_wins),
    ("put-file", put_file_creates_and_replaces),
    ("get", get_answers_the_whole_object),
    ("missing", a_missing_key_is_not_found),
    (
        "list",
        list_after_is_ascending_under_prefix_after_start_after,
    ),
    ("list-pages", list_after_reads_past_one_page),
    (
        "list-fresh",
        list_after_sees_writes_and_deletes_made_just_before,
    ),
    ("delete", delete_of_a_missing_key_is_not_an_error),
    ("copy", copy_replaces_its_target_and_needs_a_source),
    ("deadline", a_call_after_its_deadline_sends_nothing),
];

/// Runs every case on a fresh bucket from `bucket`, catching each failure, and fails with
/// the list of cases that failed (each case's own panic message is printed above it).
fn run_all(implementation: &str, bucket: impl Fn(&str) -> Bucket) {
    let failed: Vec<&str> = CASES
        .iter()
        .filter(|(name, case)| {
            let b = bucket(name);
            let started = std::time::Instant::now();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&b)));
            let verdict = if outcome.is_err() { "FAILED" } else { "holds" };
            eprintln!(
                "contract case '{name}' {verdict} on {implementation} ({:?})",
                started.elapsed()
            );
            outcome.is_err()
        })
        .map(|(name, _)| *name)
        .collect();
    assert!(
        failed.is_empty(),
        "{implementation} breaks the object-store contract in: {failed:?}"
    );
}

/// A plain in-memory bucket (no faults), as the simulation builds one.
fn memory_bucket(_case: &str) -> Bucket {
    let store = World::new(1, Faults::NONE).store(0);
    Bucket::on(Arc::new(store), S3Config::new("memory", "sandbox", None))
}

#[test]
fn contract_holds_on_the_in_memory_bucket() {
    run_all("the in-memory bucket", memory_bucket);
}

#[test]
fn contract_holds_on_s3_through_moto() {
    let moto = Moto::start();
    run_all("S3 (moto)", |case| {
        Bucket::connect(moto.bucket(&format!("contract-{case}"))).expect("S3 client")
    });
}

/// S3 only (see the module doc): with nothing listening at the endpoint, every call answers
/// `Unavailable` (not `NotFound`, not `Refused`: nothing was answered), after the client's
/// retries. The calls run side by side, so the suite waits for one call's retries only.
#[test]
fn contract_an_unreachable_s3_endpoint_is_unavailable() {
    set_aws_env();
    // Bound and released: nothing listens there.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let mut config = S3Config::new("contract-unreachable", "sandbox", Some(closed));
    config.attempt_timeout = Duration::from_millis(500);
    let bucket = Bucket::connect(config).expect("S3 client (connects lazily)");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("body");
    std::fs::write(&file, b"body").expect("write");
    let out = dir.path().join("out");
    type Call = Box<dyn Fn(&Bucket) -> Result<(), S3Error> + Send + Sync>;
    let calls: Vec<(&str, Call)> = vec![
        (
            "put_if_absent",
            Box::new(|b| b.put_if_absent("k", b"x".to_vec())),
        ),
        ("put_file", Box::new(move |b| b.put_file("k", &file))),
        ("get", Box::new(|b| b.get("k").map(drop))),
        ("get_to_file", Box::new(move |b| b.get_to_file("k", &out))),
        (
            "list_after",
            Box::new(|b| b.list_after("", "", 10).map(drop)),
        ),
        ("delete", Box::new(|b| b.delete("k"))),
        ("copy", Box::new(|b| b.copy("k", "l"))),
    ];
    std::thread::scope(|s| {
        let answers: Vec<_> = calls
            .iter()
            .map(|(name, call)| (name, s.spawn(|| call(&bucket))))
            .collect();
        for (name, answer) in answers {
            let answer = answer.join().expect("call thread");
            assert!(
                matches!(answer, Err(S3Error::Unavailable(_))),
                "{name} on a closed port: {answer:?}"
            );
        }
    });
}

fn body_of(bucket: &Bucket, key: &str) -> Vec<u8> {
    bucket
        .get(key)
        .unwrap_or_else(|e| panic!("get {key}: {e:?}"))
}

fn assert_not_found<T: std::fmt::Debug>(answer: Result<T, S3Error>, what: &str) {
    assert!(
        matches!(answer, Err(S3Error::NotFound)),
        "{what}: expected NotFound, got {answer:?}"
    );
}

fn write_file(path: &Path, body: &[u8]) {
    std::fs::write(path, body).expect("write a local file");
}

fn conditional_create_takes_a_free_key_only(bucket: &Bucket) {
    bucket
        .put_if_absent("log/1.json", b"first".to_vec())
        .expect("a free key is created");
    assert_eq!(body_of(bucket, "log/1.json"), b"first");

    let taken = bucket.put_if_absent("log/1.json", b"second".to_vec());
    assert!(
        matches!(taken, Err(S3Error::Exists)),
        "a taken key: {taken:?}"
    );
    assert_eq!(
        body_of(bucket, "log/1.json"),
        b"first",
        "the body is unchanged"
    );

    // A key whose object was deleted is free again; an empty body is an object too.
    bucket.delete("log/1.json").expect("delete");
    bucket
        .put_if_absent("log/1.json", Vec::new())
        .expect("a deleted key is free again");
    assert_eq!(body_of(bucket, "log/1.json"), b"");
    let taken = bucket.put_if_absent("log/1.json", b"third".to_vec());
    assert!(
        matches!(taken, Err(S3Error::Exists)),
        "an empty object takes its key: {taken:?}"
    );
}

/// The race the log protocol rests on: of writers creating one slot at once, exactly one
/// wins, every other one is told `Exists`, and the slot holds the winner's body.
fn one_of_racing_conditional_creates_wins(bucket: &Bucket) {
    const WRITERS: usize = 6;
    let answers: Vec<(usize, Result<(), S3Error>)> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..WRITERS)
            .map(|i| {
                s.spawn(move || {
                    (
                        i,
                        bucket.put_if_absent("log/7.json", format!("writer {i}").into_bytes()),
                    )
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|r| r.join().expect("racer"))
            .collect()
    });
    let winners: Vec<usize> = answers
        .iter()
        .filter(|(_, a)| a.is_ok())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one creator wins: {answers:?}");
    for (i, answer) in &answers {
        assert!(
            answer.is_ok() || matches!(answer, Err(S3Error::Exists)),
            "writer {i}: {answer:?}"
        );
    }
    assert_eq!(
        body_of(bucket, "log/7.json"),
        format!("writer {}", winners[0]).into_bytes(),
        "the slot holds the winner's body"
    );
}

fn put_file_creates_and_replaces(bucket: &Bucket) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    write_file(&a, b"version a, the longer one");
    write_file(&b, b"version b");

    bucket
        .put_file("snapshots/1.db", &a)
        .expect("put a new key");
    assert_eq!(
        body_of(bucket, "snapshots/1.db"),
        b"version a, the longer one"
    );
    bucket.put_file("snapshots/1.db", &b).expect("replace");
    assert_eq!(
        body_of(bucket, "snapshots/1.db"),
        b"version b",
        "replaced whole"
    );

    // It replaces an object made by a conditional create too, which then stays taken.
    bucket
        .put_if_absent("log/2.json", b"created".to_vec())
        .expect("create");
    bucket.put_file("log/2.json", &a).expect("replace");
    assert_eq!(body_of(bucket, "log/2.json"), b"version a, the longer one");
    let taken = bucket.put_if_absent("log/2.json", b"again".to_vec());
    assert!(
        matches!(taken, Err(S3Error::Exists)),
        "a key put_file replaced stays taken: {taken:?}"
    );

    // A local file that cannot be read is no answer from the bucket: Unavailable, and
    // nothing is written.
    let missing = bucket.put_file("snapshots/2.db", &dir.path().join("absent"));
    assert!(
        matches!(missing, Err(S3Error::Unavailable(_))),
        "an unreadable local file: {missing:?}"
    );
    assert_not_found(bucket.get("snapshots/2.db"), "after a failed put_file");
}

fn get_answers_the_whole_object(bucket: &Bucket) {
    let dir = tempfile::tempdir().expect("temp dir");
    // Larger than one read of the body (the SDK streams it in chunks), every byte value.
    let body: Vec<u8> = (0..3 * 1024 * 1024u32)
        .map(|i| u8::try_from(i % 251).expect("below 256"))
        .collect();
    let src = dir.path().join("src");
    write_file(&src, &body);
    bucket.put_file("snapshots/9.db", &src).expect("put");

    assert!(
        bucket.get("snapshots/9.db").expect("get") == body,
        "get: the whole object"
    );
    // get_to_file writes the object, and only it, at `path` (a stale file there is replaced
    // whole, not overwritten in part).
    let out = dir.path().join("out");
    write_file(&out, &vec![b'x'; body.len() + 100]);
    bucket
        .get_to_file("snapshots/9.db", &out)
        .expect("get_to_file");
    assert!(
        std::fs::read(&out).expect("read") == body,
        "get_to_file: the whole object"
    );
}

fn a_missing_key_is_not_found(bucket: &Bucket) {
    let dir = tempfile::tempdir().expect("temp dir");
    assert_not_found(bucket.get("log/404.json"), "get of a missing key");
    let out = dir.path().join("out");
    assert_not_found(
        bucket.get_to_file("log/404.json", &out),
        "get_to_file of a missing key",
    );
    assert!(!out.exists(), "get_to_file of a missing key leaves no file");

    // A prefix of existing keys is not an object, nor is a deleted key.
    bucket
        .put_if_absent("tenants/t1/log/1.json", b"x".to_vec())
        .expect("put");
    assert_not_found(bucket.get("tenants/t1"), "get of a prefix");
    assert_not_found(bucket.get("tenants/t1/"), "get of a prefix ending in /");
    bucket.delete("tenants/t1/log/1.json").expect("delete");
    assert_not_found(bucket.get("tenants/t1/log/1.json"), "get of a deleted key");
}

fn list_after_is_ascending_under_prefix_after_start_after(bucket: &Bucket) {
    // Created out of order; `-` (0x2d) sorts before `/` (0x2f), upper case before lower.
    for key in [
        "t/log/00000000000000000003.json",
        "t/log/00000000000000000001.json",
        "t/log-old/00000000000000000001.json",
        "t/snapshots/00000000000000000002.db",
        "t/log/00000000000000000010.json",
        "t/log/00000000000000000002.json",
        "t/Log/upper.json",
        "u/log/00000000000000000001.json",
        "s",
    ] {
        bucket
            .put_if_absent(key, key.as_bytes().to_vec())
            .expect("put");
    }
    let log = |n: u64| format!("t/log/{n:020}.json");
    let list = |prefix: &str, start_after: &str, limit: usize| {
        bucket
            .list_after(prefix, start_after, limit)
            .unwrap_or_else(|e| panic!("list {prefix} after {start_after}: {e:?}"))
    };

    // As the protocol lists a directory: start_after = prefix, no limit.
    assert_eq!(
        list("t/log/", "t/log/", usize::MAX),
        vec![log(1), log(2), log(3), log(10)]
    );
    assert_eq!(list("t/log/", "", 100), list("t/log/", "t/log/", 100));
    // After a key, whether or not it exists.
    assert_eq!(list("t/log/", &log(1), 100), vec![log(2), log(3), log(10)]);
    assert_eq!(list("t/log/", &log(4), 100), vec![log(10)]);
    assert_eq!(list("t/log/", &log(10), 100), Vec::<String>::new());
    assert_eq!(list("t/log/", "t/m", 100), Vec::<String>::new());
    // The limit keeps the first keys.
    assert_eq!(list("t/log/", "t/log/", 2), vec![log(1), log(2)]);
    assert_eq!(list("t/log/", &log(1), 1), vec![log(2)]);
    assert_eq!(list("t/log/", "t/log/", 0), Vec::<String>::new());
    // A prefix is a prefix of the key, not a directory.
    assert_eq!(
        list("t/log", "", 100),
        vec![
            "t/log-old/00000000000000000001.json".to_string(),
            log(1),
            log(2),
            log(3),
            log(10)
        ]
    );
    assert_eq!(list("t/nothing/", "", 100), Vec::<String>::new());
    // The empty prefix: every key, in byte order.
    assert_eq!(
        list("", "", usize::MAX),
        vec![
            "s".to_string(),
            "t/Log/upper.json".into(),
            "t/log-old/00000000000000000001.json".into(),
            log(1),
            log(2),
            log(3),
            log(10),
            "t/snapshots/00000000000000000002.db".into(),
            "u/log/00000000000000000001.json".into(),
        ]
    );
    assert_eq!(list("", "t/snapshots/", 100).len(), 2);
}

/// More keys than S3 answers in one page (1,000): the listing follows the pages, stays
/// ascending, and honours start_after and the limit across them.
fn list_after_reads_past_one_page(bucket: &Bucket) {
    const KEYS: u64 = 1_003;
    let key = |n: u64| format!("big/log/{n:020}.json");
    for n in 1..=KEYS {
        bucket.put_if_absent(&key(n), Vec::new()).expect("put");
    }
    let all = bucket
        .list_after("big/log/", "big/log/", usize::MAX)
        .expect("list");
    assert_eq!(all, (1..=KEYS).map(key).collect::<Vec<_>>());
    let tail = bucket.list_after("big/log/", &key(2), 1_000).expect("list");
    assert_eq!(tail, (3..=1_002).map(key).collect::<Vec<_>>());
}

/// Read-after-write: a listing sees every write, delete and copy that was answered before
/// it was sent; a get sees the newest body.
fn list_after_sees_writes_and_deletes_made_just_before(bucket: &Bucket) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("f");
    let list = || bucket.list_after("c/", "c/", usize::MAX).expect("list");
    assert_eq!(list(), Vec::<String>::new());

    bucket.put_if_absent("c/2", b"two".to_vec()).expect("put");
    assert_eq!(list(), vec!["c/2"]);
    write_file(&file, b"one");
    bucket.put_file("c/1", &file).expect("put_file");
    assert_eq!(list(), vec!["c/1", "c/2"]);
    bucket.copy("c/2", "c/3").expect("copy");
    assert_eq!(list(), vec!["c/1", "c/2", "c/3"]);
    bucket.delete("c/2").expect("delete");
    assert_eq!(list(), vec!["c/1", "c/3"]);
    bucket.delete("c/1").expect("delete");
    bucket.delete("c/3").expect("delete");
    assert_eq!(list(), Vec::<String>::new());

    for n in 0..5u8 {
        write_file(&file, &[n]);
        bucket.put_file("c/4", &file).expect("put_file");
        assert_eq!(body_of(bucket, "c/4"), vec![n], "get sees the last replace");
    }
}

fn delete_of_a_missing_key_is_not_an_error(bucket: &Bucket) {
    bucket
        .delete("never/was.json")
        .expect("a key that never was");
    bucket.put_if_absent("d/1", b"x".to_vec()).expect("put");
    bucket.delete("d/1").expect("delete");
    assert_not_found(bucket.get("d/1"), "a deleted key");
    bucket.delete("d/1").expect("a key deleted before");
    // Deleting a prefix deletes nothing.
    bucket.put_if_absent("d/2/x", b"x".to_vec()).expect("put");
    bucket.delete("d/2").expect("a prefix");
    assert_eq!(body_of(bucket, "d/2/x"), b"x");
}

fn copy_replaces_its_target_and_needs_a_source(bucket: &Bucket) {
    bucket
        .put_if_absent("checkpoints/files/a.db", b"checkpoint".to_vec())
        .expect("put source");
    bucket
        .put_if_absent("restores/r.db", b"an older copy, longer".to_vec())
        .expect("put target");

    bucket
        .copy("checkpoints/files/a.db", "restores/new.db")
        .expect("copy to a new key");
    assert_eq!(body_of(bucket, "restores/new.db"), b"checkpoint");
    bucket
        .copy("checkpoints/files/a.db", "restores/r.db")
        .expect("copy onto a taken key");
    assert_eq!(body_of(bucket, "restores/r.db"), b"checkpoint", "replaced");
    assert_eq!(
        body_of(bucket, "checkpoints/files/a.db"),
        b"checkpoint",
        "the source stays"
    );

    // A missing source: NotFound, and the target is neither made nor touched.
    assert_not_found(
        bucket.copy("checkpoints/files/gone.db", "restores/x.db"),
        "copy of a missing source",
    );
    assert_not_found(bucket.get("restores/x.db"), "the target of a failed copy");
    assert_not_found(
        bucket.copy("checkpoints/files/gone.db", "restores/r.db"),
        "copy of a missing source onto a taken key",
    );
    assert_eq!(body_of(bucket, "restores/r.db"), b"checkpoint", "untouched");

    // S3 refuses to copy an object onto itself unchanged (400 InvalidRequest): a permanent
    // refusal, the object untouched.
    let onto_itself = bucket.copy("restores/r.db", "restores/r.db");
    assert!(
        matches!(onto_itself, Err(S3Error::Refused(_))),
        "copy onto itself: {onto_itself:?}"
    );
    assert_eq!(body_of(bucket, "restores/r.db"), b"checkpoint");
}

/// Under a deadline that has passed, every call answers `DeadlinePassed` at once and sends
/// nothing: no object is created, replaced, deleted or copied.
fn a_call_after_its_deadline_sends_nothing(bucket: &Bucket) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("f");
    write_file(&file, b"late");
    bucket.put_if_absent("k/old", b"old".to_vec()).expect("put");

    // The bucket's own clock: real time on S3, simulated time in memory.
    let passed = bucket.now();
    let out = dir.path().join("out");
    let answers: Vec<(&str, Result<(), S3Error>)> = with_deadline(passed, || {
        vec![
            (
                "put_if_absent",
                bucket.put_if_absent("k/new", b"late".to_vec()),
            ),
            ("put_file", bucket.put_file("k/old", &file)),
            ("get", bucket.get("k/old").map(drop)),
            ("get_to_file", bucket.get_to_file("k/old", &out)),
            ("list_after", bucket.list_after("k/", "k/", 10).map(drop)),
            ("delete", bucket.delete("k/old")),
            ("copy", bucket.copy("k/old", "k/copy")),
        ]
    });
    for (name, answer) in answers {
        assert!(
            matches!(answer, Err(S3Error::DeadlinePassed)),
            "{name} after the deadline: {answer:?}"
        );
    }
    assert!(!out.exists(), "get_to_file wrote nothing");
    assert_eq!(
        bucket.list_after("k/", "k/", 10).expect("list"),
        vec!["k/old"],
        "nothing created, deleted or copied"
    );
    assert_eq!(body_of(bucket, "k/old"), b"old", "nothing replaced");
}
