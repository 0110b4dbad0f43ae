//! Support of the command line and console tests: the real `sandbox serve` binary on a free
//! loopback port with its own data directory, and the same binary run as the command line.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The admin key of every test server.
pub const ADMIN_KEY: &str = "adm-cli-test-key";

/// A running `sandbox serve`, killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free now (the server binds it right after; the race is the one serve.rs takes).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

impl Server {
    /// Starts the binary and waits for its banner.
    pub fn start() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_sandbox"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--admin-key", ADMIN_KEY])
            .arg("--data-dir")
            .arg(dir.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start sandbox serve");
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut banner = String::new();
        loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).unwrap_or(0);
            banner.push_str(&line);
            if n == 0 || Instant::now() > deadline {
                panic!("sandbox serve did not print its banner: {banner}");
            }
            if line.contains("/sandbox/v1/tenants") || line.contains("Existing tenants kept") {
                break;
            }
        }
        // Keep reading so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut rest = String::new();
            while reader.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
                rest.clear();
            }
        });
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// `sandbox ARGS` against this server (SANDBOX_URL and SANDBOX_ADMIN_KEY set).
    pub fn cli(&self, args: &[&str]) -> Run {
        self.cli_env(args, &[])
    }

    /// [`Server::cli`] with more environment variables.
    pub fn cli_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = cli_command();
        command
            .args(args)
            .env("SANDBOX_URL", &self.base)
            .env("SANDBOX_ADMIN_KEY", ADMIN_KEY);
        for (k, v) in env {
            command.env(k, v);
        }
        Run::of(command.output().expect("run sandbox"))
    }
}

/// The binary as the command line, with none of the user's SANDBOX_* settings.
pub fn cli_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sandbox"));
    for var in [
        "SANDBOX_URL",
        "SANDBOX_ADMIN_KEY",
        "SANDBOX_API_KEY",
        "SANDBOX_BASIC",
        "SANDBOX_TENANT",
    ] {
        command.env_remove(var);
    }
    command
}

/// What a command-line run printed and how it ended.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn of(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts exit 0 and answers stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}
