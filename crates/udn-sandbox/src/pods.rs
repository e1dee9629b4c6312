//! Finding a pod's sandbox (its network namespace) for `udnctl sandbox exec`.

use std::process::Command;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::error::SandboxError;
use crate::layout::Layout;
use crate::state::SandboxState;

/// The network namespace (name under /run/netns) of pod `namespace/name`.
pub fn pod_netns(
    state: &SandboxState,
    layout: &Layout,
    namespace: &str,
    name: &str,
) -> Result<String, SandboxError> {
    let runtime = crate::client::runtime()?;
    let pod = runtime.block_on(async {
        let client = crate::client::client(&layout.kubeconfig()).await?;
        Api::<Pod>::namespaced(client, namespace)
            .get_opt(name)
            .await
            .map_err(|source| SandboxError::Api {
                what: format!("getting pod {namespace}/{name}"),
                source,
            })
    })?;
    let not_found = |hint: &str| SandboxError::NotFound {
        kind: "pod",
        name: format!("{namespace}/{name}"),
        hint: hint.to_owned(),
    };
    let pod = pod.ok_or_else(|| not_found(""))?;
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .ok_or_else(|| not_found(": it is not scheduled yet"))?;
    state.node(&node)?;
    let uid = pod.metadata.uid.unwrap_or_default();
    crate::kubelet::sandbox_netns(&layout.node(&node).kubelet_state(), namespace, name, &uid)
        .ok_or_else(|| {
            not_found(&format!(
                ": node {node}'s kubelet has no sandbox for it (yet)"
            ))
        })
}

/// `nsenter --net=<the pod's netns> -- command...`.
pub fn exec_command(
    state: &SandboxState,
    layout: &Layout,
    namespace: &str,
    name: &str,
    command: &[String],
) -> Result<Command, SandboxError> {
    let netns = pod_netns(state, layout, namespace, name)?;
    let mut cmd = crate::components::in_netns(&netns);
    cmd.args(command);
    Ok(cmd)
}
