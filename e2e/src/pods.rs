//! Pods the scenarios create, and what they read back from them.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::Value;

use crate::Sandbox;

/// A test pod: agnhost `netexec` (HTTP on 8080 answering `/hostname` with the pod name).
#[derive(Debug, Clone)]
pub struct PodSpec<'a> {
    /// Namespace.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// The node it must run on (`nodeName`).
    pub node: &'a str,
    /// `k8s.v1.cni.cncf.io/networks`, if any.
    pub networks: Option<&'a str>,
}

impl PodSpec<'_> {
    /// The manifest.
    pub fn yaml(&self) -> String {
        let annotations = self.networks.map_or_else(String::new, |n| {
            format!("  annotations:\n    k8s.v1.cni.cncf.io/networks: '{n}'\n")
        });
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels:\n    app: {name}\n{annotations}spec:\n  nodeName: {node}\n  containers:\n  - name: agnhost\n    image: registry.k8s.io/e2e-test-images/agnhost:2.53\n    args: [\"netexec\", \"--http-port=8080\", \"--udp-port=8081\"]\n    ports:\n    - containerPort: 8080\n    readinessProbe:\n      httpGet:\n        path: /healthz\n        port: 8080\n      periodSeconds: 1\n      timeoutSeconds: 5\n      failureThreshold: 10\n",
            name = self.name,
            namespace = self.namespace,
            node = self.node,
        )
    }
}

impl Sandbox {
    /// Creates the pods and waits until every one is Ready.
    pub fn run_pods(&self, pods: &[PodSpec<'_>]) -> Result<(), String> {
        for pod in pods {
            self.apply(&pod.yaml());
        }
        for pod in pods {
            self.eventually(&format!("pod {}/{} Ready", pod.namespace, pod.name), || {
                self.pod(pod.namespace, pod.name)
                    .filter(pod_ready)
                    .map(|_| ())
            })?;
        }
        Ok(())
    }

    /// Pod `namespace/name`, if it exists.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Pod> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        self.runtime.block_on(api.get_opt(name)).ok().flatten()
    }

    /// Pod `namespace/name`'s `k8s.v1.cni.cncf.io/network-status`.
    pub fn network_status(&self, namespace: &str, name: &str) -> Result<Value, String> {
        let pod = self
            .pod(namespace, name)
            .ok_or_else(|| format!("pod {namespace}/{name} is gone"))?;
        let text = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("k8s.v1.cni.cncf.io/network-status"))
            .ok_or_else(|| format!("pod {namespace}/{name} has no network-status"))?;
        serde_json::from_str(text)
            .map_err(|e| format!("network-status of {namespace}/{name}: {e}: {text}"))
    }

    /// The first IP of pod `namespace/name` on `interface`.
    pub fn ip_on(&self, namespace: &str, name: &str, interface: &str) -> Result<String, String> {
        let status = self.network_status(namespace, name)?;
        network_status_ips(&status, interface)
            .into_iter()
            .next()
            .ok_or_else(|| format!("pod {namespace}/{name} has no IP on {interface}: {status}"))
    }
}

/// The IPs of `interface` in a network-status list.
pub fn network_status_ips(status: &Value, interface: &str) -> Vec<String> {
    status
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["interface"] == interface)
        .flat_map(|entry| entry["ips"].as_array().cloned().unwrap_or_default())
        .filter_map(|ip| ip.as_str().map(str::to_owned))
        .collect()
}

/// Whether the pod's Ready condition is True.
fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
