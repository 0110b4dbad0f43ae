//! The admin commands: tenants, checkpoints, the clock, fault rules and the journal, each one
//! admin API call (two when a tenant is named by name) rendered as a table or as `--json`.

use super::client::{query, segment, Client, Exit, Failure, Outcome, LARGE_ANSWER_LIMIT};
use super::output::{clean, excerpt, fields, json, json_text, out, rows, shell_quote, Row};
use super::shapes::{
    credential, Advanced, Checkpoint, Clock, Created, Entry, Reset, Restored, Rule, Tenant, Token,
    Undone,
};
use super::{CheckpointCommand, ClientCommand, ClockCommand, Conn, FaultCommand, TenantCommand};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

pub(super) fn client(conn: &Conn) -> Outcome<Client> {
    Client::new(&conn.url, conn.admin_key.clone())
}

pub async fn dispatch(command: ClientCommand) -> Outcome<()> {
    match command {
        ClientCommand::Tenant { conn, command } => tenant(&conn, command).await,
        ClientCommand::Checkpoint { conn, command } => checkpoint(&conn, command).await,
        ClientCommand::Clock { conn, command } => clock(&conn, command).await,
        ClientCommand::Fault { conn, command } => fault(&conn, command).await,
        ClientCommand::Requests {
            conn,
            tenant,
            follow,
            status,
            path,
            method,
            limit,
            interval_ms,
        } => {
            let filter = [("status", status), ("path", path), ("method", method)];
            requests(
                &conn,
                &tenant,
                &filter,
                limit,
                follow.then_some(interval_ms),
            )
            .await
        }
        ClientCommand::Fixtures { conn, command } => super::fixtures::run(&conn, command).await,
        ClientCommand::Policy { conn, command } => super::policy::run(&conn, command).await,
        ClientCommand::Events {
            conn,
            tenant,
            dir,
            out,
            api_key,
            basic,
        } => super::events::run(&conn, &tenant, &dir, out, api_key, basic).await,
        ClientCommand::LoadUsage {
            conn,
            tenant,
            events,
            rate,
            batch,
            concurrency,
            srids,
            uoms,
            api_key,
        } => {
            let plan = super::load::Plan {
                tenant,
                events,
                rate,
                batch,
                concurrency,
                srids,
                uoms,
                api_key,
            };
            super::load::run(&conn, plan).await
        }
    }
}

// ---- tenants --------------------------------------------------------------------------

async fn tenant(conn: &Conn, command: TenantCommand) -> Outcome<()> {
    let c = client(conn)?;
    match command {
        TenantCommand::Create {
            name,
            seed,
            time_zone,
            from,
            fixtures,
            clock,
            dry_run,
            env,
        } => {
            let mut body = json!({ "name": name });
            if let Some(from) = from {
                let (source, checkpoint) = from.rsplit_once(':').ok_or_else(|| {
                    Failure::new(
                        Exit::Usage,
                        format!("--from: '{from}' is not TENANT:CHECKPOINT"),
                    )
                })?;
                let source = c.tenant_id(source).await?;
                body["from"] = json!({ "tenant": source, "checkpoint": checkpoint });
            } else {
                match fixtures {
                    Some(file) => body["fixtures"] = super::fixtures::read(&file)?,
                    None => body["seed"] = json!(seed.unwrap_or(super::SeedArg::Demo).as_str()),
                }
                if let Some(zone) = time_zone {
                    body["time_zone"] = json!(zone);
                }
                if let Some(at) = clock {
                    body["clock"] = json!({ "frozen_at": at });
                }
            }
            if dry_run {
                let answer = c
                    .admin(Method::POST, "/tenants?dry_run=true", Some(&body))
                    .await?;
                let (rehearsed, raw) = answer.typed::<super::shapes::DryRun>()?;
                if conn.json {
                    json(&raw);
                } else {
                    out(&format!(
                        "dry run: tenant {} would be created{}; nothing was",
                        clean(&name),
                        rehearsed.summary()
                    ));
                }
                return Ok(());
            }
            let answer = c.admin(Method::POST, "/tenants", Some(&body)).await?;
            let (created, raw) = answer.typed::<Created>()?;
            if conn.json {
                json(&raw);
                return Ok(());
            }
            let created = created.check()?;
            if env {
                print_env(&c.base, &created);
            } else {
                print_created(&c.base, &created);
            }
            Ok(())
        }
        TenantCommand::List => {
            let all = c.tenants().await?;
            if conn.json {
                json(&Value::Array(all.into_iter().map(|(_, raw)| raw).collect()));
            } else {
                let typed: Vec<Tenant> = all.into_iter().map(|(t, _)| t).collect();
                out(&rows(&typed));
            }
            Ok(())
        }
        TenantCommand::Show { tenant } => {
            let (t, raw) = c.tenant(&tenant).await?;
            show(conn, &t, &raw);
            Ok(())
        }
        TenantCommand::Reset { tenant, seed } => {
            let (_, path) = c.tenant_path(&tenant, "/reset").await?;
            let body = json!({ "seed": seed.as_str() });
            let (done, raw) = c
                .admin(Method::POST, &path, Some(&body))
                .await?
                .typed::<Reset>()?;
            report(
                conn,
                &raw,
                format!(
                    "tenant {} reset to the {} seed",
                    clean(&done.id),
                    clean(&done.seed)
                ),
            );
            Ok(())
        }
        TenantCommand::Delete { tenant } => {
            let (id, path) = c.tenant_path(&tenant, "").await?;
            c.admin(Method::DELETE, &path, None).await?;
            report(
                conn,
                &json!({ "deleted": id }),
                format!("tenant {id} deleted"),
            );
            Ok(())
        }
        TenantCommand::Token {
            tenant,
            ttl_seconds,
        } => {
            let (_, path) = c.tenant_path(&tenant, "/tokens").await?;
            let body = json!({ "ttl_seconds": ttl_seconds });
            let (token, raw) = c
                .admin(Method::POST, &path, Some(&body))
                .await?
                .typed::<Token>()?;
            if conn.json {
                json(&raw);
            } else {
                // The bare token, so `$(sandbox tenant token T)` is the header's value.
                out(credential("token", &token.access_token)?);
            }
            Ok(())
        }
    }
}

/// The answer `answer` as `--json`, or `text` for a person.
fn report(conn: &Conn, answer: &Value, text: String) {
    if conn.json {
        json(answer);
    } else {
        out(&text);
    }
}

/// A list as a table (or `--json`, as it came).
fn show_list<T: Row>(conn: &Conn, list: &[T], raw: &Value) {
    if conn.json {
        json(raw);
    } else {
        out(&rows(list));
    }
}

/// One item as `field  value` lines (or `--json`, as it came).
fn show<T: Row>(conn: &Conn, item: &T, raw: &Value) {
    if conn.json {
        json(raw);
    } else {
        out(&fields(item));
    }
}

/// The `export` lines of a created tenant (checked: no control characters), each value
/// shell-quoted.
fn print_env(base: &str, created: &Created) {
    let basic = format!("{}:{}", created.basic.username, created.basic.password);
    for (name, value) in [
        ("SANDBOX_URL", base),
        ("SANDBOX_TENANT", created.id.as_str()),
        ("SANDBOX_API_KEY", created.api_key.as_str()),
        ("SANDBOX_BASIC", basic.as_str()),
    ] {
        out(&format!("export {name}={}", shell_quote(value)));
    }
}

/// A created tenant for a person: its credentials (shown once) and a curl line per surface.
fn print_created(base: &str, created: &Created) {
    let (key, user, pass) = (
        &created.api_key,
        &created.basic.username,
        &created.basic.password,
    );
    out(&format!(
        "Created tenant '{name}' ({id}). Its credentials are shown only now:\n  api key:  {key}\n  basic:    {user}:{pass}\n\nTry:\n  curl -u {basic} {base}/t/s/r/1.28/users/current\n  curl -H {hkey} {base}/billing/2/adjustment-categories\n  curl -H {hkey} '{base}/revenue/3/collectors?page_size=2'",
        name = clean(&created.name),
        id = created.id,
        basic = shell_quote(&format!("{user}:{pass}")),
        hkey = shell_quote(&format!("X-Api-Key: {key}")),
    ));
}

// ---- checkpoints ----------------------------------------------------------------------

async fn checkpoint(conn: &Conn, command: CheckpointCommand) -> Outcome<()> {
    let c = client(conn)?;
    match command {
        CheckpointCommand::Create { tenant, name } => {
            let (_, path) = c.tenant_path(&tenant, "/checkpoints").await?;
            let body = json!({ "name": name });
            let answer = c.admin(Method::POST, &path, Some(&body)).await?;
            let (made, raw) = answer.typed::<Checkpoint>()?;
            show(conn, &made, &raw);
        }
        CheckpointCommand::List { tenant } => {
            let (_, path) = c.tenant_path(&tenant, "/checkpoints").await?;
            let answer = c.admin(Method::GET, &path, None).await?;
            let (list, raw) = answer.typed::<Vec<Checkpoint>>()?;
            show_list(conn, &list, &raw);
        }
        CheckpointCommand::Restore { tenant, name } => {
            let (id, path) = c.tenant_path(&tenant, "/restore").await?;
            let body = json!({ "checkpoint": name });
            let answer = c.admin(Method::POST, &path, Some(&body)).await?;
            let (done, raw) = answer.typed::<Restored>()?;
            report(
                conn,
                &raw,
                format!(
                    "tenant {id} restored to checkpoint '{}' (version {})",
                    clean(&done.checkpoint.name),
                    done.version
                ),
            );
        }
        CheckpointCommand::Delete { tenant, name } => {
            let sub = format!("/checkpoints/{}", segment(&name));
            let (id, path) = c.tenant_path(&tenant, &sub).await?;
            c.admin(Method::DELETE, &path, None).await?;
            report(
                conn,
                &json!({ "deleted": name }),
                format!("checkpoint '{name}' of {id} deleted"),
            );
        }
    }
    Ok(())
}

// ---- clock ----------------------------------------------------------------------------

/// A parsed `clock advance` duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// Sent as `{"seconds": N}`.
    Seconds(i64),
    /// Calendar months, sent as `{"to": now + months}`.
    Months(u32),
}

/// `31d`, `2h`, `90m`, `45s`, `2w`, `1M`, `1y`.
pub fn parse_advance(text: &str) -> Result<Advance, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("'{text}' has no unit: use s, m, h, d, w, M or y (e.g. 31d)"))?;
    let (number, unit) = text.split_at(split);
    let n: u32 = number
        .parse()
        .map_err(|_| format!("'{text}' does not start with a whole number"))?;
    if n == 0 {
        return Err("the duration must be positive".into());
    }
    let seconds = |per: i64| Advance::Seconds(i64::from(n) * per);
    match unit {
        "s" => Ok(seconds(1)),
        "m" => Ok(seconds(60)),
        "h" => Ok(seconds(3600)),
        "d" => Ok(seconds(86_400)),
        "w" => Ok(seconds(604_800)),
        "M" => Ok(Advance::Months(n)),
        "y" => n
            .checked_mul(12)
            .map(Advance::Months)
            .ok_or_else(|| "too many years".to_string()),
        other => Err(format!(
            "unknown unit '{other}': use s, m (minutes), h, d, w, M (months) or y"
        )),
    }
}

/// `now` (RFC 3339 with the tenant's offset) plus `months` calendar months, same wall time.
fn add_months(now: &str, months: u32) -> Outcome<String> {
    let at = chrono::DateTime::parse_from_rfc3339(now).map_err(|e| {
        Failure::other(format!(
            "the clock read '{}', not a date-time: {e}",
            excerpt(now, 100)
        ))
    })?;
    at.checked_add_months(chrono::Months::new(months))
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
        .ok_or_else(|| Failure::new(Exit::Refused, "the advance goes past the calendar's end"))
}

async fn clock(conn: &Conn, command: ClockCommand) -> Outcome<()> {
    let c = client(conn)?;
    let (tenant, body) = match command {
        ClockCommand::Show { tenant } => {
            let (_, path) = c.tenant_path(&tenant, "/clock").await?;
            let (view, raw) = c.admin(Method::GET, &path, None).await?.typed::<Clock>()?;
            show(conn, &view, &raw);
            return Ok(());
        }
        ClockCommand::Freeze { tenant, instant } => match instant {
            Some(at) => (tenant, json!({ "frozen_at": at })),
            None => (tenant, json!({ "mode": "frozen" })),
        },
        ClockCommand::Real { tenant } => (tenant, json!({ "mode": "real" })),
        ClockCommand::Undo { tenant } => {
            let (id, path) = c.tenant_path(&tenant, "/clock/undo").await?;
            let (undone, raw) = c
                .admin(Method::POST, &path, None)
                .await?
                .typed::<Undone>()?;
            if conn.json {
                json(&raw);
                return Ok(());
            }
            out(&format!(
                "advance of {id} from {} to {} undone: the clock reads {} (mode {}); {} earlier advance(s) can still be undone",
                clean(&undone.undone.advanced_from),
                clean(&undone.undone.advanced_to),
                clean(&undone.now),
                clean(&undone.mode),
                undone.undo_left
            ));
            return Ok(());
        }
        ClockCommand::Advance { tenant, duration } => {
            let (id, path) = c.tenant_path(&tenant, "/clock").await?;
            let body = match duration {
                Advance::Seconds(n) => json!({ "seconds": n }),
                Advance::Months(m) => {
                    let view: Clock = c.admin(Method::GET, &path, None).await?.parse()?;
                    json!({ "to": add_months(&view.now, m)? })
                }
            };
            let (advanced, raw) = c
                .admin(Method::POST, &format!("{path}/advance"), Some(&body))
                .await?
                .typed::<Advanced>()?;
            if conn.json {
                json(&raw);
                return Ok(());
            }
            out(&format!(
                "clock of {id} advanced from {} to {} (mode {}); {} transition(s) ran",
                clean(&advanced.advanced_from),
                clean(&advanced.advanced_to),
                clean(&advanced.mode),
                advanced.transitions.len()
            ));
            if !advanced.transitions.is_empty() {
                out(&rows(&advanced.transitions));
            }
            return Ok(());
        }
    };
    let (_, path) = c.tenant_path(&tenant, "/clock").await?;
    let answer = c.admin(Method::PUT, &path, Some(&body)).await?;
    let (view, raw) = answer.typed::<Clock>()?;
    show(conn, &view, &raw);
    Ok(())
}

// ---- faults ---------------------------------------------------------------------------

async fn fault(conn: &Conn, command: FaultCommand) -> Outcome<()> {
    let c = client(conn)?;
    match command {
        FaultCommand::Add {
            tenant,
            path,
            status,
            method,
            latency_ms,
            probability,
            times,
            seed,
        } => {
            let (_, url) = c.tenant_path(&tenant, "/faults").await?;
            let mut body = json!({ "path": path });
            let fields = [
                ("status", status.map(Value::from)),
                ("method", method.map(Value::from)),
                ("latency_ms", latency_ms.map(Value::from)),
                ("probability", probability.map(Value::from)),
                ("times", times.map(Value::from)),
                ("seed", seed.map(Value::from)),
            ];
            for (name, value) in fields {
                if let Some(value) = value {
                    body[name] = value;
                }
            }
            let answer = c.admin(Method::POST, &url, Some(&body)).await?;
            let (rule, raw) = answer.typed::<Rule>()?;
            show(conn, &rule, &raw);
        }
        FaultCommand::List { tenant } => {
            let (_, url) = c.tenant_path(&tenant, "/faults").await?;
            let answer = c.admin(Method::GET, &url, None).await?;
            let (rules, raw) = answer.typed::<Vec<Rule>>()?;
            show_list(conn, &rules, &raw);
        }
        FaultCommand::Remove { tenant, rule } => {
            let sub = if rule == "all" {
                "/faults".to_string()
            } else {
                format!("/faults/{}", segment(&rule))
            };
            let (id, url) = c.tenant_path(&tenant, &sub).await?;
            c.admin(Method::DELETE, &url, None).await?;
            report(
                conn,
                &json!({ "removed": rule }),
                format!("fault rule {rule} of {id} removed"),
            );
        }
    }
    Ok(())
}

// ---- journal --------------------------------------------------------------------------

/// Prints the newest `limit` journal entries (oldest of them first), then, when `follow`
/// gives a poll interval, every new entry until Ctrl-C. Entries are told apart by id, so
/// none is printed twice; a poll reads pages until it meets an entry already printed (at
/// most [`FOLLOW_PAGES`] pages of 100).
async fn requests(
    conn: &Conn,
    tenant: &str,
    filter: &[(&str, Option<String>); 3],
    limit: u32,
    follow: Option<u64>,
) -> Outcome<()> {
    let c = client(conn)?;
    let id = c.tenant_id(tenant).await?;
    let mut seen: HashSet<String> = HashSet::new();
    let first = journal_page(&c, &id, filter, 1, limit).await?;
    print_entries(conn, &first, &mut seen);
    let Some(interval) = follow else {
        return Ok(());
    };
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(interval)) => {}
        }
        let mut fresh = Vec::new();
        for page in 1..=FOLLOW_PAGES {
            let entries = journal_page(&c, &id, filter, page, 100).await?;
            let full = entries.len() == 100;
            let mut met_seen = false;
            for e in entries {
                if seen.contains(&e.0.id) {
                    met_seen = true;
                    break;
                }
                fresh.push(e);
            }
            if met_seen || !full {
                break;
            }
        }
        print_entries(conn, &fresh, &mut seen);
    }
}

/// Most journal pages of 100 one `--follow` poll reads.
const FOLLOW_PAGES: u32 = 10;

/// One page of the journal, newest first, each entry typed and as it came; read up to
/// [`LARGE_ANSWER_LIMIT`] (entries carry bodies).
async fn journal_page(
    c: &Client,
    id: &str,
    filter: &[(&str, Option<String>); 3],
    page: u32,
    size: u32,
) -> Outcome<Vec<(Entry, Value)>> {
    let mut pairs: Vec<(&str, Option<String>)> = filter.to_vec();
    pairs.push(("page_number", Some(page.to_string())));
    pairs.push(("page_size", Some(size.to_string())));
    let path = format!("/tenants/{}/requests{}", segment(id), query(&pairs));
    let answer = c
        .admin_limited(Method::GET, &path, None, LARGE_ANSWER_LIMIT)
        .await?;
    let items: Vec<Value> = answer.parse()?;
    items
        .into_iter()
        .map(|raw| {
            Entry::deserialize(&raw)
                .map(|e| (e, raw))
                .map_err(|e| answer.not_the_sandboxs(&e.to_string()))
        })
        .collect()
}

/// Prints `entries` (newest first as read) oldest first, skipping any already printed.
fn print_entries(conn: &Conn, entries: &[(Entry, Value)], seen: &mut HashSet<String>) {
    for (e, raw) in entries.iter().rev() {
        if !seen.insert(e.id.clone()) {
            continue;
        }
        if conn.json {
            out(&json_text(raw, false));
        } else {
            out(&e.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_to_seconds_or_months() {
        assert_eq!(parse_advance("31d"), Ok(Advance::Seconds(31 * 86_400)));
        assert_eq!(parse_advance("2h"), Ok(Advance::Seconds(7200)));
        assert_eq!(parse_advance("90m"), Ok(Advance::Seconds(5400)));
        assert_eq!(parse_advance("1M"), Ok(Advance::Months(1)));
        assert_eq!(parse_advance("2y"), Ok(Advance::Months(24)));
        assert!(parse_advance("0d").is_err());
        assert!(parse_advance("5").is_err());
        assert!(parse_advance("d").is_err());
        assert!(parse_advance("3q").is_err());
    }

    #[test]
    fn months_keep_wall_time_and_clamp_the_day() {
        assert_eq!(
            add_months("2026-01-31T10:00:00-06:00", 1).unwrap(),
            "2026-02-28T10:00:00-06:00"
        );
        assert_eq!(
            add_months("2026-11-26T09:30:00.250Z", 1).unwrap(),
            "2026-12-26T09:30:00.250Z"
        );
    }
}
