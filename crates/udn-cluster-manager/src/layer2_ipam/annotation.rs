//! The `k8s.ovn.org/pod-networks` entry of one attachment (upstream
//! `allocatePodAnnotationWithRollback` + `AddRoutesGatewayIP` for Layer2 / Localnet): MAC from
//! the request or the first IP, requested default-route gateways, and for a primary Layer2
//! network the service-CIDR and join-subnet routes via the network gateway, the gateway as
//! default route and the IPv6 link-local gateway. Pure.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::annotations::{MacAddress, PodNetworkAnnotation, PodNetworkRole, PodRoute};
use udn_api::crd::NetworkTopology;
use udn_api::netconf::UserDefinedNetInfo;
use udn_ipam::{IpFamily, ip_to_mac, layer2_infrastructure_ips};

/// What one entry is built from.
#[derive(Debug)]
pub(crate) struct EntryInputs<'a> {
    pub(crate) info: &'a UserDefinedNetInfo,
    pub(crate) role: PodNetworkRole,
    pub(crate) ips: &'a [IpNetwork],
    pub(crate) mac: MacAddress,
    pub(crate) tunnel_id: u32,
    /// `default-route` of the selection element.
    pub(crate) gateway_request: &'a [IpAddr],
    pub(crate) service_cidrs: &'a [IpNetwork],
}

/// The MAC of an attachment: requested, else derived from the first IP, else a random-looking
/// locally administered unicast MAC that is stable for `seed` (upstream draws a random one).
pub(crate) fn attachment_mac(
    requested: Option<MacAddress>,
    ips: &[IpNetwork],
    seed: &str,
) -> MacAddress {
    if let Some(mac) = requested {
        return mac;
    }
    if let Some(ip) = ips.first() {
        return MacAddress(ip_to_mac(ip.ip()).octets());
    }
    let mut hasher = DefaultHasher::new();
    seed.hash(&mut hasher);
    let [a, b, c, d, e, f, _, _] = hasher.finish().to_be_bytes();
    MacAddress([(a | 0x02) & 0xfe, b, c, d, e, f])
}

/// The gateway of the network subnet holding `ip` (upstream `GetNodeGatewayIP` of a Layer2
/// network: the configured or infrastructure-derived gateway, else the subnet's first IP).
fn gateway_for(info: &UserDefinedNetInfo, ip: IpNetwork) -> Option<IpAddr> {
    let subnet = IpNetwork::new(ip.network(), ip.prefix()).ok()?;
    let family = IpFamily::of_net(subnet);
    let configured = info
        .default_gateway_ips
        .iter()
        .copied()
        .find(|gw| IpFamily::of_addr(*gw) == family);
    layer2_infrastructure_ips(subnet, &info.infrastructure_subnets, configured)
        .ok()
        .map(|ips| ips.gateway)
}

/// Builds the entry.
pub(crate) fn pod_entry(inputs: &EntryInputs<'_>) -> PodNetworkAnnotation {
    let mut entry = PodNetworkAnnotation {
        ip_addresses: inputs.ips.to_vec(),
        mac_address: inputs.mac,
        gateway_ips: inputs.gateway_request.to_vec(),
        routes: Vec::new(),
        ipv6_lla_gateway_ip: None,
        tunnel_id: inputs.tunnel_id,
        role: Some(inputs.role),
    };
    if inputs.info.topology != NetworkTopology::Layer2 || !inputs.info.primary {
        return entry;
    }
    let mut router_mac: Option<(IpFamily, udn_ipam::MacAddress)> = None;
    for ip in inputs.ips {
        let Some(gateway) = gateway_for(inputs.info, *ip) else {
            continue;
        };
        let family = IpFamily::of_net(*ip);
        for cidr in inputs.service_cidrs {
            if IpFamily::of_net(*cidr) == family {
                entry.routes.push(PodRoute {
                    dest: *cidr,
                    next_hop: Some(gateway),
                });
            }
        }
        if let Some(join) = inputs
            .info
            .join_subnets
            .iter()
            .find(|join| IpFamily::of_net(**join) == family)
        {
            entry.routes.push(PodRoute {
                dest: *join,
                next_hop: Some(gateway),
            });
        }
        if inputs.gateway_request.is_empty() {
            entry.gateway_ips.push(gateway);
        }
        // The router port MAC derives from the IPv4 gateway when there is one.
        if router_mac.is_none_or(|(f, _)| f == IpFamily::V6 && family == IpFamily::V4) {
            router_mac = Some((family, ip_to_mac(gateway)));
        }
    }
    if inputs.info.ipv6
        && let Some((_, mac)) = router_mac
    {
        entry.ipv6_lla_gateway_ip = Some(mac.ipv6_link_local());
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use udn_api::annotations::{PodNetworks, format_pod_networks};
    use udn_api::cluster::ClusterConfig;
    use udn_api::netconf::{NetConf, NetInfo};

    fn info(role: &str, subnets: &str, topology: &str) -> UserDefinedNetInfo {
        let conf = NetConf {
            name: "ns_net".into(),
            topology: topology.into(),
            role: role.into(),
            subnets: subnets.into(),
            nad_name: "ns/net".into(),
            ..NetConf::default()
        };
        NetInfo::from_netconf(&conf, &ClusterConfig::default())
            .unwrap()
            .user_defined()
            .unwrap()
            .clone()
    }

    fn render(entry: PodNetworkAnnotation) -> String {
        format_pod_networks(&PodNetworks::from([("ns/net".to_owned(), entry)])).unwrap()
    }

    fn nets(texts: &[&str]) -> Vec<IpNetwork> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    /// Upstream unit test: dual-stack primary Layer2, no service CIDRs, tunnel ID 100. With
    /// the transit router the LLA comes from the IPv4 gateway's MAC.
    #[test]
    fn primary_layer2_dual_stack_as_upstream() {
        let info = info("primary", "192.168.0.0/24,2010:100:200::/60", "layer2");
        let ips = nets(&["192.168.0.3/24", "2010:100:200::3/60"]);
        let entry = pod_entry(&EntryInputs {
            info: &info,
            role: PodNetworkRole::Primary,
            ips: &ips,
            mac: attachment_mac(None, &ips, "x"),
            tunnel_id: 100,
            gateway_request: &[],
            service_cidrs: &[],
        });
        assert_eq!(
            render(entry),
            r#"{"ns/net":{"ip_addresses":["192.168.0.3/24","2010:100:200::3/60"],"mac_address":"0a:58:c0:a8:00:03","gateway_ips":["192.168.0.1","2010:100:200::1"],"routes":[{"dest":"100.65.0.0/16","nextHop":"192.168.0.1"},{"dest":"fd99::/64","nextHop":"2010:100:200::1"}],"ipv6_lla_gateway_ip":"fe80::858:c0ff:fea8:1","tunnel_id":100,"role":"primary"}}"#
        );
    }

    #[test]
    fn primary_layer2_single_stack_with_service_cidrs() {
        let info = info("primary", "10.100.0.0/16", "layer2");
        let ips = nets(&["10.100.0.3/16"]);
        let services = nets(&["10.96.0.0/16", "fd00:10:96::/112"]);
        let entry = pod_entry(&EntryInputs {
            info: &info,
            role: PodNetworkRole::Primary,
            ips: &ips,
            mac: attachment_mac(None, &ips, "x"),
            tunnel_id: 10,
            gateway_request: &[],
            service_cidrs: &services,
        });
        assert_eq!(
            render(entry),
            r#"{"ns/net":{"ip_addresses":["10.100.0.3/16"],"mac_address":"0a:58:0a:64:00:03","gateway_ips":["10.100.0.1"],"routes":[{"dest":"10.96.0.0/16","nextHop":"10.100.0.1"},{"dest":"100.65.0.0/16","nextHop":"10.100.0.1"}],"ip_address":"10.100.0.3/16","gateway_ip":"10.100.0.1","tunnel_id":10,"role":"primary"}}"#
        );
    }

    #[test]
    fn secondary_layer2_has_no_routes_unless_gateway_requested() {
        let info = info("secondary", "10.200.0.0/24", "layer2");
        let ips = nets(&["10.200.0.1/24"]);
        let entry = pod_entry(&EntryInputs {
            info: &info,
            role: PodNetworkRole::Secondary,
            ips: &ips,
            mac: attachment_mac(None, &ips, "x"),
            tunnel_id: 11,
            gateway_request: &[],
            service_cidrs: &nets(&["10.96.0.0/16"]),
        });
        assert_eq!(
            render(entry),
            r#"{"ns/net":{"ip_addresses":["10.200.0.1/24"],"mac_address":"0a:58:0a:c8:00:01","ip_address":"10.200.0.1/24","tunnel_id":11,"role":"secondary"}}"#
        );
        let requested: Vec<IpAddr> = vec!["10.200.0.254".parse().unwrap()];
        let entry = pod_entry(&EntryInputs {
            info: &info,
            role: PodNetworkRole::Secondary,
            ips: &ips,
            mac: attachment_mac(None, &ips, "x"),
            tunnel_id: 11,
            gateway_request: &requested,
            service_cidrs: &[],
        });
        assert_eq!(entry.gateway_ips, requested);
        assert!(entry.routes.is_empty());
    }

    #[test]
    fn mac_without_ips_is_stable_local_unicast() {
        let a = attachment_mac(None, &[], "ns/net/uid-1");
        assert_eq!(a, attachment_mac(None, &[], "ns/net/uid-1"));
        assert_ne!(a, attachment_mac(None, &[], "ns/net/uid-2"));
        assert_eq!(a.0[0] & 0x03, 0x02);
        let requested = MacAddress([0x02, 0, 0, 0, 0, 1]);
        assert_eq!(
            attachment_mac(Some(requested), &nets(&["10.0.0.5/24"]), "x"),
            requested
        );
    }
}
