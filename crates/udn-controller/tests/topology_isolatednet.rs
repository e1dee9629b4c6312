//! Upstream OVN-Kubernetes' Northbound expectations for a primary Layer3 UDN (spec
//! dataplane.md §7 items 2-15: network `isolatednet`, node `node1`, network ID 2, masquerade
//! subnet `169.254.169.0/24`, as in `layer3_user_defined_network_controller_test.go` and
//! `udn_isolation_test.go`) and the default network's equivalents (node-and-interconnect
//! §4), checked in a real ovsdb-server: the default network and then isolatednet are applied
//! through one engine per network controller as the runtime does it, and every expectation
//! is read back with ovn-nbctl.
//!
//! Two differences to upstream are expected here and asserted as such: every row carries the
//! engine's `k8s.ovn.org/owner-controller`, `owner-type`, `owner` and `id` stamps (dbIDs rows
//! already have all of them but `k8s.ovn.org/owner`), and NB schema 7.0.0 has neither
//! `ACL.tier` nor `NAT.match`, so those columns are absent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "topology_isolatednet/default_network.rs"]
mod default_network;
#[path = "topology_isolatednet/gateway.rs"]
mod gateway;
#[path = "topology_isolatednet/inputs.rs"]
mod inputs;
#[path = "topology_isolatednet/isolation.rs"]
mod isolation;
#[path = "topology_isolatednet/layer3.rs"]
mod layer3;
#[path = "topology_isolatednet/read.rs"]
mod read;
mod topology_support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use udn_controller::model::{Network, Node, ZoneConfig};
use udn_ovsdb::client::Client;
use udn_ovsdb::engine::Engine;
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Value};
use udn_ovsdb::testing::OvsdbServer;

use inputs::{isolatednet, networks, node1, pods, zone_config};
use topology_support::{
    ZoneSnapshot, config, delete_network, engines, nbctl, pass, rows_by_controller,
};

/// A server, a client and the engines of the zone's networks.
struct Zone {
    server: OvsdbServer,
    client: Client,
    config: ZoneConfig,
    nodes: Vec<Node>,
    networks: Vec<Network>,
    engines: BTreeMap<String, Engine>,
}

impl Zone {
    async fn start() -> Self {
        let server = OvsdbServer::start_nb().unwrap();
        let client = Client::connect(config(&server)).await.unwrap();
        let config = zone_config();
        let networks = networks(&config);
        let engines = engines(&networks);
        Self {
            server,
            client,
            config,
            nodes: vec![node1()],
            networks,
            engines,
        }
    }

    /// One reconcile pass of `networks`; the operations sent.
    async fn pass(&self, networks: &[Network]) -> usize {
        let zone = ZoneSnapshot {
            config: &self.config,
            nodes: &self.nodes,
            pods: &pods,
        };
        pass(&self.client, &self.engines, networks, &zone).await
    }

    /// The zone with both networks applied and converged.
    async fn applied() -> Self {
        let zone = Self::start().await;
        let first = zone.pass(&zone.networks).await;
        assert!(first > 50, "{first} operations");
        assert_eq!(
            zone.pass(&zone.networks).await,
            0,
            "a second reconcile sends nothing"
        );
        zone
    }
}

/// The UUID of the COPP `ovnkube-default`.
fn copp_uuid(server: &OvsdbServer) -> String {
    let copps = read::find(server, "Copp", &["name=ovnkube-default"]);
    assert_eq!(copps.len(), 1);
    copps[0].uuid()
}

/// `ovn-nbctl get <table> <uuid> <column>` fails: the server's schema has no such column.
fn assert_no_column(server: &OvsdbServer, table: &str, uuid: &str, column: &str) {
    let error = server.nbctl(&["get", table, uuid, column]).unwrap_err();
    let expected = format!("{table} does not contain a column whose name matches \"{column}\"");
    assert!(error.to_string().contains(&expected), "{error}");
}

#[tokio::test]
async fn isolatednet_on_node1_reads_back_as_upstream_expects() {
    let zone = Zone::applied().await;
    let server = &zone.server;
    layer3::cluster_router(server);
    layer3::cluster_router_ports(server);
    layer3::masquerade_snat(server);
    layer3::cluster_router_routes(server);
    layer3::cluster_router_policies(server);
    gateway::gateway_router(server);
    gateway::gateway_router_ports(server);
    gateway::external_switch(server);
    layer3::join_switch(server);
    layer3::node_switch(server);
}

#[tokio::test]
async fn default_network_reads_back_as_upstream_expects() {
    let zone = Zone::applied().await;
    let server = &zone.server;
    default_network::names_and_markers(server);
    default_network::cluster_rows(server);
    default_network::node_rows(server);
    default_network::gateway_rows(server);
    default_network::copp_and_meters(server);
    isolation::udn_isolation(server);
}

/// Every row of every NB table, canonical (sets and maps sorted), by table.
fn database(server: &OvsdbServer) -> BTreeMap<String, BTreeSet<String>> {
    nb::schema()
        .unwrap()
        .tables
        .keys()
        .map(|table| {
            let rows = read::list(server, table)
                .iter()
                .map(read::Record::canonical)
                .collect();
            (table.clone(), rows)
        })
        .collect()
}

/// Item 14 (upstream: "controller creates entities via init/watchers, then dummy Cleanup()
/// removes them"): removing isolatednet's units (and its keyed rows) leaves exactly the
/// default network's rows, unchanged.
#[tokio::test]
async fn deleting_isolatednet_leaves_only_the_default_network() {
    let zone = Zone::start().await;
    let default_only = &zone.networks[..1];
    zone.pass(default_only).await;
    let before = database(&zone.server);

    zone.pass(&zone.networks).await;
    let counts = rows_by_controller(&zone.client);
    assert!(counts["isolatednet-network-controller"] > 30, "{counts:?}");
    assert!(
        nbctl(&zone.server, &["list", "Load_Balancer_Group"]).contains("isolatednet_"),
        "isolatednet's keyed rows exist"
    );

    delete_network(&zone.client, &zone.engines, &isolatednet(&zone.config)).await;
    zone.pass(default_only).await;
    let after = database(&zone.server);
    let dump = format!("{after:?}");
    assert!(
        !dump.contains("isolatednet")
            && !dump.contains("blue.net")
            && !dump.contains("169.254.169.13"),
        "{dump}"
    );
    assert_eq!(
        after, before,
        "only the default network's rows remain, unchanged"
    );
    assert!(!rows_by_controller(&zone.client).contains_key("isolatednet-network-controller"));
    assert_eq!(zone.pass(default_only).await, 0);
}

/// The `k8s.ovn.org/id`s of the UDN isolation ACLs (every ACL row with a `UDNIsolation` id)
/// in the client's replica.
fn replica_isolation_acls(client: &Client) -> BTreeSet<String> {
    let replica = client.replica();
    replica
        .rows(nb::acl::TABLE)
        .filter_map(|(_, row)| match row.get("external_ids") {
            Some(Value::Map(ids)) => ids.iter().find_map(|(k, v)| match (k, v) {
                (Atom::String(k), Atom::String(v))
                    if k == "k8s.ovn.org/id" && v.contains(":UDNIsolation:") =>
                {
                    Some(v.clone())
                }
                _ => None,
            }),
            _ => None,
        })
        .collect()
}

/// Polls the replica until `done` holds (the server's update reaches the client after the
/// ovn-nbctl transaction commits).
async fn until(client: &Client, what: &str, done: impl Fn(&BTreeSet<String>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let acls = replica_isolation_acls(client);
        if done(&acls) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {acls:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Item 15 (`udn_isolation_test.go` "Should handle syncing legacy DBIDs"): isolation ACLs
/// under the legacy `DenySecondary`, `AllowHostARPSecondary` and `AllowHostSecondary` ids on
/// the port group are replaced by the new names. Without `ACL.tier` (NB 7.0.0) upstream's
/// move of default-tier ACLs to tier 0 has nothing to act on; `isolation::udn_isolation`
/// asserts the column's absence. The legacy rows carry our stamps: rows upstream's
/// ovnkube-controller wrote (without `k8s.ovn.org/owner`) are not adopted.
#[tokio::test]
async fn legacy_isolation_acl_ids_are_replaced_by_the_new_names() {
    let zone = Zone::applied().await;
    let pg = isolation::SECONDARY_PODS;
    let new_ids = replica_isolation_acls(&zone.client);
    assert_eq!(new_ids.len(), 7, "{new_ids:?}");
    let legacy = [
        ("DenySecondary", "Egress", "from-lport", "1000", "drop"),
        (
            "AllowHostARPSecondary",
            "Egress",
            "from-lport",
            "1001",
            "allow",
        ),
        ("DenySecondary", "Ingress", "to-lport", "1000", "drop"),
        (
            "AllowHostARPSecondary",
            "Ingress",
            "to-lport",
            "1001",
            "allow",
        ),
        (
            "AllowHostSecondary",
            "Ingress",
            "to-lport",
            "1001",
            "allow-related",
        ),
    ];
    let mut args: Vec<String> = Vec::new();
    for (i, (name, dir, direction, priority, action)) in legacy.iter().enumerate() {
        let id = format!("default-network-controller:UDNIsolation:{name}:{dir}");
        let port = if *dir == "Egress" {
            "inport"
        } else {
            "outport"
        };
        args.extend([
            "--".to_owned(),
            format!("--id=@acl{i}"),
            "create".into(),
            "ACL".into(),
            format!("direction={direction}"),
            format!("priority={priority}"),
            format!("action={action}"),
            format!("match=\"{port} == @{pg}\""),
            "meter=acl-logging".into(),
            format!(
                "external_ids={{\"k8s.ovn.org/name\"={name}, direction={dir}, \
                     \"k8s.ovn.org/id\"=\"{id}\", \
                     \"k8s.ovn.org/owner-controller\"=default-network-controller, \
                     \"k8s.ovn.org/owner-type\"=UDNIsolation, \"k8s.ovn.org/owner\"=default}}"
            ),
            "--".into(),
            "add".into(),
            "Port_Group".into(),
            pg.into(),
            "acls".into(),
            format!("@acl{i}"),
        ]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    nbctl(&zone.server, &args);
    until(&zone.client, "legacy ACLs seen", |acls| acls.len() == 12).await;

    assert!(zone.pass(&zone.networks).await > 0);
    until(&zone.client, "legacy ACLs gone", |acls| *acls == new_ids).await;
    let on_group = read::targets(
        &zone.server,
        &read::get(&zone.server, "Port_Group", pg),
        "acls",
        "ACL",
    );
    let names: BTreeSet<String> = on_group
        .iter()
        .map(|a| a.map("external_ids")["k8s.ovn.org/name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            "AllowHostARPPrimaryUDN",
            "AllowHostPrimaryUDN",
            "DenyPrimaryUDN",
            "OpenPort-namespace1/myPod"
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(on_group.len(), 7);
    // The unreferenced legacy rows are gone from the table (ACL is not a root table).
    let acl_names: BTreeSet<String> = read::list(&zone.server, "ACL")
        .iter()
        .map(|a| a.map("external_ids")["k8s.ovn.org/name"].clone())
        .collect();
    assert!(
        acl_names.iter().all(|n| !n.contains("Secondary")),
        "{acl_names:?}"
    );
    isolation::udn_isolation(&zone.server);
    assert_eq!(zone.pass(&zone.networks).await, 0);
}
