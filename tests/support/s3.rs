//! S3 test support: moto's S3 server on a free loopback port (single-threaded, so that
//! conditional writes are atomic as they are on S3), and a proxy in front of it that can be
//! switched to refuse every request.

use shared::store::S3Config;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

/// moto's server started by `python3 -c`, served by werkzeug with `threaded=False`.
const MOTO_SCRIPT: &str = "
import sys
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple
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
static ONE_MOTO_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running moto S3 server; killed on drop. Holds [`ONE_MOTO_AT_A_TIME`] while it lives.
pub struct Moto {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    port: u16,
    child: Child,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Moto {
    /// Starts moto (installed from tests/requirements.txt) and waits until it answers.
    pub fn start() -> Moto {
        // A test that failed while holding the lock poisons it; the next test may still run.
        let serial = ONE_MOTO_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        crate::ensure_test_tools(|| {
            crate::runs(
                "python3",
                &["-c", "import moto.moto_server.werkzeug_app, werkzeug"],
            )
        });
        set_aws_env();
        let port = free_port();
        let child = Command::new("python3")
            .args(["-c", MOTO_SCRIPT, &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 with moto[server] (pip install -r tests/requirements.txt)");
        wait_for_port(port, Duration::from_secs(60));
        Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            child,
            _serial: serial,
        }
    }

    /// Creates a bucket and answers the store configuration for it.
    pub fn bucket(&self, name: &str) -> S3Config {
        create_bucket(self.port, name);
        S3Config::new(name, "sandbox", Some(self.endpoint.clone()))
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

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// A TCP proxy to moto that, while refusing, answers every request with 403 AccessDenied,
/// and can lose the answer of one log-entry PUT after moto executed it.
pub struct Gate {
    /// `http://127.0.0.1:PORT` of the proxy.
    pub endpoint: String,
    refusing: Arc<AtomicBool>,
    swallow: Arc<AtomicBool>,
}

impl Gate {
    /// Starts a proxy in front of `moto`, letting requests through.
    pub fn start(moto: &Moto) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let refusing = Arc::new(AtomicBool::new(false));
        let swallow = Arc::new(AtomicBool::new(false));
        let (flag, lose) = (refusing.clone(), swallow.clone());
        let upstream = moto.port;
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (flag, lose) = (flag.clone(), lose.clone());
                std::thread::spawn(move || serve(conn, upstream, &flag, &lose));
            }
        });
        Gate {
            endpoint,
            refusing,
            swallow,
        }
    }

    /// Lets the next PUT of a log entry reach moto but drops moto's answer, as a network
    /// failure after the request was executed would.
    pub fn lose_next_log_put_answer(&self) {
        self.swallow.store(true, Ordering::SeqCst);
    }

    /// Whether the armed loss has happened.
    pub fn lost_an_answer(&self) -> bool {
        !self.swallow.load(Ordering::SeqCst)
    }

    /// Refuses (true) or passes (false) every request from now on.
    pub fn refuse(&self, refusing: bool) {
        self.refusing.store(refusing, Ordering::SeqCst);
    }
}

fn serve(mut client: TcpStream, upstream: u16, refusing: &AtomicBool, swallow: &AtomicBool) {
    if refusing.load(Ordering::SeqCst) {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
        let _ = write!(
            client,
            "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    // Connect upstream only once the client has sent something: moto serves one connection
    // at a time, and a connection the client's pool opened but never used would otherwise
    // hold moto's only thread and time out every other request.
    let mut head = [0u8; 512];
    let n = client.peek(&mut head).unwrap_or(0);
    if n == 0 {
        return;
    }
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    let (Ok(mut c2), Ok(mut s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c2, &mut s2);
        let _ = s2.shutdown(std::net::Shutdown::Write);
    });
    let line = String::from_utf8_lossy(&head[..n]);
    let first = line.lines().next().unwrap_or_default();
    let lose = first.starts_with("PUT ")
        && first.contains("/log/")
        && swallow
            .compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
    let mut server = server;
    if lose {
        let _ = std::io::copy(&mut server, &mut std::io::sink());
    } else {
        let _ = std::io::copy(&mut server, &mut client);
    }
    let _ = client.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
}
