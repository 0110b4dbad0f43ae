//! The local server's connection layer, the first step of the request pipeline (the rest is
//! `shared::web::pipeline`; on Lambda, API Gateway holds the connections):
//!
//! - at most `max_connections` connections are open at once; at the cap the server stops
//!   accepting, so new connections wait in the kernel's listen backlog until one closes;
//! - a request head must arrive in full within `header_timeout` of the server starting to
//!   wait for it, or the connection is closed: this closes connections that send nothing,
//!   connections that stop halfway through their headers, and idle keep-alive connections
//!   (the wait for the next request head is the same timer), so no connection holds its
//!   place for longer than that while it sends no request;
//! - bodies are bounded by the pipeline (size and time), answers by the request timeout.
//!
//! axum::serve exposes none of these bounds, so the loop is hyper's own HTTP/1 connection
//! with a timer, in the way axum::serve drives it.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use shared::config::Config;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// The connection bounds of a local server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest a request head may take to arrive (and a keep-alive connection may idle).
    pub header_timeout: Duration,
}

impl Limits {
    /// The bounds `config` sets (`SANDBOX_MAX_CONNECTIONS`, `SANDBOX_HEADER_TIMEOUT_MS`).
    pub fn of(config: &Config) -> Limits {
        Limits {
            max_connections: config.max_connections.max(1),
            header_timeout: Duration::from_millis(config.header_timeout_ms.max(1)),
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves; then stops
/// accepting, lets each connection finish the request it is serving, and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let place = tokio::select! {
            place = places.clone().acquire_owned() => match place {
                Ok(place) => place,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was taken:
                    // the listener itself is fine, so wait a little and go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(app.clone().map_request(
            |req: http::Request<hyper::body::Incoming>| req.map(axum::body::Body::new),
        ));
        let http = http.clone();
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let _place = place;
            let connection = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stopping.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
}
