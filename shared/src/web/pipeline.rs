//! The one pipeline every served request walks, each step with one job, in this order:
//!
//! 1. **Connection** (the local server, `functions/sandbox/src/server.rs`; API Gateway on
//!    Lambda): a cap on open connections, and a deadline for a request head to arrive, which
//!    also closes idle keep-alive connections.
//! 2. **Bounds of the head**: a path longer than [`MAX_PATH_BYTES`] is 414.
//! 3. **Identify** ([`Surface::of`] the path, [`Surface::credential`] from the headers,
//!    [`AppState::identify`] the tenant or the admin key), once, from headers only. A
//!    credential this process has seen is answered from memory; one that needs a registry
//!    read waits for one of a few lookup places first (an eighth of the limit), so made-up
//!    credentials queue behind each other and hold nothing else. A refused credential is
//!    answered 401 in the surface's shape here, before its body is read.
//! 4. **Body**: an identified request's body is read here, at most `max_body_bytes` (413)
//!    within `body_timeout_ms` (408), under the body budget of [`Admission`] (bodies
//!    arriving per tenant, bytes arriving in all, an eighth of them kept for tenants not
//!    pressing; 503 + `Retry-After: 1` past it) and
//!    holding no place to work, so a body that trickles costs its own tenant only; an
//!    anonymous request's body is never read.
//! 5. **Admission** ([`Admission`]): places to work, in pools (the admin key's, requests
//!    without credentials', the tenants': shared among the busy ones, a share shrinking to
//!    one place as more are busy, and a part kept for tenants not pressing), shed with
//!    503 + `Retry-After: 1` past a share. The request timeout runs from the head to the
//!    answer.
//! 6. **Idempotency** (`super::idempotency`): a write with an `Idempotency-Key` header (a
//!    tenant's, or an admin write the registry or one tenant's database keeps) is replayed,
//!    refused (in flight, applied without a recorded answer, another request's key), or run
//!    (the steps below) and its answer recorded. A request with the header runs in a task of
//!    its own, to its end even when its client has gone.
//! 7. **Powers** (`super::powers`): fault rules and the journal of the identified tenant,
//!    around the handler.
//! 8. **Handler**, inside the key's store scope (`store::idempotency::scope`) when keyed: its
//!    writes of the tenant store the key's row in their own transaction; nothing else runs
//!    in that scope (a fault rule's hit count is not the request's write).
//!    Its extractors take the [`Identity`] from the request's extensions.
//!
//! Every answer the pipeline gives itself is in the error shape of the path's surface.

use super::idempotency;
use super::powers::{self, Subject};
use super::state::{AppState, Identity};
use super::surface::{error_for_path, Surface};
use crate::config::Config;
use crate::store::idempotency as keys;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Longest request path, in bytes (its query not counted): beyond any route's path with the
/// longest ids, and within API Gateway's 10 KiB request head. Longer: 414.
pub const MAX_PATH_BYTES: usize = 8 * 1024;

/// Who a request is counted as in [`Admission`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Principal {
    Tenant(String),
    Admin,
    Anonymous,
}

/// Admission, in two budgets (one per process: every router of a process is finished over
/// one [`AppState`]); every refusal is a 503 with `Retry-After: 1`, at once, never a queue.
///
/// **Bodies** (before work): a tenant, or the admin key, has at most `max_bodies_per_tenant`
/// bodies arriving at once, and all bodies arriving together reserve at most
/// `max_body_buffer_bytes` (each at its `Content-Length`, a chunked one at the largest body).
/// An eighth of those bytes is kept as the places' `R` is: a body takes the shared
/// seven-eighths while they have room, else the kept eighth if its tenant is not pressing
/// (the admin key never is), so tenants that fill the shared bytes leave room for a quiet
/// tenant's body. A body that trickles costs its own tenant's body places only, never a
/// place to work.
///
/// **Work** (the `limit` of requests being served once their bodies are in): three pools.
/// The admin key has a quarter and requests without credentials (the served documents,
/// the console, unknown paths) an eighth, for themselves: no tenant can take them. The
/// tenants share the rest, `T`, of which an eighth, `R`, is kept for quiet tenants and the
/// others, `G = T - R`, are shared by the busy ones:
///
/// - With `b` tenants busy (holding a place, counting the one asking), a tenant may hold
///   `cap(b) = max(1, share(b))` places of `G`, `share(b) = G / (b + 1)`, so a tenant's share
///   shrinks as more are busy, down to one place; and a tenant already holding one may take
///   another only if `share(b)` places of `G` stay free after it (a share kept for a tenant
///   that is not busy, whatever order the busy ones came in).
/// - A tenant refused (by these rules, because every place is taken, or a body by the body
///   budget) is *pressing* for [`PRESSING_FOR`] after that refusal: its requests are more than
///   the server gives it, and it retries. A request (or body) it had in flight while pressing
///   keeps it pressing for [`PRESSING_FOR`] after that request ends: a tenant is quiet again
///   only after a second with no refusal and no such request, so an attacker whose retries
///   are slow (a loaded machine) but whose stalled requests keep the server busy never
///   turns quiet between them.
/// - A tenant holding no place takes one of `G` if one is free; when none is, one of `R` if
///   it is not pressing. So against any number of tenants that press (an attack keeps more
///   requests coming than its share), a quiet tenant (none of its requests refused in the
///   last second) still finds one of `R`; attackers take `R` only with first places before
///   they were ever refused (at the start of an attack, once: a place of `R` each, given
///   back when that request ends), or by never asking for more than they are given (each
///   holds one: the fair share itself when there are more such tenants than places).
///
/// With the default limit 64 (`T` = 40, `R` = 5, `G` = 35), a tenant alone holds 17; against
/// `k` pressing tenants a quiet tenant finds at least `R` places plus
/// `min over 1 <= b <= k of share(b) - (k - b)` of `G` (docs/limits.md).
/// Credential lookups wait for one of an eighth as many places. Limit 0 disables work
/// admission.
pub(crate) struct Admission {
    limit: usize,
    admin: usize,
    anonymous: usize,
    /// The tenants' places, `G` (shared by the busy ones) and `R` (kept for quiet ones).
    tenants: usize,
    reserve: usize,
    bodies_per_tenant: usize,
    /// The body bytes shared by all, and the bytes kept for principals not pressing.
    body_buffer_bytes: usize,
    body_reserve_bytes: usize,
    lookups: Option<Arc<Semaphore>>,
    counts: Mutex<Counts>,
}

/// How long a refused tenant stays pressing after its last refusal, or after the end of the
/// last request it had in flight while pressing: `Retry-After: 1`, so a tenant that waits as
/// told before it retries is quiet again, and one that keeps more requests coming (an
/// attack's many connections) stays pressing.
const PRESSING_FOR: Duration = Duration::from_secs(1);

/// Most pressing tenants remembered; past it, those pressing longer than [`PRESSING_FOR`] ago
/// are forgotten, and then the oldest half (a forgotten tenant counts as quiet again).
const MAX_PRESSING: usize = 4096;

/// What is held of each budget.
#[derive(Default)]
struct Counts {
    admin: usize,
    anonymous: usize,
    /// Places of `G` held by tenants, places of `R`, and all places per busy tenant.
    tenants: usize,
    reserved: usize,
    per_tenant: HashMap<String, usize>,
    /// Each pressing tenant: when it was last refused, and how many of its requests and
    /// bodies in flight were taken while it was pressing or have seen it refused since (see
    /// [`Counts::pressing`]).
    pressing: HashMap<String, Pressing>,
    /// Bodies arriving, per principal, and the bytes they reserve, of the shared bytes and
    /// of the kept ones.
    bodies: HashMap<Principal, usize>,
    body_bytes: usize,
    reserved_body_bytes: usize,
}

/// A pressing tenant's state (see [`Counts::pressing`]).
#[derive(Debug, Clone, Copy)]
struct Pressing {
    /// Its last refusal.
    refused: Instant,
    /// Pressing at least until then: [`PRESSING_FOR`] after its last refusal, or after the
    /// end of its last request or body that counted in `in_flight`.
    until: Instant,
    /// Its requests and bodies in flight that were taken while it was pressing, or that have
    /// seen it refused since.
    in_flight: usize,
}

impl Pressing {
    fn now(&self, now: Instant) -> bool {
        self.in_flight > 0 || now < self.until
    }
}

impl Counts {
    fn press(&mut self, id: &str, now: Instant) {
        if self.pressing.len() >= MAX_PRESSING && !self.pressing.contains_key(id) {
            self.pressing.retain(|_, p| p.now(now));
            if self.pressing.len() >= MAX_PRESSING {
                let mut ages: Vec<Instant> = self.pressing.values().map(|p| p.refused).collect();
                ages.sort_unstable();
                let median = ages[ages.len() / 2];
                self.pressing.retain(|_, p| p.refused > median);
            }
        }
        // Every request and body of the tenant in flight now has seen it refused.
        let in_flight = self.per_tenant.get(id).copied().unwrap_or(0)
            + self
                .bodies
                .get(&Principal::Tenant(id.to_string()))
                .copied()
                .unwrap_or(0);
        let until = self
            .pressing
            .get(id)
            .map_or(now, |p| p.until)
            .max(now + PRESSING_FOR);
        self.pressing.insert(
            id.to_string(),
            Pressing {
                refused: now,
                until,
                in_flight,
            },
        );
    }

    /// Whether tenant `id` is pressing: refused within [`PRESSING_FOR`], or holding a request
    /// or body in flight that was taken while it was pressing or has seen it refused since
    /// (then until [`PRESSING_FOR`] after the last of those ends: [`Counts::ended`]).
    fn pressing(&self, id: &str, now: Instant) -> bool {
        self.pressing.get(id).is_some_and(|p| p.now(now))
    }

    /// A request or body of tenant `id` is taken at `now`: whether the tenant is pressing,
    /// which then keeps it pressing while the request or body is in flight.
    fn taken(&mut self, id: &str, now: Instant) -> bool {
        match self.pressing.get_mut(id) {
            Some(p) if p.now(now) => {
                p.in_flight += 1;
                true
            }
            _ => false,
        }
    }

    /// A request (or body) of tenant `id` taken at `taken` ends at `now`: if the tenant was
    /// pressing at any moment of its life (`pressing_when_taken`, or refused since), it
    /// stays pressing for [`PRESSING_FOR`] from now.
    fn ended(&mut self, id: &str, taken: Instant, pressing_when_taken: bool, now: Instant) {
        if let Some(p) = self.pressing.get_mut(id) {
            if pressing_when_taken || p.refused >= taken {
                p.in_flight = p.in_flight.saturating_sub(1);
                p.until = p.until.max(now + PRESSING_FOR);
            }
        }
    }
}

/// What admission's budgets hold at one moment (see [`AppState::load`]): a snapshot, for
/// tests that wait for a state rather than a time, and for operators.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// Places to work held by tenants, of those shared by the busy ones (`G`).
    pub tenant_places: usize,
    /// Places held of those kept for quiet tenants (`R`).
    pub kept_places: usize,
    /// Tenants pressing now (a request or a body refused within the last second).
    pub pressing: usize,
    /// Bytes of bodies arriving, of the shared bytes.
    pub body_bytes: usize,
    /// Bytes of bodies arriving, of those kept for principals not pressing.
    pub kept_body_bytes: usize,
}

impl AppState {
    /// What admission holds now (see [`Load`]).
    pub fn load(&self) -> Load {
        let counts = crate::store::lock(&self.admission.counts);
        let now = Instant::now();
        Load {
            tenant_places: counts.tenants,
            kept_places: counts.reserved,
            pressing: counts.pressing.values().filter(|p| p.now(now)).count(),
            body_bytes: counts.body_bytes,
            kept_body_bytes: counts.reserved_body_bytes,
        }
    }
}

/// Which pool a request's place is in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pool {
    Admin,
    Anonymous,
    /// The tenants' `G`.
    Shared,
    /// The tenants' `R`, for quiet tenants.
    Reserved,
}

/// A request's place among those admitted to work, given back on drop.
struct Slot<'a> {
    admission: &'a Admission,
    held: Option<(Principal, Pool)>,
    /// When the place was taken, and whether its tenant was pressing then (see
    /// [`Counts::ended`]).
    taken: Instant,
    pressing: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let Some((principal, pool)) = self.held.take() else {
            return;
        };
        let mut counts = crate::store::lock(&self.admission.counts);
        match pool {
            Pool::Admin => counts.admin = counts.admin.saturating_sub(1),
            Pool::Anonymous => counts.anonymous = counts.anonymous.saturating_sub(1),
            Pool::Shared => counts.tenants = counts.tenants.saturating_sub(1),
            Pool::Reserved => counts.reserved = counts.reserved.saturating_sub(1),
        }
        if let Principal::Tenant(id) = principal {
            counts.ended(&id, self.taken, self.pressing, Instant::now());
            if let Some(n) = counts.per_tenant.get_mut(&id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.per_tenant.remove(&id);
                }
            }
        }
    }
}

/// A body's place among those arriving, given back on drop (once the body is in).
struct BodySlot<'a> {
    admission: &'a Admission,
    principal: Principal,
    bytes: usize,
    /// Whether its bytes are of the kept ones.
    kept: bool,
    /// When the place was taken, and whether its tenant was pressing then (see
    /// [`Counts::ended`]).
    taken: Instant,
    pressing: bool,
}

impl Drop for BodySlot<'_> {
    fn drop(&mut self) {
        let mut counts = crate::store::lock(&self.admission.counts);
        if self.kept {
            counts.reserved_body_bytes = counts.reserved_body_bytes.saturating_sub(self.bytes);
        } else {
            counts.body_bytes = counts.body_bytes.saturating_sub(self.bytes);
        }
        if let Principal::Tenant(id) = &self.principal {
            counts.ended(id, self.taken, self.pressing, Instant::now());
        }
        if let Some(n) = counts.bodies.get_mut(&self.principal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.bodies.remove(&self.principal);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(config: &Config) -> Admission {
        let limit = config.max_concurrent_requests;
        let admin = (limit / 4).max(1);
        let anonymous = (limit / 8).max(1);
        let tenants = limit.saturating_sub(admin + anonymous).max(2);
        let reserve = (tenants / 8).max(1);
        let body_reserve_bytes = config.max_body_buffer_bytes / 8;
        Admission {
            limit,
            admin,
            anonymous,
            tenants: tenants - reserve,
            reserve,
            bodies_per_tenant: config.max_bodies_per_tenant,
            body_buffer_bytes: config.max_body_buffer_bytes - body_reserve_bytes,
            body_reserve_bytes,
            lookups: (limit > 0).then(|| Arc::new(Semaphore::new(anonymous))),
            counts: Mutex::default(),
        }
    }

    /// The places of `G` one of `busy` tenants may hold, and the places of `G` kept free for
    /// the others.
    fn tenant_share(&self, busy: usize) -> (usize, usize) {
        let share = self.tenants / (busy + 1);
        (share.max(1), share)
    }

    /// A place to work for `principal`, or the message of the 503 that sheds it.
    fn admit(&self, principal: Principal) -> Result<Slot<'_>, String> {
        if self.limit == 0 {
            return Ok(Slot {
                admission: self,
                held: None,
                taken: Instant::now(),
                pressing: false,
            });
        }
        let mut counts = crate::store::lock(&self.counts);
        let mut pressing = false;
        let pool = match &principal {
            Principal::Admin if counts.admin >= self.admin => {
                return Err(format!(
                    "The admin key has {} requests in flight, its share of the server's limit of {}; retry shortly.",
                    self.admin, self.limit
                ));
            }
            Principal::Admin => {
                counts.admin += 1;
                Pool::Admin
            }
            Principal::Anonymous if counts.anonymous >= self.anonymous => {
                return Err(format!(
                    "Requests without credentials have {} requests in flight, their share of the server's limit of {}; retry shortly.",
                    self.anonymous, self.limit
                ));
            }
            Principal::Anonymous => {
                counts.anonymous += 1;
                Pool::Anonymous
            }
            Principal::Tenant(id) => {
                let now = Instant::now();
                let held = counts.per_tenant.get(id).copied().unwrap_or(0);
                let busy = counts.per_tenant.len() + usize::from(held == 0);
                let (cap, keep_free) = self.tenant_share(busy);
                let free = self.tenants.saturating_sub(counts.tenants);
                if held >= cap {
                    counts.press(id, now);
                    return Err(format!(
                        "This tenant has {held} requests in flight, its share while {busy} tenants are busy (of the server's limit of {}); retry shortly.",
                        self.limit
                    ));
                }
                if held > 0 && free <= keep_free {
                    counts.press(id, now);
                    return Err(format!(
                        "The server is serving its limit of {} requests, {keep_free} places kept for other tenants; retry shortly.",
                        self.limit
                    ));
                }
                let pool = if free > 0 {
                    counts.tenants += 1;
                    Pool::Shared
                } else if counts.reserved < self.reserve && !counts.pressing(id, now) {
                    counts.reserved += 1;
                    Pool::Reserved
                } else {
                    counts.press(id, now);
                    return Err(format!(
                        "The server is serving its limit of {} requests, the places kept for tenants not busy taken; retry shortly.",
                        self.limit
                    ));
                };
                *counts.per_tenant.entry(id.clone()).or_insert(0) += 1;
                pressing = counts.taken(id, now);
                pool
            }
        };
        Ok(Slot {
            admission: self,
            held: Some((principal, pool)),
            taken: Instant::now(),
            pressing,
        })
    }

    /// A place for `principal`'s body of `bytes` to arrive in, or the message of the 503
    /// that sheds it.
    fn receive(&self, principal: &Principal, bytes: usize) -> Result<BodySlot<'_>, String> {
        let mut counts = crate::store::lock(&self.counts);
        let arriving = counts.bodies.get(principal).copied().unwrap_or(0);
        let over_count = self.bodies_per_tenant > 0 && arriving >= self.bodies_per_tenant;
        let limited = self.body_buffer_bytes > 0;
        let shared = counts.body_bytes.saturating_add(bytes);
        let kept = counts.reserved_body_bytes.saturating_add(bytes);
        let now = Instant::now();
        let quiet = match principal {
            Principal::Tenant(id) => !counts.pressing(id, now),
            _ => true,
        };
        // The shared bytes first; the kept ones for a principal not pressing.
        let into_kept = limited && shared > self.body_buffer_bytes;
        let over_bytes = into_kept && !(quiet && kept <= self.body_reserve_bytes);
        if let (true, Principal::Tenant(id)) = (over_count || over_bytes, principal) {
            // A tenant refused a body is pressing as one refused a place to work.
            counts.press(id, now);
        }
        if over_count {
            let who = match principal {
                Principal::Admin => "The admin key has",
                _ => "This tenant has",
            };
            return Err(format!(
                "{who} {arriving} request bodies arriving, its limit of {}; retry shortly.",
                self.bodies_per_tenant
            ));
        }
        if over_bytes {
            return Err(format!(
                "The server is receiving {} bytes of request bodies, within {} of its limit of {} ({} more kept for tenants not busy); retry shortly.",
                counts.body_bytes,
                bytes,
                self.body_buffer_bytes,
                self.body_reserve_bytes
            ));
        }
        if into_kept {
            counts.reserved_body_bytes = kept;
        } else {
            counts.body_bytes = shared;
        }
        *counts.bodies.entry(principal.clone()).or_insert(0) += 1;
        let pressing = match principal {
            Principal::Tenant(id) => counts.taken(id, now),
            _ => false,
        };
        Ok(BodySlot {
            admission: self,
            principal: principal.clone(),
            bytes,
            kept: into_kept,
            taken: now,
            pressing,
        })
    }

    /// A place to look a credential up in the registry: waited for (lookups take a registry
    /// read, milliseconds), within the request timeout, so unrecognised credentials queue
    /// behind each other instead of taking the server's places.
    async fn lookup(&self) -> Option<OwnedSemaphorePermit> {
        match &self.lookups {
            None => None,
            Some(lookups) => lookups.clone().acquire_owned().await.ok(),
        }
    }
}

/// The pipeline's steps 2 to 8 (see the module doc) around the router `next`.
pub(super) async fn serve(app: AppState, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if path.len() > MAX_PATH_BYTES {
        let message = format!(
            "the request path has {} bytes, at most {MAX_PATH_BYTES} are accepted",
            path.len()
        );
        return error_for_path(&path, StatusCode::URI_TOO_LONG, message);
    }
    let surface = Surface::of(&path);
    let timeout = app.config.request_timeout_ms;
    // The store learns the deadline, so that a cut-off request's blocking work stops too.
    let deadline =
        (timeout > 0).then(|| std::time::Instant::now() + Duration::from_millis(timeout));
    // A write with an Idempotency-Key runs to its end in a task of its own, whether or not
    // its client is still there (a client that gave up drops this future, and the pipeline's
    // timeout stops waiting): its answer is recorded with its key and its claim released when
    // the write ends, so the retry gets that answer. Other requests are
    // cancelled with their client (their blocking work stops at the request's deadline).
    let detached = req.headers().contains_key(idempotency::HEADER);
    let owned = path.clone();
    // Boxed once here: the request's future (every later step's state) is several kilobytes,
    // and unboxed it was copied whole by each move below (into the keyed task's block, into
    // the timeout, into axum's box), which a profile of a GET showed as the largest memcpy.
    let work = Box::pin(async move {
        let work = identify_and_serve(app, surface, &owned, req, next);
        crate::store::request_scope_until(deadline, work).await
    });
    let work = async {
        if !detached {
            return work.await;
        }
        match tokio::spawn(work).await {
            Ok(response) => response,
            Err(e) => {
                tracing::error!(error = %e, "a keyed request's task failed");
                let message = "the request failed; retry it with the same Idempotency-Key";
                error_for_path(&path, StatusCode::INTERNAL_SERVER_ERROR, message.into())
            }
        }
    };
    if timeout == 0 {
        return work.await;
    }
    match tokio::time::timeout(Duration::from_millis(timeout), work).await {
        Ok(response) => response,
        Err(_) => unavailable(
            &path,
            format!(
                "The request did not finish within {timeout} ms and was cut off; it may have been applied. Retry later."
            ),
        ),
    }
}

async fn identify_and_serve(
    app: AppState,
    surface: Option<Surface>,
    path: &str,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(surface) = surface else {
        // No surface's path: nothing to identify, and no route reads a body here.
        return match app.admission.admit(Principal::Anonymous) {
            Ok(_slot) => next.run(req).await,
            Err(message) => unavailable(path, message),
        };
    };
    let credential = surface.credential(req.headers());
    let identity = match app.recall(&credential) {
        Some(known) => known,
        None => {
            let _lookup = app.admission.lookup().await;
            match app.identify(&credential).await {
                Ok(found) => found,
                Err(e) => return surface.from_error(e),
            }
        }
    };
    let Some(identity) = identity else {
        return surface.unauthorized();
    };
    let (principal, subject) = match &identity {
        Identity::Tenant(t) => (
            Principal::Tenant(t.record.id.clone()),
            Some(Subject::Tenant(t.clone())),
        ),
        Identity::Admin => (
            Principal::Admin,
            powers::admin_subject(path).map(Subject::AdminOf),
        ),
        Identity::Anonymous => (Principal::Anonymous, None),
    };
    let anonymous = matches!(identity, Identity::Anonymous);
    let admin = matches!(identity, Identity::Admin);
    req.extensions_mut().insert(identity);
    if anonymous {
        // An anonymous request's body is never read.
        return match app.admission.admit(principal) {
            Ok(_slot) => next.run(req).await,
            Err(message) => unavailable(path, message),
        };
    }
    // The body arrives under the body budget, holding no place to work.
    let (req, body) = match body_size(&req, &app.config) {
        Err((status, message)) => return surface.error(status, None, message),
        Ok(None) => (req, Bytes::new()),
        Ok(Some(bytes)) => {
            let _receiving = match app.admission.receive(&principal, bytes) {
                Ok(slot) => slot,
                Err(message) => return unavailable(path, message),
            };
            match read_body(req, &app.config).await {
                Ok(read) => read,
                Err((status, message)) => return surface.error(status, None, message),
            }
        }
    };
    let _slot = match app.admission.admit(principal) {
        Ok(slot) => slot,
        Err(message) => return unavailable(path, message),
    };
    let keyed = match &subject {
        Some(Subject::Tenant(tenant)) => idempotency::prepare(tenant, &req, &body),
        _ if admin => {
            let head = idempotency::Head::of(&req);
            idempotency::prepare_admin(&app, head, &body).await
        }
        _ => Ok(None),
    };
    let keyed = match keyed {
        Ok(keyed) => keyed,
        Err(message) => return surface.error(StatusCode::BAD_REQUEST, None, message),
    };
    // The last steps, each wrapping the next once: the key (claimed, looked up, recorded),
    // the powers (faults, journal), the handler inside the key's store scope. A latency
    // fault thus holds a keyed request in flight, as a slow platform would.
    let app = &app;
    match (subject, keyed) {
        (Some(subject), Some(keyed)) => {
            let run = |req, key: Arc<keys::KeyScope>| {
                let handler = move |req| keys::scope(key.clone(), next.clone().run(req));
                powers::apply(app, surface, subject, body, req, handler)
            };
            idempotency::serve(app, surface, keyed, req, run).await
        }
        (Some(subject), None) => {
            let handler = |req| next.clone().run(req);
            powers::apply(app, surface, subject, body, req, handler).await
        }
        (None, Some(keyed)) => {
            let run = |req, key| keys::scope(key, next.run(req));
            idempotency::serve(app, surface, keyed, req, run).await
        }
        (None, None) => next.run(req).await,
    }
}

/// The bytes an identified request's body may take (its `Content-Length`, a chunked one's
/// the largest body), `None` when it has none; 413 when its length is over the largest.
fn body_size(req: &Request, config: &Config) -> Result<Option<usize>, (StatusCode, String)> {
    let headers = req.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = headers.contains_key(header::TRANSFER_ENCODING);
    // No length and no chunks, or a zero length: HTTP gives the request no body (most reads).
    if !chunked && length.unwrap_or(0) == 0 {
        return Ok(None);
    }
    let limit = config.max_body_bytes;
    match length {
        Some(n) if n > limit as u64 => Err(too_large(limit)),
        Some(n) if !chunked => Ok(Some(usize::try_from(n).unwrap_or(limit))),
        _ => Ok(Some(limit)),
    }
}

fn too_large(limit: usize) -> (StatusCode, String) {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is too large: at most {limit} bytes are accepted"),
    )
}

/// Reads an identified request's body (one [`body_size`] found): at most `max_body_bytes`
/// (413), arrived in full within `body_timeout_ms` (408); answers the request with the same
/// bytes as its body, and them.
async fn read_body(
    req: Request,
    config: &Config,
) -> Result<(Request, Bytes), (StatusCode, String)> {
    let (parts, body) = req.into_parts();
    let limit = config.max_body_bytes;
    let read = axum::body::to_bytes(body, limit);
    let read = if config.body_timeout_ms > 0 {
        tokio::time::timeout(Duration::from_millis(config.body_timeout_ms), read)
            .await
            .map_err(|_| {
                (
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {} ms",
                        config.body_timeout_ms
                    ),
                )
            })?
    } else {
        read.await
    };
    let bytes = read.map_err(|e| {
        if is_length_limit(&e) {
            too_large(limit)
        } else {
            (
                StatusCode::BAD_REQUEST,
                format!("could not read the request body: {e}"),
            )
        }
    })?;
    Ok((Request::from_parts(parts, Body::from(bytes.clone())), bytes))
}

/// Whether a body error is the body limit's.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = err.source();
    }
    false
}

/// 503 with `Retry-After: 1` in the shape of the path's surface.
fn unavailable(path: &str, message: String) -> Response {
    tracing::warn!(path, message = %message, "request refused: overload");
    let mut response = error_for_path(path, StatusCode::SERVICE_UNAVAILABLE, message);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// One structured log line per request: method, path, status, latency.
pub(super) async fn log_request(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(limit: usize) -> Admission {
        let mut config = Config::new("/nonexistent", None);
        config.max_concurrent_requests = limit;
        Admission::new(&config)
    }

    fn tenant(i: usize) -> Principal {
        Principal::Tenant(format!("t{i}"))
    }

    /// `k` attackers take every place they can, in the order `order` gives (sequentially:
    /// each attacker fills up before the next comes; round robin: one place each in turn),
    /// every one asking until it is refused; answers the places they hold and what a tenant
    /// not busy then finds free (of `G` and of `R`).
    fn attack(admission: &Admission, k: usize, round_robin: bool) -> (Vec<Slot<'_>>, usize) {
        let mut held = Vec::new();
        if round_robin {
            loop {
                let before = held.len();
                for i in 0..k {
                    if let Ok(slot) = admission.admit(tenant(i)) {
                        held.push(slot);
                    }
                }
                if held.len() == before {
                    break;
                }
            }
        } else {
            for i in 0..k {
                while let Ok(slot) = admission.admit(tenant(i)) {
                    held.push(slot);
                }
            }
        }
        let counts = crate::store::lock(&admission.counts);
        let free = admission.tenants - counts.tenants + admission.reserve - counts.reserved;
        (held, free)
    }

    #[test]
    fn attacking_tenants_leave_places_for_the_rest_in_any_order_and_any_number() {
        let admission = admission(64);
        assert_eq!(
            (
                admission.admin,
                admission.anonymous,
                admission.tenants,
                admission.reserve
            ),
            (16, 8, 35, 5)
        );
        for k in [1, 2, 4, 8, 11, 16, 32, 35, 36, 64, 200, 1000] {
            for round_robin in [false, true] {
                // The first wave: the attackers' first places may take `R` while `G` is
                // full (they have not pressed yet). Their stalls end, and they come again,
                // pressing: from then on `R` is the quiet tenants'.
                drop(attack(&admission, k, round_robin));
                let (held, free) = attack(&admission, k, round_robin);
                assert!(
                    free >= admission.reserve,
                    "{k} attackers (round robin {round_robin}) left {free} places"
                );
                // Tenants not busy are admitted, one place each, R of them at least; and so
                // are the admin key and the documents.
                let quiet: Vec<_> = (0..admission.reserve)
                    .map(|i| admission.admit(tenant(10_000 + i)))
                    .collect();
                assert!(
                    quiet.iter().all(Result::is_ok),
                    "{k} attackers (round robin {round_robin}): {free} free"
                );
                assert!(admission.admit(Principal::Admin).is_ok());
                assert!(admission.admit(Principal::Anonymous).is_ok());
                drop(quiet);
                drop(held);
                let counts = crate::store::lock(&admission.counts);
                assert_eq!((counts.tenants, counts.reserved), (0, 0));
            }
        }
    }

    #[test]
    fn a_tenant_holds_at_most_its_share_and_the_pools_are_separate() {
        let admission = admission(64);
        // Alone, a tenant holds G / 2 = 17 places.
        let (held, _) = attack(&admission, 1, false);
        assert_eq!(held.len(), 17);
        let refused = admission.admit(tenant(0)).err().unwrap_or_default();
        assert!(refused.contains("its share"), "{refused}");
        // The admin key's 16 and the anonymous 8 are their own.
        let admin: Vec<_> = (0..16)
            .map_while(|_| admission.admit(Principal::Admin).ok())
            .collect();
        assert_eq!(admin.len(), 16);
        assert!(admission.admit(Principal::Admin).is_err());
        let anonymous: Vec<_> = (0..8)
            .map_while(|_| admission.admit(Principal::Anonymous).ok())
            .collect();
        assert_eq!(anonymous.len(), 8);
        assert!(admission.admit(Principal::Anonymous).is_err());
        assert!(admission.admit(tenant(1)).is_ok());
    }

    #[test]
    fn a_share_shrinks_to_one_place_and_the_reserve_is_for_quiet_tenants_only() {
        let admission = admission(64);
        // 40 tenants one place each: G (35) full, the next five first places from R.
        let first: Vec<_> = (0..40).map(|i| admission.admit(tenant(i))).collect();
        assert!(first.iter().all(Result::is_ok));
        assert_eq!(crate::store::lock(&admission.counts).reserved, 5);
        // Nobody takes a second place; R is full, so a 41st tenant is shed.
        let refused = admission.admit(tenant(0)).err().unwrap_or_default();
        assert!(refused.contains("its share while 40"), "{refused}");
        let refused = admission.admit(tenant(40)).err().unwrap_or_default();
        assert!(refused.contains("not busy"), "{refused}");
        drop(first);
        // Tenants 0 and 40 were refused a moment ago: pressing, so with G full R is not
        // theirs; a tenant never refused takes it.
        let g: Vec<_> = (100..135).map(|i| admission.admit(tenant(i))).collect();
        assert!(g.iter().all(Result::is_ok));
        for pressing in [0, 40] {
            let refused = admission.admit(tenant(pressing)).err().unwrap_or_default();
            assert!(refused.contains("not busy"), "{refused}");
        }
        assert!(admission.admit(tenant(41)).is_ok());
    }

    #[test]
    fn pressing_tenants_remembered_are_bounded() {
        let mut counts = Counts::default();
        let now = Instant::now();
        for i in 0..3 * MAX_PRESSING {
            counts.press(&format!("t{i}"), now + Duration::from_micros(i as u64));
            assert!(counts.pressing.len() <= MAX_PRESSING);
        }
        assert!(counts.pressing(&format!("t{}", 3 * MAX_PRESSING - 1), now));
    }

    /// A tenant refused while a request of its own was in flight stays pressing until a second
    /// after that request ends, however long it lasted: an attacker whose retries are slow
    /// does not turn quiet while its stalled requests hold the server, neither while they are
    /// in flight nor in the second after they end. A request taken after the tenant turned
    /// quiet does not make it pressing again. Before, the refusal's second
    /// lapsed during a 3 s stall, and the attacker took a place kept for quiet tenants.
    #[test]
    fn a_request_in_flight_while_pressing_keeps_its_tenant_pressing_until_it_ends() {
        let admission = admission(64);
        let long_ago = |secs: f64| Instant::now() - Duration::from_secs_f64(secs);
        // Taken 3 s ago; its tenant was refused 2.5 s ago (lapsed, by the refusal alone):
        // pressing while the request is in flight, and for a second after it ends.
        let mut stalled = admission.admit(tenant(0)).expect("a place");
        stalled.taken = long_ago(3.0);
        crate::store::lock(&admission.counts).press("t0", long_ago(2.5));
        assert!(crate::store::lock(&admission.counts).pressing("t0", Instant::now()));
        drop(stalled);
        assert!(crate::store::lock(&admission.counts).pressing("t0", Instant::now()));
        // Refused 3 s ago, quiet since; a request taken 1.5 s ago (not pressing then) ends:
        // still quiet.
        crate::store::lock(&admission.counts).press("t1", long_ago(3.0));
        let mut later = admission.admit(tenant(1)).expect("a place");
        later.taken = long_ago(1.5);
        assert!(!crate::store::lock(&admission.counts).pressing("t1", Instant::now()));
        drop(later);
        assert!(!crate::store::lock(&admission.counts).pressing("t1", Instant::now()));
        // The same for a body arriving.
        let mut body = admission.receive(&tenant(2), 10).expect("a body place");
        body.taken = long_ago(3.0);
        crate::store::lock(&admission.counts).press("t2", long_ago(2.5));
        assert!(crate::store::lock(&admission.counts).pressing("t2", Instant::now()));
        drop(body);
        assert!(crate::store::lock(&admission.counts).pressing("t2", Instant::now()));
        // Taken while pressing (refused just now), it keeps the tenant pressing in flight
        // after the refusal's second has lapsed, then a second after it ends.
        crate::store::lock(&admission.counts).press("t3", long_ago(0.5));
        let mut during = admission.admit(tenant(3)).expect("a place");
        during.taken = long_ago(0.4);
        assert!(during.pressing);
        {
            let mut counts = crate::store::lock(&admission.counts);
            let p = counts.pressing.get_mut("t3").expect("pressing");
            // The refusal's second lapsed.
            p.until = long_ago(0.1);
            assert!(counts.pressing("t3", Instant::now()), "in flight");
        }
        drop(during);
        assert!(crate::store::lock(&admission.counts).pressing("t3", Instant::now()));
        let counts = crate::store::lock(&admission.counts);
        assert_eq!(counts.pressing.get("t3").map(|p| p.in_flight), Some(0));
    }

    /// Tenants that keep more bodies coming than the bytes hold (pressing) fill the shared
    /// bytes; a quiet tenant's body still finds the kept ones, and so does the admin key's.
    /// Before the kept eighth, the attackers' second wave took every byte and the quiet
    /// tenant's body was refused.
    #[test]
    fn attackers_filling_the_body_bytes_leave_room_for_a_quiet_tenant() {
        let mut config = Config::new("/nonexistent", None);
        config.max_bodies_per_tenant = 100;
        config.max_body_buffer_bytes = 8000;
        let admission = Admission::new(&config);
        fn fill(admission: &Admission) -> Vec<BodySlot<'_>> {
            let mut held = Vec::new();
            loop {
                let before = held.len();
                for i in 0..4 {
                    if let Ok(slot) = admission.receive(&tenant(i), 300) {
                        held.push(slot);
                    }
                }
                if held.len() == before {
                    return held;
                }
            }
        }
        // The first wave may take kept bytes (nobody was refused yet); its bodies end, the
        // attackers come again, refused by now: the kept bytes are the quiet tenants'.
        drop(fill(&admission));
        let held = fill(&admission);
        let quiet = admission.receive(&tenant(100), 1000);
        assert!(quiet.is_ok(), "{:?}", quiet.err());
        drop(quiet);
        assert!(admission.receive(&Principal::Admin, 1000).is_ok());
        drop(held);
    }

    #[test]
    fn bodies_arriving_are_bounded_per_tenant_and_in_bytes() {
        let mut config = Config::new("/nonexistent", None);
        config.max_bodies_per_tenant = 2;
        config.max_body_buffer_bytes = 1000;
        let admission = Admission::new(&config);
        let a = admission.receive(&tenant(0), 100);
        let b = admission.receive(&tenant(0), 100);
        assert!(a.is_ok() && b.is_ok());
        let refused = admission.receive(&tenant(0), 100).err().unwrap_or_default();
        assert!(refused.contains("limit of 2"), "{refused}");
        // Another tenant is not touched by the first one's bodies...
        let c = admission.receive(&tenant(1), 600);
        assert!(c.is_ok());
        // ...up to the shared bytes (seven eighths, 875); past them a tenant not pressing
        // takes the kept eighth (125)...
        let d = admission.receive(&tenant(2), 101);
        assert!(d.is_ok());
        // ...and past both, a body is refused.
        let refused = admission.receive(&tenant(3), 100).err().unwrap_or_default();
        assert!(
            refused.contains("limit of 875") && refused.contains("125 more kept"),
            "{refused}"
        );
        drop(c);
        assert!(admission.receive(&tenant(2), 101).is_ok());
        drop((a, b, d));
        assert!(admission.receive(&tenant(0), 100).is_ok());
        // Bodies hold no place to work.
        assert_eq!(crate::store::lock(&admission.counts).tenants, 0);
    }
}
