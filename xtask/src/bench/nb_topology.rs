//! The synthetic Northbound contents of `cargo xtask bench nb`: N Layer3 primary UDNs on M
//! nodes, each network one [`DesiredUnit`] shaped as upstream ovn-kubernetes writes it
//! (`shared/spec/dataplane.md` §1.3, §1.6, §2.2, §2.5; shared gateway mode, multicast
//! enabled, no interconnect), within the vendored NB schema 7.0.0 (so the masquerade SNAT
//! has no `match`, the ACLs no `tier`). Pure: the same sizes always give the same rows.
//!
//! Per network (10 rows): the cluster router `P ovn_cluster_router`, the join switch
//! `P join` with the router's `rtoj-`/`jtor-` pair, the cluster port groups
//! `clusterPortGroup` (management ports, default-deny multicast ACLs) and
//! `clusterRtrPortGroup` (`stor-` ports, inter-node multicast allow ACLs).
//! Per node (17 rows): the node switch `P node` with `stor-`/`k8s-` ports and the
//! allow-from-node ACL, the router port `rtos-`, the masquerade SNAT and two static routes on
//! the cluster router, the gateway router `GR_P node` with its join pair `rtoj-`/`jtor-`, the
//! external switch `ext_P node` with the localnet port and the `etor-`/`rtoe-` pair, and two
//! static routes on the gateway router.

use std::net::Ipv4Addr;

use udn_ovsdb::engine::{DesiredRow, DesiredUnit, RowRef, UnitKey};

/// The engine controller the bench writes as (`k8s.ovn.org/owner-controller`).
pub const CONTROLLER: &str = "udn-controller";
/// The owner type of every unit.
pub const OWNER_TYPE: &str = "Network";
/// Most networks: network IDs are 1..=4095 (upstream `MaxNetworks` 4096, 0 is the default).
pub const MAX_NETWORKS: usize = 4095;
/// Most nodes: one /24 host subnet per node inside a network's /16.
pub const MAX_NODES: usize = 255;
/// Rows of one network that do not depend on the node count.
pub const ROWS_PER_NETWORK: usize = 10;
/// Rows of one network per node.
pub const ROWS_PER_NODE: usize = 17;

const NETWORK_KEY: &str = "k8s.ovn.org/network";
const TOPOLOGY_KEY: &str = "k8s.ovn.org/topology";
const ROLE_KEY: &str = "k8s.ovn.org/role";
const MTU: &str = "1400";
const ACL_METER: &str = "acl-logging";
/// Upstream `getMulticastACLMatch()`.
const MCAST_MATCH: &str =
    "(ip4.mcast || mldv1 || mldv2 || (ip6.dst[120..127] == 0xff && ip6.dst[116] == 1))";

/// How many networks and nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// Layer3 primary UDNs.
    pub networks: usize,
    /// Nodes, each hosting every network.
    pub nodes: usize,
}

impl Topology {
    /// A topology of `networks` x `nodes`, both at least 1 and within [`MAX_NETWORKS`] /
    /// [`MAX_NODES`].
    pub fn new(networks: usize, nodes: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(
            (1..=MAX_NETWORKS).contains(&networks),
            "--networks {networks}: must be 1..={MAX_NETWORKS} (network IDs are 1..=4095)"
        );
        anyhow::ensure!(
            (1..=MAX_NODES).contains(&nodes),
            "--nodes {nodes}: must be 1..={MAX_NODES} (one /24 host subnet per node in a /16)"
        );
        Ok(Self { networks, nodes })
    }

    /// Rows of one network.
    pub fn rows_per_network(&self) -> usize {
        ROWS_PER_NETWORK + ROWS_PER_NODE * self.nodes
    }

    /// Rows of the whole topology.
    pub fn rows(&self) -> usize {
        self.networks * self.rows_per_network()
    }

    /// Every network's unit, in network order.
    pub fn units(&self) -> Vec<DesiredUnit> {
        (0..self.networks)
            .map(|index| network_unit(index, self.nodes))
            .collect()
    }
}

/// The name of network `index` (0-based): a ClusterUDN name, `cluster_udn_net<index>`.
pub fn network_name(index: usize) -> String {
    format!("cluster_udn_net{index}")
}

/// The name of node `index` (1-based).
pub fn node_name(index: usize) -> String {
    format!("node{index}")
}

/// Upstream `GetUserDefinedNetworkPrefix`: `-` and `/` become `.`, then `_` is appended.
pub fn network_prefix(network: &str) -> String {
    format!("{}_", network.replace(['-', '/'], "."))
}

/// Upstream `HashForOVN`: `a` + decimal FNV-1a 64 of `text` (port group names).
pub fn hash_for_ovn(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("a{hash}")
}

/// Upstream `IPAddrToHWAddr` for IPv4: `0a:58:` + the four address bytes.
pub fn mac_of(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("0a:58:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
}

/// `base` + `offset`, wrapping within IPv4.
fn add(base: Ipv4Addr, offset: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base).wrapping_add(offset))
}

/// A network's per-network values.
struct Net {
    name: String,
    prefix: String,
    /// Upstream `<net>-network-controller`: the dbIDs owner of its ACLs and port groups.
    controller: String,
    /// The /16 cluster subnet's base.
    cluster: Ipv4Addr,
    /// Masquerade IP of the gateway routers (base + 10 + 2N - 1 in 169.254.0.0/17).
    gr_masq: Ipv4Addr,
    /// Masquerade IP of the management ports (base + 10 + 2N).
    mp_masq: Ipv4Addr,
    router: String,
    join: String,
}

impl Net {
    fn new(index: usize) -> Self {
        let name = network_name(index);
        let prefix = network_prefix(&name);
        let id = u32::try_from(index).unwrap_or(u32::MAX).saturating_add(1);
        let second = 64 + u8::try_from(index % 128).unwrap_or(0);
        let masq = Ipv4Addr::new(169, 254, 0, 0);
        Self {
            controller: format!("{name}-network-controller"),
            cluster: Ipv4Addr::new(10, second, 0, 0),
            gr_masq: add(masq, 10 + 2 * id - 1),
            mp_masq: add(masq, 10 + 2 * id),
            router: format!("{prefix}ovn_cluster_router"),
            join: format!("{prefix}join"),
            name,
            prefix,
        }
    }

    /// `external_ids{network, topology}`.
    fn ids(&self) -> [(&str, &str); 2] {
        [(NETWORK_KEY, &self.name), (TOPOLOGY_KEY, "layer3")]
    }

    /// `external_ids{network, role, topology}` (switches and gateway routers).
    fn ids_with_role(&self) -> [(&str, &str); 3] {
        [
            (NETWORK_KEY, &self.name),
            (ROLE_KEY, "primary"),
            (TOPOLOGY_KEY, "layer3"),
        ]
    }
}

/// A node's values, the same in every network.
struct Node {
    name: String,
    /// Upstream node ID (`k8s.ovn.org/node-id`): 2.. (the join .1 is the cluster router's).
    id: u32,
    ip: Ipv4Addr,
    bridge_mac: String,
    chassis: String,
}

impl Node {
    fn new(index: usize) -> Self {
        let id = u32::try_from(index).unwrap_or(u32::MAX).saturating_add(1);
        let ip = add(Ipv4Addr::new(172, 18, 0, 0), id);
        let [_, _, hi, lo] = ip.octets();
        Self {
            name: node_name(index),
            id,
            ip,
            bridge_mac: format!("02:42:ac:12:{hi:02x}:{lo:02x}"),
            chassis: format!("{id:08x}-5e3c-4c1b-9a7e-{id:012x}"),
        }
    }
}

fn lsp(id: &str) -> RowRef {
    RowRef::desired("Logical_Switch_Port", id)
}

fn lrp(id: &str) -> RowRef {
    RowRef::desired("Logical_Router_Port", id)
}

/// One network's unit (`index` 0-based) on `nodes` nodes.
pub fn network_unit(index: usize, nodes: usize) -> DesiredUnit {
    let net = Net::new(index);
    let mut rows = Vec::with_capacity(ROWS_PER_NETWORK + ROWS_PER_NODE * nodes);
    let mut refs = RouterRefs::default();
    for node in (1..=nodes).map(Node::new) {
        node_rows(&net, &node, &mut rows, &mut refs);
    }
    network_rows(&net, &mut rows, refs);
    DesiredUnit {
        key: UnitKey::new(OWNER_TYPE, net.name),
        rows,
    }
}

/// What the per-network rows reference from the per-node rows.
#[derive(Default)]
struct RouterRefs {
    router_ports: Vec<RowRef>,
    router_nats: Vec<RowRef>,
    router_routes: Vec<RowRef>,
    join_ports: Vec<RowRef>,
    mgmt_ports: Vec<RowRef>,
    stor_ports: Vec<RowRef>,
}

/// The rows of one node, children before the rows referencing them.
fn node_rows(net: &Net, node: &Node, rows: &mut Vec<DesiredRow>, refs: &mut RouterRefs) {
    let p = &net.prefix;
    let n = &node.name;
    let [a, b, _, _] = net.cluster.octets();
    let third = u8::try_from(node.id - 1).unwrap_or(u8::MAX);
    let subnet_base = Ipv4Addr::new(a, b, third, 0);
    let subnet = format!("{subnet_base}/24");
    let gateway_ip = add(subnet_base, 1);
    let mgmt_ip = add(subnet_base, 2);
    let gr_join_ip = add(Ipv4Addr::new(100, 65, 0, 0), node.id);
    let switch = format!("{p}{n}");
    let gr = format!("GR_{p}{n}");
    let ext = format!("ext_{p}{n}");
    let (rtos, stor, mgmt) = (
        format!("rtos-{switch}"),
        format!("stor-{switch}"),
        format!("k8s-{switch}"),
    );
    let (rtoj_gr, jtor_gr) = (format!("rtoj-{gr}"), format!("jtor-{gr}"));
    let (rtoe, etor, localnet) = (
        format!("rtoe-{gr}"),
        format!("etor-{gr}"),
        format!("breth0_{p}{n}"),
    );
    let mgmt_ip_s = mgmt_ip.to_string();
    let acl_id = format!("{}:NetpolNode:{switch}:{mgmt_ip}", net.controller);

    // Node switch with its ports and the allow-from-node ACL (§2.2 steps 1, 4).
    rows.push(
        DesiredRow::new("Logical_Switch_Port", &stor)
            .string("name", &stor)
            .string("type", "router")
            .strings("addresses", ["router"])
            .map("options", [("router-port", rtos.as_str())])
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("Logical_Switch_Port", &mgmt)
            .string("name", &mgmt)
            .strings(
                "addresses",
                [format!("{} {mgmt_ip}", mac_of(mgmt_ip)).as_str()],
            )
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("ACL", &acl_id)
            .integer("priority", 1001)
            .string("direction", "to-lport")
            .string("action", "allow-related")
            .string("match", &format!("ip4.src=={mgmt_ip}"))
            .strings("meter", [ACL_METER])
            .boolean("log", false)
            .map(
                "external_ids",
                [("k8s.ovn.org/name", switch.as_str()), ("ip", &mgmt_ip_s)],
            ),
    );
    let gateway_mac = mac_of(gateway_ip);
    let gateway_ip_s = gateway_ip.to_string();
    rows.push(
        DesiredRow::new("Logical_Switch", &switch)
            .string("name", &switch)
            .map(
                "other_config",
                [
                    ("subnet", subnet.as_str()),
                    ("exclude_ips", &mgmt_ip_s),
                    ("mcast_snoop", "true"),
                    ("mcast_querier", "true"),
                    ("mcast_eth_src", &gateway_mac),
                    ("mcast_ip4_src", &gateway_ip_s),
                ],
            )
            .map("external_ids", net.ids_with_role())
            .refs("ports", [lsp(&stor), lsp(&mgmt)])
            .refs("acls", [RowRef::desired("ACL", &acl_id)]),
    );
    // Cluster router side: port, masquerade SNAT, routes to the gateway router (§2.2, §2.5).
    rows.push(
        DesiredRow::new("Logical_Router_Port", &rtos)
            .string("name", &rtos)
            .string("mac", &gateway_mac)
            .strings("networks", [format!("{gateway_ip}/24").as_str()])
            .map("options", [("gateway_mtu", MTU)])
            .map("external_ids", net.ids()),
    );
    let nat_id = format!("{}:snat:{subnet}", net.router);
    rows.push(
        DesiredRow::new("NAT", &nat_id)
            .string("type", "snat")
            .string("external_ip", &net.mp_masq.to_string())
            .string("logical_ip", &subnet)
            .strings("logical_port", [rtos.as_str()])
            .map("options", [("stateless", "false")])
            .map("external_ids", net.ids()),
    );
    let src_route = format!("{}:src-ip:{subnet}", net.router);
    rows.push(
        DesiredRow::new("Logical_Router_Static_Route", &src_route)
            .string("ip_prefix", &subnet)
            .string("nexthop", &gr_join_ip.to_string())
            .strings("policy", ["src-ip"])
            .map("external_ids", net.ids()),
    );
    let join_route = format!("{}:dst-ip:{gr_join_ip}", net.router);
    rows.push(
        DesiredRow::new("Logical_Router_Static_Route", &join_route)
            .string("ip_prefix", &gr_join_ip.to_string())
            .string("nexthop", &gr_join_ip.to_string())
            .map("external_ids", net.ids()),
    );
    // Gateway router: join pair, external switch and its ports, routes (§2.5).
    rows.push(
        DesiredRow::new("Logical_Router_Port", &rtoj_gr)
            .string("name", &rtoj_gr)
            .string("mac", &mac_of(gr_join_ip))
            .strings("networks", [format!("{gr_join_ip}/16").as_str()])
            .map("options", [("gateway_mtu", MTU)])
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("Logical_Switch_Port", &jtor_gr)
            .string("name", &jtor_gr)
            .string("type", "router")
            .strings("addresses", ["router"])
            .map("options", [("router-port", rtoj_gr.as_str())])
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("Logical_Switch_Port", &localnet)
            .string("name", &localnet)
            .string("type", "localnet")
            .strings("addresses", ["unknown"])
            .map("options", [("network_name", "physnet")])
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("Logical_Switch_Port", &etor)
            .string("name", &etor)
            .string("type", "router")
            .strings("addresses", [node.bridge_mac.as_str()])
            .map("options", [("router-port", rtoe.as_str())])
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("Logical_Switch", &ext)
            .string("name", &ext)
            .map("external_ids", net.ids_with_role())
            .refs("ports", [lsp(&localnet), lsp(&etor)]),
    );
    rows.push(
        DesiredRow::new("Logical_Router_Port", &rtoe)
            .string("name", &rtoe)
            .string("mac", &node.bridge_mac)
            .strings(
                "networks",
                [
                    format!("{}/16", node.ip).as_str(),
                    format!("{}/32", net.gr_masq).as_str(),
                ],
            )
            .map("external_ids", net.ids()),
    );
    let default_route = format!("{gr}:dst-ip:0.0.0.0/0");
    rows.push(
        DesiredRow::new("Logical_Router_Static_Route", &default_route)
            .string("ip_prefix", "0.0.0.0/0")
            .string("nexthop", "172.18.0.1")
            .strings("output_port", [rtoe.as_str()])
            .map("external_ids", net.ids()),
    );
    let cluster_subnet = format!("{}/16", net.cluster);
    let cluster_route = format!("{gr}:dst-ip:{cluster_subnet}");
    rows.push(
        DesiredRow::new("Logical_Router_Static_Route", &cluster_route)
            .string("ip_prefix", &cluster_subnet)
            .string("nexthop", "100.65.0.1")
            .map("external_ids", net.ids()),
    );
    let physical_ips = format!("{},{}", node.ip, net.gr_masq);
    let node_ip = node.ip.to_string();
    let [network, role, topology] = net.ids_with_role();
    rows.push(
        DesiredRow::new("Logical_Router", &gr)
            .string("name", &gr)
            .map(
                "options",
                [
                    ("always_learn_from_arp_request", "false"),
                    ("dynamic_neigh_routers", "false"),
                    ("chassis", node.chassis.as_str()),
                    ("lb_force_snat_ip", "router_ip"),
                    ("mac_binding_age_threshold", "300"),
                    ("disable_garp_rarp", "true"),
                ],
            )
            .map(
                "external_ids",
                [
                    ("physical_ip", node_ip.as_str()),
                    ("physical_ips", &physical_ips),
                    network,
                    role,
                    topology,
                ],
            )
            .refs("ports", [lrp(&rtoj_gr), lrp(&rtoe)])
            .refs(
                "static_routes",
                [
                    RowRef::desired("Logical_Router_Static_Route", &default_route),
                    RowRef::desired("Logical_Router_Static_Route", &cluster_route),
                ],
            ),
    );
    refs.router_ports.push(lrp(&rtos));
    refs.router_nats.push(RowRef::desired("NAT", &nat_id));
    refs.router_routes.extend([
        RowRef::desired("Logical_Router_Static_Route", &src_route),
        RowRef::desired("Logical_Router_Static_Route", &join_route),
    ]);
    refs.join_ports.push(lsp(&jtor_gr));
    refs.mgmt_ports.push(lsp(&mgmt));
    refs.stor_ports.push(lsp(&stor));
}

/// The per-network rows (§2.2 init, multicast enabled), after the node rows they reference.
fn network_rows(net: &Net, rows: &mut Vec<DesiredRow>, refs: RouterRefs) {
    let rtoj = format!("rtoj-{}", net.router);
    let jtor = format!("jtor-{}", net.router);
    let join_ip = Ipv4Addr::new(100, 65, 0, 1);
    rows.push(
        DesiredRow::new("Logical_Router_Port", &rtoj)
            .string("name", &rtoj)
            .string("mac", &mac_of(join_ip))
            .strings("networks", ["100.65.0.1/16"])
            .map("external_ids", net.ids()),
    );
    rows.push(
        DesiredRow::new("Logical_Switch_Port", &jtor)
            .string("name", &jtor)
            .string("type", "router")
            .strings("addresses", ["router"])
            .map("options", [("router-port", rtoj.as_str())]),
    );
    let mut join_ports = vec![lsp(&jtor)];
    join_ports.extend(refs.join_ports);
    rows.push(
        DesiredRow::new("Logical_Switch", &net.join)
            .string("name", &net.join)
            .map("external_ids", net.ids())
            .refs("ports", join_ports),
    );
    // Cluster port groups with the default multicast ACLs (upstream
    // createDefaultDenyMulticastPolicy / createDefaultAllowMulticastPolicy).
    for (base, kind, priority, action, ports) in [
        (
            "clusterPortGroup",
            "DefaultDeny",
            1011,
            "drop",
            refs.mgmt_ports,
        ),
        (
            "clusterRtrPortGroup",
            "AllowInterNode",
            1012,
            "allow",
            refs.stor_ports,
        ),
    ] {
        let pg_id = format!("{}:Cluster:{base}", net.controller);
        let pg_name = hash_for_ovn(&pg_id);
        let mut acls = Vec::new();
        for (direction, pipeline, port) in [
            ("Egress", "from-lport", "inport"),
            ("Ingress", "to-lport", "outport"),
        ] {
            let acl_id = format!("{}:MulticastCluster:{kind}:{direction}", net.controller);
            let acl_match = if kind == "DefaultDeny" {
                MCAST_MATCH.to_owned()
            } else {
                format!("{port} == @{pg_name} && {MCAST_MATCH}")
            };
            let mut acl = DesiredRow::new("ACL", &acl_id)
                .integer("priority", priority)
                .string("direction", pipeline)
                .string("action", action)
                .string("match", &acl_match)
                .strings("meter", [ACL_METER])
                .boolean("log", false)
                .map("external_ids", [("type", kind), ("direction", direction)]);
            if direction == "Egress" {
                acl = acl.map("options", [("apply-after-lb", "true")]);
            }
            rows.push(acl);
            acls.push(RowRef::desired("ACL", &acl_id));
        }
        rows.push(
            DesiredRow::new("Port_Group", &pg_id)
                .string("name", &pg_name)
                .map("external_ids", [("k8s.ovn.org/name", base)])
                .refs("ports", ports)
                .refs("acls", acls),
        );
    }
    let mut ports = vec![lrp(&rtoj)];
    ports.extend(refs.router_ports);
    rows.push(
        DesiredRow::new("Logical_Router", &net.router)
            .string("name", &net.router)
            .map("options", [("mcast_relay", "true")])
            .map(
                "external_ids",
                [
                    ("k8s-cluster-router", "yes"),
                    (NETWORK_KEY, net.name.as_str()),
                    (TOPOLOGY_KEY, "layer3"),
                ],
            )
            .refs("ports", ports)
            .refs("nat", refs.router_nats)
            .refs("static_routes", refs.router_routes),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use udn_ovsdb::protocol::{Atom, Value};

    use super::*;

    fn find<'u>(unit: &'u DesiredUnit, table: &str, id: &str) -> &'u DesiredRow {
        unit.rows
            .iter()
            .find(|r| r.table == table && r.id == id)
            .unwrap_or_else(|| panic!("no {table} row {id}"))
    }

    fn string<'r>(row: &'r DesiredRow, column: &str) -> &'r str {
        match row.columns.get(column) {
            Some(Value::Atom(Atom::String(s))) => s,
            other => panic!("{} {column}: {other:?}", row.id),
        }
    }

    fn map(row: &DesiredRow, column: &str) -> BTreeMap<String, String> {
        match row.columns.get(column) {
            Some(Value::Map(pairs)) => pairs
                .iter()
                .map(|(k, v)| match (k, v) {
                    (Atom::String(k), Atom::String(v)) => (k.clone(), v.clone()),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{} {column}: {other:?}", row.id),
        }
    }

    fn set(row: &DesiredRow, column: &str) -> Vec<String> {
        match row.columns.get(column) {
            Some(Value::Set(atoms)) => atoms
                .iter()
                .map(|a| match a {
                    Atom::String(s) => s.clone(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{} {column}: {other:?}", row.id),
        }
    }

    #[test]
    fn names_and_hashes_follow_upstream() {
        assert_eq!(network_prefix("l3-net"), "l3.net_");
        assert_eq!(network_prefix("cluster_udn_net42"), "cluster_udn_net42_");
        assert_eq!(
            hash_for_ovn("network1-network-controller:Cluster:clusterPortGroup"),
            "a6023288408186719228"
        );
        assert_eq!(
            hash_for_ovn("default-network-controller:UDNIsolation:SecondaryPods"),
            "a8747502060113802905"
        );
        assert_eq!(mac_of(Ipv4Addr::new(192, 168, 1, 1)), "0a:58:c0:a8:01:01");
        assert_eq!(mac_of(Ipv4Addr::new(100, 65, 0, 1)), "0a:58:64:41:00:01");
    }

    #[test]
    fn row_count_is_exact_and_ids_unique() {
        let topology = Topology::new(3, 4).unwrap();
        let units = topology.units();
        assert_eq!(units.len(), 3);
        let total: usize = units.iter().map(|u| u.rows.len()).sum();
        assert_eq!(total, topology.rows());
        assert_eq!(topology.rows(), 3 * (10 + 17 * 4));
        let mut ids = BTreeSet::new();
        for row in units.iter().flat_map(|u| &u.rows) {
            assert!(
                ids.insert((row.table.clone(), row.id.clone())),
                "{}",
                row.id
            );
        }
        let names: Vec<&str> = units.iter().map(|u| u.key.name.as_str()).collect();
        assert_eq!(
            names,
            ["cluster_udn_net0", "cluster_udn_net1", "cluster_udn_net2"]
        );
        assert!(units.iter().all(|u| u.key.owner_type == "Network"));
    }

    #[test]
    fn references_point_at_rows_of_the_same_unit_listed_earlier() {
        for unit in Topology::new(2, 3).unwrap().units() {
            for (i, row) in unit.rows.iter().enumerate() {
                for target in row.refs.values().flatten() {
                    let RowRef::Desired { table, id } = target else {
                        panic!("{} refers to an existing row", row.id);
                    };
                    let at = unit
                        .rows
                        .iter()
                        .position(|r| &r.table == table && &r.id == id)
                        .unwrap_or_else(|| panic!("{} -> missing {table} {id}", row.id));
                    assert!(at < i, "{} refers to later row {id}", row.id);
                }
            }
        }
    }

    #[test]
    fn layer3_objects_carry_upstream_names_and_values() {
        // Network index 1 = network ID 2; node 1 = node ID 2.
        let unit = network_unit(1, 2);
        let p = "cluster_udn_net1_";
        let router = find(&unit, "Logical_Router", &format!("{p}ovn_cluster_router"));
        assert_eq!(
            map(router, "external_ids"),
            BTreeMap::from([
                ("k8s-cluster-router".into(), "yes".into()),
                ("k8s.ovn.org/network".into(), "cluster_udn_net1".into()),
                ("k8s.ovn.org/topology".into(), "layer3".into()),
            ])
        );
        assert_eq!(router.refs["ports"].len(), 3);
        assert_eq!(router.refs["nat"].len(), 2);
        assert_eq!(router.refs["static_routes"].len(), 4);

        let join = find(&unit, "Logical_Switch", &format!("{p}join"));
        assert!(!map(join, "external_ids").contains_key("k8s.ovn.org/role"));
        assert_eq!(join.refs["ports"].len(), 3);

        let switch = find(&unit, "Logical_Switch", &format!("{p}node1"));
        let ids = map(switch, "external_ids");
        assert_eq!(ids["k8s.ovn.org/role"], "primary");
        let other = map(switch, "other_config");
        assert_eq!(other["subnet"], "10.65.1.0/24");
        assert_eq!(other["exclude_ips"], "10.65.1.2");

        let rtos = find(&unit, "Logical_Router_Port", &format!("rtos-{p}node1"));
        assert_eq!(string(rtos, "mac"), "0a:58:0a:41:01:01");
        assert_eq!(set(rtos, "networks"), ["10.65.1.1/24"]);
        let stor = find(&unit, "Logical_Switch_Port", &format!("stor-{p}node1"));
        assert_eq!(
            map(stor, "options")["router-port"],
            format!("rtos-{p}node1")
        );
        let mgmt = find(&unit, "Logical_Switch_Port", &format!("k8s-{p}node1"));
        assert_eq!(set(mgmt, "addresses"), ["0a:58:0a:41:01:02 10.65.1.2"]);

        // Masquerade IPs of network ID 2: GR 169.254.0.13, management port 169.254.0.14.
        let nat = find(
            &unit,
            "NAT",
            &format!("{p}ovn_cluster_router:snat:10.65.1.0/24"),
        );
        assert_eq!(string(nat, "external_ip"), "169.254.0.14");
        assert_eq!(set(nat, "logical_port"), [format!("rtos-{p}node1")]);

        let gr = find(&unit, "Logical_Router", &format!("GR_{p}node1"));
        assert_eq!(
            map(gr, "external_ids")["physical_ips"],
            "172.18.0.2,169.254.0.13"
        );
        let rtoj = find(&unit, "Logical_Router_Port", &format!("rtoj-GR_{p}node1"));
        assert_eq!(set(rtoj, "networks"), ["100.65.0.2/16"]);
        let rtoe = find(&unit, "Logical_Router_Port", &format!("rtoe-GR_{p}node1"));
        assert_eq!(set(rtoe, "networks"), ["172.18.0.2/16", "169.254.0.13/32"]);
        let route = find(
            &unit,
            "Logical_Router_Static_Route",
            &format!("{p}ovn_cluster_router:src-ip:10.65.1.0/24"),
        );
        assert_eq!(string(route, "nexthop"), "100.65.0.2");

        let pg = find(
            &unit,
            "Port_Group",
            "cluster_udn_net1-network-controller:Cluster:clusterRtrPortGroup",
        );
        let pg_name = string(pg, "name").to_owned();
        assert_eq!(
            pg_name,
            hash_for_ovn("cluster_udn_net1-network-controller:Cluster:clusterRtrPortGroup")
        );
        let allow = find(
            &unit,
            "ACL",
            "cluster_udn_net1-network-controller:MulticastCluster:AllowInterNode:Ingress",
        );
        assert!(
            string(allow, "match").starts_with(&format!("outport == @{pg_name} && (ip4.mcast"))
        );
    }

    #[test]
    fn sizes_are_bounded() {
        assert!(Topology::new(0, 1).is_err());
        assert!(Topology::new(1, 256).is_err());
        assert!(Topology::new(4096, 1).is_err());
        assert!(Topology::new(4095, 255).is_ok());
    }
}
