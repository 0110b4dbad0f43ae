//! The command line's HTTP client: the admin API with `X-Admin-Key` and the surfaces with a
//! tenant's API key, every failure turned into a [`Failure`] whose exit code tells a script
//! what went wrong (see [`Exit`]). Tenants are named on the command line by id or by name;
//! [`Client::tenant`] finds either.

use super::output::excerpt;
use super::shapes::Tenant;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

/// The command line's exit codes (also in `sandbox --help` and docs/cli.md).
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

/// Most bytes of one answer the command line reads: the sandbox's admin answers are a few
/// KiB (a page of 100 tenants is about 15 KiB), Surface B's pages of 50 and bulk answers
/// tens of KiB. Past it, reading stops and the command exits 1.
pub const ANSWER_LIMIT: usize = 4 << 20;
/// Most bytes of a fixtures export (a whole tenant's data) or a journal page (up to 100
/// requests, each with up to 64 KiB of request and of response body, JSON-escaped).
pub const LARGE_ANSWER_LIMIT: usize = 64 << 20;
/// Most pages a listing reads (the tenants: 1,000 pages of 100, a hundred times the default
/// `SANDBOX_MAX_TENANTS`); a server still answering full pages then is not the sandbox.
pub const MAX_PAGES: u32 = 1000;

/// An answer as read (any status): its status, content type and body, at most the limit
/// the request was sent with.
pub struct Answer {
    pub status: StatusCode,
    content_type: Option<String>,
    pub bytes: Vec<u8>,
    /// What was asked (`POST /sandbox/v1/tenants`) at which server, for messages.
    asked: String,
}

impl Answer {
    /// What came back, for a message: status, content type, size and the first 100
    /// characters, control characters escaped.
    pub fn describe(&self) -> String {
        let content_type = self
            .content_type
            .as_deref()
            .map_or_else(|| "no content type".to_string(), |t| excerpt(t, 100));
        let text = String::from_utf8_lossy(&self.bytes);
        let body = if self.bytes.is_empty() {
            "an empty body".to_string()
        } else {
            format!("{} bytes: {}", self.bytes.len(), excerpt(&text, 100))
        };
        format!("{} {content_type}, {body}", self.status.as_u16())
    }

    /// The message of an error answer: the sandbox's JSON `message` (cut at 300 characters,
    /// escaped), else a description of what came back.
    pub fn error_message(&self) -> String {
        self.json()
            .ok()
            .and_then(|v| {
                v.get("message")
                    .and_then(Value::as_str)
                    .map(|m| excerpt(m, 300))
            })
            .unwrap_or_else(|| self.describe())
    }

    /// The failure of an answer that is not the sandbox's: `why`, then what came back.
    pub fn not_the_sandboxs(&self, why: &str) -> Failure {
        Failure::other(format!(
            "{}: not the sandbox's answer ({}); it answered {}",
            self.asked,
            excerpt(why, 200),
            self.describe()
        ))
    }

    /// The body as JSON: the content type must be JSON (`application/json` or `+json`) and
    /// the body parse.
    pub fn json(&self) -> Outcome<Value> {
        let essence = self
            .content_type
            .as_deref()
            .and_then(|t| t.split(';').next())
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_default();
        if !(essence == "application/json" || essence.ends_with("+json")) {
            return Err(self.not_the_sandboxs("not JSON"));
        }
        serde_json::from_slice(&self.bytes)
            .map_err(|e| self.not_the_sandboxs(&format!("not JSON: {e}")))
    }

    /// The body parsed as `T` (what the command needs of it) and as it came (what `--json`
    /// prints).
    pub fn typed<T: DeserializeOwned>(&self) -> Outcome<(T, Value)> {
        let value = self.json()?;
        let typed = T::deserialize(&value).map_err(|e| self.not_the_sandboxs(&e.to_string()))?;
        Ok((typed, value))
    }

    /// [`Answer::typed`] without the JSON.
    pub fn parse<T: DeserializeOwned>(&self) -> Outcome<T> {
        self.typed().map(|(t, _)| t)
    }
}

/// Why an exchange gave no answer.
pub enum Broken {
    /// The transport failed (connection, timeout, a body cut off).
    Transport(reqwest::Error),
    /// The answer is refused before its body is read: a redirect, or too large.
    Refused(Failure),
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
        // No redirect is followed: the admin API never redirects, and a followed one would
        // carry X-Admin-Key (or X-Api-Key) and the body to wherever it points.
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Failure::other(format!("HTTP client: {e}")))?;
        Ok(Client {
            base,
            admin_key: admin_key.filter(|k| !k.is_empty()),
            http,
        })
    }

    /// `method /sandbox/v1{path}` with the admin key and an optional JSON body; a non-2xx
    /// answer is a [`Failure`]. The answer is read up to [`ANSWER_LIMIT`].
    pub async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> Outcome<Answer> {
        self.admin_limited(method, path, body, ANSWER_LIMIT).await
    }

    /// [`Client::admin`] with the answer read up to `limit` bytes.
    pub async fn admin_limited(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        limit: usize,
    ) -> Outcome<Answer> {
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
        self.send(req, "admin key", limit).await
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
        self.send(req, "tenant's API key", ANSWER_LIMIT).await
    }

    /// Sends `req`, reads the answer (up to `limit` bytes), and maps a failed one to its
    /// exit code.
    pub async fn send(
        &self,
        req: reqwest::RequestBuilder,
        credential: &str,
        limit: usize,
    ) -> Outcome<Answer> {
        let answer = match self.exchange(req, limit).await {
            Ok(answer) => answer,
            Err(Broken::Transport(e)) => return Err(self.transport(e)),
            Err(Broken::Refused(f)) => return Err(f),
        };
        if answer.status.is_success() {
            return Ok(answer);
        }
        // The sandbox's errors are JSON with a message; anything else is described.
        let message = answer.error_message();
        Err(refusal(answer.status, &message, credential, &self.base))
    }

    /// Sends `req` and reads its answer whatever the status, at most `limit` bytes; a
    /// redirect or a longer answer is refused (exit 1).
    pub async fn exchange(
        &self,
        req: reqwest::RequestBuilder,
        limit: usize,
    ) -> Result<Answer, Broken> {
        let (http, request) = req.build_split();
        let request = request.map_err(Broken::Transport)?;
        let asked = format!(
            "{} {} {}",
            self.base,
            request.method(),
            request.url().path()
        );
        let mut response = http.execute(request).await.map_err(Broken::Transport)?;
        let status = response.status();
        let header = |name| {
            response
                .headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        if status.is_redirection() {
            let location = header(reqwest::header::LOCATION)
                .map_or_else(|| "nowhere (no Location)".to_string(), |l| excerpt(&l, 200));
            return Err(Broken::Refused(Failure::other(format!(
                "{asked}: answered {} redirecting to {location}; the sandbox's admin API never redirects and the command line follows no redirect (it would carry the key and the body there): point --url / SANDBOX_URL at the sandbox itself",
                status.as_u16()
            ))));
        }
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let too_large = || {
            Broken::Refused(Failure::other(format!(
                "{asked}: the answer ({} {}) is longer than {} MiB, more than the sandbox answers: stopped reading",
                status.as_u16(),
                content_type.as_deref().map_or_else(|| "no content type".into(), |t| excerpt(t, 100)),
                limit >> 20
            )))
        };
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        let mut bytes: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(Broken::Transport)? {
            if bytes.len() + chunk.len() > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            content_type,
            bytes,
            asked,
        })
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

    /// The tenant named `key` by id or by name, as the admin API answers it (and as it
    /// came, for `--json`).
    pub async fn tenant(&self, key: &str) -> Outcome<(Tenant, Value)> {
        if key.starts_with("t_") {
            match self
                .admin(Method::GET, &format!("/tenants/{}", segment(key)), None)
                .await
            {
                Ok(answer) => {
                    let (t, raw) = answer.typed::<Tenant>()?;
                    return Ok((t.check()?, raw));
                }
                Err(f) if f.exit == Exit::NotFound => {}
                Err(f) => return Err(f),
            }
        }
        for (t, raw) in self.tenants().await? {
            if t.name == key || t.id == key {
                return Ok((t, raw));
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
        Ok(self.tenant(key).await?.0.id)
    }

    /// The id of the tenant named `key` and the admin path `/tenants/{id}{sub}` under it.
    pub async fn tenant_path(&self, key: &str, sub: &str) -> Outcome<(String, String)> {
        let id = self.tenant_id(key).await?;
        let path = format!("/tenants/{}{sub}", segment(&id));
        Ok((id, path))
    }

    /// Every tenant, oldest first (all pages), each typed and as it came. Reading stops at
    /// an empty page or one shorter than the page size; a server that repeats a tenant or
    /// still answers full pages after [`MAX_PAGES`] is not the sandbox (exit 1).
    pub async fn tenants(&self) -> Outcome<Vec<(Tenant, Value)>> {
        const SIZE: usize = 100;
        let mut all: Vec<(Tenant, Value)> = Vec::new();
        let mut ids: HashSet<String> = HashSet::new();
        for page in 1..=MAX_PAGES {
            let answer = self
                .admin(
                    Method::GET,
                    &format!("/tenants?page_size={SIZE}&page_number={page}"),
                    None,
                )
                .await?;
            let items: Vec<Value> = answer.parse()?;
            let done = items.len() < SIZE;
            for raw in items {
                let t = Tenant::deserialize(&raw)
                    .map_err(|e| answer.not_the_sandboxs(&e.to_string()))?
                    .check()?;
                if !ids.insert(t.id.clone()) {
                    return Err(Failure::other(format!(
                        "{}: the server kept returning full pages: tenant {} again on page {page}; not the sandbox's answer",
                        self.base, t.id
                    )));
                }
                all.push((t, raw));
            }
            if done {
                return Ok(all);
            }
        }
        Err(Failure::other(format!(
            "{}: the server kept returning full pages of tenants: {MAX_PAGES} pages of {SIZE} read, the most the command line reads; not the sandbox's answer",
            self.base
        )))
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
