//! The endpoints a served Service should have, as Kubernetes' EndpointSlice controller
//! computes them for the primary network (`podToEndpoint`, `getEndpointPorts`), with the
//! pod's IPs on the secondary network instead of `status.podIPs`:
//!
//! - pods of the Service's namespace chosen by the opt-in's filter, not Succeeded or Failed,
//!   with at least one IP on the network; a pod whose network-status cannot be read is left
//!   out (and reported), the others are not held up by it;
//! - one endpoint per pod and IP family: `addresses` = its IPs of that family on the
//!   network, `conditions` serving = Ready condition True, terminating = deletionTimestamp
//!   set, ready = publishNotReadyAddresses || (serving && !terminating); `nodeName`,
//!   `targetRef` (Pod, namespace, name, uid) and, as Kubernetes does, `hostname` when the
//!   pod's `subdomain` is the Service's name;
//! - ports: every Service port resolved against the pod (a numeric `targetPort` as is, none
//!   the Service port, a name looked up in the containers' and sidecars' ports of the same
//!   protocol; a name that does not resolve leaves that port out for that pod). Pods that
//!   resolve differently go to different groups, hence different slices.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::attachment::{Network, pod_ips};
use super::opt_in::PodFilter;

/// At most this many addresses per endpoint (the API's limit).
const MAX_ADDRESSES: usize = 100;

/// An EndpointSlice's `addressType` (`FQDN` is never written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Family {
    /// `IPv4`.
    V4,
    /// `IPv6`.
    V6,
}

impl Family {
    /// The API's spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::V4 => "IPv4",
            Self::V6 => "IPv6",
        }
    }

    /// From the API's spelling (`None` for `FQDN` and anything else).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "IPv4" => Some(Self::V4),
            "IPv6" => Some(Self::V6),
            _ => None,
        }
    }

    fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => Self::V4,
            IpAddr::V6(_) => Self::V6,
        }
    }
}

/// An endpoint's identity: its pod's namespace and name.
pub(crate) type PodKey = (String, String);

/// The identity of an endpoint's target pod.
pub(crate) fn pod_key(endpoint: &Endpoint) -> PodKey {
    let target = endpoint.target_ref.as_ref();
    (
        target.and_then(|t| t.namespace.clone()).unwrap_or_default(),
        target.and_then(|t| t.name.clone()).unwrap_or_default(),
    )
}

/// A set of ports whatever their order: (name, port, protocol, appProtocol).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PortsKey(Vec<(String, i32, String, String)>);

impl PortsKey {
    /// The key of `ports`.
    pub(crate) fn of(ports: &[EndpointPort]) -> Self {
        let mut key: Vec<_> = ports
            .iter()
            .map(|p| {
                (
                    p.name.clone().unwrap_or_default(),
                    p.port.unwrap_or_default(),
                    p.protocol.clone().unwrap_or_default(),
                    p.app_protocol.clone().unwrap_or_default(),
                )
            })
            .collect();
        key.sort();
        Self(key)
    }
}

/// The endpoints of one (family, ports): they go to slices of their own.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Group {
    /// The ports, in the Service's order.
    pub(crate) ports: Vec<EndpointPort>,
    /// The endpoints by pod.
    pub(crate) endpoints: BTreeMap<PodKey, Endpoint>,
}

/// Every group of a Service, in a fixed order.
pub(crate) type Groups = BTreeMap<(Family, PortsKey), Group>;

/// A chosen pod left out because its network-status cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// `ns/name`.
    pub(crate) pod: String,
    /// The annotation and what is wrong with it.
    pub(crate) reason: String,
}

/// The groups of `service` for the pods on `network` that `filter` chooses among `pods`
/// (pods of other namespaces are ignored). `pods` must be sorted and free of duplicates.
pub(crate) fn desired_groups(
    service: &Service,
    network: &Network,
    filter: &PodFilter,
    pods: &[&Pod],
) -> (Groups, Vec<Skipped>) {
    let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
    let mut groups = Groups::new();
    let mut skipped = Vec::new();
    let chosen = pods.iter().filter(|pod| {
        pod.metadata.namespace.as_deref().unwrap_or_default() == namespace
            && filter.matches(pod.metadata.labels.as_ref())
            && !finished(pod)
    });
    for pod in chosen {
        let ips = match pod_ips(&pod.metadata, network) {
            Ok(Some(ips)) => ips,
            Ok(None) => continue,
            Err(unreadable) => {
                skipped.push(Skipped {
                    pod: format!(
                        "{namespace}/{}",
                        pod.metadata.name.as_deref().unwrap_or_default()
                    ),
                    reason: format!(
                        "annotation {}: {}",
                        unreadable.annotation, unreadable.reason
                    ),
                });
                continue;
            }
        };
        let ports = endpoint_ports(service, pod);
        let ports_key = PortsKey::of(&ports);
        for family in [Family::V4, Family::V6] {
            let addresses: Vec<String> = ips
                .iter()
                .filter(|ip| Family::of(**ip) == family)
                .take(MAX_ADDRESSES)
                .map(IpAddr::to_string)
                .collect();
            if addresses.is_empty() {
                continue;
            }
            let endpoint = endpoint(service, pod, addresses);
            groups
                .entry((family, ports_key.clone()))
                .or_insert_with(|| Group {
                    ports: ports.clone(),
                    endpoints: BTreeMap::new(),
                })
                .endpoints
                .insert(pod_key(&endpoint), endpoint);
        }
    }
    (groups, skipped)
}

/// Succeeded or Failed: never an endpoint (Kubernetes' `ShouldPodBeInEndpoints`).
fn finished(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether the pod's Ready condition is True.
fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// `(ready, serving, terminating)` of a pod's endpoint, by Kubernetes' rules.
pub(crate) fn conditions(service: &Service, pod: &Pod) -> (bool, bool, bool) {
    let publish_not_ready = service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let serving = pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let ready = publish_not_ready || (serving && !terminating);
    (ready, serving, terminating)
}

fn endpoint(service: &Service, pod: &Pod, addresses: Vec<String>) -> Endpoint {
    let (ready, serving, terminating) = conditions(service, pod);
    let spec = pod.spec.as_ref();
    let node_name = spec
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty());
    let hostname = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
        .filter(|_| spec.and_then(|s| s.subdomain.as_deref()) == service.metadata.name.as_deref());
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        hostname: hostname.map(str::to_owned),
        node_name: node_name.map(str::to_owned),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".to_owned()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        ..Endpoint::default()
    }
}

/// Every Service port resolved against `pod`; one that does not resolve is left out.
fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = service.spec.as_ref().and_then(|s| s.ports.as_ref());
    ports
        .into_iter()
        .flatten()
        .filter_map(|port| {
            let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".to_owned());
            let number = target_port(pod, port, &protocol)?;
            Some(EndpointPort {
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(number),
                protocol: Some(protocol),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

/// Kubernetes' `FindPort`: a number as is (none or 0: the Service port, as the API server
/// defaults it); a name looked up in the ports of the containers and of the sidecars (init
/// containers with `restartPolicy: Always`) with the same protocol.
fn target_port(pod: &Pod, port: &ServicePort, protocol: &str) -> Option<i32> {
    let name = match &port.target_port {
        None | Some(IntOrString::Int(0)) => return Some(port.port),
        Some(IntOrString::Int(number)) => return Some(*number),
        Some(IntOrString::String(name)) => name,
    };
    let spec = pod.spec.as_ref()?;
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers
        .iter()
        .chain(sidecars)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| {
            p.name.as_deref() == Some(name.as_str())
                && p.protocol.as_deref().unwrap_or("TCP") == protocol
        })
        .map(|p| p.container_port)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Container, ContainerPort, PodCondition, PodSpec, PodStatus, ServiceSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use std::collections::BTreeSet;

    use udn_api::names::ANNOTATION_NETWORK_STATUS;

    use super::*;

    fn service(publish_not_ready: bool, ports: Vec<ServicePort>) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("svc".to_owned()),
                namespace: Some("default".to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                publish_not_ready_addresses: Some(publish_not_ready),
                ports: Some(ports),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    fn port(name: &str, target: Option<IntOrString>) -> ServicePort {
        ServicePort {
            name: Some(name.to_owned()),
            port: 80,
            target_port: target,
            ..ServicePort::default()
        }
    }

    fn pod(
        name: &str,
        ready: bool,
        deleting: bool,
        ips: &[&str],
        container_ports: &[(&str, i32)],
    ) -> Pod {
        let status = serde_json::json!([{"name": "default/net", "interface": "net1", "ips": ips}]);
        Pod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some(format!("uid-{name}")),
                annotations: Some(
                    [(ANNOTATION_NETWORK_STATUS.to_owned(), status.to_string())].into(),
                ),
                deletion_timestamp: deleting
                    .then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node1".to_owned()),
                containers: vec![Container {
                    name: "c".to_owned(),
                    ports: Some(
                        container_ports
                            .iter()
                            .map(|(name, number)| ContainerPort {
                                name: Some((*name).to_owned()),
                                container_port: *number,
                                ..ContainerPort::default()
                            })
                            .collect(),
                    ),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".to_owned()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".to_owned(),
                    status: if ready { "True" } else { "False" }.to_owned(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
        }
    }

    fn network() -> Network {
        Network {
            namespace: "default".to_owned(),
            name: "net".to_owned(),
            interface: None,
        }
    }

    /// The table of spec §2.5: Kubernetes' semantics, which ihcsim got wrong (swapped).
    #[test]
    fn conditions_are_not_swapped() {
        let plain = service(false, Vec::new());
        let publish = service(true, Vec::new());
        let cases = [
            (&plain, true, false, (true, true, false)),
            (&plain, false, false, (false, false, false)),
            (&plain, false, true, (false, false, true)),
            (&plain, true, true, (false, true, true)),
            (&publish, false, false, (true, false, false)),
            (&publish, true, true, (true, true, true)),
            (&publish, false, true, (true, false, true)),
        ];
        for (svc, ready, deleting, expected) in cases {
            let pod = pod("p", ready, deleting, &["10.1.0.1"], &[]);
            assert_eq!(
                conditions(svc, &pod),
                expected,
                "ready={ready} deleting={deleting}"
            );
        }
    }

    #[test]
    fn families_and_named_ports_make_groups() {
        let svc = service(
            false,
            vec![
                port("http", Some(IntOrString::String("web".to_owned()))),
                port("metrics", Some(IntOrString::Int(9090))),
                port("plain", None),
            ],
        );
        let pods = [
            pod("a", true, false, &["10.1.0.1", "fd00::1"], &[("web", 8080)]),
            pod("b", true, false, &["10.1.0.2"], &[("web", 8081)]),
            pod("c", true, false, &["10.1.0.3"], &[]),
            pod("d", true, false, &["10.1.0.4"], &[("web", 8080)]),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        let (groups, skipped) = desired_groups(&svc, &network(), &PodFilter::All, &refs);
        assert!(skipped.is_empty());
        let summary: BTreeSet<(Family, Vec<i32>, Vec<&str>)> = groups
            .iter()
            .map(|((family, _), group)| {
                (
                    *family,
                    group.ports.iter().filter_map(|p| p.port).collect(),
                    group
                        .endpoints
                        .keys()
                        .map(|(_, name)| name.as_str())
                        .collect(),
                )
            })
            .collect();
        let expected = BTreeSet::from([
            (Family::V4, vec![8080, 9090, 80], vec!["a", "d"]),
            (Family::V4, vec![8081, 9090, 80], vec!["b"]),
            // "web" does not resolve for c: that port is left out, the pod is not.
            (Family::V4, vec![9090, 80], vec!["c"]),
            (Family::V6, vec![8080, 9090, 80], vec!["a"]),
        ]);
        assert_eq!(summary, expected);
        let a = &groups
            .values()
            .find(|g| {
                g.endpoints
                    .contains_key(&("default".to_owned(), "a".to_owned()))
            })
            .unwrap()
            .endpoints[&("default".to_owned(), "a".to_owned())];
        assert_eq!(a.addresses, ["10.1.0.1"]);
        assert_eq!(a.node_name.as_deref(), Some("node1"));
        let target = a.target_ref.as_ref().unwrap();
        assert_eq!(target.kind.as_deref(), Some("Pod"));
        assert_eq!(target.uid.as_deref(), Some("uid-a"));
    }

    #[test]
    fn unreadable_finished_and_foreign_pods_are_left_out_alone() {
        let svc = service(false, Vec::new());
        let good = pod("good", true, false, &["10.1.0.1"], &[]);
        let mut bad = pod("bad", true, false, &[], &[]);
        bad.metadata.annotations =
            Some([(ANNOTATION_NETWORK_STATUS.to_owned(), "{garbage".to_owned())].into());
        let mut done = pod("done", true, false, &["10.1.0.2"], &[]);
        if let Some(status) = done.status.as_mut() {
            status.phase = Some("Succeeded".to_owned());
        }
        let mut foreign = pod("foreign", true, false, &["10.1.0.3"], &[]);
        foreign.metadata.namespace = Some("other".to_owned());
        let pods = [&bad, &done, &foreign, &good];
        let (groups, skipped) = desired_groups(&svc, &network(), &PodFilter::All, &pods);
        let names: Vec<&String> = groups
            .values()
            .flat_map(|g| g.endpoints.keys().map(|(_, n)| n))
            .collect();
        assert_eq!(names, ["good"]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].pod, "default/bad");
        assert!(skipped[0].reason.contains(ANNOTATION_NETWORK_STATUS));
    }
}
