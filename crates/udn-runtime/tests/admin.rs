//! The admin server over real HTTP on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use udn_runtime::{AdminServer, METRICS_CONTENT_TYPE, Readiness, Shutdown};

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One request on a fresh connection (`Connection: close`), read to EOF.
async fn request(addr: SocketAddr, method: &str, path: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

async fn start(
    registry: Registry,
) -> (SocketAddr, Readiness, Shutdown, tokio::task::JoinHandle<()>) {
    let (server, addr) = AdminServer::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    assert_ne!(addr.port(), 0);
    let readiness = Readiness::new();
    let shutdown = Shutdown::new();
    let task = tokio::spawn(server.serve(Arc::new(registry), readiness.clone(), shutdown.clone()));
    (addr, readiness, shutdown, task)
}

#[tokio::test]
async fn metrics_expose_registered_counters() {
    let mut registry = Registry::default();
    let counter: Counter = Counter::default();
    registry.register(
        "udn_test_reconciles",
        "Reconciles in the test",
        counter.clone(),
    );
    counter.inc_by(3);
    let (addr, _, shutdown, task) = start(registry).await;

    let reply = request(addr, "GET", "/metrics").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(METRICS_CONTENT_TYPE));
    assert_eq!(
        METRICS_CONTENT_TYPE,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(
        reply
            .body
            .contains("# HELP udn_test_reconciles Reconciles in the test.\n"),
        "{}",
        reply.body
    );
    assert!(
        reply.body.contains("# TYPE udn_test_reconciles counter\n"),
        "{}",
        reply.body
    );
    assert!(
        reply.body.contains("udn_test_reconciles_total 3\n"),
        "{}",
        reply.body
    );
    assert!(reply.body.ends_with("# EOF\n"), "{}", reply.body);

    // The registry is live: later increments show up.
    counter.inc();
    let reply = request(addr, "GET", "/metrics").await;
    assert!(
        reply.body.contains("udn_test_reconciles_total 4\n"),
        "{}",
        reply.body
    );

    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn healthz_readyz_and_unknown_paths() {
    let (addr, readiness, shutdown, task) = start(Registry::default()).await;

    let reply = request(addr, "GET", "/healthz").await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "ok"));

    let reply = request(addr, "GET", "/readyz").await;
    assert_eq!((reply.status, reply.body.as_str()), (503, "not ready"));
    readiness.set_ready(true);
    assert!(readiness.is_ready());
    let reply = request(addr, "GET", "/readyz").await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "ok"));
    readiness.set_ready(false);
    assert_eq!(request(addr, "GET", "/readyz").await.status, 503);

    assert_eq!(request(addr, "GET", "/").await.status, 404);
    assert_eq!(request(addr, "GET", "/metricsx").await.status, 404);
    assert_eq!(request(addr, "GET", "/healthz/extra").await.status, 404);

    let head = request(addr, "HEAD", "/healthz").await;
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    let post = request(addr, "POST", "/healthz").await;
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));

    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    // Stopped: the port no longer accepts connections.
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn shutdown_closes_idle_keep_alive_connections() {
    let (addr, _, shutdown, task) = start(Registry::default()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buf = [0u8; 512];
    let n = stream.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 OK\r\n"));

    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    // The server side closes the kept-alive connection.
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn bind_reports_the_address_in_use() {
    let (_server, addr) = AdminServer::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let error = AdminServer::bind(addr).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("binding the admin server to {addr}")
    );
}
