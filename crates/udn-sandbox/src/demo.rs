//! `udnctl sandbox demo`: the sandbox, the seed guide's blue/green namespaces and networks
//! unchanged (docs/examples/blue-green.yaml), the demo pods (docs/examples/sandbox-pods.yaml),
//! and the connectivity matrix once every pod is Ready. The sandbox stays up afterwards.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::Value;

use crate::error::SandboxError;
use crate::layout::Layout;

/// The seed guide's tenants.
pub const BLUE_GREEN: &str = include_str!("../../../docs/examples/blue-green.yaml");
/// The demo's pods.
pub const PODS: &str = include_str!("../../../docs/examples/sandbox-pods.yaml");

/// How long the demo pods may take to become Ready.
const PODS_READY: Duration = Duration::from_secs(180);

/// Applies `documents` to the running sandbox in `dir`, waits for every Pod among them to be
/// Ready, and returns the matrix text and whether every row was as expected.
pub fn run(dir: &std::path::Path, documents: &[Value]) -> Result<(String, bool), SandboxError> {
    let layout = Layout::new(dir);
    let state = crate::tools::load(dir)?;
    let runtime = crate::client::runtime()?;
    runtime.block_on(async {
        let client = crate::client::client(&layout.kubeconfig()).await?;
        crate::apply::apply(&client, documents).await?;
        let pods: Vec<(String, String)> = documents
            .iter()
            .filter(|d| d["kind"] == "Pod")
            .map(|d| {
                (
                    d["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("default")
                        .to_owned(),
                    d["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect();
        wait_ready(&client, &pods).await
    })?;
    let rows = crate::matrix::run(&state, &layout, &crate::matrix::demo_checks())?;
    let (text, good) = crate::matrix::render(&rows);
    Ok((text, good == rows.len()))
}

async fn wait_ready(client: &kube::Client, pods: &[(String, String)]) -> Result<(), SandboxError> {
    let deadline = Instant::now() + PODS_READY;
    for (namespace, name) in pods {
        let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
        loop {
            let pod = api
                .get_opt(name)
                .await
                .map_err(|source| SandboxError::Api {
                    what: format!("getting pod {namespace}/{name}"),
                    source,
                })?;
            if pod.as_ref().is_some_and(ready) {
                break;
            }
            if Instant::now() >= deadline {
                let phase = pod
                    .and_then(|p| p.status)
                    .map(|s| format!("{:?} {:?}", s.phase, s.conditions))
                    .unwrap_or_else(|| "missing".to_owned());
                return Err(SandboxError::NotReady {
                    component: format!("pod {namespace}/{name}"),
                    seconds: PODS_READY.as_secs(),
                    reason: format!("status: {phase}; see `udnctl sandbox logs kubelet-<node>`"),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

/// Whether the pod's Ready condition is True.
pub fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
