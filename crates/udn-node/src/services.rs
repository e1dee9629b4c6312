//! Services as the node agent needs them: a plain view of the fields the gateway bridge's
//! per-service flows and the service nftables read (cluster IPs, ports with their NodePorts,
//! external and load balancer ingress IPs, the external traffic policy), and the network the
//! Service belongs to. Pure: the renderers take these views, never a Kubernetes object.
//!
//! Only Services with a cluster IP count (upstream `ServiceTypeHasClusterIP` and
//! `IsClusterIPSet`): ExternalName and headless Services have no flows and no rules.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;

/// A transport protocol of a Service port, as flows and nft spell it in lower case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// `tcp`.
    Tcp,
    /// `udp`.
    Udp,
    /// `sctp`.
    Sctp,
}

impl Protocol {
    /// The lower-case spelling (`strings.ToLower(string(svcPort.Protocol))` upstream).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Udp => "udp",
            Self::Sctp => "sctp",
        }
    }

    /// The Kubernetes value (`TCP`, `UDP`, `SCTP`); Kubernetes defaults a missing one to TCP.
    pub fn from_kubernetes(value: Option<&str>) -> Option<Self> {
        match value {
            None | Some("TCP") => Some(Self::Tcp),
            Some("UDP") => Some(Self::Udp),
            Some("SCTP") => Some(Self::Sctp),
            Some(_) => None,
        }
    }
}

/// Which network's gateway router serves a Service.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServiceNetwork {
    /// The default network (the Service's namespace has no primary UDN).
    Default,
    /// The primary UDN of the Service's namespace, by network name (`blue_net`).
    Udn(String),
}

/// One port of a Service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePortView {
    /// Its protocol.
    pub protocol: Protocol,
    /// The Service port (what external and ingress IPs are reached on).
    pub port: u16,
    /// The NodePort, when one is allocated (0 counts as none).
    pub node_port: Option<u16>,
}

/// The fields of a Service the node's gateway and nftables are rendered from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The network whose gateway router load-balances it.
    pub network: ServiceNetwork,
    /// `spec.clusterIPs` (else `spec.clusterIP`), in order.
    pub cluster_ips: Vec<IpAddr>,
    /// `spec.ports` with a known protocol and a port in range, in order.
    pub ports: Vec<ServicePortView>,
    /// `spec.externalIPs` that parse, in order.
    pub external_ips: Vec<IpAddr>,
    /// `status.loadBalancer.ingress[].ip` that parse, in order.
    pub ingress_ips: Vec<IpAddr>,
    /// `spec.externalTrafficPolicy: Local`.
    pub external_traffic_local: bool,
}

impl ServiceView {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The view of `service` on `network`; `None` for a Service without a cluster IP
    /// (ExternalName, headless, not allocated yet). Addresses that do not parse and ports
    /// with an unknown protocol or out of range are left out, as upstream skips them with an
    /// error.
    pub fn from_service(service: &Service, network: ServiceNetwork) -> Option<Self> {
        let spec = service.spec.as_ref()?;
        if spec.type_.as_deref() == Some("ExternalName") {
            return None;
        }
        let raw_ips: Vec<&str> = match &spec.cluster_ips {
            Some(ips) if !ips.is_empty() => ips.iter().map(String::as_str).collect(),
            _ => spec.cluster_ip.as_deref().into_iter().collect(),
        };
        if raw_ips
            .first()
            .is_none_or(|ip| ip.is_empty() || *ip == "None")
        {
            return None;
        }
        let cluster_ips = parse_ips(raw_ips.into_iter());
        let ports = spec
            .ports
            .iter()
            .flatten()
            .filter_map(|port| {
                Some(ServicePortView {
                    protocol: Protocol::from_kubernetes(port.protocol.as_deref())?,
                    port: u16::try_from(port.port).ok().filter(|p| *p > 0)?,
                    node_port: port
                        .node_port
                        .and_then(|p| u16::try_from(p).ok())
                        .filter(|p| *p > 0),
                })
            })
            .collect();
        let external_ips = parse_ips(spec.external_ips.iter().flatten().map(String::as_str));
        let ingress_ips = parse_ips(
            service
                .status
                .as_ref()
                .and_then(|status| status.load_balancer.as_ref())
                .and_then(|lb| lb.ingress.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|ingress| ingress.ip.as_deref()),
        );
        Some(Self {
            namespace: service.metadata.namespace.clone().unwrap_or_default(),
            name: service.metadata.name.clone().unwrap_or_default(),
            network,
            cluster_ips,
            ports,
            external_ips,
            ingress_ips,
            external_traffic_local: spec.external_traffic_policy.as_deref() == Some("Local"),
        })
    }
}

/// The addresses among `raw` that parse (empty entries skipped).
fn parse_ips<'a>(raw: impl Iterator<Item = &'a str>) -> Vec<IpAddr> {
    raw.filter_map(|ip| ip.trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::core::v1::{
        LoadBalancerIngress, LoadBalancerStatus, ServicePort, ServiceSpec, ServiceStatus,
    };
    use kube::api::ObjectMeta;

    use super::*;

    fn service(spec: ServiceSpec) -> Service {
        Service {
            metadata: ObjectMeta {
                namespace: Some("blue".to_owned()),
                name: Some("web".to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
            status: None,
        }
    }

    fn port(protocol: Option<&str>, port: i32, node_port: Option<i32>) -> ServicePort {
        ServicePort {
            protocol: protocol.map(str::to_owned),
            port,
            node_port,
            ..ServicePort::default()
        }
    }

    #[test]
    fn load_balancer_view_has_every_field() {
        let mut svc = service(ServiceSpec {
            type_: Some("LoadBalancer".to_owned()),
            cluster_ip: Some("10.96.0.10".to_owned()),
            cluster_ips: Some(vec!["10.96.0.10".to_owned(), "fd00:10:96::a".to_owned()]),
            ports: Some(vec![
                port(None, 80, Some(30080)),
                port(Some("UDP"), 53, Some(0)),
                port(Some("SCTP"), 9, None),
                port(Some("QUIC"), 443, Some(30443)),
            ]),
            external_ips: Some(vec!["1.1.1.1".to_owned(), "not-an-ip".to_owned()]),
            external_traffic_policy: Some("Local".to_owned()),
            ..ServiceSpec::default()
        });
        svc.status = Some(ServiceStatus {
            load_balancer: Some(LoadBalancerStatus {
                ingress: Some(vec![
                    LoadBalancerIngress {
                        ip: Some("5.5.5.5".to_owned()),
                        ..LoadBalancerIngress::default()
                    },
                    LoadBalancerIngress {
                        hostname: Some("lb.example.com".to_owned()),
                        ..LoadBalancerIngress::default()
                    },
                ]),
            }),
            ..ServiceStatus::default()
        });
        let view =
            ServiceView::from_service(&svc, ServiceNetwork::Udn("blue_net".to_owned())).unwrap();
        assert_eq!(view.key(), "blue/web");
        assert_eq!(view.network, ServiceNetwork::Udn("blue_net".to_owned()));
        assert_eq!(
            view.cluster_ips,
            vec![
                "10.96.0.10".parse::<IpAddr>().unwrap(),
                "fd00:10:96::a".parse().unwrap()
            ]
        );
        assert_eq!(
            view.ports,
            vec![
                ServicePortView {
                    protocol: Protocol::Tcp,
                    port: 80,
                    node_port: Some(30080)
                },
                ServicePortView {
                    protocol: Protocol::Udp,
                    port: 53,
                    node_port: None
                },
                ServicePortView {
                    protocol: Protocol::Sctp,
                    port: 9,
                    node_port: None
                },
            ]
        );
        assert_eq!(
            view.external_ips,
            vec!["1.1.1.1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(view.ingress_ips, vec!["5.5.5.5".parse::<IpAddr>().unwrap()]);
        assert!(view.external_traffic_local);
    }

    #[test]
    fn services_without_a_cluster_ip_have_no_view() {
        for spec in [
            ServiceSpec {
                cluster_ip: Some("None".to_owned()),
                cluster_ips: Some(vec!["None".to_owned()]),
                ..ServiceSpec::default()
            },
            ServiceSpec {
                type_: Some("ExternalName".to_owned()),
                external_name: Some("example.com".to_owned()),
                ..ServiceSpec::default()
            },
            ServiceSpec::default(),
        ] {
            assert_eq!(
                ServiceView::from_service(&service(spec), ServiceNetwork::Default),
                None
            );
        }
        // The single-stack field alone is enough.
        let view = ServiceView::from_service(
            &service(ServiceSpec {
                cluster_ip: Some("10.96.0.1".to_owned()),
                ..ServiceSpec::default()
            }),
            ServiceNetwork::Default,
        )
        .unwrap();
        assert_eq!(
            view.cluster_ips,
            vec!["10.96.0.1".parse::<IpAddr>().unwrap()]
        );
        assert!(!view.external_traffic_local);
    }
}
