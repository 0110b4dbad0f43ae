//! The policy commands: `policy show T` prints a tenant's billing policy
//! (`GET /sandbox/v1/tenants/{id}/policy`), `policy set T key=value...` changes the members
//! named (`PUT`, a partial document) and prints the policy now in force. Values are sent as
//! the API takes them: whole numbers for the day and month counts, a comma-separated list
//! for `autopay_retry_days` (empty: no retries), text for the rest; the server checks each
//! (a refusal names the member and its allowed values, exit 6).

use super::client::{Exit, Failure, Outcome};
use super::output::{fields, json, out};
use super::shapes::Policy;
use super::Conn;
use reqwest::Method;
use serde_json::{Map, Value};

/// Members whose value is a whole number.
const NUMBERS: &[&str] = &["payment_term_days", "default_agreement_months"];
/// The member whose value is a list of whole numbers.
const LIST: &str = "autopay_retry_days";

/// `key=value` pairs as the body of `PUT .../policy`, or exit 2 naming the pair.
fn change(pairs: &[String]) -> Outcome<Value> {
    let usage = |m: String| Failure::new(Exit::Usage, m);
    let number = |key: &str, text: &str| {
        text.trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| usage(format!("{key}={text}: {key} takes a whole number")))
    };
    let mut body = Map::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| usage(format!("'{pair}' is not key=value")))?;
        let value = if NUMBERS.contains(&key) {
            number(key, value)?
        } else if key == LIST {
            let days = value
                .split(',')
                .filter(|d| !d.trim().is_empty())
                .map(|d| number(key, d))
                .collect::<Outcome<Vec<Value>>>()?;
            Value::Array(days)
        } else {
            Value::String(value.to_string())
        };
        body.insert(key.to_string(), value);
    }
    if body.is_empty() {
        return Err(usage("policy set takes at least one key=value".into()));
    }
    Ok(Value::Object(body))
}

/// `policy show` / `policy set`.
pub async fn run(conn: &Conn, command: super::PolicyCommand) -> Outcome<()> {
    let c = super::commands::client(conn)?;
    let answer = match command {
        super::PolicyCommand::Show { tenant } => {
            let (_, path) = c.tenant_path(&tenant, "/policy").await?;
            c.admin(Method::GET, &path, None).await?
        }
        super::PolicyCommand::Set { tenant, values } => {
            let body = change(&values)?;
            let (_, path) = c.tenant_path(&tenant, "/policy").await?;
            c.admin(Method::PUT, &path, Some(&body)).await?
        }
    };
    let (policy, raw) = answer.typed::<Policy>()?;
    if conn.json {
        json(&raw);
    } else {
        out(&fields(&policy));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_become_the_members_the_api_takes() {
        let pairs = [
            "recurring_timing=ADVANCE".to_string(),
            "payment_term_days=15".to_string(),
            "autopay_retry_days=1,3,7".to_string(),
        ];
        let body = change(&pairs).unwrap_or_else(|f| panic!("{}", f.message));
        assert_eq!(
            body,
            serde_json::json!({"recurring_timing": "ADVANCE", "payment_term_days": 15,
                               "autopay_retry_days": [1, 3, 7]})
        );
        let none = change(&["autopay_retry_days=".to_string()])
            .unwrap_or_else(|f| panic!("{}", f.message));
        assert_eq!(none, serde_json::json!({"autopay_retry_days": []}));
        assert!(change(&["payment_term_days=net15".to_string()]).is_err());
        assert!(change(&["proration".to_string()]).is_err());
        assert!(change(&[]).is_err());
    }
}
