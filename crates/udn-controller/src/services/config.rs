//! The abstract load balancer configurations of one Service (upstream
//! `buildServiceLBConfigs`): per Service port, a NodePort config (VIP: the node's addresses),
//! an external-IP config when `externalTrafficPolicy: Local`, and a ClusterIP config (with the
//! external and ingress IPs otherwise). A config is built per node when it must differ per
//! node (NodePorts, Local traffic policies, host-network endpoints), else once for the
//! whole cluster.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use super::endpoints::{Target, eligible};
use super::view::{ServiceView, SliceView};

/// A VIP of a config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vip {
    /// An address.
    Ip(IpAddr),
    /// The node's addresses (a NodePort), expanded per node.
    NodeIps,
}

/// One abstract load balancer configuration (upstream `lbConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbConfig {
    /// VIPs.
    pub vips: Vec<Vip>,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// The port the VIPs listen on.
    pub inport: u16,
    /// The Service port's name (to select local endpoints later).
    pub port_name: String,
    /// Eligible endpoints of the whole cluster.
    pub cluster_targets: Vec<Target>,
    /// Router rules keep only the node's endpoints and skip SNAT.
    pub external_traffic_local: bool,
    /// Switch rules keep only the node's endpoints.
    pub internal_traffic_local: bool,
    /// A NodePort config.
    pub has_node_port: bool,
}

/// The configs of `service`: (per node, cluster-wide).
pub fn service_configs(
    service: &ServiceView,
    slices: &[&SliceView],
    network_subnets: &[IpNetwork],
) -> (Vec<LbConfig>, Vec<LbConfig>) {
    let mut per_node = Vec::new();
    let mut cluster = Vec::new();
    for port in &service.ports {
        let targets = eligible(slices, &port.name, &port.protocol, None);
        let base = LbConfig {
            vips: Vec::new(),
            protocol: port.protocol.clone(),
            inport: port.port,
            port_name: port.name.clone(),
            cluster_targets: targets.clone(),
            external_traffic_local: false,
            internal_traffic_local: false,
            has_node_port: false,
        };
        if let Some(node_port) = port.node_port {
            // Never influenced by internalTrafficPolicy.
            per_node.push(LbConfig {
                vips: vec![Vip::NodeIps],
                inport: node_port,
                external_traffic_local: service.etp_local,
                has_node_port: true,
                ..base.clone()
            });
        }
        let mut vips: Vec<Vip> = service.cluster_ips.iter().copied().map(Vip::Ip).collect();
        let external: Vec<Vip> = service.external_ips.iter().copied().map(Vip::Ip).collect();
        if service.etp_local && !external.is_empty() {
            per_node.push(LbConfig {
                vips: external,
                external_traffic_local: true,
                ..base.clone()
            });
        } else {
            vips.extend(external);
        }
        let cluster_ip = LbConfig {
            vips,
            internal_traffic_local: service.itp_local,
            ..base
        };
        let host_endpoints = targets
            .iter()
            .any(|(ip, _)| !network_subnets.iter().any(|s| s.contains(*ip)));
        if host_endpoints || service.itp_local {
            per_node.push(cluster_ip);
        } else {
            cluster.push(cluster_ip);
        }
    }
    (per_node, cluster)
}

#[cfg(test)]
mod tests {
    use super::super::view::{EndpointView, ServicePortView};
    use super::*;

    fn service() -> ServiceView {
        ServiceView {
            namespace: "ns".to_owned(),
            name: "web".to_owned(),
            cluster_ips: vec!["10.96.0.10".parse().unwrap()],
            ports: vec![ServicePortView {
                name: "http".to_owned(),
                protocol: "TCP".to_owned(),
                port: 80,
                node_port: Some(30080),
            }],
            affinity_timeout: None,
            external_ips: vec!["192.0.2.10".parse().unwrap()],
            etp_local: false,
            itp_local: false,
        }
    }

    fn slice(ip: &str) -> SliceView {
        SliceView {
            namespace: "ns".to_owned(),
            service: "web".to_owned(),
            network: None,
            ports: vec![("http".to_owned(), 8080, "TCP".to_owned())],
            endpoints: vec![EndpointView {
                addresses: vec![ip.parse().unwrap()],
                ready: true,
                serving: true,
                terminating: false,
                node: Some("node1".to_owned()),
            }],
        }
    }

    fn subnets() -> Vec<IpNetwork> {
        vec!["10.244.0.0/16".parse().unwrap()]
    }

    #[test]
    fn a_node_port_is_per_node_and_external_ips_join_the_cluster_ip() {
        let s = slice("10.244.1.5");
        let (per_node, cluster) = service_configs(&service(), &[&s], &subnets());
        assert_eq!(per_node.len(), 1);
        assert_eq!(per_node[0].vips, [Vip::NodeIps]);
        assert_eq!(per_node[0].inport, 30080);
        assert!(per_node[0].has_node_port);
        assert_eq!(cluster.len(), 1);
        assert_eq!(
            cluster[0].vips,
            [
                Vip::Ip("10.96.0.10".parse().unwrap()),
                Vip::Ip("192.0.2.10".parse().unwrap())
            ]
        );
    }

    #[test]
    fn etp_local_splits_external_ips_and_host_endpoints_make_the_cluster_ip_per_node() {
        let mut svc = service();
        svc.etp_local = true;
        let s = slice("172.18.0.2");
        let (per_node, cluster) = service_configs(&svc, &[&s], &subnets());
        assert!(cluster.is_empty());
        assert_eq!(per_node.len(), 3);
        assert!(per_node[0].external_traffic_local && per_node[0].has_node_port);
        assert_eq!(per_node[1].vips, [Vip::Ip("192.0.2.10".parse().unwrap())]);
        assert!(per_node[1].external_traffic_local && !per_node[1].has_node_port);
        assert_eq!(per_node[2].vips, [Vip::Ip("10.96.0.10".parse().unwrap())]);
        assert!(!per_node[2].external_traffic_local);
    }
}
