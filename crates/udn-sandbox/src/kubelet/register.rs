//! The Node as kubelet registers it: created when absent (labels kubelet owns), then its
//! status (Ready, addresses, capacity) through the status subresource; a Lease in
//! `kube-node-lease` renewed as the heartbeat. Labels and annotations others set (udn's
//! components annotate nodes) are never touched.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{KubeletConfig, KubeletError};

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}

/// Creates or updates the Node and marks it Ready.
pub(super) async fn register(
    client: &kube::Client,
    config: &KubeletConfig,
) -> Result<(), KubeletError> {
    let api: Api<Node> = Api::all(client.clone());
    let name = &config.node_name;
    let api_error = |what: &str| {
        let what = format!("{what} Node {name}");
        move |source| KubeletError::Api {
            what: what.clone(),
            source,
        }
    };
    if api
        .get_opt(name)
        .await
        .map_err(api_error("getting"))?
        .is_none()
    {
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
                "beta.kubernetes.io/os": "linux",
            }},
        }))
        .map_err(|e| KubeletError::Host(e.to_string()))?;
        match api.create(&PostParams::default(), &node).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => return Err(api_error("creating")(source)),
        }
    }
    let mut addresses: Vec<serde_json::Value> = config
        .node_ips
        .iter()
        .map(|ip| json!({"type": "InternalIP", "address": ip.to_string()}))
        .collect();
    addresses.push(json!({"type": "Hostname", "address": name}));
    let stamp = now();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
    };
    let status = json!({"status": {
        "addresses": addresses,
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
        "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "nodeInfo": {
            "kubeletVersion": "v1.33.0-udn-sandbox", "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": std::env::consts::ARCH,
            "containerRuntimeVersion": "udn-sandbox://0", "kernelVersion": "", "osImage": "udn sandbox",
            "machineID": "", "systemUUID": "", "bootID": "",
        },
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(api_error("updating the status of"))?;
    renew_lease(client, config).await;
    Ok(())
}

/// The node's Lease, renewed (best effort: a missed heartbeat is retried at the next one).
pub(super) async fn renew_lease(client: &kube::Client, config: &KubeletConfig) {
    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": config.node_name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": config.node_name, "leaseDurationSeconds": 40,
                 "renewTime": jiff::Timestamp::now().to_string()},
    });
    let params = PatchParams::apply("kubelet").force();
    if let Err(error) = api
        .patch(&config.node_name, &params, &Patch::Apply(&lease))
        .await
    {
        tracing::warn!(%error, "cannot renew the node lease");
    }
}
