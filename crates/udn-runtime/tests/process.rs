//! `RuntimeArgs::start`: signal handlers, the client, the component's metrics served by the
//! admin server, readiness as the component says, and a stop that ends the server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::net::SocketAddr;

use clap::Parser;
use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use udn_runtime::{RuntimeArgs, StartError};

#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    runtime: RuntimeArgs,
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.unwrap();
    reply
}

#[tokio::test]
async fn the_components_metrics_are_served_and_stop_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // Never contacted: building the client does not connect.
    udn_kube_sim::kubeconfig::write(&kubeconfig, "http://127.0.0.1:9").unwrap();
    let args = Args::try_parse_from([
        "test",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--admin-bind-address",
        "127.0.0.1:0",
    ])
    .unwrap();
    let (started, counter) = args
        .runtime
        .start(|registry| {
            let counter = Counter::<u64>::default();
            registry.register("udn_test_things", "Things", counter.clone());
            counter
        })
        .await
        .unwrap();
    counter.inc();
    let addr = started.admin_addr;
    let metrics = get(addr, "/metrics").await;
    assert!(metrics.contains("udn_test_things_total 1"), "{metrics}");
    assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
    started.readiness.set_ready(true);
    assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
    started.stop().await;
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn a_missing_kubeconfig_is_a_client_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent");
    let args = Args::try_parse_from([
        "test",
        "--kubeconfig",
        missing.to_str().unwrap(),
        "--admin-bind-address",
        "127.0.0.1:0",
    ])
    .unwrap();
    let error = args.runtime.start(|_| ()).await.err().unwrap();
    assert!(matches!(error, StartError::Client(_)), "{error:?}");
    assert_eq!(error.to_string(), "connecting to the API server");
}
