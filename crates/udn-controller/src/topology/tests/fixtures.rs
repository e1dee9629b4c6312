//! Inputs shaped like upstream's unit tests (network `isolatednet`, node `node1`, network
//! ID 2, masquerade subnet `169.254.169.0/24`) and lookups into the built rows.

use std::collections::{BTreeMap, BTreeSet};

use ipnetwork::{IpNetwork, Ipv4Network};
use udn_api::annotations::{MacAddress, PodNetworkRole};
use udn_api::cluster::ClusterConfig;
use udn_api::netconf::{NetConf, NetInfo};
use udn_ovsdb::engine::{DesiredRow, DesiredUnit, RowRef};
use udn_ovsdb::protocol::{Atom, Value};

use crate::model::{
    GatewayConfig, GatewayConfigMode, Lean, Network, Node, PodAttachment, ZoneConfig,
};
use crate::topology::{NetworkDesired, SchemaFeatures, ZoneInputs, network_desired};

pub(super) const CHASSIS: &str = "cb9ec8fa-b409-4ef3-9f42-d9283c47aac6";
pub(super) const CHASSIS2: &str = "0e8b4c3d-2d0b-4a4b-9a43-3d5d0d5a1f27";
pub(super) const CHASSIS3: &str = "7a1f6c2e-95cb-4bd8-8f0e-5a6f2a9d1c33";

pub(super) fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

/// The cluster of upstream's tests: IPv4, masquerade subnet `169.254.169.0/24`, MTU 1400.
pub(super) fn zone_config() -> ZoneConfig {
    let mut cluster = ClusterConfig::ipv4_only();
    cluster.masquerade_subnet_v4 = "169.254.169.0/24".parse::<Ipv4Network>().unwrap();
    ZoneConfig {
        zone: "node1".into(),
        cluster,
        multi_network: true,
        segmentation: true,
        dynamic_udn: false,
        // Exact upstream rows: every saving off.
        lean: Lean::UPSTREAM,
    }
}

/// The dual-stack kind/helm cluster.
pub(super) fn dual_stack_config() -> ZoneConfig {
    ZoneConfig {
        zone: "node1".into(),
        cluster: ClusterConfig::default(),
        multi_network: true,
        segmentation: true,
        dynamic_udn: false,
        // Exact upstream rows: every saving off.
        lean: Lean::UPSTREAM,
    }
}

/// A user-defined network from its NetConf values.
pub(super) fn udn(
    name: &str,
    topology: &str,
    role: &str,
    subnets: &str,
    id: u32,
    config: &ZoneConfig,
) -> Network {
    udn_with(name, topology, role, subnets, id, config, |_| {})
}

pub(super) fn udn_with(
    name: &str,
    topology: &str,
    role: &str,
    subnets: &str,
    id: u32,
    config: &ZoneConfig,
    edit: impl FnOnce(&mut NetConf),
) -> Network {
    let mut conf = NetConf {
        name: name.into(),
        topology: topology.into(),
        role: role.into(),
        subnets: subnets.into(),
        nad_name: format!("ns1/{name}"),
        mtu: 1400,
        ..NetConf::default()
    };
    edit(&mut conf);
    let info = NetInfo::from_netconf(&conf, &config.cluster).unwrap();
    Network {
        name: name.into(),
        id,
        info,
        nads: BTreeSet::from([format!("ns1/{name}")]),
        tunnel_keys: Vec::new(),
    }
}

/// The primary Layer3 `isolatednet` of upstream's tests: `192.168.0.0/16`, /24 per node.
pub(super) fn isolatednet(config: &ZoneConfig) -> Network {
    udn(
        "isolatednet",
        "layer3",
        "primary",
        "192.168.0.0/16/24",
        2,
        config,
    )
}

/// The gateway config of upstream's tests.
pub(super) fn gateway(ips: &[&str], next_hops: &[&str]) -> GatewayConfig {
    GatewayConfig {
        mode: GatewayConfigMode::Shared,
        bridge_id: "breth0".into(),
        interface_id: "breth0_node1".into(),
        mac: "0a:58:c0:a8:7e:ca".parse::<MacAddress>().unwrap(),
        ips: ips.iter().map(|s| net(s)).collect(),
        next_hops: next_hops.iter().map(|s| s.parse().unwrap()).collect(),
        node_port_enable: true,
        vlan_id: 0,
    }
}

/// `node1`: local, node ID 4 (join IP `100.65.0.4`), transit IP `100.88.0.3/16`, host
/// subnet `192.168.1.0/24` of `isolatednet`, `10.244.1.0/24` of the default network.
pub(super) fn node1() -> Node {
    let mut node = Node::new("node1", true);
    node.id = Some(4);
    node.chassis_id = Some(CHASSIS.into());
    node.transit_ips = vec![net("100.88.0.3/16")];
    node.subnets = BTreeMap::from([
        ("isolatednet".into(), vec![net("192.168.1.0/24")]),
        ("default".into(), vec![net("10.244.1.0/24")]),
    ]);
    node.gateway = Some(gateway(&["192.168.126.202/24"], &["192.168.126.1"]));
    node.host_cidrs = vec![net("192.168.126.202/24"), net("172.19.0.2/16")];
    node
}

/// A remote node with every annotation.
pub(super) fn remote(name: &str, id: u32, chassis: &str) -> Node {
    let mut node = Node::new(name, false);
    node.id = Some(id);
    node.chassis_id = Some(chassis.into());
    node.transit_ips = vec![net(&format!("100.88.0.{id}/16"))];
    node.subnets = BTreeMap::from([
        (
            "isolatednet".into(),
            vec![net(&format!("192.168.{id}.0/24"))],
        ),
        ("default".into(), vec![net(&format!("10.244.{id}.0/24"))]),
    ]);
    node.encap_ips = vec![format!("172.18.0.{id}").parse().unwrap()];
    node
}

/// A pod attachment.
pub(super) fn pod(ns: &str, name: &str, node: &str, nad_key: &str, ips: &[&str]) -> PodAttachment {
    let ips: Vec<IpNetwork> = ips.iter().map(|s| net(s)).collect();
    let mac = match ips.first().map(IpNetwork::ip) {
        Some(std::net::IpAddr::V4(v4)) => {
            let [a, b, c, d] = v4.octets();
            MacAddress([0x0a, 0x58, a, b, c, d])
        }
        _ => MacAddress([0x0a, 0x58, 0, 0, 0, 9]),
    };
    PodAttachment {
        namespace: ns.into(),
        pod: name.into(),
        uid: format!("{name}-uid"),
        node: node.into(),
        nad_key: nad_key.into(),
        mac,
        ips,
        tunnel_id: None,
        role: PodNetworkRole::Primary,
        open_ports: Vec::new(),
    }
}

/// Renders `network` with every shared row known and every optional column.
pub(super) fn render(
    network: &Network,
    config: &ZoneConfig,
    nodes: &[Node],
    pods: &[PodAttachment],
) -> NetworkDesired {
    render_with(network, config, nodes, pods, SchemaFeatures::ALL)
}

pub(super) fn render_with(
    network: &Network,
    config: &ZoneConfig,
    nodes: &[Node],
    pods: &[PodAttachment],
    features: SchemaFeatures,
) -> NetworkDesired {
    let mut zone = ZoneInputs::new(config, nodes);
    zone.features = features;
    zone.copp = Some(udn_ovsdb::protocol::Uuid::from_u128(0xc0));
    for (i, name) in crate::topology::load_balancer_groups(network)
        .iter()
        .enumerate()
    {
        zone.load_balancer_groups.insert(
            name.clone(),
            udn_ovsdb::protocol::Uuid::from_u128(0x1b0 + i as u128),
        );
    }
    network_desired(network, &zone, pods)
}

pub(super) fn unit<'a>(
    desired: &'a NetworkDesired,
    owner_type: &str,
    name: &str,
) -> &'a DesiredUnit {
    desired
        .units
        .iter()
        // Node units are named `<network>/<node>`: a node's name finds them too.
        .find(|u| {
            u.key.owner_type == owner_type
                && (u.key.name == name || u.key.name.ends_with(&format!("/{name}")))
        })
        .unwrap_or_else(|| panic!("no unit {owner_type}/{name} in {:?}", keys(desired)))
}

pub(super) fn keys(desired: &NetworkDesired) -> Vec<String> {
    desired.units.iter().map(|u| u.key.to_string()).collect()
}

/// A row by table and id in any unit.
pub(super) fn row<'a>(desired: &'a NetworkDesired, table: &str, id: &str) -> &'a DesiredRow {
    find(desired, table, id).unwrap_or_else(|| {
        let ids: Vec<&str> = desired
            .units
            .iter()
            .flat_map(|u| u.rows.iter())
            .filter(|r| r.table == table)
            .map(|r| r.id.as_str())
            .collect();
        panic!("no {table} row {id:?}; have {ids:?}")
    })
}

pub(super) fn find<'a>(
    desired: &'a NetworkDesired,
    table: &str,
    id: &str,
) -> Option<&'a DesiredRow> {
    desired
        .units
        .iter()
        .flat_map(|u| u.rows.iter())
        .find(|r| r.table == table && r.id == id)
}

/// Every row of `table`.
pub(super) fn rows<'a>(desired: &'a NetworkDesired, table: &str) -> Vec<&'a DesiredRow> {
    desired
        .units
        .iter()
        .flat_map(|u| u.rows.iter())
        .filter(|r| r.table == table)
        .collect()
}

fn atom_string(atom: &Atom) -> String {
    match atom {
        Atom::String(s) => s.clone(),
        Atom::Integer(i) => i.to_string(),
        Atom::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// A scalar column as text; `None` when absent or an empty optional.
pub(super) fn get(row: &DesiredRow, column: &str) -> Option<String> {
    match row.columns.get(column)? {
        Value::Atom(atom) => Some(atom_string(atom)),
        Value::Set(atoms) if atoms.len() == 1 => atoms.first().map(atom_string),
        _ => None,
    }
}

pub(super) fn s(row: &DesiredRow, column: &str) -> String {
    get(row, column).unwrap_or_else(|| panic!("{} {} has no {column}", row.table, row.id))
}

/// A map column; empty when absent.
pub(super) fn map(row: &DesiredRow, column: &str) -> BTreeMap<String, String> {
    match row.columns.get(column) {
        Some(Value::Map(pairs)) => pairs
            .iter()
            .map(|(k, v)| (atom_string(k), atom_string(v)))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// A set column; empty when absent.
pub(super) fn set(row: &DesiredRow, column: &str) -> BTreeSet<String> {
    match row.columns.get(column) {
        Some(Value::Set(atoms)) => atoms.iter().map(atom_string).collect(),
        Some(Value::Atom(atom)) => BTreeSet::from([atom_string(atom)]),
        _ => BTreeSet::new(),
    }
}

/// `[(k, v)...]` as a map.
pub(super) fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The row ids a reference column holds (desired references), and the UUIDs (existing).
pub(super) fn refs(row: &DesiredRow, column: &str) -> BTreeSet<String> {
    row.refs
        .get(column)
        .map(|targets| {
            targets
                .iter()
                .map(|t| match t {
                    RowRef::Desired { id, .. } => id.clone(),
                    RowRef::Existing(uuid) | RowRef::Ahead(uuid) => uuid.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The rows `row`'s reference column points at.
pub(super) fn targets<'a>(
    desired: &'a NetworkDesired,
    row: &DesiredRow,
    column: &str,
) -> Vec<&'a DesiredRow> {
    row.refs
        .get(column)
        .map(|targets| {
            targets
                .iter()
                .filter_map(|t| match t {
                    RowRef::Desired { table, id } => find(desired, table, id),
                    RowRef::Existing(_) | RowRef::Ahead(_) => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every desired reference of every row resolves to a row of the same network.
pub(super) fn assert_references_resolve(desired: &NetworkDesired) {
    for row in desired.units.iter().flat_map(|u| u.rows.iter()) {
        for (column, targets) in &row.refs {
            for target in targets {
                if let RowRef::Desired { table, id } = target {
                    assert!(
                        find(desired, table, id).is_some(),
                        "{} {} {column} -> {table} {id} does not resolve",
                        row.table,
                        row.id
                    );
                }
            }
        }
    }
}

/// Row ids are unique per table, unit keys unique.
pub(super) fn assert_unique(desired: &NetworkDesired) {
    let mut seen = BTreeSet::new();
    for row in desired.units.iter().flat_map(|u| u.rows.iter()) {
        assert!(
            seen.insert((row.table.clone(), row.id.clone())),
            "duplicate {} {}",
            row.table,
            row.id
        );
    }
    let mut units = BTreeSet::new();
    for unit in &desired.units {
        assert!(
            units.insert(unit.key.clone()),
            "duplicate unit {}",
            unit.key
        );
    }
}
