//! A network as the zone sees it: the default network, or a network defined by one or more
//! NetworkAttachmentDefinitions with the same NetConf `name`.

use std::collections::BTreeSet;

use udn_api::crd::NetworkTopology;
use udn_api::names::ovn_prefix;
use udn_api::netconf::{NetInfo, UserDefinedNetInfo};

/// The default network's name.
pub const DEFAULT_NETWORK: &str = udn_api::names::DEFAULT_NETWORK_NAME;

/// One network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    /// Network name (`default`, or the NetConf `name`, e.g. `ns1_blue` / `cluster_udn_x`).
    pub name: String,
    /// Network ID (0 for the default network; from the NAD's `k8s.ovn.org/network-id`).
    pub id: u32,
    /// The typed NetConf (`NetInfo::Default` for the default network).
    pub info: NetInfo,
    /// Keys (`namespace/name`) of the NADs that define it; empty for the default network.
    pub nads: BTreeSet<String>,
    /// `k8s.ovn.org/tunnel-keys` of the NADs (transit-router Layer2 networks), else empty.
    pub tunnel_keys: Vec<u32>,
}

/// What kind of topology a network gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Topology {
    /// The cluster default network (Layer3-shaped, unprefixed names, no network markers).
    Default,
    /// A switch per node behind a cluster router.
    Layer3,
    /// One switch across nodes.
    Layer2,
    /// A switch bridged onto a physical network.
    Localnet,
}

impl Topology {
    /// The `k8s.ovn.org/topology` value (`layer3` for the default network, which carries no
    /// markers upstream).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default | Self::Layer3 => "layer3",
            Self::Layer2 => "layer2",
            Self::Localnet => "localnet",
        }
    }
}

impl Network {
    /// The default network.
    pub fn default_network() -> Self {
        Self {
            name: DEFAULT_NETWORK.to_owned(),
            id: 0,
            info: NetInfo::Default,
            nads: BTreeSet::new(),
            tunnel_keys: Vec::new(),
        }
    }

    /// Whether this is the default network.
    pub fn is_default(&self) -> bool {
        matches!(self.info, NetInfo::Default)
    }

    /// The user-defined network's values; `None` for the default network.
    pub fn user_defined(&self) -> Option<&UserDefinedNetInfo> {
        self.info.user_defined()
    }

    /// The topology.
    pub fn topology(&self) -> Topology {
        match self.user_defined() {
            None => Topology::Default,
            Some(info) => match info.topology {
                NetworkTopology::Layer3 => Topology::Layer3,
                NetworkTopology::Layer2 => Topology::Layer2,
                NetworkTopology::Localnet => Topology::Localnet,
            },
        }
    }

    /// Whether the network is a pod's primary network where it is used (the default network,
    /// or a primary UDN).
    pub fn is_primary(&self) -> bool {
        self.user_defined().is_none_or(|info| info.primary)
    }

    /// The OVN name prefix: empty for the default network, else upstream's
    /// `GetUserDefinedNetworkPrefix` (`ns1_blue` -> `ns1_blue_`, `l3-net` -> `l3.net_`).
    pub fn prefix(&self) -> String {
        if self.is_default() {
            String::new()
        } else {
            ovn_prefix(&self.name)
        }
    }

    /// A network-scoped OVN name: the prefix followed by `name`.
    pub fn scoped(&self, name: &str) -> String {
        let mut scoped = self.prefix();
        scoped.push_str(name);
        scoped
    }

    /// The controller name upstream stamps as `k8s.ovn.org/owner-controller`:
    /// `<network>-network-controller` (`default-network-controller`).
    pub fn controller_name(&self) -> String {
        format!("{}-network-controller", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_network_names_are_unprefixed() {
        let net = Network::default_network();
        assert!(net.is_default() && net.is_primary());
        assert_eq!(net.prefix(), "");
        assert_eq!(net.scoped("ovn_cluster_router"), "ovn_cluster_router");
        assert_eq!(net.controller_name(), "default-network-controller");
        assert_eq!(net.topology(), Topology::Default);
    }
}
