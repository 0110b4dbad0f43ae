//! `sandbox events T`: the sample API Gateway events of `events/` rewritten with a tenant's
//! real credentials, written to another directory (the samples stay as committed, with
//! their placeholders, for tests/lambda_events.rs).

use super::client::{Client, Exit, Failure, Outcome};
use super::output::out;
use super::Conn;
use base64::Engine;
use std::path::{Path, PathBuf};

/// The placeholders of the sample events (events/manifest.json's `_doc`).
const API_KEY: &str = "REPLACE_WITH_API_KEY";
const BASIC: &str = "REPLACE_WITH_BASIC";
const TENANT_ID: &str = "REPLACE_WITH_TENANT_ID";
/// The admin key the sample admin events carry, as a JSON string.
const SAMPLE_ADMIN_KEY: &str = "\"sandbox-admin-key\"";

pub async fn run(
    conn: &Conn,
    tenant: &str,
    dir: &Path,
    out_dir: Option<PathBuf>,
    api_key: Option<String>,
    basic: Option<String>,
) -> Outcome<()> {
    let missing = |what: &str, flag: &str, var: &str| {
        Failure::new(
            Exit::Credentials,
            format!("no {what}: pass {flag} or set {var} (eval the output of `sandbox tenant create NAME --env`); the admin API never answers a tenant's secrets after creation"),
        )
    };
    let api_key = api_key
        .filter(|k| !k.is_empty())
        .ok_or_else(|| missing("API key", "--api-key", "SANDBOX_API_KEY"))?;
    let basic = basic
        .filter(|b| b.contains(':'))
        .ok_or_else(|| missing("Basic username:password", "--basic", "SANDBOX_BASIC"))?;
    // With an admin key the tenant is checked (and a name becomes its id); without one the
    // argument is taken as the id.
    let tenant_id = match conn.admin_key.as_deref().filter(|k| !k.is_empty()) {
        Some(_) => {
            Client::new(&conn.url, conn.admin_key.clone())?
                .tenant_id(tenant)
                .await?
        }
        None => tenant.to_string(),
    };
    let basic64 = base64::engine::general_purpose::STANDARD.encode(basic.as_bytes());
    let admin_key = conn
        .admin_key
        .as_deref()
        .filter(|k| !k.is_empty())
        .map(|k| serde_json::Value::from(k).to_string());
    let out_dir = out_dir.unwrap_or_else(|| dir.join("local"));
    let entries =
        std::fs::read_dir(dir).map_err(|e| Failure::other(format!("{}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| p.file_name().is_some_and(|n| n != "manifest.json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Failure::other(format!(
            "{}: no sample events (*.json) here; pass --dir",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Failure::other(format!("{}: {e}", out_dir.display())))?;
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Failure::other(format!("{}: {e}", file.display())))?;
        // The values are JSON-safe (hex, base64, `t_` ids), so a text replacement keeps the
        // file valid JSON; the admin key is written as a JSON string.
        let mut text = text
            .replace(API_KEY, &api_key)
            .replace(BASIC, &basic64)
            .replace(TENANT_ID, &tenant_id);
        if let Some(key) = &admin_key {
            text = text.replace(SAMPLE_ADMIN_KEY, key);
        }
        let target = out_dir.join(file.file_name().unwrap_or_default());
        std::fs::write(&target, text)
            .map_err(|e| Failure::other(format!("{}: {e}", target.display())))?;
        out(&target.display().to_string());
    }
    eprintln!(
        "wrote {} events for tenant {tenant_id} to {}; e.g.\n  cargo lambda invoke usage --data-file {}/usage-post-bulk.json\n  sam local invoke UsageFunction --event {}/usage-post-bulk.json",
        files.len(),
        out_dir.display(),
        out_dir.display(),
        out_dir.display()
    );
    Ok(())
}
