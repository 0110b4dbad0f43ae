//! The write loop of a replica (invariants 1 to 4 and 7 of the parent module): a write runs
//! its closure in a transaction on the local copy, PUTs the captured changes (or a restore
//! entry) as the next log entry with `If-None-Match: *` (the PUT is the freshness check: no
//! GET before it), and commits locally only once S3 holds it; a lost race rolls back,
//! catches up and runs again, until the deadline; a PUT whose outcome is unknown is settled
//! by a fence before the write answers, all within one deadline. Between environments
//! racing for one database, [`race_pause`] and [`Streak`] share the slots out, so that no
//! environment's write waits for its deadline behind another's back-to-back writes.

use super::{capture, idempotency, insert_key, restore_body, KeyRow, Replica, RestoreRef};
use crate::store::s3::{self, Bucket, S3Error};
use crate::{Error, Result};
use capture::Changeset;
use rusqlite::{Connection, Transaction};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Test hook ([`S3Config::crash_at`](crate::store::S3Config::crash_at), `SANDBOX_S3_CRASH_AT`):
/// aborts the process at `stage` of a write when the bucket's settings say so.
fn crash_point(bucket: &Bucket, stage: s3::CrashAt) {
    if bucket.crash_at() == Some(stage) {
        tracing::error!(?stage, "SANDBOX_S3_CRASH_AT: aborting the process");
        std::process::abort();
    }
}

impl Replica {
    /// Runs `f` in a transaction and makes it the next version in S3, re-running it after a
    /// lost race (see the module invariants), all before `deadline`. Answers `f`'s result and
    /// whether a snapshot is due. Errors: [`Error::Unavailable`] when nothing was applied
    /// (every slot this call tried to write is settled: taken by another writer or fenced),
    /// [`Error::OutcomeUnknown`] when S3 could not be made to say (the one honest "maybe").
    ///
    /// `check`: whether the local copy must be shown current before an answer that is not a
    /// landed PUT (false when the caller's request already brought it up to date). It never
    /// costs a request before the PUT: the conditional PUT itself refuses a stale copy.
    pub fn write<T>(
        &self,
        conn: &mut Connection,
        f: &dyn Fn(&Transaction<'_>) -> Result<T>,
        deadline: Instant,
        check: bool,
    ) -> Result<(T, bool)> {
        // A group of one: the result is kept aside by the member, which answers only
        // whether it was applied.
        let out = std::cell::RefCell::new(None);
        let member = |tx: &Transaction<'_>| {
            let value = f(tx)?;
            *out.borrow_mut() = Some(value);
            Ok(())
        };
        let group = self.write_group(conn, &[&member], deadline, !check);
        let answer = group.answers.into_iter().next().unwrap_or_else(|| {
            Err(Error::Internal(
                "a group of one write answered nothing".into(),
            ))
        });
        answer?;
        let value = out
            .into_inner()
            .ok_or_else(|| Error::Internal("an applied write kept no result".into()))?;
        Ok((value, group.snapshot_due))
    }

    /// Makes the rows of the database file attached as [`capture::SOURCE`] (a copy of the
    /// bucket object `reference.object`) the next version of this database: a conditional
    /// write of a restore entry (see docs/storage.md, "Checkpoints"), with the same races,
    /// fencing and deadline as any write. Answers the new version.
    ///
    /// Unlike a change, a restore entry does not depend on the state it replaces, except for
    /// the id sequences it carries, which are cheap to compute. So a lost race costs only a
    /// catch-up and one more PUT: the rows are replaced locally once, after S3 holds the
    /// entry, exactly as a replay would (before: re-running the whole-database replace
    /// after every lost race made restores lose every race under 20 writes/s from other
    /// environments). Like any write, a restore keeps trying until the settling third of its
    /// deadline.
    pub fn write_restore(
        &self,
        conn: &mut Connection,
        reference: &RestoreRef,
        deadline: Instant,
        key: Option<&KeyRow>,
    ) -> Result<u64> {
        let settle_from = self.settle_from(deadline);
        let fixed = capture::restored_sequences(conn, capture::SOURCE)?;
        let mut attempt = 0u32;
        loop {
            if self.bucket.now() >= settle_from {
                return Err(Error::Unavailable(format!(
                    "{}: write deadline passed after {attempt} lost races; nothing was applied",
                    self.root
                )));
            }
            s3::with_deadline(settle_from, || self.catch_up(conn))?;
            // A key another request's restore took (its entry is in now): nothing applied.
            // Checked before every claim, so of two restores racing with one key only the
            // first entry in the log carries a row; the replay's insert never has to refuse.
            if let Some(row) = key {
                idempotency::check_free(conn, row)?;
            }
            let seq = capture::seq(conn)?;
            let schema: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            let sequences = capture::merge_sequences(&capture::sequences(conn, "main")?, &fixed);
            let attempt_id = uuid::Uuid::new_v4().to_string();
            let body = restore_body(reference, &attempt_id, schema, &sequences, key);
            let next = seq + 1;
            match self.claim(next, body, &attempt_id, schema, settle_from, deadline) {
                Slot::Ours => {
                    crash_point(&self.bucket, s3::CrashAt::AfterPut);
                    // S3 holds the entry: apply it here as a replay would. Should that fail,
                    // the next catch-up replays it from S3.
                    match capture::apply_attached(
                        conn,
                        capture::SOURCE,
                        next,
                        &sequences,
                        insert_key(key),
                    ) {
                        Ok(()) => self.seq.store(next, Ordering::SeqCst),
                        Err(e) => {
                            tracing::warn!(root = %self.root, seq = next, error = %e, "local restore failed after S3 accepted the entry; will catch up")
                        }
                    }
                    self.snapshot_restored(reference, next);
                    return Ok(next);
                }
                Slot::Theirs => {
                    tracing::debug!(root = %self.root, seq = next, attempt, "restore lost the race; catching up");
                    // Only a short pause: the slot after the winner's is usually free now.
                    self.bucket
                        .pause(Duration::from_millis(u64::from(attempt.min(5))));
                }
                Slot::Fenced => return Err(self.fenced(next)),
                Slot::Unknown(why) => return Err(self.unknown(next, &why)),
            }
            attempt = attempt.saturating_add(1);
        }
    }

    /// After restore entry `seq`: a snapshot at the new version, copied by S3 itself, so that
    /// cold starts skip the replay (and its download). Only a shortcut: on failure the log
    /// still has everything.
    fn snapshot_restored(&self, reference: &RestoreRef, seq: u64) {
        let snapshotted = self
            .bucket
            .copy(&self.object_key(&reference.object), &self.snapshot_key(seq))
            .map_err(Error::from)
            .and_then(|()| self.prune_snapshots(seq));
        if let Err(e) = snapshotted {
            tracing::warn!(root = %self.root, seq, error = %e, "no snapshot after a restore; the log still holds it");
        }
    }

    /// The write loop (docs/storage.md, "Write" and "Group commit"): the `members` (one
    /// write, or the writes of this process that queued for the database together) run in
    /// order in one local transaction, each inside a savepoint of its own, and their net
    /// changes become one log entry, PUT once. A member whose closure refuses (not found, a
    /// rule broken, its request's deadline) is rolled back to its savepoint and answered its
    /// refusal: it is not in the entry, and the others go on.
    ///
    /// The first attempt runs on the local copy as it is: when something changed, the
    /// conditional PUT of the next slot is the freshness check (the slot exists exactly when
    /// someone wrote that version, and log keys are never deleted), so an uncontended group
    /// is one S3 request. An answer that is not a landed PUT (every member refused, or
    /// nothing changed) is only given on a copy known current: `fresh` (every member's
    /// request already checked it), or after one GET of the next slot finds nothing. A lost
    /// race means every member ran on a stale state: all are rolled back and run again on the
    /// caught-up copy, with a jittered pause, until the settling third of the deadline (the
    /// caller passes the earliest of the members' deadlines). Answers come in the members'
    /// order, all at once, after the PUT's outcome is settled.
    pub fn write_group(
        &self,
        conn: &mut Connection,
        members: &[Member<'_>],
        deadline: Instant,
        fresh: bool,
    ) -> Group {
        // Work (catch-up, closures, PUT) must end early enough to leave a third of the time
        // to settle a PUT whose outcome is unknown.
        let settle_from = self.settle_from(deadline);
        let started = self.bucket.now();
        self.yield_if_streaking(settle_from);
        // Answers that stand whatever the data: the store's own refusals (a member's
        // deadline passed, ...). Such a member is not run again.
        let mut fixed: Vec<Option<Error>> = vec![None; members.len()];
        let mut fresh = fresh;
        let mut stale = false;
        let mut lost = 0u32;
        loop {
            if self.bucket.now() >= settle_from {
                return Group::refused(
                    &fixed,
                    &Error::Unavailable(format!(
                        "{}: write deadline passed after {lost} lost races; nothing was applied",
                        self.root
                    )),
                );
            }
            let no_catch_up = lost > 0
                && self.bucket.mutation_in_tests() == Some(s3::Mutation::NoCatchUpAfterLostRace);
            if stale && !no_catch_up {
                if let Err(e) = s3::with_deadline(settle_from, || self.catch_up(conn)) {
                    return Group::refused(&fixed, &e);
                }
                fresh = true;
                if lost > 0 {
                    // Caught up after a lost race: a pause that is shorter the longer this
                    // write has waited, so the oldest loser takes the next free slot.
                    let pause = race_pause(
                        self.bucket.now().saturating_duration_since(started),
                        self.last_put(),
                    )
                    .min(settle_from.saturating_duration_since(self.bucket.now()));
                    self.bucket.pause(pause);
                }
            }
            let ran = run_members(conn, members, &mut fixed, self.bucket.mutation_in_tests());
            let (tx, seq, answers, changes) = match ran {
                Ok(Ran::Again) => continue,
                Ok(Ran::Done {
                    tx,
                    seq,
                    answers,
                    changes,
                }) => (tx, seq, answers, changes),
                Err(e) => return Group::refused(&fixed, &e),
            };
            if changes.is_empty() {
                if fixed.iter().all(Option::is_some) {
                    // Every member refused for a reason of the store's: nothing to check.
                    return Group::answered(&fixed, answers, false);
                }
                match self.newer_unless(fresh, settle_from) {
                    Ok(true) => {
                        drop(tx);
                        self.contended();
                        stale = true;
                        continue;
                    }
                    Ok(false) => {}
                    Err(e) => return Group::refused(&fixed, &e),
                }
                // Nothing to log: the answers (refusals, or "nothing changed") stand on a
                // current copy. Committing an unchanged transaction only ends it.
                return match tx.commit() {
                    Ok(()) => Group::answered(&fixed, answers, false),
                    Err(e) => Group::refused(&fixed, &Error::from(e)),
                };
            }
            let body = match serde_json::to_vec(&changes) {
                Ok(body) => body,
                Err(e) => return Group::refused(&fixed, &Error::from(e)),
            };
            let next = seq + 1;
            let put_from = self.bucket.now();
            // The simulation's deliberately wrong protocol (object_store.rs): the group is
            // committed before its PUT, and answered whatever the PUT's outcome.
            let early = self.bucket.mutation_in_tests() == Some(s3::Mutation::AckGroupBeforePut)
                && members.len() > 1;
            let mut tx = Some(tx);
            if early {
                if let Some(tx) = tx.take() {
                    self.commit_local(tx, next);
                }
            }
            match self.claim(
                next,
                body,
                &changes.attempt,
                changes.schema,
                settle_from,
                deadline,
            ) {
                _ if early => return Group::answered(&fixed, answers, false),
                Slot::Ours => {
                    crash_point(&self.bucket, s3::CrashAt::AfterPut);
                    if let Some(tx) = tx {
                        self.commit_local(tx, next);
                    }
                    self.landed(put_from, !stale);
                    let due = next.saturating_sub(self.snapshot_seq.load(Ordering::SeqCst))
                        >= self.compact_every;
                    return Group::answered(&fixed, answers, due);
                }
                Slot::Theirs => {
                    drop(tx);
                    self.contended();
                    tracing::debug!(root = %self.root, seq = next, lost, members = members.len(), "lost the race; catching up");
                    lost = lost.saturating_add(1);
                    stale = true;
                }
                Slot::Fenced => return Group::refused(&fixed, &self.fenced(next)),
                Slot::Unknown(why) => {
                    // Members that ran are in the entry whose fate is unknown; members that
                    // refused are not in it whatever happens: nothing of theirs was applied.
                    let unknown = self.unknown(next, &why);
                    let answers = answers
                        .into_iter()
                        .map(|a| match a {
                            Ok(()) => Err(unknown.clone()),
                            Err(_) => Err(self.fenced_out(next)),
                        })
                        .collect();
                    return Group::answered(&fixed, answers, false);
                }
            }
        }
    }

    /// Whether S3 holds a version newer than the local copy, unless the copy is known
    /// `fresh` (then no request).
    fn newer_unless(&self, fresh: bool, settle_from: Instant) -> Result<bool> {
        if fresh {
            Ok(false)
        } else {
            self.newer_until(settle_from)
        }
    }

    /// Before a write: an environment whose writes keep landing back to back yields the
    /// tenant's next slot for a moment, once per [`Streak::limit`] such writes (see
    /// [`Streak`]). Writes spaced by more than [`Streak::ROOM_IN_PUTS`] of its PUTs never
    /// pause.
    fn yield_if_streaking(&self, settle_from: Instant) {
        let now = self.bucket.now();
        let pause = {
            let mut streak = crate::store::lock(&self.streak);
            let Some((landed, put)) = streak.last else {
                return;
            };
            let room = put * Streak::ROOM_IN_PUTS;
            let since = now.saturating_duration_since(landed);
            if since >= room {
                streak.wins = 0;
                return;
            }
            if streak.wins < streak.limit {
                return;
            }
            streak.wins = 0;
            streak.yielded = true;
            room - since
        };
        self.bucket
            .pause(pause.min(settle_from.saturating_duration_since(now)));
    }

    /// How long this environment's last landed PUT took ([`DEFAULT_PUT`] before the first).
    fn last_put(&self) -> Duration {
        crate::store::lock(&self.streak)
            .last
            .map_or(DEFAULT_PUT, |(_, put)| put)
    }

    /// Records that another environment wrote to this database during a write (a lost race,
    /// or a stale copy found): writes here yield again soon.
    fn contended(&self) {
        let mut streak = crate::store::lock(&self.streak);
        streak.limit = Streak::MIN_LIMIT;
        streak.yielded = false;
    }

    /// Records a write whose PUT (sent at `put_from`) landed; `first_try`: with no lost race
    /// and no catch-up before it.
    fn landed(&self, put_from: Instant, first_try: bool) {
        let now = self.bucket.now();
        let mut streak = crate::store::lock(&self.streak);
        if first_try {
            streak.wins = streak.wins.saturating_add(1);
            if streak.yielded {
                // Nobody took the slot this environment left free: fewer pauses from now.
                streak.limit = streak.limit.saturating_mul(2).min(Streak::MAX_LIMIT);
            }
        } else {
            streak.wins = 0;
        }
        streak.yielded = false;
        streak.last = Some((now, now.saturating_duration_since(put_from)));
    }

    /// Whether S3 holds a version newer than the local copy (one GET, before `settle_from`);
    /// the entry found is kept for the catch-up that follows.
    fn newer_until(&self, settle_from: Instant) -> Result<bool> {
        s3::with_deadline(settle_from, || self.has_newer())
    }

    /// Tries to make `body` (of write attempt `attempt_id`) log entry `next`: the conditional
    /// PUT before `settle_from`, then, when it did not plainly succeed, who holds the slot,
    /// settled (fenced if need be) before `deadline`.
    fn claim(
        &self,
        next: u64,
        body: Vec<u8>,
        attempt_id: &str,
        schema: i64,
        settle_from: Instant,
        deadline: Instant,
    ) -> Slot {
        crash_point(&self.bucket, s3::CrashAt::BeforePut);
        let key = self.log_key(next);
        match s3::with_deadline(settle_from, || self.bucket.put_if_absent(&key, body)) {
            Ok(()) => Slot::Ours,
            // Taken: by us (the SDK retried a PUT whose answer was lost and met our own
            // entry) or by another writer. Only the attempt id tells.
            Err(S3Error::Exists) => {
                s3::with_deadline(deadline, || self.owner_until_known(next, attempt_id))
            }
            // Timeout, network error, 5xx: the PUT may still land later (a request held
            // somewhere on the way). Settle the slot before answering.
            Err(e) => {
                tracing::warn!(root = %self.root, seq = next, error = %e, "log PUT outcome unknown; fencing the slot");
                // The simulation's deliberately wrong protocols (object_store.rs): read in
                // test builds only.
                let mutation = if cfg!(test) {
                    self.bucket.mutation()
                } else {
                    None
                };
                match mutation {
                    Some(s3::Mutation::SkipFence) => Slot::Fenced,
                    _ => match s3::with_deadline(deadline, || self.fence(&key, attempt_id, schema))
                    {
                        Slot::Ours
                            if mutation == Some(s3::Mutation::NothingAppliedWhenFenceLost) =>
                        {
                            Slot::Fenced
                        }
                        settled => settled,
                    },
                }
            }
        }
    }

    /// When a write with `deadline` must stop working and keep the rest for settling: a third
    /// of the time left is kept for fencing a PUT whose outcome is unknown. Time is the
    /// bucket's (simulated in the simulation).
    fn settle_from(&self, deadline: Instant) -> Instant {
        deadline - deadline.saturating_duration_since(self.bucket.now()) / 3
    }

    /// The answer of a write whose slot `next` this writer fenced: nothing was applied.
    fn fenced(&self, next: u64) -> Error {
        Error::Unavailable(format!(
            "{}: S3 did not confirm log entry {next} in time; the slot was fenced, nothing was applied",
            self.root
        ))
    }

    /// The answer of a group member that refused while its group's entry `next` could not be
    /// settled: the member is not in that entry whatever became of it.
    fn fenced_out(&self, next: u64) -> Error {
        Error::Unavailable(format!(
            "{}: this write was refused and is not in log entry {next}, which S3 did not confirm in time; nothing of it was applied",
            self.root
        ))
    }

    /// The answer of a write whose slot `next` could not be settled.
    fn unknown(&self, next: u64, why: &str) -> Error {
        Error::OutcomeUnknown(format!(
            "{}: log entry {next} could not be settled before the write deadline ({why}); the write may or may not have been applied",
            self.root
        ))
    }

    /// Who holds the existing log entry `seq`, asked until S3 answers or the thread's
    /// deadline passes. Another writer's entry is kept for the catch-up that follows the lost
    /// race, which then does not GET it a second time (entries are immutable).
    fn owner_until_known(&self, seq: u64, attempt: &str) -> Slot {
        let key = self.log_key(seq);
        let key = key.as_str();
        let mut last = String::new();
        for round in 0u32.. {
            match self.bucket.get(key) {
                Ok(body) => {
                    let slot = owner(&body, attempt);
                    if slot == Slot::Theirs {
                        *crate::store::lock(&self.probed) = Some((seq, body));
                    }
                    return slot;
                }
                // Entries are never deleted by the protocol; a missing one means a tenant
                // deletion is under way. It is not ours to claim either way.
                Err(S3Error::NotFound) => {
                    return Slot::Unknown(format!("{key} disappeared after a 412"))
                }
                Err(e) if is_final(&e) => {
                    last = e.to_string();
                    break;
                }
                Err(e) => last = e.to_string(),
            }
            self.bucket.pause(settle_pause(round));
        }
        Slot::Unknown(last)
    }

    /// Settles slot `key` after a PUT of write attempt `attempt` ended without an answer:
    /// creates the slot with a no-op "aborted" entry of the same attempt, so that the lost
    /// PUT can never land afterwards. Retried until S3 answers or the thread's deadline
    /// passes. A fence that wins means nothing was applied; one that loses meets the entry
    /// that won, ours (the PUT did land) or another writer's.
    fn fence(&self, key: &str, attempt: &str, schema: i64) -> Slot {
        let body = match serde_json::to_vec(&Changeset::fence(attempt, schema)) {
            Ok(b) => b,
            Err(e) => return Slot::Unknown(e.to_string()),
        };
        let mut last = String::new();
        for round in 0u32.. {
            match self.bucket.put_if_absent(key, body.clone()) {
                Ok(()) => return Slot::Fenced,
                Err(S3Error::Exists) => match self.bucket.get(key) {
                    Ok(found) => return owner(&found, attempt),
                    Err(e) if is_final(&e) => {
                        last = e.to_string();
                        break;
                    }
                    Err(e) => last = e.to_string(),
                },
                Err(e) if is_final(&e) => {
                    last = e.to_string();
                    break;
                }
                Err(e) => last = e.to_string(),
            }
            self.bucket.pause(settle_pause(round));
        }
        Slot::Unknown(if last.is_empty() {
            "S3 did not answer".into()
        } else {
            last
        })
    }

    /// Commits a transaction whose log entry S3 already holds. The write is durable either
    /// way; if the local commit fails, the cache stays at the old version and the next catch-up
    /// brings the entry in from S3.
    fn commit_local(&self, tx: Transaction<'_>, seq: u64) {
        let committed = capture::clear(&tx)
            .and_then(|()| capture::set_seq(&tx, seq))
            .and_then(|()| tx.commit().map_err(Error::from));
        match committed {
            Ok(()) => self.seq.store(seq, Ordering::SeqCst),
            Err(e) => {
                tracing::warn!(root = %self.root, seq, error = %e, "local commit failed after S3 accepted the entry; will catch up")
            }
        }
    }
}

/// One write of a group: its closure, which keeps its own result and answers whether it ran
/// to its end.
pub type Member<'a> = &'a dyn Fn(&Transaction<'_>) -> Result<()>;

/// The answers of a group's members, in their order, and whether a snapshot is due.
#[derive(Debug)]
pub struct Group {
    /// Each member's answer: applied (its closure kept its own result), or why not.
    pub answers: Vec<Result<()>>,
    /// Enough entries accumulated since the newest snapshot: the caller starts a compaction.
    pub snapshot_due: bool,
}

impl Group {
    /// The answers of a group that ended one way for all (`fixed` answers stand).
    fn refused(fixed: &[Option<Error>], e: &Error) -> Group {
        Group {
            answers: fixed
                .iter()
                .map(|f| Err(f.clone().unwrap_or_else(|| e.clone())))
                .collect(),
            snapshot_due: false,
        }
    }

    /// The members' own `answers` (`fixed` answers stand instead).
    fn answered(fixed: &[Option<Error>], answers: Vec<Result<()>>, due: bool) -> Group {
        Group {
            answers: fixed
                .iter()
                .zip(answers)
                .map(|(f, a)| match f {
                    Some(e) => Err(e.clone()),
                    None => a,
                })
                .collect(),
            snapshot_due: due,
        }
    }
}

/// What one run of a group's members in a local transaction came to.
enum Ran<'c> {
    /// SQLite rolled the whole transaction back under a member (an interrupted statement
    /// may): that member's refusal is fixed, the others run again at once.
    Again,
    /// The transaction, still open, on version `seq`; each member's answer (fixed members
    /// have a placeholder); the net changes of the members that ran.
    Done {
        tx: Transaction<'c>,
        seq: u64,
        answers: Vec<Result<()>>,
        changes: Changeset,
    },
}

/// Runs the `members` that have no `fixed` answer, in order, in one IMMEDIATE transaction,
/// each inside its own savepoint: a member that refuses is rolled back to it (its rows and
/// their captured changes with it), so the transaction, and the entry made from it, holds
/// exactly the members that ran to their end. A refusal of the store's own (its request's
/// deadline, ...) is fixed: it stands whatever the data, and the member does not run again.
fn run_members<'c>(
    conn: &'c mut Connection,
    members: &[Member<'_>],
    fixed: &mut [Option<Error>],
    mutation: Option<s3::Mutation>,
) -> Result<Ran<'c>> {
    let seq = capture::seq(conn)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    capture::clear(&tx)?;
    let mut answers = Vec::with_capacity(members.len());
    for (i, member) in members.iter().enumerate() {
        if fixed[i].is_some() {
            answers.push(Ok(()));
            continue;
        }
        tx.execute_batch("SAVEPOINT sbx_member")?;
        match member(&tx) {
            Ok(()) => {
                if mutation == Some(s3::Mutation::DropGroupMember) && i > 0 {
                    // Wrong on purpose: the member is answered as applied, but its rows
                    // are left out of the entry.
                    tx.execute_batch("ROLLBACK TO sbx_member")?;
                }
                tx.execute_batch("RELEASE sbx_member")?;
                answers.push(Ok(()));
            }
            Err(e) => {
                if tx.is_autocommit() {
                    fixed[i] = Some(e);
                    return Ok(Ran::Again);
                }
                tx.execute_batch("ROLLBACK TO sbx_member; RELEASE sbx_member")?;
                match e {
                    Error::Unavailable(_) | Error::OutcomeUnknown(_) => {
                        fixed[i] = Some(e);
                        answers.push(Ok(()));
                    }
                    e => answers.push(Err(e)),
                }
            }
        }
    }
    let changes = capture::collect(&tx)?;
    Ok(Ran::Done {
        tx,
        seq,
        answers,
        changes,
    })
}

/// One environment's run of back-to-back writes to a database, for fairness between
/// environments. An environment that writes again as soon as its last write landed knows
/// the next slot one S3 round trip before anyone else does (the others must first read its
/// entry), so without a pause it wins every race for as long as it keeps writing, and the
/// others' writes wait until their deadline. So after [`Streak::limit`] back-to-back writes
/// won at the first try (the next begins less than [`Streak::ROOM_IN_PUTS`] of its PUT times
/// after the last landed), the next write first waits until that much time has passed since
/// then: long enough for an environment that lost the last race to read the winner's entry
/// and take the next slot ([`race_pause`] gives it to the loser that has waited longest).
/// The limit adapts: back to [`Streak::MIN_LIMIT`] when a race is lost or another
/// environment's entry is found (the tenant is contended), doubled up to
/// [`Streak::MAX_LIMIT`] when a pause was not used (nobody is waiting), so an environment
/// alone on a tenant pauses a handful of times, then once per 1,024 writes.
#[derive(Debug)]
pub(super) struct Streak {
    /// When the last write landed, and how long its PUT took.
    last: Option<(Instant, Duration)>,
    /// Back-to-back writes won at the first try since the last pause.
    wins: u32,
    /// Such writes allowed before the next pause.
    limit: u32,
    /// The write now running paused first.
    yielded: bool,
}

impl Streak {
    /// The limit on a contended tenant, and of a new replica (others may be waiting
    /// already). Each hand-over leaves the next slot free for two to three PUT times, so
    /// the limit trades the tenant's rate against how long the others wait: at 4, four
    /// environments reached 0.67 of the serial limit (p99 1.5 s at 20 ms per request); at 8,
    /// 0.79 (p99 1.8 s). docs/storage.md, "Why 8, not 4".
    const MIN_LIMIT: u32 = 8;
    /// How long, in this environment's PUT times, a write that follows the last one that
    /// closely is back to back, and how long after that one the yielding write waits: a
    /// loser's turn is a GET of the winner's entry, a pause, and a PUT.
    const ROOM_IN_PUTS: u32 = 3;
    /// The limit once pauses keep going unused.
    const MAX_LIMIT: u32 = 1024;
}

impl Default for Streak {
    fn default() -> Streak {
        Streak {
            last: None,
            wins: 0,
            limit: Streak::MIN_LIMIT,
            yielded: false,
        }
    }
}

/// Who holds a log slot, as far as one write attempt is concerned.
#[derive(Debug, PartialEq, Eq)]
enum Slot {
    /// Our change is the entry: the write is applied.
    Ours,
    /// Another writer's entry (a change or its fence): ours can no longer land there.
    Theirs,
    /// Our own fence: our change can no longer land; nothing was applied.
    Fenced,
    /// S3 did not tell before the deadline.
    Unknown(String),
}

/// Who wrote the entry `body`, seen from write attempt `attempt`.
fn owner(body: &[u8], attempt: &str) -> Slot {
    match serde_json::from_slice::<Changeset>(body) {
        Ok(c) if c.attempt == attempt && c.aborted => Slot::Fenced,
        Ok(c) if c.attempt == attempt => Slot::Ours,
        // Unreadable (a newer format) or another attempt's: not ours.
        _ => Slot::Theirs,
    }
}

/// Whether trying again cannot help: the thread's deadline passed, or S3 refuses us for good
/// (403 and the like: the next try would be refused too).
fn is_final(e: &S3Error) -> bool {
    matches!(e, S3Error::DeadlinePassed | S3Error::Refused(_))
}

/// Short jittered pause between tries to settle a slot.
fn settle_pause(round: u32) -> Duration {
    use rand::Rng;
    let base = 20 * u64::from(round.min(10) + 1);
    Duration::from_millis(rand::thread_rng().gen_range(base..=base * 2))
}

/// What a PUT is taken to cost before this environment has timed one.
pub(super) const DEFAULT_PUT: Duration = Duration::from_millis(20);

/// After this long trying, a write that lost a race no longer pauses before its next try.
const PRIORITY_AGE: Duration = Duration::from_secs(2);

/// Pause after a lost race, once caught up, before the next try: drawn uniformly from 0 to
/// `put x (1 - min(age, 2 s) / 2 s)`, where `put` is how long this environment's last PUT
/// took and `age` how long the write has been trying. The jitter spreads racing writers; the
/// bound shrinks as the write ages, so of the writers waiting for a free slot (one a
/// yielding writer leaves, see [`Streak`]) the one that waited longest is the likeliest to
/// take it, and one that waited 2 s does not pause at all. A write retries until the
/// settling third of its deadline, not a number of times: a lost race means another write
/// landed, so the tenant advances.
pub(super) fn race_pause(age: Duration, put: Duration) -> Duration {
    use rand::Rng;
    let left = PRIORITY_AGE.saturating_sub(age).as_secs_f64() / PRIORITY_AGE.as_secs_f64();
    let bound = put.mul_f64(left);
    bound.mul_f64(rand::thread_rng().gen_range(0.0..=1.0))
}
