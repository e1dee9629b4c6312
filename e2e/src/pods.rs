//! Pods the scenarios create, and what they read back from them.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::Value;

use crate::Sandbox;

/// A test pod: agnhost `netexec` (HTTP on 8080 answering `/hostname` with the pod name,
/// UDP on 8081 answering `hostname`) with an httpGet readiness probe.
#[derive(Debug, Clone, Default)]
pub struct PodSpec<'a> {
    /// Namespace.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// The node it must run on (`nodeName`).
    pub node: &'a str,
    /// `k8s.v1.cni.cncf.io/networks`, if any.
    pub networks: Option<&'a str>,
    /// More annotations.
    pub annotations: &'a [(&'a str, &'a str)],
    /// Whether it also has an httpGet liveness probe (on the same port as readiness).
    pub liveness: bool,
    /// Labels besides `app: <name>`.
    pub labels: &'a [(&'a str, &'a str)],
}

impl PodSpec<'_> {
    /// The manifest (JSON, which `kubectl apply` takes as YAML).
    pub fn yaml(&self) -> String {
        let mut annotations = serde_json::Map::new();
        if let Some(networks) = self.networks {
            annotations.insert("k8s.v1.cni.cncf.io/networks".into(), networks.into());
        }
        for (key, value) in self.annotations {
            annotations.insert((*key).into(), (*value).into());
        }
        // Tolerant of a loaded machine: a probe answer may take seconds when the two cores
        // are busy building, and a flapping Ready is not what the scenarios check.
        let probe = serde_json::json!({
            "httpGet": {"path": "/healthz", "port": 8080},
            "periodSeconds": 1,
            "timeoutSeconds": 5,
            "failureThreshold": 10,
        });
        let mut container = serde_json::json!({
            "name": "agnhost",
            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
            "args": ["netexec", "--http-port=8080", "--udp-port=8081"],
            "ports": [{"containerPort": 8080}, {"containerPort": 8081, "protocol": "UDP"}],
            "readinessProbe": probe,
        });
        if self.liveness {
            container["livenessProbe"] = probe;
        }
        let mut labels = serde_json::Map::new();
        labels.insert("app".into(), self.name.into());
        for (key, value) in self.labels {
            labels.insert((*key).into(), (*value).into());
        }
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": annotations,
            },
            "spec": {"nodeName": self.node, "containers": [container]},
        })
        .to_string()
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
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The sum of the pod's container restarts.
pub fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |c| c.iter().map(|c| c.restart_count).sum())
}

impl Sandbox {
    /// The (reason, message) of the Warning Events about `kind` `namespace/name`.
    pub fn warnings(&self, namespace: &str, kind: &str, name: &str) -> Vec<(String, String)> {
        let api: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.client.clone(), namespace);
        let selector =
            format!("involvedObject.kind={kind},involvedObject.name={name},type=Warning");
        let params = kube::api::ListParams::default().fields(&selector);
        self.runtime
            .block_on(api.list(&params))
            .map(|list| {
                list.items
                    .into_iter()
                    .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `kubectl delete <what> --wait=false` in `namespace` (an error when kubectl fails).
    pub fn delete(&self, namespace: &str, what: &[&str]) -> Result<(), String> {
        let mut args = vec!["delete", "-n", namespace, "--wait=false"];
        args.extend_from_slice(what);
        let out = self.kubectl_output(&args);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "kubectl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }
}
