//! The fixtures commands: `tenant create --fixtures FILE` and `fixtures apply` send a fixtures
//! document (docs/fixtures.md) read from a file; `fixtures export` says the sandbox cannot
//! read one back yet.

use super::client::{Failure, Outcome};
use super::output::{json, out};
use super::Conn;
use reqwest::Method;
use serde_json::Value;

/// What `fixtures export` answers until the sandbox exports fixtures.
const NO_EXPORT: &str = "the sandbox does not export fixtures yet (issue 23: applying a document works, reading one back does not); keep the document you applied, or use a checkpoint";

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
            let _ = tenant;
            Err(Failure::other(NO_EXPORT))
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
