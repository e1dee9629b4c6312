//! Dynamic UDN in the zone (upstream `--enable-dynamic-udn-allocation`): cluster-manager gives
//! a UDN network's per-node state (a Layer3 host subnet, a primary Layer2 network's gateway
//! router tunnel ID) only to nodes where its pods run, and takes it back after the grace
//! period. The zone follows that state: a network none of whose local nodes carries it has
//! no rows here (and is torn down when the last one loses it), and a node without it is
//! simply not rendered for the network, local or remote, without a problem reported.
//! Networks without per-node state (secondary Layer2, localnet) are on every node.

use std::collections::BTreeMap;

use crate::model::{Network, Node, Topology};

/// Whether `net` has per-node state cluster-manager gates (Layer3 UDNs, primary Layer2
/// UDNs).
pub fn gated(net: &Network) -> bool {
    match net.topology() {
        Topology::Layer3 => true,
        Topology::Layer2 => net.is_primary(),
        Topology::Default | Topology::Localnet => false,
    }
}

/// Whether `node` carries `net`'s per-node state (always for a network without any).
pub fn renders(net: &Network, node: &Node) -> bool {
    match net.topology() {
        Topology::Layer3 => !node.subnets_of(&net.name).is_empty(),
        Topology::Layer2 if net.is_primary() => {
            node.layer2_gateway_tunnel_ids.contains_key(&net.name)
        }
        _ => true,
    }
}

/// Keeps the networks some local node of `nodes` renders.
pub fn retain_rendered(networks: &mut BTreeMap<String, Network>, nodes: &[Node]) {
    networks
        .retain(|_, net| !gated(net) || nodes.iter().any(|node| node.local && renders(net, node)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer3_network_is_kept_only_where_a_local_node_has_its_subnet() {
        let config = udn_api::cluster::ClusterConfig::ipv4_only();
        let conf = udn_api::netconf::NetConf::parse(
            r#"{"cniVersion":"1.0.0","name":"blue_net","type":"ovn-k8s-cni-overlay","topology":"layer3","role":"primary","subnets":"10.10.0.0/16/24","netAttachDefName":"blue/net"}"#,
            1400,
        )
        .unwrap();
        let info = udn_api::netconf::NetInfo::from_netconf(&conf, &config).unwrap();
        let blue = Network {
            name: "blue_net".into(),
            id: 1,
            info,
            nads: ["blue/net".to_owned()].into(),
            tunnel_keys: Vec::new(),
        };
        let mut local = Node::new("node1", true);
        let mut remote = Node::new("node2", false);
        remote
            .subnets
            .insert("blue_net".into(), vec!["10.10.1.0/24".parse().unwrap()]);
        let mut networks = BTreeMap::from([
            ("default".to_owned(), Network::default_network()),
            ("blue_net".to_owned(), blue.clone()),
        ]);
        // Only a remote node has it: not here.
        retain_rendered(&mut networks, &[local.clone(), remote.clone()]);
        assert!(!networks.contains_key("blue_net"));
        assert!(networks.contains_key("default"));
        local
            .subnets
            .insert("blue_net".into(), vec!["10.10.0.0/24".parse().unwrap()]);
        networks.insert("blue_net".into(), blue.clone());
        retain_rendered(&mut networks, &[local.clone(), remote]);
        assert!(networks.contains_key("blue_net"));
        assert!(renders(&blue, &local));
    }
}
