//! The savings at equal features (`Lean`): what each leaves out, what it keeps, and that
//! every one of them off renders upstream's rows.

use super::fixtures::*;
use crate::model::{Lean, Network, ZoneConfig};

fn lean_config(lean: Lean) -> ZoneConfig {
    ZoneConfig {
        lean,
        ..zone_config()
    }
}

fn nodes(remote_node: bool) -> Vec<crate::model::Node> {
    let mut nodes = vec![node1()];
    if remote_node {
        nodes.push(remote("node2", 5, "chassis-2"));
    }
    nodes
}

fn udn(lean: Lean, remote_node: bool) -> crate::topology::NetworkDesired {
    let config = lean_config(lean);
    render(&isolatednet(&config), &config, &nodes(remote_node), &[])
}

#[test]
fn skip_multicast_drops_the_multicast_keys_options_and_port_group() {
    let lean = Lean {
        skip_multicast: true,
        ..Lean::UPSTREAM
    };
    for (d, multicast) in [(udn(lean, true), false), (udn(Lean::UPSTREAM, true), true)] {
        let ts = row(&d, "Logical_Switch", "isolatednet_transit_switch");
        let config = map(ts, "other_config");
        assert_eq!(config.contains_key("mcast_snoop"), multicast, "{config:?}");
        assert_eq!(config.contains_key("mcast_querier"), multicast);
        assert_eq!(config.contains_key("mcast_flood_unregistered"), multicast);
        assert!(config.contains_key("interconn-ts") && config.contains_key("requested-tnl-key"));
        let rtots = row(&d, "Logical_Router_Port", "isolatednet_rtots-node1");
        assert_eq!(map(rtots, "options").contains_key("mcast_flood"), multicast);
        let groups: Vec<String> = rows(&d, "Port_Group")
            .iter()
            .map(|r| s(r, "name"))
            .collect();
        assert_eq!(groups.len(), if multicast { 2 } else { 1 }, "{groups:?}");
        assert_references_resolve(&d);
    }
}

#[test]
fn skip_node_allow_acl_drops_the_udn_acl_only() {
    let lean = Lean {
        skip_node_allow_acl: true,
        ..Lean::UPSTREAM
    };
    let d = udn(lean, false);
    let switch = row(&d, "Logical_Switch", "isolatednet_node1");
    assert!(refs(switch, "acls").is_empty());
    assert!(rows(&d, "ACL").is_empty());
    // The management port stays, and stays in clusterPortGroup.
    assert!(refs(switch, "ports").contains("k8s-isolatednet_node1"));
    assert_references_resolve(&d);
    let upstream = udn(Lean::UPSTREAM, false);
    let switch = row(&upstream, "Logical_Switch", "isolatednet_node1");
    assert_eq!(refs(switch, "acls").len(), 1);
    // The default network keeps its allow-from-node ACL.
    let config = lean_config(lean);
    let default = render(&Network::default_network(), &config, &[node1()], &[]);
    assert_eq!(
        refs(row(&default, "Logical_Switch", "node1"), "acls").len(),
        1
    );
}

#[test]
fn transit_on_demand_renders_the_transit_switch_while_a_remote_node_has_the_network() {
    let lean = Lean {
        transit_on_demand: true,
        ..Lean::UPSTREAM
    };
    let alone = udn(lean, false);
    assert!(find(&alone, "Logical_Switch", "isolatednet_transit_switch").is_none());
    assert!(find(&alone, "Logical_Router_Port", "isolatednet_rtots-node1").is_none());
    assert!(find(&alone, "Logical_Switch_Port", "isolatednet_tstor-node1").is_none());
    let cr = row(&alone, "Logical_Router", "isolatednet_ovn_cluster_router");
    assert!(!refs(cr, "ports").contains("isolatednet_rtots-node1"));
    assert_references_resolve(&alone);
    // With a remote node it is there, as upstream renders it.
    let shared = udn(lean, true);
    assert_eq!(shared, udn(Lean::UPSTREAM, true));
    let ts = row(&shared, "Logical_Switch", "isolatednet_transit_switch");
    assert_eq!(
        refs(ts, "ports"),
        ["isolatednet_tstor-node1", "isolatednet_tstor-node2"]
            .map(String::from)
            .into()
    );
    // Upstream has it without remote nodes too.
    let upstream = udn(Lean::UPSTREAM, false);
    assert!(find(&upstream, "Logical_Switch", "isolatednet_transit_switch").is_some());
}

#[test]
fn every_saving_on_keeps_the_rest_of_upstream_rows() {
    let lean = udn(Lean::ALL, true);
    let upstream = udn(Lean::UPSTREAM, true);
    let ids =
        |d: &crate::topology::NetworkDesired| -> std::collections::BTreeSet<(String, String)> {
            d.units
                .iter()
                .flat_map(|u| u.rows.iter())
                .map(|r| (r.table.clone(), r.id.clone()))
                .collect()
        };
    let missing: Vec<_> = ids(&upstream).difference(&ids(&lean)).cloned().collect();
    // Only the multicast port group and the allow-from-node ACL go with a remote node.
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(missing.iter().any(|(t, _)| t == "Port_Group"));
    assert!(missing.iter().any(|(t, _)| t == "ACL"));
    assert!(ids(&lean).is_subset(&ids(&upstream)));
}
