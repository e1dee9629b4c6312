//! Against a newer Northbound schema (one with `ACL.tier` and `NAT.match`, as OVN 23.09 and
//! later have), the controller writes those columns as upstream does; against the vendored
//! 7.0.0 schema (the other tests) it leaves them out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;
use udn_ovsdb::testing::OvsdbServer;
use udn_test_support::TestCluster;

const WAIT: Duration = Duration::from_secs(30);

/// The vendored schema with the two columns newer OVN has, typed as there.
fn newer_nb_schema() -> String {
    let mut schema: serde_json::Value = serde_json::from_str(udn_ovsdb::nb::SCHEMA_JSON).unwrap();
    schema["version"] = json!("7.3.0");
    schema["tables"]["ACL"]["columns"]["tier"] =
        json!({"type": {"key": {"type": "integer", "minInteger": 0, "maxInteger": 3}}});
    schema["tables"]["NAT"]["columns"]["match"] = json!({"type": "string"});
    schema.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tier_and_nat_match_are_written_where_the_schema_has_them() {
    let nb = OvsdbServer::start_schema_text(&newer_nb_schema()).unwrap();
    let sb = OvsdbServer::start_sb().unwrap();
    let cluster = TestCluster::new();
    let client = cluster.client();
    put_node(
        &client,
        &node(
            "node1",
            2,
            &[
                ("default", "10.244.0.0/24"),
                ("isolatednet", "192.168.1.0/24"),
            ],
        ),
    )
    .await;
    put_namespace(&client, "blue", true).await;
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "isolatednet",
            json!({"topology": "layer3", "role": "primary", "subnets": "192.168.0.0/16/24"}),
            2,
        ),
    )
    .await;
    put_pod(&client, "blue", "p", "node1", json!({})).await;
    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    pod_networks(&client, "blue", "p", &["default", "blue/net"], WAIT).await;
    zone.converged(WAIT).await;

    // ovn-nbctl 23.03 does not know these columns: read them with our own client.
    let mut config = udn_ovsdb::client::ClientConfig::new(nb.endpoint(), udn_ovsdb::nb::DATABASE);
    config.monitor = udn_ovsdb::schema::Requirements::default()
        .with("ACL", [])
        .with("NAT", []);
    config.indexed_keys = vec!["k8s.ovn.org/id".to_owned()];
    let reader = udn_ovsdb::client::Client::connect(config).await.unwrap();
    {
        let replica = reader.replica();
        let acl = |id: &str| {
            let uuids = replica.find("ACL", "k8s.ovn.org/id", id);
            assert_eq!(uuids.len(), 1, "ACL {id}");
            replica.get("ACL", &uuids[0]).unwrap().clone()
        };
        let int = |v: i64| udn_ovsdb::protocol::Value::Atom(udn_ovsdb::protocol::Atom::Integer(v));
        // UDN isolation ACLs are tier 0, the management port's allow ACL tier 2 (upstream).
        let deny = acl("default-network-controller:UDNIsolation:DenyPrimaryUDN:Ingress");
        assert_eq!(deny.get("tier"), Some(&int(0)), "{deny:?}");
        let mgmt = acl("isolatednet-network-controller:NetpolNode:isolatednet_node1:192.168.1.2");
        assert_eq!(mgmt.get("tier"), Some(&int(2)), "{mgmt:?}");
        // The masquerade SNAT to the management port carries its match.
        let text = |row: &udn_ovsdb::protocol::Row, column: &str| -> Option<String> {
            use udn_ovsdb::protocol::{Atom, Value};
            match row.get(column)? {
                Value::Atom(Atom::String(s)) => Some(s.clone()),
                Value::Set(atoms) => match atoms.as_slice() {
                    [Atom::String(s)] => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            }
        };
        let snat = replica
            .rows("NAT")
            .map(|(_, row)| row)
            .find(|row| text(row, "logical_port").as_deref() == Some("rtos-isolatednet_node1"))
            .expect("the masquerade SNAT");
        assert_eq!(
            text(snat, "match").as_deref(),
            Some("eth.dst == 0a:58:c0:a8:01:02"),
            "{snat:?}"
        );
    }
    // And nothing more to do.
    zone.stop().await;
    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    let first = zone.first_pass(WAIT).await;
    assert_eq!((first.nb_ops, first.failures), (0, 0), "{first:?}");
    zone.stop().await;
}
