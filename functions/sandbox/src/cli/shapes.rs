//! The sandbox's answers as the command line reads them: each command parses the members it
//! needs into one of these (serde), so that an answer of another shape (a proxy's HTML page,
//! a JSON string, a missing or ill-typed member) fails with exit 1 naming what came back
//! (`client::Answer::typed`) instead of printing placeholders. Members the command line does
//! not use are not declared (unknown members are ignored); `--json` prints the answer as it
//! came, once it has parsed.

use super::client::{Failure, Outcome};
use super::output::{clean, excerpt, Row};
use serde::Deserialize;

/// A tenant as `GET /tenants` and `GET /tenants/{id}` show it.
#[derive(Debug, Deserialize)]
pub struct Tenant {
    pub id: String,
    pub name: String,
    pub time_zone: String,
    pub created_at: String,
}

impl Tenant {
    /// The sandbox's ids are `t_` and hex; the command line puts them in paths (encoded) and
    /// in the sample events' JSON text, so anything but `A-Z a-z 0-9 _ - .` is refused.
    pub fn check(self) -> Outcome<Tenant> {
        let fine = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
        if self.id.is_empty() || self.id.len() > 128 || !self.id.chars().all(fine) {
            return Err(Failure::other(format!(
                "the server answered a tenant whose id '{}' is not an id (A-Z a-z 0-9 _ - . only): not the sandbox's answer",
                excerpt(&self.id, 100)
            )));
        }
        Ok(self)
    }
}

impl Row for Tenant {
    const FIELDS: &'static [&'static str] = &["id", "name", "time_zone", "created_at"];
    fn cells(&self) -> Vec<Option<String>> {
        [&self.id, &self.name, &self.time_zone, &self.created_at]
            .map(|s| Some(s.clone()))
            .into()
    }
}

/// HTTP Basic credentials of a created tenant.
#[derive(Debug, Deserialize)]
pub struct Basic {
    pub username: String,
    pub password: String,
}

/// The answer of `POST /tenants`: the tenant and its credentials, shown once.
#[derive(Debug, Deserialize)]
pub struct Created {
    pub id: String,
    pub name: String,
    pub api_key: String,
    pub basic: Basic,
}

impl Created {
    /// Refuses credentials no sandbox issues (empty, or with control characters, which
    /// `export` lines and a terminal cannot carry as they are).
    pub fn check(self) -> Outcome<Created> {
        credential("tenant id", &self.id)?;
        credential("API key", &self.api_key)?;
        credential("Basic username", &self.basic.username)?;
        credential("Basic password", &self.basic.password)?;
        Ok(self)
    }
}

/// `text` as a credential or id to print bare or in an `export` line: not empty, no control
/// character.
pub fn credential<'a>(what: &str, text: &'a str) -> Outcome<&'a str> {
    if text.is_empty() || text.chars().any(char::is_control) {
        return Err(Failure::other(format!(
            "the server answered a {what} '{}' (empty or with control characters): not the sandbox's answer, nothing printed",
            excerpt(text, 100)
        )));
    }
    Ok(text)
}

/// The answer of `POST /tenants/{id}/tokens`.
#[derive(Debug, Deserialize)]
pub struct Token {
    pub access_token: String,
}

/// The answer of `POST /tenants/{id}/reset`.
#[derive(Debug, Deserialize)]
pub struct Reset {
    pub id: String,
    pub seed: String,
}

/// A checkpoint.
#[derive(Debug, Deserialize)]
pub struct Checkpoint {
    pub name: String,
    pub version: u64,
    pub created_at: String,
}

impl Row for Checkpoint {
    const FIELDS: &'static [&'static str] = &["name", "version", "created_at"];
    fn cells(&self) -> Vec<Option<String>> {
        vec![
            Some(self.name.clone()),
            Some(self.version.to_string()),
            Some(self.created_at.clone()),
        ]
    }
}

/// The answer of `POST /tenants/{id}/restore`.
#[derive(Debug, Deserialize)]
pub struct Restored {
    pub checkpoint: Checkpoint,
    pub version: u64,
}

/// A tenant's clock.
#[derive(Debug, Deserialize)]
pub struct Clock {
    pub mode: String,
    pub now: String,
    pub frozen_at: Option<String>,
    pub offset_seconds: Option<f64>,
}

impl Row for Clock {
    const FIELDS: &'static [&'static str] = &["mode", "now", "frozen_at", "offset_seconds"];
    fn cells(&self) -> Vec<Option<String>> {
        vec![
            Some(self.mode.clone()),
            Some(self.now.clone()),
            self.frozen_at.clone(),
            self.offset_seconds.map(|s| s.to_string()),
        ]
    }
}

/// The answer of `POST /tenants/{id}/clock/advance`.
#[derive(Debug, Deserialize)]
pub struct Advanced {
    pub mode: String,
    pub advanced_from: String,
    pub advanced_to: String,
    pub transitions: Vec<Transition>,
}

/// The answer of `POST /tenants/{id}/clock/undo`.
#[derive(Debug, Deserialize)]
pub struct Undone {
    pub mode: String,
    pub now: String,
    pub undone: UndoneAdvance,
    pub undo_left: u64,
}

/// The advance an undo undid.
#[derive(Debug, Deserialize)]
pub struct UndoneAdvance {
    pub advanced_from: String,
    pub advanced_to: String,
}

/// A transition an advance ran.
#[derive(Debug, Deserialize)]
pub struct Transition {
    pub at: String,
    pub kind: String,
    pub id: i64,
    pub detail: String,
}

impl Row for Transition {
    const FIELDS: &'static [&'static str] = &["at", "kind", "id", "detail"];
    fn cells(&self) -> Vec<Option<String>> {
        vec![
            Some(self.at.clone()),
            Some(self.kind.clone()),
            Some(self.id.to_string()),
            Some(self.detail.clone()),
        ]
    }
}

/// A fault rule.
#[derive(Debug, Deserialize)]
pub struct Rule {
    pub id: String,
    pub method: String,
    pub path: String,
    pub status: Option<u16>,
    pub latency_ms: u64,
    pub probability: f64,
    pub times: Option<i64>,
    pub remaining: Option<i64>,
    pub seed: u64,
}

impl Row for Rule {
    const FIELDS: &'static [&'static str] = &[
        "id",
        "method",
        "path",
        "status",
        "latency_ms",
        "probability",
        "times",
        "remaining",
        "seed",
    ];
    fn cells(&self) -> Vec<Option<String>> {
        vec![
            Some(self.id.clone()),
            Some(self.method.clone()),
            Some(self.path.clone()),
            self.status.map(|s| s.to_string()),
            Some(self.latency_ms.to_string()),
            Some(self.probability.to_string()),
            self.times.map(|t| t.to_string()),
            self.remaining.map(|r| r.to_string()),
            Some(self.seed.to_string()),
        ]
    }
}

/// A request of the journal.
#[derive(Debug, Deserialize)]
pub struct Entry {
    pub id: String,
    pub time: String,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub status: u16,
    pub duration_ms: f64,
    pub fault: Option<String>,
}

impl Entry {
    /// The entry as one line for a person, every member from the server cleaned.
    pub fn line(&self) -> String {
        let query = self
            .query
            .as_deref()
            .filter(|q| !q.is_empty())
            .map(|q| format!("?{}", clean(q)))
            .unwrap_or_default();
        let fault = self
            .fault
            .as_deref()
            .map(|f| format!("  fault {}", clean(f)))
            .unwrap_or_default();
        format!(
            "{}  {:<6} {}{}  {}  {:.1} ms{}",
            clean(&self.time),
            clean(&self.method),
            clean(&self.path),
            query,
            self.status,
            self.duration_ms,
            fault
        )
    }
}

/// The answer of `POST /tenants/{id}/fixtures`.
#[derive(Debug, Deserialize)]
pub struct Applied {
    pub tenant: String,
}

/// What a dry run (`?dry_run=true` of a tenant's creation or a fixtures apply) says would be
/// written: records created and updated, by kind.
#[derive(Debug, Deserialize)]
pub struct DryRun {
    #[serde(default)]
    pub created: std::collections::BTreeMap<String, u64>,
    #[serde(default)]
    pub updated: std::collections::BTreeMap<String, u64>,
}

impl DryRun {
    /// `, creating products 2, services 3; updating invoices 1` (empty when nothing).
    pub fn summary(&self) -> String {
        let list = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, n)| format!("{} {n}", super::output::clean(k)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.created.is_empty() {
            parts.push(format!("creating {}", list(&self.created)));
        }
        if !self.updated.is_empty() {
            parts.push(format!("updating {}", list(&self.updated)));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(", {}", parts.join("; "))
        }
    }
}

/// An agreement service of Surface B, as `load-usage` reads it.
#[derive(Debug, Deserialize)]
pub struct AgreementService {
    pub service_resource_identifier: Option<String>,
}

/// The answer of Surface B's usage bulk and simulate calls, as `load-usage` reads it.
#[derive(Debug, Deserialize)]
pub struct Posted {
    pub rated_events: Vec<RatedEvent>,
    pub erred_events: Vec<ErredEvent>,
}

/// A rated event: its SRID and unit.
#[derive(Debug, Deserialize)]
pub struct RatedEvent {
    pub service_resource_identifier: String,
    pub usage_uom: String,
}

/// An erred event: its code.
#[derive(Debug, Deserialize)]
pub struct ErredEvent {
    pub code: String,
}

/// A tenant's billing policy (`GET`/`PUT /tenants/{id}/policy`).
#[derive(Debug, Deserialize)]
pub struct Policy {
    pub recurring_timing: String,
    pub proration: String,
    pub payment_term_days: i64,
    pub usage_tiers: String,
    pub default_agreement_months: i64,
    pub runs: String,
    pub autopay_retry_days: Vec<i64>,
}

impl Row for Policy {
    const FIELDS: &'static [&'static str] = &[
        "recurring_timing",
        "proration",
        "payment_term_days",
        "usage_tiers",
        "default_agreement_months",
        "runs",
        "autopay_retry_days",
    ];
    fn cells(&self) -> Vec<Option<String>> {
        let days: Vec<String> = self.autopay_retry_days.iter().map(i64::to_string).collect();
        vec![
            Some(clean(&self.recurring_timing)),
            Some(clean(&self.proration)),
            Some(self.payment_term_days.to_string()),
            Some(clean(&self.usage_tiers)),
            Some(self.default_agreement_months.to_string()),
            Some(clean(&self.runs)),
            Some(if days.is_empty() {
                "none".to_string()
            } else {
                days.join(",")
            }),
        ]
    }
}
