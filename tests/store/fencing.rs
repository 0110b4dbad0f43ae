//! Exactly-once writes when S3 is slow: a log PUT held by a proxy past
//! the SDK's timeouts and forwarded later must never turn an answer "nothing was applied"
//! into a lie, and a client retrying that answer must not store the write twice.

use e2e::s3::{open_store, reason_names, try_insert_reason, Gate, Moto};
use shared::store::S3Config;
use shared::Error;
use std::time::{Duration, Instant};

/// A store config through `gate` with short timeouts, so that a held PUT outlives them.
fn through(gate: &Gate, direct: &S3Config) -> S3Config {
    let mut gated = direct.clone();
    gated.endpoint = Some(gate.endpoint.clone());
    gated.attempt_timeout = Duration::from_millis(300);
    gated.write_deadline = Duration::from_secs(4);
    gated
}

/// Writes once, waits until every held PUT reached S3, and checks the answer against what S3
/// holds then; the client then retries a refused write once. Exactly one copy must remain.
fn slow_put_then_retry(moto: &Moto, bucket: &str, gate: &Gate, fail_gets: bool) {
    let direct = moto.bucket(bucket);
    let gated = through(gate, &direct);
    let (store, _d) = open_store(&gated);
    let (tenant, _) = store
        .registry()
        .create_tenant("slow", "UTC")
        .expect("register");

    gate.hold_next_log_put(Duration::from_secs(2));
    gate.fail_log_gets(fail_gets);
    let first = try_insert_reason(&store, &tenant.id, "once");
    gate.fail_log_gets(false);
    gate.wait_for_held(Duration::from_secs(20));
    assert!(
        gate.counts().held >= 1,
        "the PUT was held: {:?}",
        gate.counts()
    );
    let landed = reason_names(&open_store(&direct).0, &tenant.id);
    match &first {
        Ok(()) => assert_eq!(landed, vec!["once"], "acknowledged and stored once"),
        Err(Error::Unavailable(m)) => assert!(
            landed.is_empty(),
            "answered 503 ({m}), which says nothing was applied, yet the held PUT landed: {landed:?}"
        ),
        Err(e) => panic!("unexpected answer: {e}"),
    }

    // The client retries every 503 with the same request.
    if first.is_err() {
        try_insert_reason(&store, &tenant.id, "once").expect("the retry is acknowledged");
    }
    let stored = reason_names(&open_store(&direct).0, &tenant.id);
    assert_eq!(stored, vec!["once"], "exactly one copy after the retry");
    assert_eq!(reason_names(&store, &tenant.id), vec!["once"]);
}

#[test]
fn a_put_held_past_the_timeouts_is_never_applied_after_a_nothing_applied_answer() {
    let moto = Moto::start();
    let gate = Gate::start(&moto);
    slow_put_then_retry(&moto, "slow-put", &gate, false);
}

#[test]
fn a_failing_checking_get_does_not_make_the_answer_lie_either() {
    let moto = Moto::start();
    let gate = Gate::start(&moto);
    slow_put_then_retry(&moto, "slow-put-get", &gate, true);
}

#[test]
fn a_write_s3_cannot_settle_says_the_outcome_is_unknown_within_its_deadline() {
    let moto = Moto::start();
    let direct = moto.bucket("unsettled");
    let gate = Gate::start(&moto);
    let gated = through(&gate, &direct);
    let (store, _d) = open_store(&gated);
    let (tenant, _) = store
        .registry()
        .create_tenant("unsettled", "UTC")
        .expect("register");
    store.tenant_db(&tenant.id).expect("warm the tenant");

    // Every log PUT, fences included, is held past the write deadline: nothing can settle
    // the slot. A second write, sent once the proxy holds the first one's PUT (made under
    // the writer lock), waits for the writer lock, but never past its own deadline.
    gate.hold_log_puts(Some(Duration::from_secs(6)));
    let started = Instant::now();
    let (first, took, second, second_took) = std::thread::scope(|scope| {
        let second = scope.spawn(|| {
            gate.wait_until_holding(Duration::from_secs(30));
            let t = Instant::now();
            (try_insert_reason(&store, &tenant.id, "second"), t.elapsed())
        });
        let first = try_insert_reason(&store, &tenant.id, "maybe");
        let took = started.elapsed();
        let (second, second_took) = second.join().expect("second writer");
        (first, took, second, second_took)
    });
    gate.hold_log_puts(None);

    let slack = Duration::from_millis(1500);
    assert!(
        took < gated.write_deadline + slack,
        "the write answered after {took:?}, deadline {:?}",
        gated.write_deadline
    );
    assert!(
        second_took < gated.write_deadline + slack,
        "the queued write answered after {second_took:?}"
    );
    let Err(e) = first else {
        panic!("a write S3 never confirmed was acknowledged")
    };
    assert!(matches!(e, Error::OutcomeUnknown(_)), "{e}");
    let api = shared::web::ApiError::from(e);
    assert_eq!(api.status, 503);
    assert!(
        api.message.contains("may or may not") && !api.message.contains("nothing was applied"),
        "{}",
        api.message
    );
    assert!(
        second.is_err(),
        "the second write could not be confirmed either"
    );

    // The held PUTs land later: the write whose outcome was unknown may indeed be there,
    // once; the store keeps working and sees it.
    gate.wait_for_held(Duration::from_secs(30));
    let landed = reason_names(&open_store(&direct).0, &tenant.id);
    assert!(landed.iter().filter(|n| *n == "maybe").count() <= 1);
    try_insert_reason(&store, &tenant.id, "after").expect("the store recovers");
    let mut expected = landed.clone();
    expected.push("after".into());
    expected.sort();
    assert_eq!(reason_names(&store, &tenant.id), expected);
    eprintln!(
        "unsettled write answered in {took:?} (deadline {:?}), queued write in {second_took:?}; after the held PUTs landed S3 holds {landed:?}",
        gated.write_deadline
    );
}
