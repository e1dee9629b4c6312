//! The default network's management port `ovn-k8s-mp0` (upstream `managementport`,
//! `node-and-interconnect.md` §5.4): an internal `br-int` port for the LSP `k8s-<node>`
//! with the `.2` of the node's host subnet, routes to the cluster subnets via the `.1`, the
//! `.1`'s neighbour entry and forwarding on, and the SNAT of host traffic leaving through it
//! (nft chain `mgmtport-snat`, [`super::mgmt_snat`]). Desired from plain inputs (pure), then
//! applied; re-applied periodically (an internal port comes back empty after a vswitchd
//! restart).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use ipnetwork::IpNetwork;
use udn_api::annotations::mac_address::MacAddress;
use udn_ipam::{GlobalMasqueradeIps, gateway_ip, management_ip};

use crate::netlink::address::{DesiredAddresses, reconcile_addresses};
use crate::netlink::link::{DesiredLink, reconcile_link};
use crate::netlink::neighbor::{Neighbor, ensure_neighbor};
use crate::netlink::route::{DesiredRoutes, RouteSpec, reconcile_routes};
use crate::netlink::sysctl::Sysctl;
use crate::netlink::{Netlink, NetlinkError, link_by_name};
use crate::nft::NftCli;
use crate::ovs::{BR_INT, MgmtPort, Ovs, OvsError, legacy_mgmt_port_name, mgmt_iface_id};

use super::mgmt_snat::{
    self, DesiredMgmtSnat, LegacyIptables, MgmtSnatInputs, NoSnatElements, SnatMemory,
};

/// The default network's management port.
pub const MP0: &str = "ovn-k8s-mp0";

/// What `ovn-k8s-mp0` should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredMgmtPort {
    /// The OVS port.
    pub port: MgmtPort,
    /// Its addresses (the `.2` of each host subnet).
    pub addresses: BTreeSet<IpNetwork>,
    /// Its routes (main table, out of the port).
    pub routes: BTreeSet<RouteSpec>,
    /// Neighbour entries (each `.1` with its MAC).
    pub neighbors: Vec<Neighbor>,
    /// The MTU.
    pub mtu: u32,
    /// The SNAT chain for host traffic leaving through the port (its NodePort set filled
    /// from Services with [`set_no_snat_nodeports`]).
    pub snat: DesiredMgmtSnat,
}

/// Why the management port cannot be rendered or applied.
#[derive(Debug, thiserror::Error)]
pub enum MgmtError {
    /// The host subnet is too small.
    #[error("management port: host subnet {subnet}: {reason}")]
    Subnet {
        /// The subnet.
        subnet: IpNetwork,
        /// Why.
        reason: String,
    },
    /// The node has no default-network host subnet yet.
    #[error("management port: the node has no default network host subnet")]
    NoSubnet,
    /// OVS.
    #[error("management port: {0}")]
    Ovs(#[from] OvsError),
    /// Netlink.
    #[error("management port: {0}")]
    Netlink(#[from] NetlinkError),
    /// The SNAT chain.
    #[error("management port: {0}")]
    Snat(#[from] mgmt_snat::MgmtSnatError),
    /// The internal port's netdev did not appear.
    #[error("management port: netdev {0} did not appear within {1:?}")]
    NoNetdev(String, Duration),
}

/// The desired port for `node` with `host_subnets` (the node's `default` entry of
/// `k8s.ovn.org/node-subnets`), `cluster_subnets` and the default network's masquerade
/// subnet(s).
pub fn desired(
    node: &str,
    host_subnets: &[IpNetwork],
    cluster_subnets: &[IpNetwork],
    masquerade: &[IpNetwork],
    mtu: u32,
) -> Result<DesiredMgmtPort, MgmtError> {
    let first = host_subnets.first().ok_or(MgmtError::NoSubnet)?;
    let subnet_error = |subnet: IpNetwork, reason: String| MgmtError::Subnet { subnet, reason };
    let mut addresses = BTreeSet::new();
    let mut routes = BTreeSet::new();
    let mut neighbors = Vec::new();
    let mut mac: Option<MacAddress> = None;
    // Upstream SNATs to the port's address of each family (its first host subnet's `.2`).
    let mut snat = MgmtSnatInputs {
        interface: MP0.to_owned(),
        ipv4: None,
        ipv6: None,
        no_snat: NoSnatElements::default(),
    };
    for subnet in host_subnets {
        let mgmt = management_ip(*subnet).map_err(|e| subnet_error(*subnet, e.to_string()))?;
        let gateway = gateway_ip(*subnet).map_err(|e| subnet_error(*subnet, e.to_string()))?;
        mac.get_or_insert(ip_to_mac(mgmt.ip()));
        match mgmt.ip() {
            IpAddr::V4(ip) => {
                snat.ipv4.get_or_insert(ip);
            }
            IpAddr::V6(ip) => {
                snat.ipv6.get_or_insert(ip);
            }
        }
        addresses.insert(mgmt);
        neighbors.push(Neighbor {
            link: MP0.to_owned(),
            ip: gateway.ip(),
            mac: ip_to_mac(gateway.ip()),
        });
        for cluster in cluster_subnets
            .iter()
            .filter(|c| c.is_ipv4() == subnet.is_ipv4())
        {
            let mut route = RouteSpec::via(*cluster, Some(gateway.ip()), MP0);
            route.mtu = Some(mtu);
            routes.insert(route);
        }
        // The ETP=Local masquerade IP (upstream `169.254.169.3` of the older /29 default).
        if let Some(etp) = masquerade
            .iter()
            .filter(|m| m.is_ipv4() == subnet.is_ipv4())
            .find_map(|m| GlobalMasqueradeIps::from_subnet(*m).ok())
            .map(|ips| ips.host_etp_local)
        {
            routes.insert(RouteSpec::via(host_route(etp), Some(gateway.ip()), MP0));
        }
    }
    let mac = mac.unwrap_or_else(|| ip_to_mac(first.ip()));
    Ok(DesiredMgmtPort {
        port: MgmtPort {
            bridge: BR_INT.to_owned(),
            name: MP0.to_owned(),
            mac,
            mtu,
            iface_id: mgmt_iface_id(node, None),
            network: None,
            remove_ports: vec![legacy_mgmt_port_name(node)],
        },
        addresses,
        routes,
        neighbors,
        mtu,
        snat: mgmt_snat::desired(&snat),
    })
}

/// upstream's `IPAddrToHWAddr` (`0a:58:` + the IPv4 address, or a hash for IPv6).
fn ip_to_mac(ip: IpAddr) -> MacAddress {
    MacAddress(udn_ipam::ip_to_mac(ip).0)
}

fn host_route(ip: IpAddr) -> IpNetwork {
    let prefix = if ip.is_ipv4() { 32 } else { 128 };
    // A full-length prefix is valid for the address's own family.
    IpNetwork::new(ip, prefix).unwrap_or_else(|_| IpNetwork::from(ip))
}

/// How long the internal port's netdev may take to appear after the OVS port is added.
const NETDEV_APPEAR: Duration = Duration::from_secs(10);

/// Waits for the netdev of the internal port `name`, which ovs-vswitchd creates
/// asynchronously after the port is added; its link.
pub async fn wait_netdev(
    netlink: &Netlink,
    name: &str,
) -> Result<crate::netlink::LinkInfo, MgmtError> {
    let deadline = tokio::time::Instant::now() + NETDEV_APPEAR;
    loop {
        if let Some(link) = link_by_name(netlink, name).await? {
            return Ok(link);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(MgmtError::NoNetdev(name.to_owned(), NETDEV_APPEAR));
        }
        // Netlink has no wait for a name to appear short of a link monitor: look again.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Applies `desired`: the OVS port, then (once vswitchd made the netdev) MTU and up,
/// exactly its addresses, its routes, the neighbour entries and forwarding, then the SNAT
/// chain (one `nft -f`, only when it differs from what `memory` says was written, or the
/// chain lists differently) and, once, as upstream at start, the legacy iptables chain's
/// removal where iptables is installed.
pub async fn apply(
    ovs: &Ovs,
    desired: &DesiredMgmtPort,
    memory: &mut MgmtMemory,
) -> Result<(), MgmtError> {
    ovs.ensure_mgmt_port(&desired.port).await?;
    let netlink = Netlink::connect_current("host")?;
    wait_netdev(&netlink, MP0).await?;
    reconcile_link(&netlink, &DesiredLink::up(MP0, Some(desired.mtu))).await?;
    reconcile_addresses(
        &netlink,
        &DesiredAddresses {
            link: MP0.to_owned(),
            addresses: desired.addresses.clone(),
            nodad: true,
        },
    )
    .await?;
    reconcile_routes(
        &netlink,
        &DesiredRoutes {
            table: crate::netlink::route::MAIN_TABLE,
            link: Some(MP0.to_owned()),
            routes: desired.routes.clone(),
        },
    )
    .await?;
    for neighbor in &desired.neighbors {
        ensure_neighbor(&netlink, neighbor).await?;
    }
    Sysctl::dotted(&format!("net.ipv4.conf.{MP0}.forwarding")).ensure("host", "1")?;
    mgmt_snat::ensure(&NftCli::new(), &desired.snat, &mut memory.snat).await?;
    if !memory.legacy_removed {
        LegacyIptables::new().delete_chain(MP0).await;
        memory.legacy_removed = true;
    }
    Ok(())
}

/// Sets the `mgmtport-no-snat-nodeports` elements of `desired` to `nodeports`; whether they
/// changed (then [`ensure_snat`] writes them).
pub fn set_no_snat_nodeports(
    desired: &mut DesiredMgmtPort,
    nodeports: BTreeSet<mgmt_snat::NodePort>,
) -> bool {
    if desired.snat.inputs.no_snat.nodeports == nodeports {
        return false;
    }
    let mut inputs = desired.snat.inputs.clone();
    inputs.no_snat.nodeports = nodeports;
    desired.snat = mgmt_snat::desired(&inputs);
    true
}

/// Writes the SNAT chain and its sets of `desired` unless `memory` says they are already
/// there (the rest of the port is left alone); whether it wrote.
pub async fn ensure_snat(
    desired: &DesiredMgmtPort,
    memory: &mut MgmtMemory,
) -> Result<bool, MgmtError> {
    Ok(mgmt_snat::ensure(&NftCli::new(), &desired.snat, &mut memory.snat).await?)
}

/// What [`apply`] remembers from one call to the next: the SNAT chain it wrote (not
/// written again while nothing changed), and that the legacy iptables chain was removed
/// (once, at start, as upstream).
#[derive(Debug, Default)]
pub struct MgmtMemory {
    snat: SnatMemory,
    legacy_removed: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn upstreams_mp0() {
        let desired = desired(
            "node1",
            &["10.244.1.0/24".parse().unwrap()],
            &["10.244.0.0/16".parse().unwrap()],
            &["169.254.0.0/17".parse().unwrap()],
            1400,
        )
        .unwrap();
        assert_eq!(desired.port.mac.to_string(), "0a:58:0a:f4:01:02");
        assert_eq!(desired.port.iface_id, "k8s-node1");
        assert_eq!(
            desired
                .addresses
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["10.244.1.2/24"]
        );
        let routes: Vec<_> = desired
            .routes
            .iter()
            .map(|r| (r.dest.to_string(), r.gateway.unwrap().to_string(), r.mtu))
            .collect();
        assert_eq!(
            routes,
            [
                (
                    "10.244.0.0/16".to_owned(),
                    "10.244.1.1".to_owned(),
                    Some(1400)
                ),
                ("169.254.0.3/32".to_owned(), "10.244.1.1".to_owned(), None),
            ]
        );
        assert_eq!(desired.neighbors[0].mac.to_string(), "0a:58:0a:f4:01:01");
        assert_eq!(desired.snat.inputs.interface, MP0);
        assert_eq!(
            desired.snat.inputs.ipv4,
            Some("10.244.1.2".parse().unwrap())
        );
        assert_eq!(desired.snat.inputs.ipv6, None);
        assert_eq!(desired.snat.rules.last().unwrap(), "snat ip to 10.244.1.2");
        assert!(desired.snat.elements.is_empty());
        assert!(matches!(
            super::desired("n", &[], &[], &[], 1400),
            Err(MgmtError::NoSubnet)
        ));
    }

    #[test]
    fn snat_to_the_first_2_of_each_family() {
        let desired = desired(
            "node1",
            &[
                "fd00:10:244:1::/64".parse().unwrap(),
                "10.244.1.0/24".parse().unwrap(),
                "10.245.1.0/24".parse().unwrap(),
            ],
            &[],
            &[],
            1400,
        )
        .unwrap();
        assert_eq!(
            desired.snat.inputs.ipv4,
            Some("10.244.1.2".parse().unwrap())
        );
        assert_eq!(
            desired.snat.inputs.ipv6,
            Some("fd00:10:244:1::2".parse().unwrap())
        );
        assert_eq!(desired.snat.rules.len(), 10);
    }
}
