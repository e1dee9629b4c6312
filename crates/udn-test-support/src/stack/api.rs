//! The API server of the stack: `udn-kube-sim serve` on an ephemeral loopback port, the
//! kubeconfigs pointing at it, and the objects the stack and its users create through it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use super::process::Process;

/// Starts `udn-kube-sim serve` (writing `kubeconfig`, logging to `dir/sim.log`) and returns
/// it with the address it listens on.
pub(super) fn start_sim(binary: &Path, kubeconfig: &Path, dir: &Path) -> (Process, SocketAddr) {
    let log = dir.join("sim.log");
    let stderr =
        std::fs::File::create(&log).unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let stdout = child.stdout.take().expect("the sim's stdout is piped");
    // Adopted first, so the sim is killed if its first line is not what we expect.
    let sim = Process::adopt("udn-kube-sim", child, log);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reading the sim's first line");
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected sim output {line:?}"))
        .trim_start_matches("http://")
        .parse()
        .unwrap_or_else(|e| panic!("sim address {line:?}: {e}"));
    (sim, address)
}

/// Writes a kubeconfig for the API server at `server` (no credentials).
pub(super) fn write_kubeconfig(path: &Path, server: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {server}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\ncurrent-context: sim\nusers:\n- name: sim\n  user: {{}}\n"
    );
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// A client for the API server of `kubeconfig`.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let text = Kubeconfig::read_from(kubeconfig)
        .unwrap_or_else(|e| panic!("reading {}: {e}", kubeconfig.display()));
    let config = kube::Config::from_custom_kubeconfig(text, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("loading {}: {e}", kubeconfig.display()));
    kube::Client::try_from(config).expect("a client for the kubeconfig")
}

/// Installs udn's CRDs.
pub(super) async fn install_crds(client: &kube::Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in udn_api::crd::manifests() {
        api.create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|e| panic!("creating CRD {:?}: {e}", crd.metadata.name));
    }
}

/// Creates Node `name` with InternalIP `ip`.
pub(super) async fn create_node(client: &kube::Client, name: &str, ip: &str) {
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
    }))
    .expect("a Node");
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .unwrap_or_else(|e| panic!("creating node {name}: {e}"));
}

/// Creates Namespace `name`, labelled for a primary UDN when `primary`.
pub async fn create_namespace(client: &kube::Client, name: &str, primary: bool) {
    let ns: Namespace =
        serde_json::from_value(crate::namespace(name, primary)).expect("a Namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
}

/// Creates a pod on `node`; returns its UID.
pub async fn create_pod(client: &kube::Client, namespace: &str, name: &str, node: &str) -> String {
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("a Pod");
    let pod = Api::<Pod>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("creating pod {namespace}/{name}: {e}"));
    pod.metadata.uid.expect("the server sets the pod's UID")
}
