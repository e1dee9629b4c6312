//! The pure part of the mirror: the mirror a default EndpointSlice should have, and what to
//! do about the mirrors that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use udn_api::annotations::parse_pod_networks;
use udn_api::names::ANNOTATION_POD_NETWORKS;

use super::primary::PrimaryNetwork;
use super::{
    ANNOTATION_NETWORK, ANNOTATION_SOURCE, LABEL_MANAGED_BY, LABEL_SERVICE_NAME,
    LABEL_SOURCE_VERSION, LABEL_UDN_SERVICE_NAME, MIRROR_CONTROLLER, MirrorError, migration,
};

/// What to do for one default slice.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Action {
    /// Nothing.
    None,
    /// Create this mirror (it has `generateName`, no name).
    Create(Box<EndpointSlice>),
    /// Replace the existing mirror with this one (its name and resourceVersion kept).
    Update(Box<EndpointSlice>),
    /// Delete these mirrors (by name).
    Delete(Vec<String>),
}

/// What the mirror of one default slice is decided from.
pub(crate) struct Inputs<'a> {
    /// The default slice's namespace.
    pub(crate) namespace: &'a str,
    /// The default slice's name.
    pub(crate) name: &'a str,
    /// The default slice, `None` when gone.
    pub(crate) source: Option<&'a EndpointSlice>,
    /// The existing mirrors of it.
    pub(crate) mirrors: Vec<&'a EndpointSlice>,
    /// The namespace's primary UDN.
    pub(crate) network: &'a PrimaryNetwork,
    /// The namespace's pods by name.
    pub(crate) pods: &'a BTreeMap<String, &'a Pod>,
}

/// The plan for one default slice (upstream's sync steps 2-9).
pub(crate) fn plan(inputs: &Inputs<'_>) -> Result<Action, MirrorError> {
    let names = || {
        inputs
            .mirrors
            .iter()
            .filter_map(|m| m.metadata.name.clone())
            .collect::<Vec<_>>()
    };
    if inputs.mirrors.len() > 1 {
        return Ok(Action::Delete(names()));
    }
    let Some(source) = inputs.source.filter(|s| s.address_type != "FQDN") else {
        return Ok(if inputs.mirrors.is_empty() {
            Action::None
        } else {
            Action::Delete(names())
        });
    };
    let existing = inputs.mirrors.first().copied();
    let mut desired = desired(inputs, source)?;
    match existing {
        None if desired.endpoints.is_empty() => Ok(Action::None),
        None => Ok(Action::Create(Box::new(desired))),
        Some(current) => {
            if same(current, &desired) {
                return Ok(Action::None);
            }
            desired.metadata.generate_name = None;
            desired.metadata.name.clone_from(&current.metadata.name);
            desired
                .metadata
                .resource_version
                .clone_from(&current.metadata.resource_version);
            Ok(Action::Update(Box::new(desired)))
        }
    }
}

/// Whether `current` already is `desired` (the fields the mirror owns).
fn same(current: &EndpointSlice, desired: &EndpointSlice) -> bool {
    current.metadata.labels == desired.metadata.labels
        && current.metadata.annotations == desired.metadata.annotations
        && current.metadata.owner_references == desired.metadata.owner_references
        && current.address_type == desired.address_type
        && current.ports == desired.ports
        && current.endpoints == desired.endpoints
}

/// The mirror `source` should have.
fn desired(inputs: &Inputs<'_>, source: &EndpointSlice) -> Result<EndpointSlice, MirrorError> {
    let service = source
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SERVICE_NAME))
        .cloned()
        .unwrap_or_default();
    let labels = BTreeMap::from([
        (LABEL_MANAGED_BY.to_owned(), MIRROR_CONTROLLER.to_owned()),
        (LABEL_UDN_SERVICE_NAME.to_owned(), service),
        (
            LABEL_SOURCE_VERSION.to_owned(),
            source.metadata.resource_version.clone().unwrap_or_default(),
        ),
    ]);
    let annotations = BTreeMap::from([
        (
            ANNOTATION_NETWORK.to_owned(),
            inputs.network.network.clone(),
        ),
        (ANNOTATION_SOURCE.to_owned(), inputs.name.to_owned()),
    ]);
    let migrating = migration::migrating(inputs.pods.values().copied());
    let v6 = source.address_type == "IPv6";
    let mut endpoints = Vec::with_capacity(source.endpoints.len());
    for endpoint in &source.endpoints {
        let Some(target) = endpoint
            .target_ref
            .as_ref()
            .filter(|t| t.kind.as_deref() == Some("Pod"))
        else {
            // Upstream leaves an empty endpoint here, which the API refuses (an endpoint
            // needs an address): such endpoints are left out.
            continue;
        };
        let pod_name = target.name.clone().unwrap_or_default();
        let Some(pod) = inputs.pods.get(&pod_name) else {
            return Err(MirrorError::PodMissing {
                namespace: inputs.namespace.to_owned(),
                slice: inputs.name.to_owned(),
                pod: pod_name,
            });
        };
        let address = pod_address(inputs, pod, &pod_name, v6)?;
        let mut mirrored = endpoint.clone();
        mirrored.addresses = vec![address.to_string()];
        if migration::vm_of(pod).is_some_and(|vm| migrating.contains(vm)) {
            mirrored.conditions = Some(EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            });
        }
        endpoints.push(mirrored);
    }
    Ok(EndpointSlice {
        metadata: ObjectMeta {
            namespace: Some(inputs.namespace.to_owned()),
            generate_name: Some(generate_name(&inputs.network.network, source)),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: source.metadata.owner_references.clone(),
            ..ObjectMeta::default()
        },
        address_type: source.address_type.clone(),
        endpoints,
        ports: source.ports.clone(),
    })
}

/// The pod's address of the slice's family: on the primary UDN (its
/// `k8s.ovn.org/pod-networks` entry), or the default-network one for a host-network pod.
fn pod_address(
    inputs: &Inputs<'_>,
    pod: &Pod,
    pod_name: &str,
    v6: bool,
) -> Result<IpAddr, MirrorError> {
    let family = |ip: &IpAddr| ip.is_ipv6() == v6;
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let found = if host_network {
        pod.status
            .as_ref()
            .and_then(|s| s.pod_ips.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|ip| ip.ip.parse::<IpAddr>().ok())
            .find(family)
    } else {
        let value = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_POD_NETWORKS));
        let networks = match value {
            Some(value) => parse_pod_networks(value).map_err(|source| MirrorError::Annotation {
                namespace: inputs.namespace.to_owned(),
                pod: pod_name.to_owned(),
                source: Box::new(source),
            })?,
            None => BTreeMap::new(),
        };
        networks.get(&inputs.network.nad_key).and_then(|entry| {
            entry
                .ip_addresses
                .iter()
                .map(ipnetwork::IpNetwork::ip)
                .find(family)
        })
    };
    found.ok_or_else(|| MirrorError::NoAddress {
        namespace: inputs.namespace.to_owned(),
        slice: inputs.name.to_owned(),
        pod: pod_name.to_owned(),
        family: if v6 { "IPv6" } else { "IPv4" }.to_owned(),
        network: inputs.network.nad_key.clone(),
    })
}

/// `generateName` of a new mirror: `<network>-<base>` when that is a valid DNS-subdomain
/// prefix, else `<base>` (`base` = the source's generateName, or its name). Network names of
/// UDNs contain `_`, so in practice this is the source's own prefix, as upstream.
fn generate_name(network: &str, source: &EndpointSlice) -> String {
    let base = source
        .metadata
        .generate_name
        .clone()
        .filter(|g| !g.is_empty())
        .or_else(|| source.metadata.name.clone())
        .unwrap_or_default();
    let prefixed = format!("{network}-{base}");
    let valid = prefixed.len() <= 253 - 5
        && prefixed
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && prefixed.starts_with(|c: char| c.is_ascii_alphanumeric());
    if valid { prefixed } else { base }
}

/// The default-slice keys (`ns/name`) among `slices` whose endpoints name a pod in `pods`.
pub(crate) fn slices_naming<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    namespace: &str,
    pods: &BTreeSet<String>,
) -> BTreeSet<String> {
    slices
        .into_iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(namespace))
        .filter(|s| {
            s.endpoints.iter().any(|e| {
                e.target_ref
                    .as_ref()
                    .and_then(|t| t.name.as_ref())
                    .is_some_and(|n| pods.contains(n))
            })
        })
        .filter_map(|s| s.metadata.name.as_deref())
        .map(|name| udn_api::names::nad_key(namespace, name))
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ObjectReference, PodIP, PodSpec, PodStatus};
    use k8s_openapi::api::discovery::v1::EndpointPort;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use k8s_openapi::api::discovery::v1::Endpoint;

    use super::*;
    use crate::endpointslice_mirror::DEFAULT_CONTROLLER;

    fn conditions(endpoint: &Endpoint) -> (Option<bool>, Option<bool>, Option<bool>) {
        let c = endpoint.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    }

    fn network() -> PrimaryNetwork {
        PrimaryNetwork {
            nad_key: "blue/net".to_owned(),
            network: "blue_net".to_owned(),
        }
    }

    fn pod(name: &str, udn_ip: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.to_owned());
        pod.metadata.namespace = Some("blue".to_owned());
        pod.metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_POD_NETWORKS.to_owned(),
            format!(
                r#"{{"default":{{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","role":"infrastructure-locked"}},"blue/net":{{"ip_addresses":["{udn_ip}"],"mac_address":"0a:58:67:67:01:05","role":"primary"}}}}"#
            ),
        )]));
        pod.status = Some(PodStatus {
            pod_ips: Some(vec![PodIP {
                ip: "10.244.1.5".to_owned(),
            }]),
            phase: Some("Running".to_owned()),
            ..PodStatus::default()
        });
        pod
    }

    fn endpoint(pod: &str, ready: bool) -> Endpoint {
        Endpoint {
            addresses: vec!["10.244.1.5".to_owned()],
            conditions: Some(EndpointConditions {
                ready: Some(ready),
                serving: Some(ready),
                terminating: Some(false),
            }),
            node_name: Some("node1".to_owned()),
            target_ref: Some(ObjectReference {
                kind: Some("Pod".to_owned()),
                name: Some(pod.to_owned()),
                namespace: Some("blue".to_owned()),
                ..ObjectReference::default()
            }),
            ..Endpoint::default()
        }
    }

    fn default_slice(endpoints: Vec<Endpoint>) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                name: Some("svc-abc12".to_owned()),
                generate_name: Some("svc-".to_owned()),
                namespace: Some("blue".to_owned()),
                resource_version: Some("42".to_owned()),
                labels: Some(BTreeMap::from([
                    (LABEL_MANAGED_BY.to_owned(), DEFAULT_CONTROLLER.to_owned()),
                    (LABEL_SERVICE_NAME.to_owned(), "svc".to_owned()),
                ])),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".to_owned(),
                    kind: "Service".to_owned(),
                    name: "svc".to_owned(),
                    uid: "s-1".to_owned(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".to_owned(),
            endpoints,
            ports: Some(vec![EndpointPort {
                port: Some(80),
                protocol: Some("TCP".to_owned()),
                ..EndpointPort::default()
            }]),
        }
    }

    fn run(source: Option<&EndpointSlice>, mirrors: Vec<&EndpointSlice>, pods: &[Pod]) -> Action {
        let pods: BTreeMap<String, &Pod> = pods
            .iter()
            .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
            .collect();
        let network = network();
        plan(&Inputs {
            namespace: "blue",
            name: "svc-abc12",
            source,
            mirrors,
            network: &network,
            pods: &pods,
        })
        .unwrap()
    }

    #[test]
    fn a_default_slice_gets_a_mirror_with_the_udn_addresses() {
        let source = default_slice(vec![endpoint("a", true), endpoint("b", false)]);
        let pods = [pod("a", "103.103.1.5/24"), pod("b", "103.103.0.5/24")];
        let Action::Create(mirror) = run(Some(&source), vec![], &pods) else {
            panic!("no create");
        };
        assert_eq!(mirror.metadata.generate_name.as_deref(), Some("svc-"));
        let labels = mirror.metadata.labels.clone().unwrap();
        assert_eq!(labels[LABEL_MANAGED_BY], MIRROR_CONTROLLER);
        assert_eq!(labels[LABEL_UDN_SERVICE_NAME], "svc");
        assert_eq!(labels[LABEL_SOURCE_VERSION], "42");
        assert!(!labels.contains_key(LABEL_SERVICE_NAME));
        let annotations = mirror.metadata.annotations.clone().unwrap();
        assert_eq!(annotations[ANNOTATION_NETWORK], "blue_net");
        assert_eq!(annotations[ANNOTATION_SOURCE], "svc-abc12");
        assert_eq!(
            mirror.metadata.owner_references,
            source.metadata.owner_references
        );
        assert_eq!(mirror.ports, source.ports);
        let addresses: Vec<&str> = mirror
            .endpoints
            .iter()
            .map(|e| e.addresses[0].as_str())
            .collect();
        assert_eq!(addresses, ["103.103.1.5", "103.103.0.5"]);
        // Conditions copied unchanged.
        assert_eq!(
            conditions(&mirror.endpoints[1]),
            (Some(false), Some(false), Some(false))
        );
    }

    #[test]
    fn an_unchanged_mirror_is_left_and_a_changed_one_updated() {
        let source = default_slice(vec![endpoint("a", true)]);
        let pods = [pod("a", "103.103.1.5/24")];
        let Action::Create(mut mirror) = run(Some(&source), vec![], &pods) else {
            panic!("no create");
        };
        mirror.metadata.name = Some("svc-xyz89".to_owned());
        mirror.metadata.resource_version = Some("7".to_owned());
        assert_eq!(run(Some(&source), vec![&mirror], &pods), Action::None);
        let changed = [pod("a", "103.103.1.9/24")];
        let Action::Update(updated) = run(Some(&source), vec![&mirror], &changed) else {
            panic!("no update");
        };
        assert_eq!(updated.metadata.name.as_deref(), Some("svc-xyz89"));
        assert_eq!(updated.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(updated.metadata.generate_name, None);
        assert_eq!(updated.endpoints[0].addresses, ["103.103.1.9"]);
        // Source gone, FQDN, or duplicates: mirrors deleted.
        assert_eq!(
            run(None, vec![&mirror], &pods),
            Action::Delete(vec!["svc-xyz89".to_owned()])
        );
        let mut fqdn = source.clone();
        fqdn.address_type = "FQDN".to_owned();
        assert!(matches!(
            run(Some(&fqdn), vec![&mirror], &pods),
            Action::Delete(_)
        ));
        assert!(matches!(
            run(Some(&source), vec![&mirror, &mirror], &pods),
            Action::Delete(names) if names.len() == 2
        ));
        // No mirror and no endpoints: nothing to create.
        assert_eq!(
            run(Some(&default_slice(vec![])), vec![], &pods),
            Action::None
        );
    }

    #[test]
    fn host_network_pods_keep_default_addresses_and_missing_ones_are_errors() {
        let source = default_slice(vec![endpoint("h", true)]);
        let mut host = pod("h", "103.103.1.5/24");
        host.spec = Some(PodSpec {
            host_network: Some(true),
            ..PodSpec::default()
        });
        let Action::Create(mirror) = run(Some(&source), vec![], &[host]) else {
            panic!("no create");
        };
        assert_eq!(mirror.endpoints[0].addresses, ["10.244.1.5"]);
        let network = network();
        let no_pods = BTreeMap::new();
        let missing = plan(&Inputs {
            namespace: "blue",
            name: "svc-abc12",
            source: Some(&source),
            mirrors: vec![],
            network: &network,
            pods: &no_pods,
        });
        assert!(matches!(missing, Err(MirrorError::PodMissing { .. })));
        let mut v6 = source;
        v6.address_type = "IPv6".to_owned();
        let plain = pod("h", "103.103.1.5/24");
        let pods = BTreeMap::from([("h".to_owned(), &plain)]);
        let no_v6 = plan(&Inputs {
            namespace: "blue",
            name: "svc-abc12",
            source: Some(&v6),
            mirrors: vec![],
            network: &network,
            pods: &pods,
        });
        assert!(
            matches!(no_v6, Err(MirrorError::NoAddress { .. })),
            "{no_v6:?}"
        );
    }

    #[test]
    fn vm_endpoints_stay_ready_during_a_live_migration_only() {
        use crate::endpointslice_mirror::migration::tests::launcher;
        let with_ip = |mut p: Pod, ip: &str| {
            p.metadata.annotations = pod("x", ip).metadata.annotations;
            p
        };
        let source = default_slice(vec![endpoint("src", false), endpoint("dst", false)]);
        let running = [
            with_ip(launcher("src", "vm-1", false, "Running"), "103.103.1.5/24"),
            with_ip(launcher("dst", "vm-1", true, "Running"), "103.103.1.5/24"),
        ];
        let Action::Create(mirror) = run(Some(&source), vec![], &running) else {
            panic!("no create");
        };
        for e in &mirror.endpoints {
            assert_eq!(conditions(e), (Some(true), Some(true), Some(false)));
        }
        let failed = [
            with_ip(launcher("src", "vm-1", false, "Running"), "103.103.1.5/24"),
            with_ip(launcher("dst", "vm-1", true, "Failed"), "103.103.1.5/24"),
        ];
        let Action::Create(mirror) = run(Some(&source), vec![], &failed) else {
            panic!("no create");
        };
        for e in &mirror.endpoints {
            assert_eq!(conditions(e), (Some(false), Some(false), Some(false)));
        }
        // Not VM-owned pods: conditions copied.
        let plain = [pod("src", "103.103.1.5/24"), pod("dst", "103.103.1.6/24")];
        let Action::Create(mirror) = run(Some(&source), vec![], &plain) else {
            panic!("no create");
        };
        assert_eq!(
            conditions(&mirror.endpoints[0]),
            (Some(false), Some(false), Some(false))
        );
    }

    #[test]
    fn generate_names_fall_back_to_the_source_prefix() {
        let source = default_slice(vec![]);
        assert_eq!(generate_name("blue_net", &source), "svc-");
        assert_eq!(generate_name("plain", &source), "plain-svc-");
        let mut named = source;
        named.metadata.generate_name = None;
        assert_eq!(generate_name("blue_net", &named), "svc-abc12");
    }
}
