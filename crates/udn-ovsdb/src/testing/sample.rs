//! A sample desired unit shaped like a Layer3 network, shared by the engine's unit tests,
//! its real-server tests and the scale measurements.

use crate::engine::{DesiredRow, DesiredUnit, RowRef, UnitKey};

/// A Layer3-like network: cluster router (router port per node, static route, SNAT), a
/// switch per node with a router-type port and a management port, a port group holding
/// the management ports with two ACLs; owner type `Network`, unit name `name`. Node addresses
/// are distinct for any number of nodes (`10.<node / 250>.<node % 250>.0/24`).
pub fn sample_network(name: &str, nodes: usize) -> DesiredUnit {
    let ids = [
        ("k8s.ovn.org/network", name),
        ("k8s.ovn.org/topology", "layer3"),
    ];
    let router = format!("{name}_ovn_cluster_router");
    let pg = format!("{name}_pg");
    let mut unit = DesiredUnit::new(UnitKey::new("Network", name));
    let mut router_ports = Vec::new();
    let mut mgmt_ports = Vec::new();
    for node in 0..nodes {
        let switch = format!("{name}_node{node}");
        let (rtos, stor, mgmt) = (
            format!("rtos-{switch}"),
            format!("stor-{switch}"),
            format!("k8s-{switch}"),
        );
        let (hi, lo) = (node / 250, node % 250);
        unit = unit
            .row(
                DesiredRow::new("Logical_Router_Port", &rtos)
                    .string("name", &rtos)
                    .string("mac", &format!("0a:58:0a:{hi:02x}:{lo:02x}:01"))
                    .strings("networks", [format!("10.{hi}.{lo}.1/24").as_str()])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &stor)
                    .string("name", &stor)
                    .string("type", "router")
                    .strings("addresses", ["router"])
                    .map("options", [("router-port", rtos.as_str())])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &mgmt)
                    .string("name", &mgmt)
                    .strings(
                        "addresses",
                        [format!("0a:58:0a:{hi:02x}:{lo:02x}:02 10.{hi}.{lo}.2").as_str()],
                    )
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch", &switch)
                    .string("name", &switch)
                    .map(
                        "other_config",
                        [("subnet", format!("10.{hi}.{lo}.0/24").as_str())],
                    )
                    .map("external_ids", ids)
                    .refs(
                        "ports",
                        [
                            RowRef::desired("Logical_Switch_Port", &stor),
                            RowRef::desired("Logical_Switch_Port", &mgmt),
                        ],
                    ),
            );
        router_ports.push(RowRef::desired("Logical_Router_Port", &rtos));
        mgmt_ports.push(RowRef::desired("Logical_Switch_Port", &mgmt));
    }
    let (route, nat) = (format!("{name}_route"), format!("{name}_nat"));
    let acls = [format!("{name}_acl_in"), format!("{name}_acl_out")];
    unit = unit
        .row(
            DesiredRow::new("Logical_Router_Static_Route", &route)
                .string("ip_prefix", "10.128.0.0/14")
                .string("nexthop", "100.64.0.2")
                .map("external_ids", ids),
        )
        .row(
            DesiredRow::new("NAT", &nat)
                .string("type", "snat")
                .string("logical_ip", "10.128.0.0/14")
                .string("external_ip", "172.18.0.2")
                .map("external_ids", ids),
        )
        .row(
            DesiredRow::new("Logical_Router", &router)
                .string("name", &router)
                .map(
                    "external_ids",
                    [("k8s.ovn.org/network", name), ("k8s-cluster-router", "yes")],
                )
                .refs("ports", router_ports)
                .refs(
                    "static_routes",
                    [RowRef::desired("Logical_Router_Static_Route", &route)],
                )
                .refs("nat", [RowRef::desired("NAT", &nat)]),
        );
    for (acl, direction) in acls.iter().zip(["to-lport", "from-lport"]) {
        let port = if direction == "to-lport" {
            "outport"
        } else {
            "inport"
        };
        unit = unit.row(
            DesiredRow::new("ACL", acl)
                .integer("priority", 1001)
                .string("direction", direction)
                .string("match", &format!("{port} == @{pg}"))
                .string("action", "allow-related")
                .map("external_ids", [("direction", direction)]),
        );
    }
    unit.row(
        DesiredRow::new("Port_Group", &pg)
            .string("name", &pg)
            .refs("ports", mgmt_ports)
            .refs("acls", acls.iter().map(|a| RowRef::desired("ACL", a))),
    )
}
