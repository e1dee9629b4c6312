//! Missing annotations give problems, and what does not need them is still rendered.

use super::fixtures::*;
use crate::model::Node;
use crate::topology::{Missing, NODE_UNIT, Part, Problem, ZoneInputs, network_desired};

fn node_problem(node: &str, part: Part, missing: Missing) -> Problem {
    Problem::Node {
        node: node.into(),
        part,
        missing,
    }
}

#[test]
fn a_node_without_chassis_gets_what_does_not_need_it() {
    let config = zone_config();
    let mut node = node1();
    node.chassis_id = None;
    let pods = [pod(
        "ns1",
        "a",
        "node1",
        "ns1/isolatednet",
        &["192.168.1.5/24"],
    )];
    let d = render(&isolatednet(&config), &config, &[node], &pods);
    assert_eq!(
        d.problems,
        [
            node_problem("node1", Part::ClusterRouterPort, Missing::ChassisId),
            node_problem("node1", Part::Gateway, Missing::ChassisId),
            Problem::Pod {
                namespace: "ns1".into(),
                pod: "a".into(),
                nad_key: "ns1/isolatednet".into(),
                missing: Missing::ChassisId,
            },
        ]
    );
    row(&d, "Logical_Switch", "isolatednet_node1");
    row(&d, "Logical_Switch_Port", "k8s-isolatednet_node1");
    row(&d, "Logical_Router_Port", "isolatednet_rtots-node1");
    assert!(find(&d, "Logical_Router_Port", "rtos-isolatednet_node1").is_none());
    assert!(find(&d, "Logical_Router", "GR_isolatednet_node1").is_none());
    assert!(find(&d, "Logical_Switch_Port", "ns1.isolatednet_ns1_a").is_none());
    assert_references_resolve(&d);
}

#[test]
fn a_node_without_host_subnets_is_skipped_whole() {
    let config = zone_config();
    let mut node = node1();
    node.subnets.clear();
    let pods = [pod(
        "ns1",
        "a",
        "node1",
        "ns1/isolatednet",
        &["192.168.1.5/24"],
    )];
    let d = render(&isolatednet(&config), &config, &[node], &pods);
    assert!(d.units.iter().all(|u| u.key.owner_type != NODE_UNIT));
    assert!(d.problems.contains(&node_problem(
        "node1",
        Part::LocalNode,
        Missing::HostSubnets {
            network: "isolatednet".into()
        }
    )));
    assert!(d.problems.iter().any(|p| matches!(
        p,
        Problem::Pod {
            missing: Missing::NodeSwitch { .. },
            ..
        }
    )));
    assert_references_resolve(&d);
}

#[test]
fn a_node_without_id_or_gateway_config() {
    let config = zone_config();
    let mut node = node1();
    node.id = None;
    let d = render(&isolatednet(&config), &config, &[node], &[]);
    assert!(
        d.problems
            .contains(&node_problem("node1", Part::Gateway, Missing::NodeId))
    );
    assert!(
        d.problems
            .contains(&node_problem("node1", Part::Interconnect, Missing::NodeId))
    );
    assert!(find(&d, "Logical_Router", "GR_isolatednet_node1").is_none());
    assert!(rows(&d, "Logical_Router_Static_Route").is_empty());
    row(&d, "Logical_Router_Port", "rtos-isolatednet_node1");
    assert_references_resolve(&d);

    let mut node = node1();
    node.gateway = None;
    let d = render(&isolatednet(&config), &config, &[node], &[]);
    assert_eq!(
        d.problems,
        [node_problem("node1", Part::Gateway, Missing::GatewayConfig)]
    );
    assert!(find(&d, "Logical_Switch", "ext_isolatednet_node1").is_none());
    assert_references_resolve(&d);
}

#[test]
fn incomplete_remote_nodes_are_skipped() {
    let config = zone_config();
    let mut node2 = remote("node2", 2, CHASSIS2);
    node2.chassis_id = None;
    let mut node3 = remote("node3", 3, CHASSIS3);
    node3.transit_ips.clear();
    let node4 = Node::new("node4", false);
    let d = render(
        &isolatednet(&config),
        &config,
        &[node1(), node2, node3, node4],
        &[],
    );
    assert_eq!(
        d.problems,
        [
            node_problem("node2", Part::RemoteNode, Missing::ChassisId),
            node_problem("node3", Part::RemoteNode, Missing::TransitIps),
            node_problem("node4", Part::RemoteNode, Missing::NodeId),
        ]
    );
    assert!(d.units.iter().all(|u| u.key.owner_type != "RemoteNode"));
}

#[test]
fn unknown_pod_nodes_and_missing_tunnel_ids() {
    let config = zone_config();
    let d = render(
        &isolatednet(&config),
        &config,
        &[node1()],
        &[pod(
            "ns1",
            "a",
            "gone",
            "ns1/isolatednet",
            &["192.168.1.5/24"],
        )],
    );
    assert_eq!(
        d.problems,
        [Problem::Pod {
            namespace: "ns1".into(),
            pod: "a".into(),
            nad_key: "ns1/isolatednet".into(),
            missing: Missing::UnknownNode {
                node: "gone".into()
            },
        }]
    );
    let net = udn("l2-net", "layer2", "secondary", "10.100.0.0/16", 3, &config);
    let d = render(
        &net,
        &config,
        &[node1()],
        &[pod("ns1", "a", "node1", "ns1/l2-net", &["10.100.0.5/16"])],
    );
    assert!(matches!(
        d.problems.as_slice(),
        [Problem::Pod {
            missing: Missing::PodTunnelId,
            ..
        }]
    ));
}

#[test]
fn shared_rows_not_yet_created_leave_the_columns_unmanaged() {
    let config = zone_config();
    let nodes = [node1()];
    let zone = ZoneInputs::new(&config, &nodes);
    let d = network_desired(&isolatednet(&config), &zone, &[]);
    assert!(
        d.problems
            .iter()
            .any(|p| p.to_string().contains("COPP ovnkube-default"))
    );
    assert!(d.problems.iter().any(|p| {
        p.to_string()
            .contains("Load_Balancer_Group isolatednet_clusterLBGroup")
    }));
    let cr = row(&d, "Logical_Router", "isolatednet_ovn_cluster_router");
    assert!(!cr.refs.contains_key("copp"));
    let ls = row(&d, "Logical_Switch", "isolatednet_node1");
    assert!(!ls.refs.contains_key("load_balancer_group"));
}

#[test]
fn problems_read_well() {
    let problem = node_problem("node1", Part::Gateway, Missing::ChassisId);
    assert_eq!(
        problem.to_string(),
        "node node1: gateway not rendered: no k8s.ovn.org/node-chassis-id"
    );
}
