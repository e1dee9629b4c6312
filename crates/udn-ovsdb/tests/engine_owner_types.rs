//! One network controller's units of several owner types (`Cluster`, `Node`, `Pod`) in one
//! plan against a real ovsdb-server, the nodes' management-port ACLs stamped with upstream's
//! `NetpolNode` owner type: written and shown by ovn-nbctl, reapplied as nothing, a changed
//! ACL id replaced, and gone units of each type deleted whole.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{
    ApplyPolicy, ApplyReport, DesiredRow, DesiredUnit, Engine, INDEXED_KEYS, RowRef, Scope, UnitKey,
};
use udn_ovsdb::nb;
use udn_ovsdb::schema::Requirements;
use udn_ovsdb::testing::OvsdbServer;

const CONTROLLER: &str = "net1-network-controller";

fn config(server: &OvsdbServer) -> ClientConfig {
    let schema = nb::schema().unwrap();
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = Requirements::everything_in(&schema);
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(30);
    config
}

fn engine() -> Engine {
    Engine::new(CONTROLLER).with_row_owner_type("NetpolNode", "Node")
}

fn scope() -> Scope {
    Scope::OwnerTypes(vec!["Cluster".into(), "Node".into(), "Pod".into()])
}

/// The cluster's port group holding every node's management port.
fn cluster(nodes: &[&str]) -> DesiredUnit {
    DesiredUnit::new(UnitKey::new("Cluster", "net1")).row(
        DesiredRow::new("Port_Group", "net1_clusterPortGroup")
            .string("name", "net1_clusterPortGroup")
            .refs(
                "ports",
                nodes
                    .iter()
                    .map(|n| RowRef::desired("Logical_Switch_Port", format!("k8s-net1_{n}"))),
            ),
    )
}

/// A node's switch, management port and the ACL allowing its management IP, stamped as
/// upstream stamps it (`NetpolNode`, id `<controller>:NetpolNode:<switch>:<ip>`).
fn node(name: &str, ip: &str) -> DesiredUnit {
    let switch = format!("net1_{name}");
    let port = format!("k8s-{switch}");
    let acl = format!("{CONTROLLER}:NetpolNode:{switch}:{ip}");
    DesiredUnit::new(UnitKey::new("Node", name))
        .row(
            DesiredRow::new("Logical_Switch_Port", &port)
                .string("name", &port)
                .strings("addresses", [format!("0a:58:0a:00:00:02 {ip}").as_str()]),
        )
        .row(
            DesiredRow::new("ACL", &acl)
                .owner_type("NetpolNode")
                .integer("priority", 1001)
                .string("direction", "to-lport")
                .string("match", &format!("ip4.src=={ip}"))
                .string("action", "allow-related")
                .map(
                    "external_ids",
                    [("k8s.ovn.org/name", switch.as_str()), ("ip", ip)],
                ),
        )
        .row(
            DesiredRow::new("Logical_Switch", &switch)
                .string("name", &switch)
                .refs("ports", [RowRef::desired("Logical_Switch_Port", &port)])
                .refs("acls", [RowRef::desired("ACL", &acl)]),
        )
}

fn pod(name: &str) -> DesiredUnit {
    let set = format!("net1_{name}");
    DesiredUnit::new(UnitKey::new("Pod", format!("ns/{name}")))
        .row(DesiredRow::new("Address_Set", &set).string("name", &set))
}

async fn reconcile(client: &Client, engine: &Engine, units: Vec<DesiredUnit>) -> ApplyReport {
    let report = engine
        .reconcile(client, units, &scope(), &ApplyPolicy::default())
        .await
        .unwrap();
    assert!(report.is_success(), "{report:?}");
    report
}

/// The `_uuid`s of the ACLs whose stamped owner type is `owner_type`.
fn acls_of_type(server: &OvsdbServer, owner_type: &str) -> Vec<String> {
    let out = server
        .nbctl(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "ACL",
            &format!("external_ids:\"k8s.ovn.org/owner-type\"={owner_type}"),
        ])
        .unwrap();
    out.split_whitespace().map(str::to_owned).collect()
}

fn names(server: &OvsdbServer, table: &str) -> Vec<String> {
    let out = server
        .nbctl(&["--bare", "--columns=name", "list", table])
        .unwrap();
    let mut names: Vec<String> = out.split_whitespace().map(str::to_owned).collect();
    names.sort();
    names
}

#[tokio::test]
async fn units_of_several_owner_types_with_netpol_node_acls_converge() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let engine = engine();
    let units = || {
        vec![
            cluster(&["a", "b"]),
            node("a", "10.0.0.2"),
            node("b", "10.0.1.2"),
            pod("x"),
            pod("y"),
        ]
    };
    reconcile(&client, &engine, units()).await;
    assert_eq!(acls_of_type(&server, "NetpolNode").len(), 2);
    let acls = server.nbctl(&["acl-list", "net1_a"]).unwrap();
    assert!(
        acls.contains("to-lport  1001 (ip4.src==10.0.0.2) allow-related"),
        "{acls}"
    );
    let id = server
        .nbctl(&[
            "get",
            "ACL",
            &acls_of_type(&server, "NetpolNode")[0],
            "external_ids:\"k8s.ovn.org/owner\"",
        ])
        .unwrap();
    assert!(["a", "b"].contains(&id.trim().trim_matches('"')), "{id}");
    assert_eq!(names(&server, "Logical_Switch"), ["net1_a", "net1_b"]);
    assert_eq!(names(&server, "Address_Set"), ["net1_x", "net1_y"]);

    // Reapplied: every unit skipped, nothing sent.
    let plan = engine.plan(&*client.replica(), units(), &scope()).unwrap();
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 5));
    let report = reconcile(&client, &engine, units()).await;
    assert_eq!((report.transactions, report.ops), (0, 0));

    // Node a's management IP changes (a new ACL id), node b and pod y go.
    let next = || vec![cluster(&["a"]), node("a", "10.0.0.3"), pod("x")];
    let plan = engine.plan(&*client.replica(), next(), &scope()).unwrap();
    let gone: Vec<String> = plan.units().skip(3).map(ToString::to_string).collect();
    assert_eq!(gone, ["Node/b", "Pod/ns/y"]);
    reconcile(&client, &engine, next()).await;
    let left = acls_of_type(&server, "NetpolNode");
    assert_eq!(left.len(), 1);
    let acls = server.nbctl(&["acl-list", "net1_a"]).unwrap();
    assert!(
        acls.contains("(ip4.src==10.0.0.3)") && !acls.contains("10.0.0.2"),
        "{acls}"
    );
    let id = server
        .nbctl(&["get", "ACL", &left[0], "external_ids:\"k8s.ovn.org/id\""])
        .unwrap();
    assert_eq!(
        id.trim().trim_matches('"'),
        format!("{CONTROLLER}:NetpolNode:net1_a:10.0.0.3")
    );
    assert_eq!(names(&server, "Logical_Switch"), ["net1_a"]);
    assert_eq!(names(&server, "Logical_Switch_Port"), ["k8s-net1_a"]);
    assert_eq!(names(&server, "Address_Set"), ["net1_x"]);
    let pg_ports = server
        .nbctl(&[
            "--bare",
            "--columns=ports",
            "list",
            "Port_Group",
            "net1_clusterPortGroup",
        ])
        .unwrap();
    assert_eq!(pg_ports.split_whitespace().count(), 1, "{pg_ports}");
    // A fresh engine (no memory) finds nothing to do.
    let plan = self::engine()
        .plan(&*client.replica(), next(), &scope())
        .unwrap();
    assert!(plan.is_empty(), "{plan}");
    assert_eq!(plan.compared_units(), 3);
}
