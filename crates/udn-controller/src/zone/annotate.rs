//! Pod addresses the zone allocates (default network, Layer3, a MAC for Localnet without
//! subnets) and the `k8s.ovn.org/pod-networks` patch that records them. Allocators are
//! restored from every local pod's annotation before the first allocation; a pod that is
//! gone or completed releases its addresses.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tracing::{debug, warn};
use udn_api::annotations::{PodNetworkAnnotation, format_pod_networks};
use udn_api::names::ANNOTATION_POD_NETWORKS;

use crate::events::{Subject, Warning};
use crate::ipam::{EntryInputs, ZoneIpam, pod_entry, zone_allocates};
use crate::model::{Network, Node, Topology, ZoneConfig};
use crate::snapshot::{PodEntry, Snapshot};

/// Pod patches in flight at once.
const PATCH_CONCURRENCY: usize = 16;

/// The allocator owner of one attachment.
pub(crate) fn owner(pod_key: &str, nad_key: &str) -> String {
    format!("{pod_key}|{nad_key}")
}

fn host_subnets<'a>(network: &Network, node: Option<&'a Node>) -> &'a [ipnetwork::IpNetwork] {
    node.map_or(&[], |n| n.subnets_of(&network.name))
}

/// Whether `network` needs host subnets for addresses (Localnet without subnets only gets a
/// MAC).
fn needs_subnets(network: &Network) -> bool {
    matches!(network.topology(), Topology::Default | Topology::Layer3)
}

/// Restores the allocators from the local pods' annotations.
pub(crate) fn restore(ipam: &mut ZoneIpam, snapshot: &Snapshot) {
    let nodes: BTreeMap<&str, &Node> = snapshot
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    for (key, entry) in snapshot.pods.iter().filter(|(_, e)| e.local) {
        let (Ok(wanted), Ok(annotated)) = (&entry.wanted, &entry.view.pod_networks) else {
            continue;
        };
        let node_name = entry.view.node.as_deref().unwrap_or_default();
        for want in wanted {
            let Some(network) = snapshot.networks.networks.get(&want.network) else {
                continue;
            };
            let Some(existing) = annotated.get(&want.nad_key) else {
                continue;
            };
            if !zone_allocates(network) || !needs_subnets(network) {
                continue;
            }
            let subnets = host_subnets(network, nodes.get(node_name).copied());
            if let Err(error) = ipam.restore(
                &network.name,
                node_name,
                subnets,
                &owner(key, &want.nad_key),
                &existing.ip_addresses,
            ) {
                warn!(pod = %key, network = %network.name, error = %error, "pod address not restored");
            }
        }
    }
}

/// Releases the addresses of pods no longer networked here.
pub(crate) fn release_gone(ipam: &mut ZoneIpam, snapshot: &Snapshot) {
    let live: BTreeSet<&str> = snapshot
        .pods
        .iter()
        .filter(|(_, e)| e.local)
        .map(|(k, _)| k.as_str())
        .collect();
    let gone: Vec<String> = ipam
        .holders()
        .filter_map(|(_, _, owner, _)| {
            let pod = owner.split_once('|').map_or(owner, |(pod, _)| pod);
            (!live.contains(pod)).then(|| owner.to_owned())
        })
        .collect();
    for owner in gone {
        debug!(owner = %owner, "pod address released");
        ipam.release(&owner);
    }
}

/// One pod annotation to write.
#[derive(Debug)]
pub(crate) struct PodWrite {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) resource_version: Option<String>,
    pub(crate) value: String,
    /// The annotation written, parsed: once written, the pass builds the pod's ports from it
    /// at once rather than on the pod's next watch event.
    pub(crate) networks: udn_api::annotations::PodNetworks,
}

/// The entries local pods lack on networks the zone allocates for, allocated now; and the
/// warnings of pods that cannot get them.
pub(crate) fn allocate(
    ipam: &mut ZoneIpam,
    snapshot: &Snapshot,
    config: &ZoneConfig,
) -> (Vec<PodWrite>, Vec<Warning>) {
    let nodes: BTreeMap<&str, &Node> = snapshot
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let mut writes = Vec::new();
    let mut warnings = Vec::new();
    for (key, entry) in snapshot.pods.iter().filter(|(_, e)| e.local) {
        for problem in entry
            .wanted
            .as_ref()
            .err()
            .into_iter()
            .chain(&entry.problems)
        {
            warnings.push(Warning {
                subject: Subject::pod(key),
                reason: problem.reason(),
                message: problem.to_string(),
            });
        }
        if entry.wanted.is_err() {
            continue;
        }
        match pod_writes(ipam, snapshot, config, &nodes, key, entry) {
            Ok(Some(write)) => writes.push(write),
            Ok(None) => {}
            Err(message) => warnings.push(Warning {
                subject: Subject::pod(key),
                reason: "ErrorReconcilingPod",
                message,
            }),
        }
    }
    (writes, warnings)
}

fn pod_writes(
    ipam: &mut ZoneIpam,
    snapshot: &Snapshot,
    config: &ZoneConfig,
    nodes: &BTreeMap<&str, &Node>,
    key: &str,
    entry: &PodEntry,
) -> Result<Option<PodWrite>, String> {
    let Ok(wanted) = &entry.wanted else {
        return Ok(None);
    };
    let annotated = entry.view.pod_networks.as_ref().map_err(|e| {
        format!("failed to read annotation {ANNOTATION_POD_NETWORKS} of pod {key}: {e}")
    })?;
    let node_name = entry.view.node.as_deref().unwrap_or_default();
    let node = nodes.get(node_name).copied();
    let default_route_elsewhere = wanted.iter().any(|w| {
        w.element
            .as_ref()
            .is_some_and(|e| !e.default_route.is_empty())
    });
    let mut networks = annotated.clone();
    let mut added = false;
    for want in wanted {
        if annotated.contains_key(&want.nad_key) {
            continue;
        }
        let Some(network) = snapshot.networks.networks.get(&want.network) else {
            continue;
        };
        if !zone_allocates(network) {
            continue;
        }
        let ips = if needs_subnets(network) {
            ipam.allocate(
                &network.name,
                node_name,
                host_subnets(network, node),
                &owner(key, &want.nad_key),
            )
            .map_err(|e| {
                format!(
                    "failed to allocate addresses for pod {key} on network {}: {e}",
                    network.name
                )
            })?
        } else {
            Vec::new()
        };
        let element = want.element.as_ref();
        let requested_mac = element
            .map(|e| e.mac.as_str())
            .filter(|m| !m.is_empty())
            .map(str::parse)
            .transpose()
            .map_err(|e| format!("pod {key}: network {}: requested MAC: {e}", network.name))?;
        let entry: PodNetworkAnnotation = pod_entry(&EntryInputs {
            network,
            cluster: &config.cluster,
            role: want.role,
            ips: &ips,
            mac: requested_mac,
            gateway_request: element.map_or(&[], |e| e.default_route.as_slice()),
            default_route_elsewhere: default_route_elsewhere
                && element.is_none_or(|e| e.default_route.is_empty()),
            seed: &owner(key, &want.nad_key),
        });
        networks.insert(want.nad_key.clone(), entry);
        added = true;
    }
    if !added {
        return Ok(None);
    }
    let value = format_pod_networks(&networks).map_err(|e| format!("pod {key}: {e}"))?;
    Ok(Some(PodWrite {
        namespace: entry.view.namespace.clone(),
        name: entry.view.name.clone(),
        resource_version: entry.view.resource_version.clone(),
        value,
        networks,
    }))
}

/// Writes the annotations (merge patches guarded by the pod's resourceVersion, so an entry
/// cluster-manager wrote meanwhile is never lost: a conflict is retried on the next pass).
/// Returns the writes that landed, and the number that failed.
pub(crate) async fn write(client: &kube::Client, writes: Vec<PodWrite>) -> (Vec<PodWrite>, usize) {
    let results = futures::stream::iter(writes.into_iter().map(|write| {
        let api: Api<Pod> = Api::namespaced(client.clone(), &write.namespace);
        async move {
            let body = json!({"metadata": {
                "resourceVersion": write.resource_version,
                "annotations": {ANNOTATION_POD_NETWORKS: write.value},
            }});
            let result = api
                .patch(&write.name, &PatchParams::default(), &Patch::Merge(&body))
                .await;
            (write, result)
        }
    }))
    .buffer_unordered(PATCH_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    let mut failed = 0;
    let mut written = Vec::new();
    for (write, result) in results {
        match result {
            Ok(_) => {
                debug!(pod = %format!("{}/{}", write.namespace, write.name), "pod annotation written");
                written.push(write);
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                debug!(pod = %format!("{}/{}", write.namespace, write.name), "pod changed under the annotation write, retried next pass");
                failed += 1;
            }
            Err(error) => {
                warn!(pod = %format!("{}/{}", write.namespace, write.name), error = %error, "pod annotation write failed");
                failed += 1;
            }
        }
    }
    (written, failed)
}
