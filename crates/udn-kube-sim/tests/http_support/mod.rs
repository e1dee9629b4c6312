//! Shared by the HTTP tests: a `kube::Client` on a fresh [`Sim`], either in-process
//! (`SimService`, no socket) or over HTTP on loopback (`http::serve`), plus small builders.
#![allow(dead_code)] // each test file uses a different part

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;
use udn_api::crd::UserDefinedNetwork;
use udn_kube_sim::http::{SimService, serve};
use udn_kube_sim::{Sim, SimConfig};

/// A client of a fresh server.
pub(crate) struct Transport {
    /// `in-process` or `http`.
    pub(crate) name: &'static str,
    /// The client.
    pub(crate) client: Client,
    /// The server behind it.
    pub(crate) sim: Sim,
    /// `http://127.0.0.1:PORT` for the HTTP transport.
    pub(crate) url: Option<String>,
}

/// A client with no socket: `kube::Client::new(SimService::new(sim), "default")`.
pub(crate) fn in_process_with(sim: Sim) -> Transport {
    Transport {
        name: "in-process",
        client: Client::new(SimService::new(sim.clone()), "default"),
        sim,
        url: None,
    }
}

/// A server on `127.0.0.1:0` (spawned on the test's runtime) and a client of its URL.
pub(crate) async fn over_http_with(sim: Sim) -> Transport {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(sim.clone(), listener));
    let config = kube::Config::new(url.parse().unwrap());
    Transport {
        name: "http",
        client: Client::try_from(config).unwrap(),
        sim,
        url: Some(url),
    }
}

/// Both transports, each on its own fresh server.
pub(crate) async fn both() -> Vec<Transport> {
    vec![
        in_process_with(Sim::new(SimConfig::default())),
        over_http_with(Sim::new(SimConfig::default())).await,
    ]
}

/// Polls `check` until it returns true; fails the test after 10 seconds.
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for the next item of a stream, failing the test after 10 seconds.
pub(crate) async fn next<S: futures::Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    use futures::StreamExt;
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("timed out waiting for the next stream item")
}

/// Creates namespace `name`.
pub(crate) async fn create_namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Creates the UserDefinedNetwork CRD and waits until its resource is served.
pub(crate) async fn install_udn_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &udn_api::crd::user_defined_network_crd(),
    )
    .await
    .unwrap();
    let udns: Api<UserDefinedNetwork> = Api::all(client.clone());
    eventually("the UDN resource to be served", || {
        let udns = udns.clone();
        async move { udns.list(&Default::default()).await.is_ok() }
    })
    .await;
}

/// A Primary Layer3 UDN as in the seed guide, with the given subnets.
pub(crate) fn layer3_udn(name: &str, namespace: &str, cidrs: &[&str]) -> UserDefinedNetwork {
    let subnets: Vec<_> = cidrs
        .iter()
        .map(|cidr| json!({"cidr": cidr, "hostSubnet": 24}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": name, "namespace": namespace, "labels": {"name": namespace}},
        "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": subnets}},
    }))
    .unwrap()
}

/// The API status of a failed call.
pub(crate) fn status_of<T: std::fmt::Debug>(result: kube::Result<T>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}
