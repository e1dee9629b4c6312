//! `kube_client` with an explicit kubeconfig, against udn-kube-sim served on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;
use tokio::net::TcpListener;
use udn_kube_sim::{ResourceKey, Sim, SimConfig, WriteOptions};
use udn_runtime::{ClientError, kube_client};

#[tokio::test]
async fn a_kubeconfig_file_selects_the_server() {
    let sim = Sim::new(SimConfig::default());
    let namespaces = ResourceKey {
        group: String::new(),
        plural: "namespaces".to_owned(),
    };
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ovn-kubernetes"}});
    sim.create(&namespaces, None, namespace, &WriteOptions::default())
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(udn_kube_sim::http::serve(sim, listener));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    udn_kube_sim::kubeconfig::write(&path, &url).unwrap();
    let client = kube_client(Some(&path)).await.unwrap();
    let names: Vec<_> = Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|ns| ns.metadata.name)
        .collect();
    assert_eq!(names, ["ovn-kubernetes"]);
    server.abort();
}

#[tokio::test]
async fn a_missing_kubeconfig_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent");
    let error = kube_client(Some(&path)).await.err().unwrap();
    assert!(
        matches!(error, ClientError::ReadKubeconfig { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("reading kubeconfig {}", path.display())
    );
    // The reason is in the source chain.
    let source = std::error::Error::source(&error).unwrap().to_string();
    assert!(!source.is_empty());
}

#[tokio::test]
async fn a_kubeconfig_without_a_current_context_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    let error = kube_client(Some(&path)).await.err().unwrap();
    assert!(
        matches!(error, ClientError::LoadKubeconfig { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "loading the current context of kubeconfig {}",
            path.display()
        )
    );
}
