//! The command line's HTTP client: the admin API with `X-Admin-Key` and the surfaces with a
//! tenant's API key, every failure turned into a [`Failure`] whose exit code tells a script
//! what went wrong (see [`Exit`]). Tenants are named on the command line by id or by name;
//! [`Client::tenant`] finds either.

use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// The command line's exit codes (also in `sandbox --help` and the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Anything else: a server error, an answer that is not the sandbox's, a local file.
    Other = 1,
    /// A wrong command line: clap's own exit code, also for values checked here (a URL that
    /// is not http(s), `--from` without a colon, a rate that is not positive).
    Usage = 2,
    /// The URL did not answer (connection refused, DNS, timeout).
    Unreachable = 3,
    /// The admin key (or the tenant's API key) was missing or refused: 401.
    Credentials = 4,
    /// Unknown tenant, checkpoint or rule: 404.
    NotFound = 5,
    /// The server refused the input: 400, 409, 413, 415 (its message is printed).
    Refused = 6,
}

/// Why a command failed: printed on stderr, its exit code returned to the shell.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            message: message.into(),
        }
    }

    pub fn other(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Other, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub type Outcome<T> = Result<T, Failure>;

/// A successful answer: its body read as JSON (`Null` when empty or not JSON).
pub struct Answer {
    pub body: Value,
}

/// The sandbox at `base`, with the admin key when one was given.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    admin_key: Option<String>,
    pub http: reqwest::Client,
}

/// Longest wait for one answer; a clock advance over years runs many transitions.
const TIMEOUT: Duration = Duration::from_secs(120);

impl Client {
    pub fn new(url: &str, admin_key: Option<String>) -> Outcome<Client> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Failure::new(
                Exit::Usage,
                format!("--url / SANDBOX_URL: '{url}' is not an http:// or https:// URL"),
            ));
        }
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Failure::other(format!("HTTP client: {e}")))?;
        Ok(Client {
            base,
            admin_key: admin_key.filter(|k| !k.is_empty()),
            http,
        })
    }

    /// `method /sandbox/v1{path}` with the admin key and an optional JSON body; a non-2xx
    /// answer is a [`Failure`].
    pub async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> Outcome<Answer> {
        let key = self.admin_key.as_deref().ok_or_else(|| {
            Failure::new(
                Exit::Credentials,
                "no admin key: pass --admin-key or set SANDBOX_ADMIN_KEY (the server prints it at start)",
            )
        })?;
        let url = format!("{}/sandbox/v1{path}", self.base);
        let mut req = self.http.request(method, &url).header("X-Admin-Key", key);
        if let Some(body) = body {
            req = req.json(body);
        }
        self.send(req, "admin key").await
    }

    /// `method {path}` on a surface with the tenant's API key (Surface B and C).
    pub async fn with_api_key(
        &self,
        method: Method,
        path: &str,
        api_key: &str,
        body: Option<&Value>,
    ) -> Outcome<Answer> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.request(method, &url).header("X-Api-Key", api_key);
        if let Some(body) = body {
            req = req.json(body);
        }
        self.send(req, "tenant's API key").await
    }

    /// Sends `req`, reads the answer, and maps a failed one to its exit code.
    pub async fn send(&self, req: reqwest::RequestBuilder, credential: &str) -> Outcome<Answer> {
        let response = req.send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(Answer { body });
        }
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(300).collect());
        Err(refusal(status, &message, credential, &self.base))
    }

    /// A transport error: the URL did not answer (exit 3) or the answer broke off.
    pub fn transport(&self, e: reqwest::Error) -> Failure {
        if e.is_connect() || e.is_timeout() || e.is_request() {
            // The innermost cause names it best ("Connection refused", a DNS failure).
            let mut why = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                why = c.to_string();
                cause = c.source();
            }
            Failure::new(
                Exit::Unreachable,
                format!(
                    "cannot reach the sandbox at {} ({why}); start it with `sandbox serve` or set --url / SANDBOX_URL",
                    self.base
                ),
            )
        } else {
            Failure::other(format!("{}: {e}", self.base))
        }
    }

    /// The tenant named `key` by id or by name, as the admin API answers it.
    pub async fn tenant(&self, key: &str) -> Outcome<Value> {
        if key.starts_with("t_") {
            match self
                .admin(Method::GET, &format!("/tenants/{}", segment(key)), None)
                .await
            {
                Ok(answer) => return Ok(answer.body),
                Err(f) if f.exit == Exit::NotFound => {}
                Err(f) => return Err(f),
            }
        }
        for t in self.tenants().await? {
            if t["name"] == key || t["id"] == key {
                return Ok(t);
            }
        }
        Err(Failure::new(
            Exit::NotFound,
            format!(
                "no tenant '{key}' (by id or name) at {}; `sandbox tenant list` shows them",
                self.base
            ),
        ))
    }

    /// The id of the tenant named `key` by id or by name.
    pub async fn tenant_id(&self, key: &str) -> Outcome<String> {
        let t = self.tenant(key).await?;
        Ok(t["id"].as_str().unwrap_or(key).to_string())
    }

    /// The id of the tenant named `key` and the admin path `/tenants/{id}{sub}` under it.
    pub async fn tenant_path(&self, key: &str, sub: &str) -> Outcome<(String, String)> {
        let id = self.tenant_id(key).await?;
        let path = format!("/tenants/{}{sub}", segment(&id));
        Ok((id, path))
    }

    /// Every tenant, oldest first (all pages).
    pub async fn tenants(&self) -> Outcome<Vec<Value>> {
        let mut all = Vec::new();
        for page in 1.. {
            let answer = self
                .admin(
                    Method::GET,
                    &format!("/tenants?page_size=100&page_number={page}"),
                    None,
                )
                .await?;
            let items = answer.body.as_array().cloned().unwrap_or_default();
            let done = items.len() < 100;
            all.extend(items);
            if done {
                break;
            }
        }
        Ok(all)
    }
}

/// The failure of a non-2xx answer `status` with the server's `message`.
fn refusal(status: StatusCode, message: &str, credential: &str, base: &str) -> Failure {
    let code = status.as_u16();
    match code {
        401 | 403 => Failure::new(
            Exit::Credentials,
            format!("the sandbox at {base} refused the {credential} ({code}): {message}"),
        ),
        404 => Failure::new(Exit::NotFound, format!("not found (404): {message}")),
        400 | 409 | 413 | 415 | 422 => {
            Failure::new(Exit::Refused, format!("refused ({code}): {message}"))
        }
        _ => Failure::other(format!("the sandbox answered {code}: {message}")),
    }
}

/// `text` as one URL path segment (tenant ids, checkpoint names and rule ids are plain
/// characters already; anything else is percent-encoded so it cannot change the path).
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `pairs` as a query string (`?a=1&b=2`, empty when none), values percent-encoded.
pub fn query(pairs: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", segment(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}
