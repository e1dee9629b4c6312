//! Host isolation kept in step with this node's pods: a full sync at start, then per pod
//! only what changed (by resourceVersion), deleted pods removed.

use std::collections::BTreeMap;

use tracing::warn;

use crate::config::Config;
use crate::isolation::{
    HostIsolation, IsolationConfig, IsolationError, PodIsolationInput, PodKey, Started,
};
use crate::nft::NftCli;
use crate::watch::Stores;

/// The resourceVersion of each pod last given to host isolation.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodVersions(BTreeMap<PodKey, String>);

/// Starts host isolation with the agent's settings.
pub async fn start_isolation(config: &Config) -> Result<Started<NftCli>, IsolationError> {
    let mut isolation = IsolationConfig::new(config.node_name.clone());
    isolation.kubelet_cgroup_path = config.kubelet_cgroup_path.clone();
    isolation.systemd_socket = config.systemd_socket.clone();
    HostIsolation::start(&isolation, NftCli::new()).await
}

fn inputs(stores: &Stores) -> Vec<(PodIsolationInput, String)> {
    stores
        .pods
        .state()
        .iter()
        .map(|pod| {
            let read = PodIsolationInput::from_pod(pod);
            for problem in &read.problems {
                warn!(
                    pod = %format!("{}/{}", read.input.key.namespace, read.input.key.name),
                    problem = %problem,
                    "pod annotation unreadable for host isolation"
                );
            }
            let version = pod.metadata.resource_version.clone().unwrap_or_default();
            (read.input, version)
        })
        .collect()
}

/// The full sync (start, and after a failed update).
pub async fn sync_isolation(
    isolation: &mut HostIsolation<NftCli>,
    stores: &Stores,
    seen: &mut PodVersions,
) -> Result<(), IsolationError> {
    let all = inputs(stores);
    let pods: Vec<PodIsolationInput> = all.iter().map(|(input, _)| input.clone()).collect();
    isolation.sync(&pods).await?;
    seen.0 = all
        .into_iter()
        .map(|(input, version)| (input.key, version))
        .collect();
    Ok(())
}

/// Applies the pods that changed since the last call; on failure the next call syncs all.
pub async fn update_isolation(
    isolation: &mut HostIsolation<NftCli>,
    stores: &Stores,
    seen: &mut PodVersions,
) -> Result<(), IsolationError> {
    let all = inputs(stores);
    let mut current = BTreeMap::new();
    let mut failed = None;
    for (input, version) in all {
        if seen.0.get(&input.key) != Some(&version)
            && let Err(error) = isolation.update_pod(&input).await
        {
            failed = Some(error);
        }
        current.insert(input.key, version);
    }
    let gone: Vec<PodKey> = seen
        .0
        .keys()
        .filter(|key| !current.contains_key(*key))
        .cloned()
        .collect();
    for key in gone {
        if let Err(error) = isolation.remove_pod(&key).await {
            failed = Some(error);
        }
    }
    match failed {
        None => {
            seen.0 = current;
            Ok(())
        }
        Some(error) => {
            // Forget what was applied: the next change re-applies every pod.
            seen.0.clear();
            Err(error)
        }
    }
}
