//! A Lambda Runtime API emulator for the end-to-end Lambda test: each function gets its own
//! execution environment, a loopback HTTP server speaking the runtime protocol
//! (<https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html>) and the real function
//! binary started with `AWS_LAMBDA_RUNTIME_API` pointing at it, so the binary's own
//! `lambda_runtime` client polls `/invocation/next` and posts `/response`, `/error` or
//! `/init/error` exactly as it does on AWS.
//!
//! Invariants: an environment serves one invocation at a time (Lambda's behaviour without
//! `AWS_LAMBDA_MAX_CONCURRENCY`); every invocation ends with exactly one outcome: the
//! function's response, its error, an init error, the process exiting, or the emulator's
//! deadline; a binary is started at its function's first invocation (so that invocation's time
//! includes the cold start, as on Lambda) and killed when the emulator is dropped. Only
//! buffered responses are emulated (what `lambda_http::run` sends); a streamed one fails the
//! invocation with a message saying so. Each environment runs in a directory of its own (its
//! working directory), as each Lambda environment has its own `/tmp`: nothing on disk is
//! shared between functions.

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

/// How long an invocation may take: the functions' `Timeout` in template.yaml. The deadline
/// header tells the function; the emulator itself waits [`WAIT`] (a loaded test machine and
/// a single-threaded moto are slower than AWS, and a cold start counts).
pub const TIMEOUT: Duration = Duration::from_secs(29);
const WAIT: Duration = Duration::from_secs(120);
/// The functions' `MemorySize` in template.yaml.
const MEMORY_MB: &str = "512";
const ACCOUNT: &str = "123456789012";
const REGION: &str = "us-east-1";

/// The outcome of one invocation as the runtime API saw it: the function's response
/// document, or why there is none (function error, init error, exit, deadline).
type Outcome = Result<Value, String>;

/// One event waiting for the function's next `GET /invocation/next`.
struct Invocation {
    id: String,
    event: Value,
}

/// The runtime API state of one execution environment.
struct Api {
    function: String,
    queue: tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>,
    /// Invocations handed out or queued, by request id, with where their outcome goes.
    pending: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    /// The diagnostic the function posted to `/init/error`, if it did.
    init_error: Mutex<Option<String>>,
}

impl Api {
    /// Takes the invocation `id` out of the pending ones (its waiter, if still there).
    fn forget(&self, id: &str) -> Option<oneshot::Sender<Outcome>> {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
    }

    /// Sends `outcome` to the invocation `id`; false when no such invocation is pending.
    fn finish(&self, id: &str, outcome: Outcome) -> bool {
        match self.forget(id) {
            Some(waiter) => {
                // The invoker may have given up (deadline); the call was still valid.
                let _ = waiter.send(outcome);
                true
            }
            None => false,
        }
    }
}

/// Hands `outcome` to the invocation `id` waits on: 202, or 400 `InvalidRequestID` when no
/// such invocation is pending (unknown, or already answered or timed out).
fn settle(api: &Api, id: &str, outcome: Outcome) -> Response {
    if api.finish(id, outcome) {
        accepted()
    } else {
        api_error(
            StatusCode::BAD_REQUEST,
            "InvalidRequestID",
            &format!("no invocation {id} is pending"),
        )
    }
}

/// The runtime API's error document (`{errorMessage, errorType}`) with `status`.
fn api_error(status: StatusCode, error_type: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"errorMessage": message, "errorType": error_type})),
    )
        .into_response()
}

fn accepted() -> Response {
    (StatusCode::ACCEPTED, Json(json!({"status": "OK"}))).into_response()
}

fn epoch_ms(at: SystemTime) -> u128 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// `GET /2018-06-01/runtime/invocation/next`: waits for the next event and hands it out with
/// the headers the Lambda service sends.
async fn next(State(api): State<Arc<Api>>) -> Response {
    let Some(invocation) = api.queue.lock().await.recv().await else {
        return api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ServiceException",
            "the emulator is shutting down",
        );
    };
    let deadline = epoch_ms(SystemTime::now() + TIMEOUT);
    let now = epoch_ms(SystemTime::now());
    let headers = [
        ("lambda-runtime-aws-request-id", invocation.id.clone()),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            format!(
                "arn:aws:lambda:{REGION}:{ACCOUNT}:function:{}",
                api.function
            ),
        ),
        (
            "lambda-runtime-trace-id",
            format!(
                "Root=1-{:08x}-{:024x};Parent={:016x};Sampled=0",
                now / 1000,
                now,
                now as u64 ^ 0x5eed
            ),
        ),
    ];
    let mut response = Json(invocation.event).into_response();
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// `POST /2018-06-01/runtime/invocation/{id}/response`.
async fn respond(
    State(api): State<Arc<Api>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let streamed = headers
        .get("lambda-runtime-function-response-mode")
        .is_some_and(|mode| mode == "streaming");
    let outcome = if streamed {
        Err("a streamed response (the emulator only takes buffered ones)".to_string())
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            format!(
                "a response that is not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        })
    };
    settle(&api, &id, outcome)
}

/// `POST /2018-06-01/runtime/invocation/{id}/error`: the function's error diagnostic.
async fn fail(
    State(api): State<Arc<Api>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let error_type = headers
        .get("lambda-runtime-function-error-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown");
    let message = format!(
        "function error ({error_type}): {}",
        String::from_utf8_lossy(&body)
    );
    settle(&api, &id, Err(message))
}

/// `POST /2018-06-01/runtime/init/error`: the function could not start; every pending and
/// later invocation fails with its diagnostic.
async fn init_error(State(api): State<Arc<Api>>, body: Bytes) -> Response {
    let message = format!("init error: {}", String::from_utf8_lossy(&body));
    *api.init_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
    let waiters: Vec<_> = api
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .collect();
    for (_, waiter) in waiters {
        let _ = waiter.send(Err(message.clone()));
    }
    accepted()
}

async fn unknown_call() -> Response {
    api_error(
        StatusCode::NOT_FOUND,
        "UnknownCall",
        "not a call of the Lambda Runtime API this emulator serves",
    )
}

/// One function's execution environment: its runtime API server and its process.
struct Environment {
    api: Arc<Api>,
    queue: mpsc::UnboundedSender<Invocation>,
    child: Child,
    log: PathBuf,
    server: tokio::task::JoinHandle<()>,
}

impl Environment {
    /// Serves the runtime API on a free loopback port and starts `binary` against it.
    async fn start(
        function: &str,
        binary: &Path,
        vars: &[(String, String)],
        dir: &Path,
    ) -> Result<Environment, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let log = dir.join("output.log");
        let (queue, receiver) = mpsc::unbounded_channel();
        let api = Arc::new(Api {
            function: function.to_string(),
            queue: tokio::sync::Mutex::new(receiver),
            pending: Mutex::new(HashMap::new()),
            init_error: Mutex::new(None),
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .fallback(unknown_call)
            .with_state(api.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind the runtime API: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("runtime API address: {e}"))?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let output = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let stderr = output
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(binary)
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", function)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", MEMORY_MB)
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{function}"),
            )
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "e2e/[$LATEST]emulator")
            .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
            .env("AWS_EXECUTION_ENV", "AWS_Lambda_provided.al2023")
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .stdout(output)
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("start {}: {e}", binary.display()))?;
        Ok(Environment {
            api,
            queue,
            child,
            log,
            server,
        })
    }

    /// Sends `event` as invocation `id` and waits for its outcome.
    async fn invoke(&mut self, id: String, event: Value) -> Outcome {
        if let Some(error) = self
            .api
            .init_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Err(error);
        }
        let (waiter, outcome) = oneshot::channel();
        self.api
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), waiter);
        self.queue
            .send(Invocation {
                id: id.clone(),
                event,
            })
            .map_err(|_| "the runtime API is gone".to_string())?;
        let mut outcome = outcome;
        tokio::select! {
            biased;
            posted = &mut outcome => {
                posted.unwrap_or_else(|_| Err(format!("invocation {id} was dropped")))
            }
            status = self.child.wait() => {
                // An outcome posted just before the exit still counts.
                if let Ok(posted) = outcome.try_recv() {
                    return posted;
                }
                self.api.forget(&id);
                Err(format!(
                    "the process exited ({status:?}) during invocation {id}; its output:\n{}",
                    read_log(&self.log)
                ))
            }
            () = tokio::time::sleep(WAIT) => {
                self.api.forget(&id);
                Err(format!(
                    "no answer to invocation {id} within {WAIT:?}; the process's output:\n{}",
                    read_log(&self.log)
                ))
            }
        }
    }
}

fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_else(|e| format!("({}: {e})", log.display()))
}

impl Drop for Environment {
    fn drop(&mut self) {
        // kill_on_drop stops the process; the server task goes with it.
        self.server.abort();
    }
}

/// The emulator: one environment per function, started at the function's first invocation.
pub struct LambdaRuntime {
    bin_dir: PathBuf,
    vars: Vec<(String, String)>,
    work_dir: PathBuf,
    environments: HashMap<String, Environment>,
    invocations: u64,
}

impl LambdaRuntime {
    /// An emulator that runs `bin_dir/<function>` with `vars` in its environment (plus the
    /// variables the Lambda service sets), in the directory `work_dir/<function>/`, its
    /// output going to `output.log` there.
    pub fn new(bin_dir: &Path, vars: Vec<(String, String)>, work_dir: &Path) -> LambdaRuntime {
        LambdaRuntime {
            bin_dir: bin_dir.to_path_buf(),
            vars,
            work_dir: work_dir.to_path_buf(),
            environments: HashMap::new(),
            invocations: 0,
        }
    }

    /// Invokes `function` with `event` (starting its process first if this is its first
    /// invocation) and answers the function's response document, or why there is none (with
    /// the process's log where it helps).
    pub async fn invoke(&mut self, function: &str, event: Value) -> Outcome {
        if !self.environments.contains_key(function) {
            let binary = self.bin_dir.join(function);
            let dir = self.work_dir.join(function);
            let environment = Environment::start(function, &binary, &self.vars, &dir).await?;
            self.environments.insert(function.to_string(), environment);
        }
        self.invocations += 1;
        // A UUID-shaped request id, as Lambda's are, unique within this emulator.
        let id = format!("00000000-0000-4000-8000-{:012x}", self.invocations);
        match self.environments.get_mut(function) {
            Some(environment) => environment.invoke(id, event).await,
            None => Err(format!("no environment for {function}")),
        }
    }
}
