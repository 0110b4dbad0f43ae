//! The in-memory [`ObjectStore`] of the deterministic simulation (docs/storage.md,
//! "Simulation"): one [`World`] holds the bucket's objects, a simulated clock and a seeded
//! scheduler; each environment talks to it through its own [`MemoryStore`] handle.
//!
//! The scheduler decides, for every request, from one seeded generator (SplitMix64, so a seed
//! replays exactly on any machine): how long it takes (simulated time: nothing sleeps), whether
//! it is dropped before it applies (`Unavailable`), applied with its answer lost
//! (`Unavailable` after the fact), held in the network and landing later, after other
//! requests and after its caller gave up (a PUT whose outcome is unknown), or whether the
//! environment that sent it crashes right before or right after it applies (the call
//! panics with a [`Crash`] payload; the harness throws the environment away and cold-starts
//! a new one). A caller past its [`with_deadline`](super::s3::with_deadline) gets
//! `DeadlinePassed`, as with S3; a PUT abandoned that way may have applied, may land later,
//! or may be lost.
//!
//! Invariants: the world is only touched under its one lock, and the lock is never held
//! across a panic; given the same seed and the same calls, every answer, every landing and
//! the clock are the same ([`World::trace`] hashes them so a test can tell), also when a
//! second thread sends requests beside the driver's (see [`World::drive`]): every request
//! draws the same number of numbers from its thread's stream whatever path it takes.
//! With [`Faults::NONE`] it is a plain, well-behaved in-memory bucket.
//!
//! Who uses it: the simulation (`simulation/`, `cfg(test)`) and the object-store contract
//! suite (tests/store/contract.rs), which runs the same cases on a plain in-memory bucket
//! and on S3 (moto) so that this bucket answers as S3 does. It is compiled into tests only
//! (`cfg(test)`, or the `test-support` feature the end-to-end tests enable), never into the
//! Lambda functions.

use super::object_store::{Mutation, ObjectStore};
use super::s3::{current_deadline, S3Error};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often each fault happens, per 1,000 requests (or per 1,000 chances for `land`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    /// Dropped before applying: `Unavailable`, nothing applied.
    pub drop: u32,
    /// Applied, but the caller sees `Unavailable`.
    pub fail_after: u32,
    /// A mutating request held in the network: the caller times out, the request lands
    /// later (or never).
    pub hold: u32,
    /// Slow (1 to 8 s instead of 1 to 20 ms): may outlast the caller's deadline.
    pub slow: u32,
    /// The environment whose operation may crash ([`World::arm_crash`]) crashes at this
    /// request, before or after it applies.
    pub crash: u32,
    /// Chance that a held request lands at each later request.
    pub land: u32,
}

impl Faults {
    /// A well-behaved bucket.
    pub const NONE: Faults = Faults {
        drop: 0,
        fail_after: 0,
        hold: 0,
        slow: 0,
        crash: 0,
        land: 1000,
    };
}

/// The panic payload of a simulated crash of environment `env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crash {
    /// The environment that crashed.
    pub env: usize,
}

/// How long a caller waits for a request held in the network before it gives up.
const HELD_TIMEOUT: Duration = Duration::from_secs(2);

/// SplitMix64: tiny, fast and the same everywhere (the simulation must not depend on a
/// library's choice of algorithm).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    /// True `per_mille` times in 1,000.
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.next_u64() % 1000 < u64::from(per_mille)
    }
}

/// A request as it travels: what it does to the bucket when it applies.
#[derive(Debug, Clone)]
enum Request {
    PutIfAbsent(String, Vec<u8>),
    Put(String, Vec<u8>),
    Get(String),
    List(String, String, usize),
    Delete(String),
    Copy(String, String),
}

/// What an applied request answers.
enum Reply {
    Done,
    Body(Vec<u8>),
    Keys(Vec<String>),
}

impl Request {
    fn mutates(&self) -> bool {
        matches!(
            self,
            Request::PutIfAbsent(..) | Request::Put(..) | Request::Delete(_) | Request::Copy(..)
        )
    }

    fn name(&self) -> (&'static str, &str) {
        match self {
            Request::PutIfAbsent(k, _) => ("put_if_absent", k),
            Request::Put(k, _) => ("put", k),
            Request::Get(k) => ("get", k),
            Request::List(p, _, _) => ("list", p),
            Request::Delete(k) => ("delete", k),
            Request::Copy(_, to) => ("copy", to),
        }
    }
}

struct State {
    objects: BTreeMap<String, Vec<u8>>,
    rng: SplitMix64,
    /// The stream of requests sent by another thread while the driver runs (see
    /// [`World::drive`]).
    side_rng: SplitMix64,
    /// The thread that runs the simulation, and whether it waits for work it handed to
    /// another thread (a blocking pool): see [`World::drive`].
    driver: Option<std::thread::ThreadId>,
    parked: bool,
    now: Instant,
    faults: Faults,
    /// Requests in the network, by (stream, number in its stream): an order that does not
    /// depend on which of two threads sending at once got the lock first.
    held: BTreeMap<(bool, u64), Request>,
    /// Requests sent so far on the side stream and on the main one.
    sent: [u64; 2],
    /// The environment whose operation may crash now.
    armed: Option<usize>,
    crashed: Option<usize>,
    mutation: Option<Mutation>,
    /// The next request whose key contains this applies and loses its answer.
    lose_answer: Option<String>,
    requests: u64,
    trace: u64,
}

impl State {
    /// Whether the calling thread draws from the main stream: the driver, or any thread
    /// while the driver is parked (work it handed over and waits for, so sequential).
    fn on_main_stream(&self) -> bool {
        self.parked || self.driver.is_none_or(|d| d == std::thread::current().id())
    }

    fn apply(&mut self, request: &Request) -> Result<Reply, S3Error> {
        match request {
            Request::PutIfAbsent(key, body) => {
                if self.objects.contains_key(key) {
                    return Err(S3Error::Exists);
                }
                self.objects.insert(key.clone(), body.clone());
                Ok(Reply::Done)
            }
            Request::Put(key, body) => {
                self.objects.insert(key.clone(), body.clone());
                Ok(Reply::Done)
            }
            Request::Get(key) => self
                .objects
                .get(key)
                .map(|b| Reply::Body(b.clone()))
                .ok_or(S3Error::NotFound),
            Request::List(prefix, start_after, limit) => Ok(Reply::Keys(
                self.objects
                    .range::<String, _>((
                        std::ops::Bound::Excluded(start_after.clone()),
                        std::ops::Bound::Unbounded,
                    ))
                    .map(|(k, _)| k)
                    .filter(|k| k.starts_with(prefix.as_str()))
                    .take(*limit)
                    .cloned()
                    .collect(),
            )),
            Request::Delete(key) => {
                self.objects.remove(key);
                Ok(Reply::Done)
            }
            Request::Copy(from, to) => {
                let body = self.objects.get(from).cloned().ok_or(S3Error::NotFound)?;
                if from == to {
                    // As S3 (400 InvalidRequest): a copy must change something.
                    return Err(S3Error::Refused(format!(
                        "COPY {to}: an object cannot be copied onto itself unchanged"
                    )));
                }
                self.objects.insert(to.clone(), body);
                Ok(Reply::Done)
            }
        }
    }

    /// Lets requests held in the network land (each with the `land` chance; `all`: every
    /// one lands or is lost now). Each lands in its own order: a held PUT may land after
    /// requests sent after it.
    fn land(&mut self, all: bool) {
        let mut kept = BTreeMap::new();
        for (at, request) in std::mem::take(&mut self.held) {
            // A request a second thread sent beside the driver's lands in the quiet period
            // only: how many held requests a driver's request finds must not depend on
            // which of the two got the lock first (see [`World::drive`]).
            let (main, _) = at;
            if all || (main && self.rng.chance(self.faults.land)) {
                // A tenth of held requests never arrive.
                if !self.rng.chance(100) {
                    let landed = self.apply(&request).is_ok();
                    self.note(&request, if landed { "landed" } else { "landed-refused" });
                }
            } else {
                kept.insert(at, request);
            }
        }
        self.held = kept;
    }

    /// Adds an event to the trace: the FNV-1a hash of the operation and its outcome (not
    /// the key: keys hold random tenant ids and uuids), summed, so that two requests sent
    /// at once by two threads count the same in either order.
    fn note(&mut self, request: &Request, outcome: &str) {
        let (op, _key) = request.name();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in op.bytes().chain([0]).chain(outcome.bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.trace = self.trace.wrapping_add(h);
    }
}

/// The simulated bucket, its clock and its scheduler, shared by every environment.
pub struct World {
    state: Mutex<State>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("World")
    }
}

impl World {
    /// An empty bucket whose scheduler draws from `seed` and injects `faults`.
    pub fn new(seed: u64, faults: Faults) -> Arc<World> {
        Arc::new(World {
            state: Mutex::new(State {
                objects: BTreeMap::new(),
                rng: SplitMix64::new(seed),
                side_rng: SplitMix64::new(seed ^ 0x5eed_5eed_5eed_5eed),
                driver: None,
                parked: false,
                now: Instant::now(),
                faults,
                held: BTreeMap::new(),
                sent: [0, 0],
                armed: None,
                crashed: None,
                mutation: None,
                lose_answer: None,
                requests: 0,
                trace: 0,
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        super::lock(&self.state)
    }

    /// The handle environment `env` talks through.
    pub fn store(self: &Arc<World>, env: usize) -> MemoryStore {
        MemoryStore {
            world: self.clone(),
            env,
        }
    }

    /// Makes the calling thread the simulation's driver. The store sends some requests
    /// from a second thread at the same time as the driver's (a fork puts its marker and
    /// its first entry at once), in an order the OS decides: those draw from a stream of
    /// their own and never let held requests land, so one seed runs the same in any order.
    pub fn drive(&self) {
        self.state().driver = Some(std::thread::current().id());
    }

    /// Runs `f`, in which the driver waits for work it handed to another thread (a
    /// blocking pool): requests made meanwhile count as the driver's.
    pub fn parked<T>(&self, f: impl FnOnce() -> T) -> T {
        self.state().parked = true;
        struct Unpark<'a>(&'a World);
        impl Drop for Unpark<'_> {
            fn drop(&mut self) {
                self.0.state().parked = false;
            }
        }
        let _unpark = Unpark(self);
        f()
    }

    /// Changes the faults injected from now on.
    pub fn set_faults(&self, faults: Faults) {
        self.state().faults = faults;
    }

    /// Lets requests of environment `env` crash it (`None`: no crashes).
    pub fn arm_crash(&self, env: Option<usize>) {
        self.state().armed = env;
    }

    /// The environment that crashed since the last call, if any.
    pub fn take_crashed(&self) -> Option<usize> {
        self.state().crashed.take()
    }

    /// Switches on a deliberately wrong protocol step (see [`ObjectStore::mutation`]).
    pub fn set_mutation(&self, mutation: Option<Mutation>) {
        self.state().mutation = mutation;
    }

    /// Makes the next request whose key contains `key_part` apply and lose its answer (a
    /// fault aimed at one step, for a regression test).
    pub fn lose_answer_of(&self, key_part: &str) {
        self.state().lose_answer = Some(key_part.to_string());
    }

    /// A quiet period: every request still in the network lands or is lost, and time passes.
    pub fn settle(&self) {
        let mut state = self.state();
        state.land(true);
        state.now += Duration::from_secs(60);
    }

    /// Replaces every object (a bucket prepared once, shared by many seeds).
    pub fn load(&self, objects: BTreeMap<String, Vec<u8>>) {
        self.state().objects = objects;
    }

    /// Every object, by key.
    pub fn objects(&self) -> BTreeMap<String, Vec<u8>> {
        self.state().objects.clone()
    }

    /// Requests served so far.
    pub fn requests(&self) -> u64 {
        self.state().requests
    }

    /// A hash of every request and its outcome so far: equal for two runs of one seed.
    pub fn trace(&self) -> u64 {
        self.state().trace
    }

    /// A number drawn from the scheduler's generator (for the harness's own choices, so
    /// that one seed drives everything).
    pub fn draw(&self, low: u64, high: u64) -> u64 {
        self.state().rng.between(low, high)
    }
}

/// One environment's view of the [`World`].
#[derive(Debug, Clone)]
pub struct MemoryStore {
    world: Arc<World>,
    env: usize,
}

impl MemoryStore {
    /// Sends `request` through the scheduler (see the module doc).
    fn send(&self, request: Request) -> Result<Reply, S3Error> {
        let deadline = current_deadline();
        let mut state = self.world.state();
        if deadline.is_some_and(|d| state.now >= d) {
            return Err(S3Error::DeadlinePassed);
        }
        let main = state.on_main_stream();
        if main {
            state.land(false);
        }
        state.requests += 1;
        state.sent[usize::from(main)] += 1;
        let at = (main, state.sent[usize::from(main)]);
        let faults = state.faults;
        // Every decision about this request, drawn up front from its thread's stream, so
        // that the number of draws never depends on the path taken.
        let rng = if main {
            &mut state.rng
        } else {
            &mut state.side_rng
        };
        let crash_here = rng.chance(faults.crash);
        let crash_before = rng.chance(500);
        let slow = rng.chance(faults.slow);
        let latency = Duration::from_millis(if slow {
            rng.between(1_000, 8_000)
        } else {
            rng.between(1, 20)
        });
        let abandoned = rng.between(0, 2);
        let drop = rng.chance(faults.drop);
        let hold = rng.chance(faults.hold);
        let fail_after = rng.chance(faults.fail_after);
        let crash_here = crash_here && state.armed == Some(self.env);
        if crash_here && crash_before {
            self.crash(state, &request);
        }
        let arrives = state.now + latency;
        if let Some(d) = deadline.filter(|d| arrives > *d) {
            // The caller gives up at its deadline; the request may already have applied,
            // may land later, or may be lost.
            state.now = d;
            if request.mutates() {
                match abandoned {
                    0 => {
                        let _ = state.apply(&request);
                        state.note(&request, "applied-abandoned");
                    }
                    1 => {
                        state.note(&request, "held-abandoned");
                        state.held.insert(at, request);
                    }
                    _ => state.note(&request, "lost-abandoned"),
                }
            }
            return Err(S3Error::DeadlinePassed);
        }
        state.now = arrives;
        if drop {
            state.note(&request, "dropped");
            return Err(S3Error::Unavailable("simulated: request dropped".into()));
        }
        if request.mutates() && hold {
            state.note(&request, "held");
            state.held.insert(at, request);
            let gives_up = state.now + HELD_TIMEOUT;
            return Err(match deadline {
                Some(d) if d <= gives_up => {
                    state.now = d;
                    S3Error::DeadlinePassed
                }
                _ => {
                    state.now = gives_up;
                    S3Error::Unavailable("simulated: request timed out".into())
                }
            });
        }
        let reply = state.apply(&request);
        let outcome = match &reply {
            Ok(_) => "ok",
            Err(S3Error::Exists) => "exists",
            Err(S3Error::NotFound) => "not-found",
            Err(_) => "error",
        };
        state.note(&request, outcome);
        if crash_here {
            self.crash(state, &request);
        }
        let aimed = state
            .lose_answer
            .as_ref()
            .is_some_and(|part| request.name().1.contains(part.as_str()));
        if aimed {
            state.lose_answer = None;
        }
        if aimed || fail_after {
            state.note(&request, "answer-lost");
            return Err(S3Error::Unavailable("simulated: answer lost".into()));
        }
        reply
    }

    /// Crashes this environment: the lock is released first, then the call panics with a
    /// [`Crash`] payload (the harness catches it and rebuilds the environment).
    #[allow(
        clippy::panic,
        reason = "the simulated crash is a panic by design, only when a simulation arms one; the harness catches it"
    )]
    fn crash(&self, mut state: std::sync::MutexGuard<'_, State>, request: &Request) -> ! {
        state.note(request, "crash");
        state.crashed = Some(self.env);
        drop(state);
        std::panic::panic_any(Crash { env: self.env })
    }
}

fn done(reply: Result<Reply, S3Error>) -> Result<(), S3Error> {
    reply.map(drop)
}

fn body(reply: Result<Reply, S3Error>) -> Result<Vec<u8>, S3Error> {
    match reply? {
        Reply::Body(b) => Ok(b),
        _ => Err(S3Error::Unavailable("simulated: no body".into())),
    }
}

fn io(path: &Path, e: std::io::Error) -> S3Error {
    S3Error::Unavailable(format!("{}: {e}", path.display()))
}

impl ObjectStore for MemoryStore {
    fn put_if_absent(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
        done(self.send(Request::PutIfAbsent(key.into(), body)))
    }

    fn put_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
        let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
        done(self.send(Request::Put(key.into(), bytes)))
    }

    fn get(&self, key: &str) -> Result<Vec<u8>, S3Error> {
        body(self.send(Request::Get(key.into())))
    }

    fn get_to_file(&self, key: &str, path: &Path) -> Result<(), S3Error> {
        let bytes = body(self.send(Request::Get(key.into())))?;
        std::fs::write(path, bytes).map_err(|e| io(path, e))
    }

    fn list_after(
        &self,
        prefix: &str,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<String>, S3Error> {
        match self.send(Request::List(prefix.into(), start_after.into(), limit))? {
            Reply::Keys(keys) => Ok(keys),
            _ => Err(S3Error::Unavailable("simulated: no listing".into())),
        }
    }

    fn delete(&self, key: &str) -> Result<(), S3Error> {
        done(self.send(Request::Delete(key.into())))
    }

    fn copy(&self, from: &str, to: &str) -> Result<(), S3Error> {
        done(self.send(Request::Copy(from.into(), to.into())))
    }

    fn now(&self) -> Instant {
        self.world.state().now
    }

    /// Simulated time passes instead of a sleep. The protocol's own jitter comes from a
    /// thread-local generator, which a seed does not control, so the pause is drawn from the
    /// world's generator instead (5 to 60 ms, the order of the protocol's pauses).
    fn pause(&self, _pause: Duration) {
        let mut state = self.world.state();
        let ms = if state.on_main_stream() {
            state.rng.between(5, 60)
        } else {
            state.side_rng.between(5, 60)
        };
        state.now += Duration::from_millis(ms);
    }

    fn mutation(&self) -> Option<Mutation> {
        self.world.state().mutation
    }
}
