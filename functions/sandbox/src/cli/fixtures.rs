//! The fixtures commands: `tenant create --fixtures FILE` and `fixtures apply` send a fixtures
//! document (docs/fixtures.md) read from a file; `fixtures export` prints a tenant's data as
//! one (`GET /sandbox/v1/tenants/{id}/fixtures`), which those two read back.

use super::client::{Failure, Outcome};
use super::output::{json, out};
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
            // The document is JSON whatever `--json` says: it is meant for a file.
            json(&c.admin(Method::GET, &path, None).await?.body);
            Ok(())
        }
        super::FixturesCommand::Apply { tenant, file } => {
            let doc = read(&file)?;
            let c = super::commands::client(conn)?;
            let (_, path) = c.tenant_path(&tenant, "/fixtures").await?;
            let applied = c.admin(Method::POST, &path, Some(&doc)).await?.body;
            if conn.json {
                json(&applied);
            } else {
                out(&format!("applied {} to {tenant}", file.display()));
            }
            Ok(())
        }
    }
}
