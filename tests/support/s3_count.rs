//! A counting S3 proxy for cost and isolation tests: it sits in front of moto, reads each
//! HTTP request whole, records its kind (LIST, GET, HEAD, PUT, DELETE, POST) and key, and
//! forwards it on a fresh upstream connection. Rules can hold requests whose request line
//! contains a text for a while (a slow S3) or answer them 503 (a failing S3).
//!
//! Every request is sent upstream with `Connection: close`, so moto (single-threaded) answers
//! and closes, and the client sees `Connection: close` too: one request per connection, which
//! keeps the proxy free of HTTP framing on the way back.

use crate::s3::Moto;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a rule does to a matching request.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    /// Forward it only after this long.
    Hold(Duration),
    /// Answer 503 SlowDown without forwarding it.
    Fail,
}

/// One request as the proxy saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// LIST, GET, HEAD, PUT, DELETE or POST.
    pub kind: String,
    /// The request path (with query).
    pub target: String,
}

/// Requests per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// ListObjectsV2 calls.
    pub list: usize,
    /// GetObject calls.
    pub get: usize,
    /// HeadObject calls.
    pub head: usize,
    /// PutObject calls.
    pub put: usize,
    /// DeleteObject calls.
    pub delete: usize,
    /// Anything else (POST: multi-object delete).
    pub other: usize,
}

impl Counts {
    /// Price of one million such calls at S3 Standard list prices (LIST, PUT, POST: $0.005
    /// per 1,000; GET, HEAD: $0.0004 per 1,000; DELETE is free).
    pub fn dollars_per_million(&self) -> f64 {
        let class_a = (self.list + self.put + self.other) as f64 * 5.0;
        let class_b = (self.get + self.head) as f64 * 0.4;
        class_a + class_b
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LIST {} GET {} HEAD {} PUT {} DELETE {} other {} = ${:.2} per million",
            self.list,
            self.get,
            self.head,
            self.put,
            self.delete,
            self.other,
            self.dollars_per_million()
        )
    }
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    /// Notified whenever a request is added to `seen` (before any hold is applied to it).
    arrived: Condvar,
    rules: Mutex<Vec<(String, Action)>>,
}

/// The counting proxy; it runs until the test process ends. Clones share it.
#[derive(Clone)]
pub struct Counter {
    /// `http://127.0.0.1:PORT` of the proxy.
    pub endpoint: String,
    shared: Arc<Shared>,
}

impl Counter {
    /// Starts a counting proxy in front of `moto`.
    pub fn start(moto: &Moto) -> Counter {
        let upstream = moto
            .endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .expect("moto port");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let state = state.clone();
                std::thread::spawn(move || serve(conn, upstream, &state));
            }
        });
        Counter { endpoint, shared }
    }

    /// Forgets what was seen so far and answers it.
    pub fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.shared.seen.lock().expect("lock"))
    }

    /// Counts per kind of what was seen since the last `take`, and forgets it.
    pub fn take_counts(&self) -> Counts {
        count(&self.take())
    }

    /// Applies `action` to every later request whose request line contains `needle`.
    pub fn rule(&self, needle: &str, action: Action) {
        self.shared
            .rules
            .lock()
            .expect("lock")
            .push((needle.to_string(), action));
    }

    /// Waits until the proxy has seen (since the last `take`) at least `count` requests whose
    /// request path contains `needle`, and answers them; panics after `within`. A request is
    /// seen as it arrives, before a rule holds it: the signal that a held request started.
    pub fn wait_for(&self, needle: &str, count: usize, within: Duration) -> Vec<Seen> {
        let deadline = Instant::now() + within;
        let mut seen = self.shared.seen.lock().expect("lock");
        loop {
            let matching: Vec<Seen> = seen
                .iter()
                .filter(|s| s.target.contains(needle))
                .cloned()
                .collect();
            if matching.len() >= count {
                return matching;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the proxy saw {} of {count} requests for {needle} within {within:?}",
                matching.len()
            );
            seen = self
                .shared
                .arrived
                .wait_timeout(seen, left)
                .expect("lock")
                .0;
        }
    }

    /// Removes every rule.
    pub fn clear_rules(&self) {
        self.shared.rules.lock().expect("lock").clear();
    }
}

/// Counts per kind of `seen`.
pub fn count(seen: &[Seen]) -> Counts {
    let mut c = Counts::default();
    for s in seen {
        match s.kind.as_str() {
            "LIST" => c.list += 1,
            "GET" => c.get += 1,
            "HEAD" => c.head += 1,
            "PUT" => c.put += 1,
            "DELETE" => c.delete += 1,
            _ => c.other += 1,
        }
    }
    c
}

fn kind(method: &str, target: &str) -> String {
    let path = target.split('?').next().unwrap_or("");
    let is_bucket = path.trim_matches('/').split('/').count() <= 1;
    match method {
        "GET" if target.contains("list-type=") || is_bucket => "LIST".into(),
        other => other.to_string(),
    }
}

/// Reads one whole request: the head, then a body framed by Content-Length or chunks.
fn read_request(client: &mut TcpStream) -> Option<(String, Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = client.read(&mut byte).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut body = buf[head_end..].to_vec();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while body.len() < len {
            let n = client.read(&mut byte).ok()?;
            if n == 0 {
                return None;
            }
            body.extend_from_slice(&byte[..n]);
        }
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        while !body.ends_with(b"0\r\n\r\n") {
            let n = client.read(&mut byte).ok()?;
            if n == 0 {
                return None;
            }
            body.extend_from_slice(&byte[..n]);
        }
    }
    // Rewrite the connection header so moto closes after answering.
    let mut rewritten = String::new();
    for line in head.trim_end_matches("\r\n").split("\r\n") {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            rewritten.push_str(line);
            rewritten.push_str("\r\n");
        }
    }
    rewritten.push_str("Connection: close\r\n\r\n");
    let first = head.lines().next().unwrap_or_default().to_string();
    Some((first, rewritten.into_bytes(), body))
}

fn serve(mut client: TcpStream, upstream: u16, state: &Shared) {
    // One request per connection: moto answers with Connection: close.
    if let Some((first, head, body)) = read_request(&mut client) {
        let mut parts = first.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let target = parts.next().unwrap_or_default().to_string();
        let action = state.rules.lock().ok().and_then(|r| {
            r.iter()
                .find(|(n, _)| first.contains(n.as_str()))
                .map(|(_, a)| *a)
        });
        state.seen.lock().expect("lock").push(Seen {
            kind: kind(&method, &target),
            target,
        });
        state.arrived.notify_all();
        match action {
            Some(Action::Fail) => {
                let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>held by the test</Message></Error>";
                let _ = write!(
                    client,
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                return;
            }
            Some(Action::Hold(d)) => std::thread::sleep(d),
            None => {}
        }
        let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
            return;
        };
        if server.write_all(&head).is_err() || server.write_all(&body).is_err() {
            return;
        }
        let mut answer = Vec::new();
        let _ = server.read_to_end(&mut answer);
        let _ = client.write_all(&answer);
    }
    let _ = client.shutdown(std::net::Shutdown::Both);
}

/// A sandbox server on a loopback port over the S3 store `s3`, configured as the functions
/// are (`AppState::new`), signing tokens with `token_secret`. Answers its base URL, its
/// state and its data dir (removed on drop).
pub async fn serve_s3(
    s3: &shared::store::S3Config,
    token_secret: &str,
) -> (String, shared::web::AppState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = shared::config::Config::new(dir.path(), Some(crate::ADMIN_KEY.to_string()));
    config.s3 = Some(s3.clone());
    config.token_secret = Some(token_secret.to_string());
    let state = tokio::task::spawn_blocking(move || shared::web::AppState::new(config))
        .await
        .expect("join")
        .expect("state");
    let base = crate::listen(state.clone()).await;
    (base, state, dir)
}

/// A bearer token for tenant `id`, issued by the admin API of the server at `base`.
pub async fn issue_token(base: &str, id: &str) -> String {
    let r: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/sandbox/v1/tenants/{id}/tokens"))
        .header("X-Admin-Key", crate::ADMIN_KEY)
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("json");
    r["access_token"].as_str().expect("token").to_string()
}
