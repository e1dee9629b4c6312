//! What the real-server topology tests share: a client of the test's NB server, one
//! reconcile pass of a zone's networks as the runtime does it (load balancer groups, the
//! default network first, keyed rows last), rows per owner controller, and ovn-nbctl.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use udn_controller::model::{Network, Node, PodAttachment, ZoneConfig};
use udn_controller::topology::keyed::{KeyedDesired, plan_keyed};
use udn_controller::topology::{
    DEFAULT_COPP, NetworkDesired, SchemaFeatures, ZoneInputs, load_balancer_groups,
    network_desired, network_engine, network_scope,
};
use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{ApplyPolicy, Engine, INDEXED_KEYS, OWNER_CONTROLLER_KEY};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Operation, Row, Uuid, Value};
use udn_ovsdb::schema::Requirements;
use udn_ovsdb::testing::OvsdbServer;

/// The zone a pass renders: its configuration, nodes, and each network's pods by name.
pub struct ZoneSnapshot<'a> {
    pub config: &'a ZoneConfig,
    pub nodes: &'a [Node],
    pub pods: &'a dyn Fn(&str) -> Vec<PodAttachment>,
}

/// A client of `server` monitoring every NB table, with the engine's indexed keys.
pub fn config(server: &OvsdbServer) -> ClientConfig {
    let schema = nb::schema().unwrap();
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = Requirements::everything_in(&schema);
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(60);
    config
}

/// One engine per network controller of `networks`.
pub fn engines(networks: &[Network]) -> BTreeMap<String, Engine> {
    networks
        .iter()
        .map(|n| (n.controller_name(), network_engine(&n.controller_name())))
        .collect()
}

fn string_column(row: &Row, column: &str) -> Option<String> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(s))) => Some(s.clone()),
        _ => None,
    }
}

/// UUIDs by name of the COPP and the load balancer groups in the replica.
fn shared_rows(client: &Client) -> (Option<Uuid>, BTreeMap<String, Uuid>) {
    let replica = client.replica();
    let copp = replica
        .rows(nb::copp::TABLE)
        .find(|(_, row)| string_column(row, "name").as_deref() == Some(DEFAULT_COPP))
        .map(|(uuid, _)| *uuid);
    let groups = replica
        .rows(nb::load_balancer_group::TABLE)
        .filter_map(|(uuid, row)| string_column(row, "name").map(|name| (name, *uuid)))
        .collect();
    (copp, groups)
}

async fn transact(client: &Client, ops: Vec<Operation>) {
    if !ops.is_empty() {
        client.transact(ops).await.unwrap();
    }
}

/// One reconcile of every network as the runtime does it: load balancer groups first, the
/// networks in the given order (the default network, owner of the COPP, before the others),
/// static MAC bindings and stale keyed rows after the units. Returns the operations sent.
pub async fn pass(
    client: &Client,
    engines: &BTreeMap<String, Engine>,
    networks: &[Network],
    zone: &ZoneSnapshot<'_>,
) -> usize {
    let mut ops = 0;
    let groups = KeyedDesired {
        load_balancer_groups: networks.iter().flat_map(load_balancer_groups).collect(),
        ..KeyedDesired::default()
    };
    let lb_plan = plan_keyed(&groups, &*client.replica());
    let lb_inserts: Vec<Operation> = lb_plan
        .upserts
        .into_iter()
        .filter(|op| matches!(op, Operation::Insert { table, .. } if table == nb::load_balancer_group::TABLE))
        .collect();
    ops += lb_inserts.len();
    transact(client, lb_inserts).await;
    let mut all = Vec::new();
    for network in networks {
        let (copp, groups) = shared_rows(client);
        let mut inputs = ZoneInputs::new(zone.config, zone.nodes);
        inputs.copp = copp;
        inputs.load_balancer_groups = groups;
        inputs.features = SchemaFeatures::of(client.replica().schema());
        let desired = network_desired(network, &inputs, &(zone.pods)(&network.name));
        assert!(
            desired.problems.is_empty(),
            "{}: {:?}",
            network.name,
            desired.problems
        );
        let engine = &engines[&desired.controller];
        let report = engine
            .reconcile(
                client,
                desired.units.clone(),
                &network_scope(),
                &ApplyPolicy::default(),
            )
            .await
            .unwrap();
        assert!(report.is_success(), "{}: {report:?}", network.name);
        ops += report.ops;
        all.push(desired);
    }
    ops + keyed(client, &all, engines).await
}

/// The keyed plan of `desired` (with every controller's ports counted as ours).
async fn keyed(
    client: &Client,
    desired: &[NetworkDesired],
    engines: &BTreeMap<String, Engine>,
) -> usize {
    let mut wanted = KeyedDesired::from_networks(desired);
    wanted.controllers.extend(engines.keys().cloned());
    let plan = plan_keyed(&wanted, &*client.replica());
    let count = plan.upserts.len() + plan.deletes.len();
    transact(client, plan.upserts).await;
    transact(client, plan.deletes).await;
    count
}

/// Removes a network as the runtime does: its engine reconciles no units in its scope.
pub async fn delete_network(
    client: &Client,
    engines: &BTreeMap<String, Engine>,
    network: &Network,
) {
    let report = engines[&network.controller_name()]
        .reconcile(
            client,
            Vec::new(),
            &network_scope(),
            &ApplyPolicy::default(),
        )
        .await
        .unwrap();
    assert!(report.is_success(), "{}: {report:?}", network.name);
}

/// Rows per owner controller, over every table.
pub fn rows_by_controller(client: &Client) -> BTreeMap<String, usize> {
    let replica = client.replica();
    let mut counts = BTreeMap::new();
    for table in replica.schema().tables.keys() {
        for (_, row) in replica.rows(table) {
            if let Some(Value::Map(ids)) = row.get("external_ids") {
                for (k, v) in ids {
                    if let (Atom::String(k), Atom::String(v)) = (k, v)
                        && k == OWNER_CONTROLLER_KEY
                    {
                        *counts.entry(v.clone()).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    counts
}

/// `ovn-nbctl <args>` against `server`; panics on failure.
pub fn nbctl(server: &OvsdbServer, args: &[&str]) -> String {
    server.nbctl(args).unwrap()
}
