//! The per-network view every builder takes: the network, the zone, its names and markers,
//! and the network-wide values derived from the cluster configuration (IP families, cluster
//! and join subnets, masquerade IPs).

use ipnetwork::IpNetwork;
use udn_api::cluster::GatewayMode;
use udn_ipam::{
    GlobalMasqueradeIps, IpFamily, MasqueradeIps, gateway_router_join_ips, node_ip,
    udn_masquerade_ips,
};
use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::protocol::Uuid;

use super::addressing::family_of;
use super::columns::Markers;
use super::names::Names;
use super::problem::Missing;
use super::zone::ZoneInputs;
use crate::model::{Network, Node, Topology};

fn address(error: impl std::fmt::Display) -> Missing {
    Missing::Address {
        reason: error.to_string(),
    }
}

/// One network in one zone.
#[derive(Clone, Debug)]
pub(crate) struct NetCtx<'a> {
    pub(crate) net: &'a Network,
    pub(crate) zone: &'a ZoneInputs<'a>,
    pub(crate) names: Names,
    pub(crate) markers: Markers,
    pub(crate) controller: String,
    pub(crate) topology: Topology,
    /// The default network, or a primary Layer3/Layer2 UDN with segmentation enabled: the
    /// network has a join subnet, gateway routers, management ports and cluster port groups.
    pub(crate) gateway_topology: bool,
}

impl<'a> NetCtx<'a> {
    pub(crate) fn new(net: &'a Network, zone: &'a ZoneInputs<'a>) -> Self {
        let topology = net.topology();
        let info = net.user_defined();
        let primary_udn = info.is_some_and(|i| i.primary)
            && zone.config.segmentation
            && matches!(topology, Topology::Layer3 | Topology::Layer2);
        Self {
            net,
            zone,
            names: Names::new(net.prefix(), topology == Topology::Layer2),
            markers: Markers::new(
                &net.name,
                topology.as_str(),
                info.is_some_and(|i| i.primary),
                info.is_some(),
            ),
            controller: net.controller_name(),
            topology,
            gateway_topology: net.is_default() || primary_udn,
        }
    }

    /// The zone's nodes in name order, local ones (`local`) or remote ones.
    pub(crate) fn nodes(&self, local: bool) -> Vec<&'a Node> {
        let mut nodes: Vec<&Node> = self
            .zone
            .nodes
            .iter()
            .filter(|n| n.local == local)
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        nodes
    }

    /// Whether this is the default network.
    pub(crate) fn is_default(&self) -> bool {
        self.net.is_default()
    }

    /// Whether the network is user-defined.
    pub(crate) fn is_udn(&self) -> bool {
        !self.net.is_default()
    }

    /// Whether the cluster runs local gateway mode.
    pub(crate) fn local_gateway(&self) -> bool {
        self.zone.config.cluster.gateway_mode == GatewayMode::Local
    }

    /// The cluster's IP families (upstream `config.IPv4Mode`/`IPv6Mode`): join IPs,
    /// masquerade IPs and dummy next hops exist for each, whatever the network's subnets.
    pub(crate) fn families(&self) -> Vec<IpFamily> {
        let cluster = &self.zone.config.cluster;
        let mut families = Vec::new();
        if cluster.ipv4_enabled() {
            families.push(IpFamily::V4);
        }
        if cluster.ipv6_enabled() {
            families.push(IpFamily::V6);
        }
        families
    }

    /// Whether the network itself has IPv6 subnets (`IPMode`).
    pub(crate) fn network_ipv6(&self) -> bool {
        match self.net.user_defined() {
            Some(info) => info.ipv6,
            None => self.zone.config.cluster.ipv6_enabled(),
        }
    }

    /// The network's cluster subnets (`Subnets()`).
    pub(crate) fn cluster_subnets(&self) -> Vec<IpNetwork> {
        match self.net.user_defined() {
            Some(info) => info.subnets.iter().map(|s| s.cidr).collect(),
            None => self
                .zone
                .config
                .cluster
                .cluster_subnets
                .iter()
                .map(|s| s.cidr)
                .collect(),
        }
    }

    /// The join subnet of `family` (`JoinSubnetV4/V6`).
    pub(crate) fn join_subnet(&self, family: IpFamily) -> Option<IpNetwork> {
        match self.net.user_defined() {
            Some(info) => info
                .join_subnets
                .iter()
                .copied()
                .find(|s| family_of(*s) == family),
            None => Some(match family {
                IpFamily::V4 => self.zone.config.cluster.join_subnet_v4.into(),
                IpFamily::V6 => self.zone.config.cluster.join_subnet_v6.into(),
            }),
        }
    }

    /// The cluster router's join switch addresses, base + 1 of each family's join subnet
    /// (`getOVNClusterRouterPortToJoinSwitchIfAddrs`).
    pub(crate) fn cluster_join_ips(&self) -> Result<Vec<IpNetwork>, Missing> {
        self.join_subnets()?
            .into_iter()
            .map(|subnet| node_ip(subnet, 1).map_err(address))
            .collect()
    }

    /// The join subnets of the cluster's families.
    fn join_subnets(&self) -> Result<Vec<IpNetwork>, Missing> {
        self.families()
            .into_iter()
            .map(|family| {
                self.join_subnet(family).ok_or(Missing::Family {
                    family,
                    what: "join subnet",
                })
            })
            .collect()
    }

    /// `node`'s gateway router join addresses, base + node ID of each family's join subnet
    /// (`udn.GetGWRouterIPs`).
    pub(crate) fn gateway_join_ips(&self, node: &Node) -> Result<Vec<IpNetwork>, Missing> {
        let id = node.id.ok_or(Missing::NodeId)?;
        gateway_router_join_ips(&self.join_subnets()?, id).map_err(address)
    }

    /// The masquerade subnet of `family`.
    pub(crate) fn masquerade_subnet(&self, family: IpFamily) -> IpNetwork {
        match family {
            IpFamily::V4 => self.zone.config.cluster.masquerade_subnet_v4.into(),
            IpFamily::V6 => self.zone.config.cluster.masquerade_subnet_v6.into(),
        }
    }

    /// The network's masquerade IPs of `family` (user-defined networks).
    pub(crate) fn udn_masquerade(&self, family: IpFamily) -> Result<MasqueradeIps, Missing> {
        udn_masquerade_ips(self.masquerade_subnet(family), self.net.id).map_err(|e| {
            Missing::Address {
                reason: e.to_string(),
            }
        })
    }

    /// The cluster-wide masquerade IPs of `family` (dummy next hop, host masquerade).
    pub(crate) fn global_masquerade(
        &self,
        family: IpFamily,
    ) -> Result<GlobalMasqueradeIps, Missing> {
        GlobalMasqueradeIps::from_subnet(self.masquerade_subnet(family)).map_err(|e| {
            Missing::Address {
                reason: e.to_string(),
            }
        })
    }

    /// The COPP reference of routers: the default network's own row, or the shared row
    /// another engine owns (`None` while it does not exist).
    pub(crate) fn copp_ref(&self) -> Option<RowRef> {
        if self.is_default() {
            Some(RowRef::desired(
                udn_ovsdb::nb::copp::TABLE,
                super::copp::DEFAULT_COPP,
            ))
        } else {
            self.zone.copp.map(|uuid| self.shared_ref(uuid))
        }
    }

    /// A reference to a row other controllers own (or no controller): ahead when this pass
    /// inserts it ([`ZoneInputs::ahead`](super::ZoneInputs)).
    fn shared_ref(&self, uuid: Uuid) -> RowRef {
        if self.zone.ahead.contains(&uuid) {
            RowRef::Ahead(uuid)
        } else {
            RowRef::Existing(uuid)
        }
    }

    /// References to the load balancer groups `bases` (network-scoped names), or `None`
    /// when one does not exist yet.
    pub(crate) fn lb_group_refs(&self, bases: &[&str]) -> Option<Vec<RowRef>> {
        bases
            .iter()
            .map(|base| {
                let name = self.names.load_balancer_group(base);
                self.zone
                    .load_balancer_groups
                    .get(&name)
                    .copied()
                    .map(|uuid| self.shared_ref(uuid))
            })
            .collect()
    }

    /// Options of every NAT (upstream `buildNAT`): `stateless=false`.
    pub(crate) fn nat_row(&self, row: DesiredRow) -> DesiredRow {
        let row = row.map("options", [("stateless", "false")]);
        match &self.zone.ephemeral_port_range {
            Some(range) => row.string("external_port_range", range),
            None => row,
        }
    }

    /// `k8s.ovn.org/network` value upstream stamps on interconnect routes.
    pub(crate) fn network_name(&self) -> &str {
        &self.net.name
    }
}
