//! The fixtures commands: `tenant create --fixtures FILE` and `fixtures apply` send a fixtures
//! document (docs/fixtures.md) read from a file (each with `--dry-run`, which validates and
//! prints what would be written, changing nothing); `fixtures export` prints a tenant's data as
//! one (`GET /sandbox/v1/tenants/{id}/fixtures`), which those two read back.

use super::client::{Failure, Outcome, LARGE_ANSWER_LIMIT};
use super::output::{clean, json, out};
use super::shapes::{Applied, DryRun};
use super::Conn;
use reqwest::Method;
use serde_json::Value;

/// A fixtures document read from `file` (a JSON object), or exit 1 naming the file.
pub fn read(file: &std::path::Path) -> Outcome<Value> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::other(format!("{}: {e}", file.display())))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::other(format!("{}: not JSON: {e}", file.display())))?;
    if !doc.is_object() {
        return Err(Failure::other(format!(
            "{}: a fixtures document is a JSON object",
            file.display()
        )));
    }
    Ok(doc)
}

/// `fixtures export` / `fixtures apply`.
pub async fn run(conn: &Conn, command: super::FixturesCommand) -> Outcome<()> {
    match command {
        super::FixturesCommand::Export { tenant } => {
            let c = super::commands::client(conn)?;
            let (_, path) = c.tenant_path(&tenant, "/fixtures").await?;
            // The document is JSON whatever `--json` says: it is meant for a file. A whole
            // tenant's data: read up to LARGE_ANSWER_LIMIT, and it must be an object.
            let answer = c
                .admin_limited(Method::GET, &path, None, LARGE_ANSWER_LIMIT)
                .await?;
            let doc = answer.json()?;
            if !doc.is_object() {
                return Err(answer.not_the_sandboxs("a fixtures document is a JSON object"));
            }
            json(&doc);
            Ok(())
        }
        super::FixturesCommand::Apply {
            tenant,
            file,
            dry_run,
        } => {
            let doc = read(&file)?;
            let c = super::commands::client(conn)?;
            let (_, path) = c.tenant_path(&tenant, "/fixtures").await?;
            if dry_run {
                let answer = c
                    .admin(Method::POST, &format!("{path}?dry_run=true"), Some(&doc))
                    .await?;
                let (rehearsed, raw) = answer.typed::<DryRun>()?;
                if conn.json {
                    json(&raw);
                } else {
                    out(&format!(
                        "dry run: {} would apply to {}{}; nothing changed",
                        file.display(),
                        clean(&tenant),
                        rehearsed.summary()
                    ));
                }
                return Ok(());
            }
            let answer = c.admin(Method::POST, &path, Some(&doc)).await?;
            let (applied, raw) = answer.typed::<Applied>()?;
            if conn.json {
                json(&raw);
            } else {
                out(&format!(
                    "applied {} to {}",
                    file.display(),
                    clean(&applied.tenant)
                ));
            }
            Ok(())
        }
    }
}
