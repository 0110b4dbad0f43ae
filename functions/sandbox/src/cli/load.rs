//! `sandbox load-usage`: posts generated usage events to Surface B's bulk call with the
//! tenant's API key and sums up what the sandbox answered.
//!
//! The run is reproducible to look at afterwards: every event carries the run's
//! `reference_id` and a sequence id 1..N (so `GET /billing/2/usage-events?reference_id=...`
//! counts what was stored, and no two events of a run are duplicates of each other). The
//! summary counts an event rated only when the answer listed it in `rated_events`; a failed
//! call (a fault rule's 503, a 413) errs every event it carried, under the answer's code.

use super::client::{Broken, Client, Exit, Failure, Outcome, ANSWER_LIMIT};
use super::output::{clean, excerpt, json, out};
use super::shapes::{AgreementService, Clock, Posted};
use super::Conn;
use chrono::{DateTime, Duration as Span, FixedOffset, SecondsFormat};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// What `load-usage` was asked to do (see its `--help`).
pub struct Plan {
    pub tenant: String,
    pub events: u64,
    pub rate: Option<f64>,
    pub batch: u32,
    pub concurrency: u32,
    pub srids: Vec<String>,
    pub uoms: Vec<String>,
    pub api_key: Option<String>,
}

const BULK: &str = "/billing/2/usage-events/bulk";
const SIMULATE: &str = "/billing/2/usage-events/simulate/bulk";
/// Start times fall in the 30 days before the clock (the console's chart window).
const SPREAD_SECONDS: i64 = 30 * 86_400;
/// Most agreement-service pages read when looking for SRIDs (50 each).
const MAX_SERVICE_PAGES: u32 = 10;

/// What one bulk call came to.
struct Outcome1 {
    latency_ms: f64,
    events: u64,
    rated: u64,
    errors: Vec<String>,
}

pub async fn run(conn: &Conn, plan: Plan) -> Outcome<()> {
    let api_key = plan.api_key.clone().filter(|k| !k.is_empty()).ok_or_else(|| {
        Failure::new(
            Exit::Credentials,
            "no API key for the tenant: pass --api-key or set SANDBOX_API_KEY (eval the output of `sandbox tenant create NAME --env`); the admin API never answers a tenant's secrets after creation",
        )
    })?;
    if plan.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(Failure::new(
            Exit::Usage,
            "--rate must be a positive number",
        ));
    }
    let c = Client::new(&conn.url, conn.admin_key.clone())?;
    // With an admin key: the tenant is checked and its clock read; without, real time.
    let (tenant, now) = match conn.admin_key.as_deref().filter(|k| !k.is_empty()) {
        Some(_) => {
            let id = c.tenant_id(&plan.tenant).await?;
            let path = format!("/tenants/{}/clock", super::client::segment(&id));
            let answer = c.admin(Method::GET, &path, None).await?;
            let view: Clock = answer.parse()?;
            let now = DateTime::parse_from_rfc3339(&view.now)
                .map_err(|e| answer.not_the_sandboxs(&format!("the clock's now: {e}")))?;
            (id, now)
        }
        None => (plan.tenant.clone(), chrono::Utc::now().fixed_offset()),
    };
    let pairs = pairs(&c, &api_key, &plan, now).await?;
    let mut random = Random::new();
    let reference_id = format!("load-{:012x}", random.next() >> 16);
    eprintln!(
        "posting {} events to tenant {tenant} in calls of {} (reference_id {reference_id}) on {} SRID/unit pair(s): {}",
        plan.events,
        plan.batch,
        pairs.len(),
        pairs
            .iter()
            .take(6)
            .map(|(s, u)| clean(&format!("{s}={u}")))
            .chain((pairs.len() > 6).then(|| "...".to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let progress = Progress::new(plan.events);
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    let mut results: Vec<Outcome1> = Vec::new();
    let mut sent: u64 = 0;
    while sent < plan.events {
        let count = u64::from(plan.batch).min(plan.events - sent);
        let events: Vec<Value> = (sent + 1..=sent + count)
            .map(|seq| event(&pairs, seq, now, &reference_id, &mut random))
            .collect();
        if let Some(rate) = plan.rate {
            // Call k leaves when the events before it are due at the asked rate.
            let due = Duration::from_secs_f64(sent as f64 / rate);
            tokio::time::sleep_until((started + due).into()).await;
        }
        while calls.len() >= plan.concurrency as usize {
            collect(calls.join_next().await, &mut results, &progress)?;
        }
        let (client, key) = (c.clone(), api_key.clone());
        calls.spawn(async move { post(&client, &key, events).await });
        sent += count;
    }
    while let Some(done) = calls.join_next().await {
        collect(Some(done), &mut results, &progress)?;
    }
    progress.finish();
    let summary = summarize(&tenant, &reference_id, &results, started.elapsed(), &pairs);
    if conn.json {
        json(&summary);
    } else {
        print_summary(&summary);
    }
    Ok(())
}

/// Adds a finished call's outcome; a refused API key stops the run (exit 4).
fn collect(
    done: Option<Result<Result<Outcome1, Failure>, tokio::task::JoinError>>,
    results: &mut Vec<Outcome1>,
    progress: &Progress,
) -> Outcome<()> {
    match done {
        None => Ok(()),
        Some(Err(e)) => Err(Failure::other(format!("a posting task failed: {e}"))),
        Some(Ok(Err(failure))) => Err(failure),
        Some(Ok(Ok(outcome))) => {
            progress.add(outcome.events);
            results.push(outcome);
            Ok(())
        }
    }
}

/// Posts one call and reads what became of each event. A transport failure errs the call's
/// events (TIMEOUT, TRANSPORT); an answer that is not the sandbox's (a redirect, too long,
/// another shape) stops the run, as a refused API key does.
async fn post(c: &Client, api_key: &str, events: Vec<Value>) -> Outcome<Outcome1> {
    let count = events.len() as u64;
    let body = json!({ "mode": "FAIL_ON_EXISTING", "usage_events": events });
    let started = Instant::now();
    let req = c
        .http
        .post(format!("{}{BULK}", c.base))
        .header("X-Api-Key", api_key)
        .json(&body);
    let exchanged = c.exchange(req, ANSWER_LIMIT).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (rated, errors) = match exchanged {
        Ok(answer) if answer.status.is_success() => {
            let posted: Posted = answer.parse()?;
            let errors = posted.erred_events.into_iter().map(|e| e.code).collect();
            (posted.rated_events.len() as u64, errors)
        }
        Ok(answer) if answer.status.as_u16() == 401 => {
            let message = answer.error_message();
            return Err(Failure::new(
                Exit::Credentials,
                format!(
                    "the sandbox at {} refused the tenant's API key (401): {message}",
                    c.base
                ),
            ));
        }
        Ok(answer) => {
            let code = answer
                .json()
                .ok()
                .and_then(|v| {
                    v.get("code")
                        .and_then(Value::as_str)
                        .map(|m| excerpt(m, 100))
                })
                .unwrap_or_else(|| format!("HTTP_{}", answer.status.as_u16()));
            (0, vec![code; count as usize])
        }
        Err(Broken::Refused(failure)) => return Err(failure),
        Err(Broken::Transport(e)) => {
            let code = if e.is_timeout() {
                "TIMEOUT"
            } else {
                "TRANSPORT"
            };
            (0, vec![code.to_string(); count as usize])
        }
    };
    Ok(Outcome1 {
        latency_ms,
        events: count,
        rated,
        errors,
    })
}

/// Event `seq` of the run: the pairs in turn, an amount of 1..100, a start time in the 30
/// days before `now` (at least an hour before it), in the clock's UTC offset.
fn event(
    pairs: &[(String, String)],
    seq: u64,
    now: DateTime<FixedOffset>,
    reference_id: &str,
    random: &mut Random,
) -> Value {
    let (srid, uom) = &pairs[(seq as usize - 1) % pairs.len()];
    let back = 3600 + (random.next() % (SPREAD_SECONDS - 3600) as u64) as i64;
    let start = now - Span::seconds(back);
    json!({
        "start_time": start.to_rfc3339_opts(SecondsFormat::Secs, true),
        "service_resource_identifier": srid,
        "usage_uom": uom,
        "usage_amount": 1 + random.next() % 100,
        "reference_id": reference_id,
        "sequence_id": seq.to_string(),
    })
}

/// The (SRID, unit) pairs to post to: `--srids` as given (`SRID=UOM`), else probed.
async fn pairs(
    c: &Client,
    api_key: &str,
    plan: &Plan,
    now: DateTime<FixedOffset>,
) -> Outcome<Vec<(String, String)>> {
    let mut fixed = Vec::new();
    let mut probe: Vec<String> = Vec::new();
    for s in &plan.srids {
        match s.split_once('=') {
            Some((srid, uom)) => fixed.push((srid.trim().to_string(), uom.trim().to_string())),
            None => probe.push(s.trim().to_string()),
        }
    }
    if plan.srids.is_empty() {
        probe = active_srids(c, api_key).await?;
    }
    if !probe.is_empty() {
        fixed.extend(rating_pairs(c, api_key, &probe, &plan.uoms, now).await?);
    }
    if fixed.is_empty() {
        return Err(Failure::new(
            Exit::Refused,
            format!(
                "no SRID of the tenant rates any of the units {} over the last 30 days of its clock; pass --srids SRID=UOM or --uoms",
                plan.uoms.join(",")
            ),
        ));
    }
    Ok(fixed)
}

/// The distinct SRIDs of the tenant's ACTIVE agreement services (Surface B).
async fn active_srids(c: &Client, api_key: &str) -> Outcome<Vec<String>> {
    let mut srids: Vec<String> = Vec::new();
    for page in 1..=MAX_SERVICE_PAGES {
        let path = format!(
            "/billing/2/agreement-services?filter=status%20EQ%20%27ACTIVE%27&page_size=50&page_number={page}"
        );
        let answer = c.with_api_key(Method::GET, &path, api_key, None).await?;
        let items: Vec<AgreementService> = answer.parse()?;
        let last = items.len() < 50;
        for s in items
            .into_iter()
            .filter_map(|i| i.service_resource_identifier)
        {
            if !srids.contains(&s) {
                srids.push(s);
            }
        }
        if last {
            break;
        }
    }
    Ok(srids)
}

/// The pairs of `srids` x `uoms` that rate at both ends of the start-time window, asked of
/// simulate/bulk (which stores nothing).
async fn rating_pairs(
    c: &Client,
    api_key: &str,
    srids: &[String],
    uoms: &[String],
    now: DateTime<FixedOffset>,
) -> Outcome<Vec<(String, String)>> {
    let ends = [
        now - Span::seconds(SPREAD_SECONDS),
        now - Span::seconds(3600),
    ];
    let mut probes = Vec::new();
    for srid in srids {
        for uom in uoms {
            for at in ends {
                probes.push(json!({
                    "start_time": at.to_rfc3339_opts(SecondsFormat::Secs, true),
                    "service_resource_identifier": srid,
                    "usage_uom": uom,
                    "usage_amount": 1,
                }));
            }
        }
    }
    let mut rated: HashMap<(String, String), u32> = HashMap::new();
    for chunk in probes.chunks(50) {
        let body = json!({ "mode": "FAIL_ON_EXISTING", "usage_events": chunk });
        let posted: Posted = c
            .with_api_key(Method::POST, SIMULATE, api_key, Some(&body))
            .await?
            .parse()?;
        for e in posted.rated_events {
            *rated
                .entry((e.service_resource_identifier, e.usage_uom))
                .or_default() += 1;
        }
    }
    let mut pairs = Vec::new();
    for srid in srids {
        for uom in uoms {
            if rated.get(&(srid.clone(), uom.clone())) == Some(&2) {
                pairs.push((srid.clone(), uom.clone()));
            }
        }
    }
    Ok(pairs)
}

/// The run's summary (what `--json` prints).
fn summarize(
    tenant: &str,
    reference_id: &str,
    results: &[Outcome1],
    elapsed: Duration,
    pairs: &[(String, String)],
) -> Value {
    let events: u64 = results.iter().map(|r| r.events).sum();
    let rated: u64 = results.iter().map(|r| r.rated).sum();
    let mut errors: BTreeMap<&str, u64> = BTreeMap::new();
    for code in results.iter().flat_map(|r| &r.errors) {
        *errors.entry(code).or_default() += 1;
    }
    let erred: u64 = errors.values().sum();
    let mut latencies: Vec<f64> = results.iter().map(|r| r.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let seconds = elapsed.as_secs_f64();
    let round = |x: f64| (x * 100.0).round() / 100.0;
    json!({
        "tenant": tenant,
        "reference_id": reference_id,
        "events": events,
        "rated": rated,
        "erred": erred,
        "requests": results.len(),
        "seconds": round(seconds),
        "events_per_second": round(if seconds > 0.0 { events as f64 / seconds } else { 0.0 }),
        "latency_ms": {
            "p50": round(percentile(&latencies, 50.0)),
            "p95": round(percentile(&latencies, 95.0)),
            "p99": round(percentile(&latencies, 99.0)),
            "max": round(latencies.last().copied().unwrap_or(0.0)),
        },
        "errors": errors,
        "pairs": pairs.iter().map(|(s, u)| format!("{s}={u}")).collect::<Vec<_>>(),
    })
}

/// The nearest-rank percentile `p` of `sorted` (0 when empty).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn print_summary(s: &Value) {
    let l = &s["latency_ms"];
    let errors = s["errors"]
        .as_object()
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.iter()
                .map(|(k, v)| format!("{} {v}", clean(k)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "none".into());
    out(&format!(
        "events:   {} posted in {} calls over {} s ({} events/s)\nrated:    {}\nerred:    {}\nlatency:  p50 {} ms, p95 {} ms, p99 {} ms, max {} ms (per call)\nerrors:   {errors}\nstored under reference_id {} (GET /billing/2/usage-events?reference_id={})",
        s["events"], s["requests"], s["seconds"], s["events_per_second"], s["rated"], s["erred"],
        l["p50"], l["p95"], l["p99"], l["max"],
        s["reference_id"].as_str().unwrap_or_default(), s["reference_id"].as_str().unwrap_or_default(),
    ));
}

/// A progress bar on a terminal (stderr), else a plain line per tenth of the run.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    done: std::sync::atomic::AtomicU64,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} events {per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            total,
            done: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn add(&self, n: u64) {
        use std::sync::atomic::Ordering;
        let before = self.done.fetch_add(n, Ordering::Relaxed);
        match &self.bar {
            Some(bar) => bar.inc(n),
            None => {
                let tenth = (self.total / 10).max(1);
                if (before + n) / tenth > before / tenth {
                    eprintln!("{}/{} events posted", before + n, self.total);
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// xorshift64*: amounts and start times need variety, not unpredictability.
struct Random(u64);

impl Random {
    fn new() -> Random {
        let bytes = shared::auth::random_bytes(8);
        let mut seed = [0u8; 8];
        seed.copy_from_slice(&bytes[..8]);
        Random(u64::from_le_bytes(seed) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert_eq!(percentile(&[], 95.0), 0.0);
    }
}
