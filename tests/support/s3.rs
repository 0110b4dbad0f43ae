//! S3 test support: moto's S3 server on a free loopback port (single-threaded, so that
//! conditional writes are atomic as they are on S3), and a fault proxy in front of it
//! ([`Gate`]) that can refuse every request, lose an answer, hold a slow PUT past the
//! client's timeouts and forward it later, or do all of that at random ([`Chaos`]).

use shared::store::S3Config;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

/// moto's server started by `python3 -c`, served by werkzeug with `threaded=False`. It exits
/// when the test binary that started it is gone (its parent changes): the binary keeps one
/// server for all its tests and has no destructor that runs at exit.
const MOTO_SCRIPT: &str = "
import os, sys, threading, time
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple
parent = os.getppid()
def orphaned():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=orphaned, daemon=True).start()
app = DomainDispatcherApplication(create_backend_app)
run_simple('127.0.0.1', int(sys.argv[1]), app, threaded=False, use_reloader=False)
";

/// Credentials and region moto accepts (it checks none of them).
pub const AWS_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test"),
    ("AWS_SECRET_ACCESS_KEY", "test"),
    ("AWS_REGION", "us-east-1"),
];

/// Sets the AWS variables in this process once (the SDK reads them from the environment).
pub fn set_aws_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (k, v) in AWS_ENV {
            std::env::set_var(k, v);
        }
        std::env::remove_var("SANDBOX_S3_BUCKET");
    });
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn wait_for_port(port: u16, within: Duration) {
    let deadline = Instant::now() + within;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Serializes the tests that run moto servers within one test binary: several single-threaded
/// moto servers, each with sandbox processes around it, on a 2-core machine made their S3
/// timeouts fire (seen in full-suite runs), so each such test has the machine to itself.
/// Other CPU-heavy tests of the binary take it too ([`machine_to_itself`]).
static ONE_MOTO_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock a moto test holds while it runs, for a test of the same binary that would starve
/// one of them of CPU (sixteen openers at once, say): held, no moto test runs beside it.
pub fn machine_to_itself() -> std::sync::MutexGuard<'static, ()> {
    // A test that failed while holding the lock poisons it; the next test may still run.
    ONE_MOTO_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The test binary's one moto server (its process and port), started by the first test that
/// needs it and started again if it died. Starting moto costs about a second of CPU and of
/// waiting (Python imports), and the store binary's tests ask for one some sixty times, one
/// after another: they share this one, each test in buckets of its own ([`Moto`]).
static SERVER: Mutex<Option<(Child, u16)>> = Mutex::new(None);

/// Numbers the [`Moto`] handles of this binary, so that each test's buckets are new.
static HANDLES: AtomicUsize = AtomicUsize::new(0);

/// A test's use of the binary's moto server: its buckets are its own (each name given to
/// [`Moto::bucket`] is prefixed with the handle's number, so no test sees another's objects,
/// nor a PUT a fault proxy of an earlier test forwards late). Holds [`ONE_MOTO_AT_A_TIME`]
/// while it lives.
pub struct Moto {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    port: u16,
    /// Prefix of this handle's bucket names (`m<number>-`).
    prefix: String,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Moto {
    /// Starts moto (installed from tests/requirements.txt) unless the binary's server is
    /// running, and waits until it answers.
    pub fn start() -> Moto {
        let serial = machine_to_itself();
        crate::require_tool("moto's S3 server (Python)", || {
            crate::runs(
                "python3",
                &["-c", "import moto.moto_server.werkzeug_app, werkzeug"],
            )
        });
        set_aws_env();
        let mut server = SERVER.lock().unwrap_or_else(|e| e.into_inner());
        let running = match server.as_mut() {
            Some((child, _)) => matches!(child.try_wait(), Ok(None)),
            None => false,
        };
        if !running {
            let port = free_port();
            let child = Command::new("python3")
                .args(["-c", MOTO_SCRIPT, &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("python3 with moto[server] (pip install -r tests/requirements.txt)");
            wait_for_port(port, Duration::from_secs(60));
            *server = Some((child, port));
        }
        let port = server.as_ref().map(|(_, port)| *port).expect("started");
        Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            prefix: format!("m{}-", HANDLES.fetch_add(1, Ordering::SeqCst)),
            _serial: serial,
        }
    }

    /// The bucket `name` of this handle as moto knows it (a name already given out by this
    /// handle is answered as it is).
    pub fn bucket_name(&self, name: &str) -> String {
        if name.starts_with(&self.prefix) {
            name.to_string()
        } else {
            format!("{}{name}", self.prefix)
        }
    }

    /// Creates a bucket and answers the store configuration for it.
    pub fn bucket(&self, name: &str) -> S3Config {
        let name = self.bucket_name(name);
        create_bucket(self.port, &name);
        S3Config::new(&name, "sandbox", Some(self.endpoint.clone()))
    }

    /// Every key in `bucket` under `prefix` (up to 1000).
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        self.objects(bucket, prefix)
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }

    /// Every key in `bucket` under `prefix` (up to 1000), with its size in bytes.
    pub fn objects(&self, bucket: &str, prefix: &str) -> Vec<(String, u64)> {
        let bucket = self.bucket_name(bucket);
        let body = raw_request(
            self.port,
            &format!("GET /{bucket}?list-type=2&prefix={prefix} HTTP/1.1"),
        );
        let field = |s: &str, tag: &str| -> Option<String> {
            let open = format!("<{tag}>");
            let close = format!("</{tag}>");
            Some(s.split(&open).nth(1)?.split(&close).next()?.to_string())
        };
        body.split("<Contents>")
            .skip(1)
            .filter_map(|c| {
                let key = field(c, "Key")?;
                let size = field(c, "Size")?.parse().ok()?;
                Some((key, size))
            })
            .collect()
    }
}

fn raw_request(port: u16, request_line: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to moto");
    write!(
        s,
        "{request_line}\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    assert!(
        out.starts_with("HTTP/1.1 200") || out.starts_with("HTTP/1.0 200"),
        "{out}"
    );
    out
}

fn create_bucket(port: u16, name: &str) {
    raw_request(port, &format!("PUT /{name} HTTP/1.1"));
}

/// Random faults for [`Gate::chaos`], each a probability in per mille of requests, decided
/// per request from a seeded sequence (the n-th request the proxy sees gets the n-th draw).
#[derive(Debug, Clone, Copy)]
pub struct Chaos {
    /// Seed of the sequence of draws.
    pub seed: u64,
    /// PUTs held for `hold` and forwarded afterwards (the client has given up by then).
    pub hold_put: u32,
    /// Requests forwarded and executed whose answer is dropped (connection closed).
    pub drop_answer: u32,
    /// Requests answered 500 InternalError without reaching S3.
    pub error_500: u32,
    /// Requests answered 503 SlowDown without reaching S3.
    pub error_503: u32,
    /// Connections closed as soon as a request arrives, before it reaches S3.
    pub reset: u32,
    /// How long a held PUT waits before it is forwarded.
    pub hold: Duration,
}

/// How many requests each fault hit (see [`Gate::counts`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests forwarded normally.
    pub passed: usize,
    /// PUTs held and forwarded later.
    pub held: usize,
    /// Held PUTs forwarded so far.
    pub held_forwarded: usize,
    /// Answers dropped after S3 executed the request.
    pub dropped_answers: usize,
    /// 500 and 503 answered by the proxy.
    pub errors: usize,
    /// Connections closed before forwarding.
    pub resets: usize,
}

#[derive(Default)]
struct Counters {
    passed: AtomicUsize,
    held: AtomicUsize,
    held_forwarded: AtomicUsize,
    dropped_answers: AtomicUsize,
    errors: AtomicUsize,
    resets: AtomicUsize,
}

#[derive(Default)]
struct GateState {
    refusing: AtomicBool,
    swallow: AtomicBool,
    /// Every log-entry PUT is held this long (`hold_log_puts`).
    hold_all: Mutex<Option<Duration>>,
    /// GETs of log entries answered 500.
    fail_log_gets: AtomicBool,
    /// Hold armed for the next log-entry PUT: how long.
    hold_next: Mutex<Option<Duration>>,
    /// Body of the held log-entry PUT: the SDK's retries of it (same bytes) are held too.
    holding: Mutex<Option<(Vec<u8>, Duration)>>,
    chaos: Mutex<Option<Chaos>>,
    /// Every request waits this long before it is forwarded (`Gate::latency`).
    latency: Mutex<Option<Duration>>,
    draws: AtomicU64,
    counts: Counters,
}

/// A fault proxy in front of moto. It speaks HTTP/1.1 one request per connection (it asks
/// moto for `Connection: close`, so the client does not reuse the connection either) and
/// decides for each request whether to forward it or which fault to play.
pub struct Gate {
    /// `http://127.0.0.1:PORT` of the proxy.
    pub endpoint: String,
    state: Arc<GateState>,
}

impl Gate {
    /// Starts a proxy in front of `moto`, letting requests through.
    pub fn start(moto: &Moto) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(GateState::default());
        let shared = state.clone();
        let upstream = moto.port;
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let _ = conn.set_nodelay(true);
                let state = shared.clone();
                std::thread::spawn(move || serve(conn, upstream, &state));
            }
        });
        Gate { endpoint, state }
    }

    /// Lets the next PUT of a log entry reach moto but drops moto's answer, as a network
    /// failure after the request was executed would.
    pub fn lose_next_log_put_answer(&self) {
        self.state.swallow.store(true, Ordering::SeqCst);
    }

    /// Whether the armed loss has happened.
    pub fn lost_an_answer(&self) -> bool {
        !self.state.swallow.load(Ordering::SeqCst)
    }

    /// Refuses (true) or passes (false) every request from now on.
    pub fn refuse(&self, refusing: bool) {
        self.state.refusing.store(refusing, Ordering::SeqCst);
    }

    /// Makes the next log-entry PUT slow: it and every retry of it (the same bytes) are held
    /// for `hold`, then forwarded to moto, which executes them; their answers are dropped
    /// (the client gave up long before). Other requests pass.
    pub fn hold_next_log_put(&self, hold: Duration) {
        *lock(&self.state.hold_next) = Some(hold);
    }

    /// Holds every log-entry PUT (fences included) for `hold`, then forwards it (`None`:
    /// stop holding new ones).
    pub fn hold_log_puts(&self, hold: Option<Duration>) {
        *lock(&self.state.hold_all) = hold;
    }

    /// Answers every GET of a log entry 500 (true) or passes them (false), from the moment
    /// a log PUT is held: the GETs that check the held PUT's outcome fail, while the writer's
    /// freshness check before its PUT (a GET of the same kind) still passes.
    pub fn fail_log_gets(&self, failing: bool) {
        self.state.fail_log_gets.store(failing, Ordering::SeqCst);
    }

    /// Adds `latency` to every request from now on (it waits that long in the proxy before
    /// it is forwarded), as a distant S3 would (`None`: none). Requests wait in parallel.
    pub fn latency(&self, latency: Option<Duration>) {
        *lock(&self.state.latency) = latency;
    }

    /// Plays random faults from now on (`None`: none).
    pub fn chaos(&self, chaos: Option<Chaos>) {
        *lock(&self.state.chaos) = chaos;
    }

    /// What the proxy did so far.
    pub fn counts(&self) -> FaultCounts {
        let c = &self.state.counts;
        FaultCounts {
            passed: c.passed.load(Ordering::SeqCst),
            held: c.held.load(Ordering::SeqCst),
            held_forwarded: c.held_forwarded.load(Ordering::SeqCst),
            dropped_answers: c.dropped_answers.load(Ordering::SeqCst),
            errors: c.errors.load(Ordering::SeqCst),
            resets: c.resets.load(Ordering::SeqCst),
        }
    }

    /// Waits until the proxy is holding a PUT (one held and not forwarded yet): its writer
    /// is inside the PUT, under the tenant's writer lock.
    pub fn wait_until_holding(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let c = self.counts();
            if c.held > c.held_forwarded {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no PUT held within {within:?}: {c:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until every held PUT has been forwarded to moto (and executed or refused).
    pub fn wait_for_held(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let c = self.counts();
            if c.held_forwarded >= c.held {
                return;
            }
            assert!(Instant::now() < deadline, "held PUTs not forwarded: {c:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the proxy does with one request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Pass,
    Refuse,
    Hold(Duration),
    DropAnswer,
    Error(u16),
    Reset,
}

/// SplitMix64: a small, good-enough mixer for seeded draws (no dependency needed).
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One request read from the client: head (with `Connection: close`) and body.
struct Request {
    method: String,
    path: String,
    head: Vec<u8>,
    body: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One HTTP message read off a stream: its head (up to and including the blank line) and
/// its body, framed by `Content-Length` or chunked encoding.
struct Message {
    head: Vec<u8>,
    body: Vec<u8>,
}

/// Reads one message: the head, then a body of `Content-Length` bytes, or a chunked body up to
/// its last chunk and trailers, or (neither) none when `bodiless_without_length`, else the
/// rest of the stream. `bodiless` says the message has no body whatever its head says (the
/// answer to a HEAD, a 204, a 304 or an interim 1xx). `buf` holds bytes read off the stream
/// and not yet used: those of a next message stay in it (an interim answer and the final one
/// may arrive in one read). `None` when the stream closed before the message ended or failed.
fn read_message(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    bodiless: &dyn Fn(&str) -> bool,
    bodiless_without_length: bool,
) -> Option<Message> {
    let mut chunk = [0u8; 8192];
    let mut more = |buf: &mut Vec<u8>| -> Option<bool> {
        let n = stream.read(&mut chunk).ok()?;
        buf.extend_from_slice(&chunk[..n]);
        Some(n > 0)
    };
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if !more(buf)? {
            return None;
        }
    };
    let head: Vec<u8> = buf.drain(..head_end).collect();
    let head_text = String::from_utf8_lossy(&head).to_string();
    if bodiless(&head_text) {
        return Some(Message {
            head,
            body: Vec::new(),
        });
    }
    let mut length = None;
    let mut chunked = false;
    for line in head_text.split("\r\n").skip(1) {
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let body = match (length, chunked) {
        (Some(n), false) => {
            while buf.len() < n {
                if !more(buf)? {
                    return None;
                }
            }
            buf.drain(..n).collect()
        }
        (_, true) => {
            while !((buf.starts_with(b"0\r\n") || find(buf, b"\r\n0\r\n").is_some())
                && buf.ends_with(b"\r\n\r\n"))
            {
                if !more(buf)? {
                    return None;
                }
            }
            std::mem::take(buf)
        }
        (None, false) if bodiless_without_length => Vec::new(),
        (None, false) => {
            while more(buf)? {}
            std::mem::take(buf)
        }
    };
    Some(Message { head, body })
}

/// Reads one request from the client (see [`read_message`]; a request without a length has
/// no body), its head rewritten to ask moto for `Connection: close`. `None` when the client
/// closed or sent garbage.
fn read_request(client: &mut TcpStream) -> Option<Request> {
    let message = read_message(client, &mut Vec::new(), &|_| false, true)?;
    let head_text = String::from_utf8_lossy(&message.head).to_string();
    let mut lines = head_text.split("\r\n");
    let first = lines.next()?.to_string();
    let mut parts = first.split(' ');
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut head = format!("{first}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        if line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    Some(Request {
        method,
        path,
        head: head.into_bytes(),
        body: message.body,
    })
}

/// Sends `req` to moto on a new connection and answers moto's whole answer, read up to the
/// end of its body as its head frames it, not up to the connection's close: moto (werkzeug)
/// closes a `Connection: close` connection about 10 ms after its answer, which every request
/// through the proxy paid on top of the latency it was given.
fn forward(req: &Request, upstream: u16) -> Option<Vec<u8>> {
    let mut server = TcpStream::connect(("127.0.0.1", upstream)).ok()?;
    // One write, no Nagle: head and body in two writes waited for moto's delayed ACK (about
    // 40 ms per PUT), which the latency bench measured as S3 time.
    let _ = server.set_nodelay(true);
    server
        .write_all(&[req.head.as_slice(), &req.body].concat())
        .ok()?;
    let status = |head: &str| head.split(' ').nth(1).unwrap_or("").to_string();
    let head_only = req.method == "HEAD";
    let bodiless = |head: &str| {
        let status = status(head);
        head_only || status == "204" || status == "304" || status.starts_with('1')
    };
    let mut buf = Vec::new();
    loop {
        let answer = read_message(&mut server, &mut buf, &bodiless, false)?;
        // An interim answer (a `100 Continue` to a request that said `Expect`) is not the
        // answer: the client's whole body was read and sent already.
        if !status(&String::from_utf8_lossy(&answer.head)).starts_with('1') {
            return Some([answer.head, answer.body].concat());
        }
    }
}

fn decide(state: &GateState, req: &Request) -> Fault {
    if state.refusing.load(Ordering::SeqCst) {
        return Fault::Refuse;
    }
    let log_put = req.method == "PUT" && req.path.contains("/log/");
    if req.method == "GET"
        && req.path.contains("/log/0")
        && state.fail_log_gets.load(Ordering::SeqCst)
        && lock(&state.holding).is_some()
    {
        return Fault::Error(500);
    }
    if log_put {
        if let Some(hold) = *lock(&state.hold_all) {
            return Fault::Hold(hold);
        }
        let mut holding = lock(&state.holding);
        if let Some((body, hold)) = holding.as_ref() {
            if *body == req.body {
                return Fault::Hold(*hold);
            }
        }
        if let Some(hold) = lock(&state.hold_next).take() {
            *holding = Some((req.body.clone(), hold));
            return Fault::Hold(hold);
        }
        if state
            .swallow
            .compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Fault::DropAnswer;
        }
    }
    let Some(chaos) = *lock(&state.chaos) else {
        return Fault::Pass;
    };
    let n = state.draws.fetch_add(1, Ordering::SeqCst);
    let mut draw = u32::try_from(splitmix(chaos.seed ^ splitmix(n)) % 1000).unwrap_or(0);
    let mut hit = |per_mille: u32| {
        let hit = draw < per_mille;
        draw = draw.saturating_sub(per_mille);
        hit
    };
    if req.method == "PUT" && hit(chaos.hold_put) {
        Fault::Hold(chaos.hold)
    } else if hit(chaos.drop_answer) {
        Fault::DropAnswer
    } else if hit(chaos.error_500) {
        Fault::Error(500)
    } else if hit(chaos.error_503) {
        Fault::Error(503)
    } else if hit(chaos.reset) {
        Fault::Reset
    } else {
        Fault::Pass
    }
}

fn answer_error(client: &mut TcpStream, status: u16) {
    let (reason, code) = match status {
        403 => ("Forbidden", "AccessDenied"),
        503 => ("Service Unavailable", "SlowDown"),
        _ => ("Internal Server Error", "InternalError"),
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{reason}</Message></Error>"
    );
    let _ = write!(
        client,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn serve(mut client: TcpStream, upstream: u16, state: &GateState) {
    // Connect upstream only once a whole request arrived: moto serves one connection at a
    // time, and a connection the client's pool opened but never used would otherwise hold
    // moto's only thread and time out every other request.
    let Some(req) = read_request(&mut client) else {
        return;
    };
    let counts = &state.counts;
    let latency = *lock(&state.latency);
    if let Some(latency) = latency {
        std::thread::sleep(latency);
    }
    match decide(state, &req) {
        Fault::Pass => {
            counts.passed.fetch_add(1, Ordering::SeqCst);
            if let Some(answer) = forward(&req, upstream) {
                let _ = client.write_all(&answer);
            }
        }
        Fault::Refuse => answer_error(&mut client, 403),
        Fault::Error(status) => {
            counts.errors.fetch_add(1, Ordering::SeqCst);
            answer_error(&mut client, status);
        }
        Fault::Reset => {
            counts.resets.fetch_add(1, Ordering::SeqCst);
        }
        Fault::DropAnswer => {
            counts.dropped_answers.fetch_add(1, Ordering::SeqCst);
            let _ = forward(&req, upstream);
        }
        Fault::Hold(hold) => {
            counts.held.fetch_add(1, Ordering::SeqCst);
            // The client times out and goes away meanwhile; the request lands anyway.
            std::thread::sleep(hold);
            let _ = forward(&req, upstream);
            counts.held_forwarded.fetch_add(1, Ordering::SeqCst);
        }
    }
    let _ = client.shutdown(std::net::Shutdown::Both);
}

/// Opens an S3-backed store in a fresh temporary data directory.
pub fn open_store(config: &S3Config) -> (shared::store::Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        shared::store::Store::open_with(dir.path(), Some(config.clone())).expect("open S3 store");
    (store, dir)
}

/// A sandbox server on a loopback port over an S3 store on `config`, in a fresh data
/// directory (one "environment" of a multi-environment test).
pub async fn server(config: &S3Config) -> crate::TestServer {
    let cfg = config.clone();
    let (store, dir) = tokio::task::spawn_blocking(move || open_store(&cfg))
        .await
        .expect("join");
    let config = shared::config::Config::new(dir.path(), Some(crate::ADMIN_KEY.into()));
    let state = shared::web::AppState::from_parts(store, config);
    let base = crate::listen(state.clone()).await;
    crate::TestServer::from_parts(base, state, dir)
}

/// Waits (at most `within`) until no compaction of `tenant` runs in `store`: the snapshot a
/// write made due is uploaded and the older ones deleted (`TenantDb::is_compacting`).
pub fn wait_for_compaction(store: &shared::store::Store, tenant: &str, within: Duration) {
    let db = store.tenant_db(tenant).expect("tenant db");
    let deadline = Instant::now() + within;
    while db.is_compacting() {
        assert!(
            Instant::now() < deadline,
            "a compaction of {tenant} still runs after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Inserts one row into a tenant's `reasons` table (one write; not retried).
pub fn try_insert_reason(
    store: &shared::store::Store,
    tenant: &str,
    name: &str,
) -> shared::Result<()> {
    let db = store.tenant_db(tenant)?;
    let name = name.to_string();
    db.write_blocking(move |tx| {
        tx.execute("INSERT INTO reasons (name) VALUES (?1)", [&name])?;
        Ok(())
    })
}

/// The names in a tenant's `reasons` table, sorted (duplicates kept).
pub fn reason_names(store: &shared::store::Store, tenant: &str) -> Vec<String> {
    let db = store.tenant_db(tenant).expect("tenant db");
    db.read_blocking(|conn| {
        let mut stmt = conn.prepare("SELECT name FROM reasons ORDER BY name")?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(names)
    })
    .expect("reasons")
}

/// Size of one row [`fill_reasons`] writes, in bytes (about).
pub const FILL_ROW_BYTES: usize = 1000;
/// Rows per write of [`fill_reasons`] (5 MB per log entry).
pub const FILL_ROWS_PER_WRITE: usize = 5000;

/// Fills a tenant's `reasons` table with `size_mb` MB of rows, in writes of at most
/// [`FILL_ROWS_PER_WRITE`] rows (the benches' large tenants).
pub fn fill_reasons(store: &shared::store::Store, tenant: &str, size_mb: usize) {
    let db = store.tenant_db(tenant).expect("db");
    let rows = size_mb * 1_000_000 / FILL_ROW_BYTES;
    let mut start = 0;
    while start < rows {
        let end = (start + FILL_ROWS_PER_WRITE).min(rows);
        db.write_blocking(|tx| {
            let mut stmt = tx.prepare("INSERT INTO reasons (name) VALUES (?1)")?;
            for i in start..end {
                stmt.execute([format!("{i:09}-{}", "x".repeat(FILL_ROW_BYTES - 10))])?;
            }
            Ok(())
        })
        .expect("fill");
        start = end;
    }
}

/// The `q` quantile (0 to 1) of `v`, nearest rank (NaN for no value): the S3 benches' p50
/// and p99.
pub fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}
