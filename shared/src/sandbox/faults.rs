//! Fault injection: rules that make a tenant's requests fail (or slow down) on purpose. A rule
//! names a method (or `*`), a path glob (any surface), an optional status (400-599; absent:
//! the request is only delayed, then served), a latency, a probability and an optional
//! number of `times` it fires. Rules are kept in the tenant's own database (table
//! `sandbox_faults`), so every environment on one bucket applies them at its next request.
//!
//! Matching: rules are tried in creation order; the first one whose method and glob match,
//! whose draw passes its probability and that has hits left answers the request. `*` in a
//! glob matches any run of characters (`/` included), `?` one character; everything else
//! matches itself (case-sensitive). The path is the request path without its query.
//!
//! Reproducibility: draw `n` of a rule (its `n`-th matching request in this environment) is
//! a fixed function of the rule's `seed` and `n` ([`draw`], SplitMix64), so one process (the
//! local server) gives the same hit sequence on every run with the same seed. The draw
//! counter is per environment (kept in memory, never a write); `times` is shared (one
//! conditional decrement in the tenant database per hit).

use super::glob::Glob;
use crate::{Error, Result};
use rusqlite::{Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;

/// Most rules per tenant.
pub const MAX_RULES: usize = 50;
/// Longest path glob, in characters.
pub const MAX_PATH_CHARS: usize = 512;
/// Longest latency, in milliseconds (below the default request timeout of 30 s, so a delayed
/// request is answered by its rule, not cut off).
pub const MAX_LATENCY_MS: u64 = 20_000;
/// Largest `times`.
pub const MAX_TIMES: i64 = 1_000_000;
/// Largest seed: 2^53 - 1, so that it survives JSON clients that read numbers as doubles.
pub const MAX_SEED: u64 = (1 << 53) - 1;
/// Methods a rule may name (besides `*`).
pub const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Body of `POST .../faults`: a fault rule; it needs a status, a latency_ms, or both.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NewFaultRule)]
pub struct NewRule {
    /// GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS or * (default).
    pub method: Option<String>,
    /// Glob over the request path (any surface): * any run, ? one character.
    #[schema(min_length = 1, max_length = 512)]
    pub path: String,
    /// The status answered (400-599); absent: the rule only delays.
    #[schema(minimum = 400, maximum = 599)]
    pub status: Option<u16>,
    /// Delay before the answer, in milliseconds (default 0).
    #[schema(minimum = 0, maximum = 20000)]
    pub latency_ms: Option<u64>,
    /// Chance that a matching request is hit, 0 to 1 (default 1).
    #[schema(minimum = 0, maximum = 1)]
    pub probability: Option<f64>,
    /// Hits before the rule stops (default: no limit).
    #[schema(minimum = 1, maximum = 1000000)]
    pub times: Option<i64>,
    /// Seed of the rule's draws (default: a random one, shown in the rule).
    #[schema(minimum = 0, maximum = 9007199254740991_u64)]
    pub seed: Option<u64>,
}

/// A stored fault rule.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = FaultRule)]
pub struct Rule {
    /// Rule id, e.g. `flt_3f2a...`; answered in the `X-Sandbox-Fault` header.
    pub id: String,
    /// Method or `*`.
    pub method: String,
    /// Path glob.
    pub path: String,
    /// Status answered; null: delay only.
    #[schema(minimum = 400, maximum = 599, required = true)]
    pub status: Option<u16>,
    /// Delay in milliseconds.
    #[schema(minimum = 0, maximum = 20000)]
    pub latency_ms: u64,
    /// Chance of a hit.
    #[schema(minimum = 0, maximum = 1)]
    pub probability: f64,
    /// Hits it was created with (null: no limit).
    #[schema(minimum = 1, maximum = 1000000, required = true)]
    pub times: Option<i64>,
    /// Hits left (null: no limit).
    #[schema(minimum = 0, required = true)]
    pub remaining: Option<i64>,
    /// Seed of its draws.
    #[schema(minimum = 0, maximum = 9007199254740991_u64)]
    pub seed: u64,
    /// Creation time (real time, UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl NewRule {
    /// Checks every field against its bounds and answers the rule to store.
    fn check(&self) -> Result<Rule> {
        let method = self
            .method
            .as_deref()
            .unwrap_or("*")
            .trim()
            .to_ascii_uppercase();
        if method != "*" && !METHODS.contains(&method.as_str()) {
            return Err(Error::bad_request(format!(
                "method: {} is not * or one of {}",
                crate::error::quoted(&method),
                METHODS.join(", ")
            )));
        }
        let chars = self.path.chars().count();
        if !self.path.starts_with('/') && !self.path.starts_with('*') {
            return Err(Error::bad_request("path: a glob starts with / or *"));
        }
        if chars > MAX_PATH_CHARS || self.path.chars().any(char::is_control) {
            return Err(Error::bad_request(format!(
                "path: at most {MAX_PATH_CHARS} characters, no control characters"
            )));
        }
        if let Some(s) = self.status.filter(|s| !(400..=599).contains(s)) {
            return Err(Error::bad_request(format!(
                "status: {s} is not between 400 and 599"
            )));
        }
        let latency_ms = self.latency_ms.unwrap_or(0);
        if latency_ms > MAX_LATENCY_MS {
            return Err(Error::bad_request(format!(
                "latency_ms: {latency_ms} is over {MAX_LATENCY_MS}"
            )));
        }
        if self.status.is_none() && latency_ms == 0 {
            return Err(Error::bad_request(
                "a rule needs a status, a latency_ms, or both",
            ));
        }
        let probability = self.probability.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&probability) {
            return Err(Error::bad_request(format!(
                "probability: {probability} is not between 0 and 1"
            )));
        }
        if let Some(t) = self.times.filter(|t| !(1..=MAX_TIMES).contains(t)) {
            return Err(Error::bad_request(format!(
                "times: {t} is not between 1 and {MAX_TIMES}"
            )));
        }
        let seed = match self.seed {
            Some(s) if s > MAX_SEED => {
                return Err(Error::bad_request(format!("seed: {s} is over {MAX_SEED}")))
            }
            Some(s) => s,
            None => rand::random::<u64>() & MAX_SEED,
        };
        Ok(Rule {
            id: format!("flt_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]),
            method,
            path: self.path.clone(),
            status: self.status,
            latency_ms,
            probability,
            times: self.times,
            remaining: self.times,
            seed,
            created_at: crate::time::to_storage(crate::time::now()),
        })
    }
}

const COLUMNS: &str =
    "rule_id, method, path, status, latency_ms, probability, times, remaining, seed, created_at";

fn rule_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Rule> {
    Ok(Rule {
        id: r.get(0)?,
        method: r.get(1)?,
        path: r.get(2)?,
        status: r.get(3)?,
        latency_ms: r.get(4)?,
        probability: r.get(5)?,
        times: r.get(6)?,
        remaining: r.get(7)?,
        seed: r.get(8)?,
        created_at: r.get(9)?,
    })
}

/// Creates a rule (400 past a bound or past [`MAX_RULES`]).
pub fn create(tx: &Transaction<'_>, new: &NewRule) -> Result<Rule> {
    let rule = new.check()?;
    let count: i64 = tx.query_row("SELECT COUNT(*) FROM sandbox_faults", [], |r| r.get(0))?;
    if usize::try_from(count).unwrap_or(usize::MAX) >= MAX_RULES {
        return Err(Error::bad_request(format!(
            "a tenant holds at most {MAX_RULES} fault rules; delete some first"
        )));
    }
    tx.execute(
        &format!("INSERT INTO sandbox_faults ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
        rusqlite::params![
            rule.id,
            rule.method,
            rule.path,
            rule.status,
            rule.latency_ms,
            rule.probability,
            rule.times,
            rule.remaining,
            rule.seed,
            rule.created_at
        ],
    )?;
    Ok(rule)
}

/// Every rule, in creation order.
pub fn list(conn: &Connection) -> Result<Vec<Rule>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM sandbox_faults ORDER BY id"))?;
    let rules = stmt
        .query_map([], rule_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rules)
}

/// One rule (404 when unknown).
pub fn get(conn: &Connection, id: &str) -> Result<Rule> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM sandbox_faults WHERE rule_id = ?1"
    ))?
    .query_row([id], rule_row)
    .optional()?
    .ok_or_else(|| Error::not_found(format!("fault rule {id} does not exist")))
}

/// Deletes one rule (404 when unknown).
pub fn delete(tx: &Transaction<'_>, id: &str) -> Result<()> {
    if tx.execute("DELETE FROM sandbox_faults WHERE rule_id = ?1", [id])? == 0 {
        return Err(Error::not_found(format!("fault rule {id} does not exist")));
    }
    Ok(())
}

/// Deletes every rule; answers how many there were.
pub fn delete_all(tx: &Transaction<'_>) -> Result<usize> {
    Ok(tx.execute("DELETE FROM sandbox_faults", [])?)
}

/// The rules with hits left, in creation order, their globs compiled: what a request is
/// matched against (see [`LiveRules::matching`]). It depends on the table `sandbox_faults`
/// alone, so the serving layer keeps it until a write changes that table instead of querying
/// (and compiling) it for every request.
pub fn live(conn: &Connection) -> Result<LiveRules> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM sandbox_faults
         WHERE remaining IS NULL OR remaining > 0
         ORDER BY id"
    ))?;
    let rules = stmt
        .query_map([], rule_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(LiveRules(
        rules
            .into_iter()
            .map(|r| {
                let glob = Glob::new(&r.path);
                (r, glob)
            })
            .collect(),
    ))
}

/// The live rules of a tenant with their compiled globs (see [`live`]).
pub struct LiveRules(Vec<(Rule, Glob)>);

impl LiveRules {
    /// Most work [`LiveRules::matching`] may do for a path of `chars` characters (see
    /// [`Glob::cost`]).
    pub fn cost(&self, chars: usize) -> usize {
        self.0.iter().map(|(_, g)| g.cost(chars)).sum()
    }

    /// The rules whose method (`*` for any) and path glob match a request, in order. Each
    /// glob match is linear in the path (see [`super::glob`]).
    pub fn matching<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
    ) -> impl Iterator<Item = &'a Rule> + 'a {
        self.0
            .iter()
            .filter(move |(r, glob)| (r.method == "*" || r.method == method) && glob.matches(path))
            .map(|(r, _)| r)
    }
}

/// Whether any live rule matches a request of `method` to `path`: what a write of a request
/// served without a fault checks inside its transaction (S3 mode, see `web::powers`). A
/// tenant without live rules (the usual case) costs one indexed count.
pub fn any_live_match(conn: &Connection, method: &str, path: &str) -> Result<bool> {
    let any: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM sandbox_faults WHERE remaining IS NULL OR remaining > 0)",
        )?
        .query_row([], |r| r.get(0))?;
    Ok(any && live(conn)?.matching(method, path).next().is_some())
}

/// Takes one of a limited rule's hits; false when none is left (another environment took
/// the last one).
pub fn take_hit(tx: &Transaction<'_>, id: &str) -> Result<bool> {
    Ok(tx.execute(
        "UPDATE sandbox_faults SET remaining = remaining - 1 WHERE rule_id = ?1 AND remaining > 0",
        [id],
    )? > 0)
}

/// Draw `n` of a rule seeded `seed`: a number in [0, 1) (SplitMix64 of the pair).
pub fn draw(seed: u64, n: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(n.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// This environment's draw counters, per (tenant, rule).
#[derive(Default)]
pub struct Draws {
    next: Mutex<HashMap<(String, String), u64>>,
}

impl Draws {
    /// Whether the next matching request of `rule` (tenant `tenant`) is hit.
    pub fn hit(&self, tenant: &str, rule: &Rule) -> bool {
        if rule.probability >= 1.0 {
            return true;
        }
        if rule.probability <= 0.0 {
            return false;
        }
        let n = {
            let mut next = crate::store::lock(&self.next);
            let counter = next
                .entry((tenant.to_string(), rule.id.clone()))
                .or_insert(0);
            let n = *counter;
            *counter += 1;
            n
        };
        draw(rule.seed, n) < rule.probability
    }

    /// Forgets a tenant's counters (its rules were deleted).
    pub fn forget(&self, tenant: &str) {
        crate::store::lock(&self.next).retain(|(t, _), _| t != tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_a_function_of_seed_and_index() {
        let a: Vec<f64> = (0..100).map(|n| draw(42, n)).collect();
        let b: Vec<f64> = (0..100).map(|n| draw(42, n)).collect();
        assert_eq!(a, b);
        assert_ne!(a, (0..100).map(|n| draw(43, n)).collect::<Vec<_>>());
        assert!(a.iter().all(|x| (0.0..1.0).contains(x)));
        let hits = (0..10_000).filter(|n| draw(7, *n) < 0.3).count();
        assert!((2_700..3_300).contains(&hits), "{hits}");
    }
}
