//! The reconcile engine against a real ovsdb-server (private per test): a Layer3-like unit
//! written and shown by ovn-nbctl, reapply sends nothing, drift put back, foreign rows kept,
//! stale rows and units deleted, 10,000 rows in one apply, server killed mid-run, index
//! collisions reported per unit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{
    ApplyPolicy, ApplyReport, DesiredUnit, Engine, INDEXED_KEYS, RowRef, Scope, TransactFailure,
    Transactor, UnitError, UnitKey, UnitOutcome,
};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Operation, OperationResult, TransactError, Value};
use udn_ovsdb::schema::{DbSchema, Requirements};
use udn_ovsdb::testing::{OvsdbServer, sample_network};

const CONTROLLER: &str = "udn-test-controller";

thread_local! {
    /// One engine per test (each test runs on a thread of its own, its runtime too), whose
    /// clones share its memory of converged units.
    static ENGINE: Engine = Engine::new(CONTROLLER);
}

fn engine() -> Engine {
    ENGINE.with(Engine::clone)
}

fn config(server: &OvsdbServer) -> ClientConfig {
    let schema = DbSchema::from_text(nb::SCHEMA_JSON).unwrap();
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = Requirements::everything_in(&schema);
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(60);
    config.reconnect_backoff = (Duration::from_millis(10), Duration::from_millis(200));
    config
}

fn key(name: &str) -> UnitKey {
    UnitKey::new("Network", name)
}

/// `future`, checked to be `Send` (it may be spawned on a multi-threaded runtime).
fn sendable<F: std::future::Future + Send>(future: F) -> F {
    future
}

async fn reconcile(client: &Client, units: Vec<DesiredUnit>, scope: &Scope) -> ApplyReport {
    sendable(engine().reconcile(client, units, scope, &ApplyPolicy::default()))
        .await
        .unwrap()
}

/// Our rows in the replica by (table, row id), counting duplicates.
fn owned_counts(client: &Client) -> BTreeMap<(String, String), usize> {
    let replica = client.replica();
    let mut counts = BTreeMap::new();
    for table in replica.schema().tables.keys() {
        for uuid in replica.find(table, "k8s.ovn.org/owner-controller", CONTROLLER) {
            let row = replica.get(table, &uuid).unwrap();
            let Some(Value::Map(ids)) = row.get("external_ids") else {
                panic!()
            };
            let id = ids
                .iter()
                .find_map(|(k, v)| match (k, v) {
                    (Atom::String(k), Atom::String(v)) if k == "k8s.ovn.org/id" => Some(v.clone()),
                    _ => None,
                })
                .unwrap();
            *counts.entry((table.clone(), id)).or_insert(0) += 1;
        }
    }
    counts
}

fn desired_ids(units: &[DesiredUnit]) -> BTreeMap<(String, String), usize> {
    units
        .iter()
        .flat_map(|u| u.rows.iter().map(|r| ((r.table.clone(), r.id.clone()), 1)))
        .collect()
}

#[tokio::test]
async fn a_layer3_unit_is_written_shown_by_nbctl_and_reapplied_as_nothing() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let report = reconcile(&client, vec![sample_network("net1", 3)], &Scope::Units).await;
    assert!(report.is_success(), "{report:?}");
    assert_eq!(report.transactions, 1);
    assert_eq!(report.ops, sample_network("net1", 3).rows.len());
    let show = server.nbctl(&["show"]).unwrap();
    for expected in [
        "(net1_ovn_cluster_router)",
        "port rtos-net1_node2",
        "networks: [\"10.0.2.1/24\"]",
        "(net1_node0)",
        "port stor-net1_node1",
        "type: router",
        "router-port: rtos-net1_node1",
        "port k8s-net1_node2",
        "addresses: [\"0a:58:0a:00:02:02 10.0.2.2\"]",
        "external ip: \"172.18.0.2\"",
        "logical ip: \"10.128.0.0/14\"",
        "type: \"snat\"",
    ] {
        assert!(show.contains(expected), "{expected:?} missing from\n{show}");
    }
    let routes = server
        .nbctl(&["lr-route-list", "net1_ovn_cluster_router"])
        .unwrap();
    assert!(
        routes.contains("10.128.0.0/14") && routes.contains("100.64.0.2"),
        "{routes}"
    );
    let acls = server.nbctl(&["acl-list", "net1_pg"]).unwrap();
    assert!(
        acls.contains("to-lport  1001 (outport == @net1_pg) allow-related"),
        "{acls}"
    );
    assert!(
        acls.contains("from-lport  1001 (inport == @net1_pg) allow-related"),
        "{acls}"
    );
    let ports = server
        .nbctl(&["--bare", "--columns=ports", "list", "Port_Group", "net1_pg"])
        .unwrap();
    assert_eq!(ports.split_whitespace().count(), 3, "{ports}");
    let owner = server
        .nbctl(&[
            "get",
            "Logical_Switch",
            "net1_node0",
            "external_ids:\"k8s.ovn.org/owner-controller\"",
        ])
        .unwrap();
    assert_eq!(owner.trim().trim_matches('"'), CONTROLLER);
    // Reapply: nothing planned (the unit verified by the reconcile is not compared again),
    // no transaction.
    let plan = engine()
        .plan(
            &*client.replica(),
            vec![sample_network("net1", 3)],
            &Scope::Units,
        )
        .unwrap();
    assert!(plan.is_empty(), "{plan}");
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 1));
    let report = reconcile(&client, vec![sample_network("net1", 3)], &Scope::Units).await;
    assert_eq!((report.transactions, report.ops), (0, 0));
    assert!(matches!(
        report.units.get(&key("net1")),
        Some(UnitOutcome::Unchanged)
    ));
}

fn switch_ports(server: &OvsdbServer, switch: &str) -> Vec<String> {
    let out = server.nbctl(&["lsp-list", switch]).unwrap();
    let mut names: Vec<String> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|n| n.trim_matches(['(', ')']).to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_row_changed_behind_our_back_is_put_back() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    reconcile(&client, vec![sample_network("net1", 2)], &Scope::Units).await;
    let plan = engine()
        .plan(
            &*client.replica(),
            vec![sample_network("net1", 2)],
            &Scope::Units,
        )
        .unwrap();
    assert_eq!(plan.skipped_units(), 1);
    server
        .nbctl(&[
            "set",
            "Logical_Switch",
            "net1_node0",
            "other_config:subnet=192.168.0.0/24",
        ])
        .unwrap();
    server.nbctl(&["lsp-del", "k8s-net1_node1"]).unwrap();
    client.echo().await.unwrap();
    let plan = engine()
        .plan(
            &*client.replica(),
            vec![sample_network("net1", 2)],
            &Scope::Units,
        )
        .unwrap();
    assert_eq!(plan.compared_units(), 1);
    let text = plan.to_string();
    assert!(
        text.contains("update Logical_Switch id=\"net1_node0\": other_config"),
        "{text}"
    );
    assert!(
        text.contains("insert Logical_Switch_Port id=\"k8s-net1_node1\""),
        "{text}"
    );
    let report = reconcile(&client, vec![sample_network("net1", 2)], &Scope::Units).await;
    assert!(report.is_success(), "{report:?}");
    let subnet = server
        .nbctl(&["get", "Logical_Switch", "net1_node0", "other_config:subnet"])
        .unwrap();
    assert_eq!(subnet.trim().trim_matches('"'), "10.0.0.0/24");
    assert_eq!(
        switch_ports(&server, "net1_node1"),
        vec!["k8s-net1_node1", "stor-net1_node1"]
    );
    let pg_ports = server
        .nbctl(&["--bare", "--columns=ports", "list", "Port_Group", "net1_pg"])
        .unwrap();
    assert_eq!(pg_ports.split_whitespace().count(), 2, "{pg_ports}");
    let report = reconcile(&client, vec![sample_network("net1", 2)], &Scope::Units).await;
    assert_eq!(report.transactions, 0);
}

#[tokio::test]
async fn foreign_rows_survive_and_removed_rows_and_units_are_deleted() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    reconcile(
        &client,
        vec![sample_network("net1", 2), sample_network("net2", 1)],
        &Scope::Units,
    )
    .await;
    // Another controller's pod port on our switch, and a switch of its own.
    server
        .nbctl(&["lsp-add", "net1_node0", "foreign-pod"])
        .unwrap();
    server.nbctl(&["ls-add", "foreign-switch"]).unwrap();
    server
        .nbctl(&["pg-add", "foreign-pg", "k8s-net1_node0"])
        .unwrap();
    client.echo().await.unwrap();
    let report = reconcile(&client, vec![sample_network("net1", 2)], &Scope::Units).await;
    assert_eq!(report.transactions, 0, "{report:?}");
    // Drop node0's management port and the static route from net1.
    let mut unit = sample_network("net1", 2);
    unit.rows
        .retain(|r| r.id != "k8s-net1_node0" && r.id != "net1_route");
    for row in &mut unit.rows {
        match row.id.as_str() {
            "net1_node0" => {
                row.refs.insert(
                    "ports".into(),
                    vec![RowRef::desired("Logical_Switch_Port", "stor-net1_node0")],
                );
            }
            "net1_pg" => {
                row.refs.insert(
                    "ports".into(),
                    vec![RowRef::desired("Logical_Switch_Port", "k8s-net1_node1")],
                );
            }
            "net1_ovn_cluster_router" => {
                row.refs.insert("static_routes".into(), Vec::new());
            }
            _ => {}
        }
    }
    let report = reconcile(&client, vec![unit.clone()], &Scope::Units).await;
    assert!(report.is_success(), "{report:?}");
    assert_eq!(
        switch_ports(&server, "net1_node0"),
        vec!["foreign-pod", "stor-net1_node0"]
    );
    assert_eq!(
        server
            .nbctl(&["lr-route-list", "net1_ovn_cluster_router"])
            .unwrap()
            .trim(),
        ""
    );
    assert_eq!(
        owned_counts(&client),
        desired_ids(&[unit.clone(), sample_network("net2", 1)])
    );
    // Scope by owner type with only net1 desired: net2 goes entirely.
    let scope = Scope::OwnerType("Network".into());
    let report = reconcile(&client, vec![unit.clone()], &scope).await;
    assert!(
        matches!(
            report.units.get(&key("net2")),
            Some(UnitOutcome::Applied { .. })
        ),
        "{report:?}"
    );
    assert_eq!(
        owned_counts(&client),
        desired_ids(std::slice::from_ref(&unit))
    );
    // Deleting net1 removes all its rows; the foreign switch and port group stay.
    let report = reconcile(&client, Vec::new(), &scope).await;
    assert!(report.is_success(), "{report:?}");
    assert!(owned_counts(&client).is_empty());
    let switches = server
        .nbctl(&["--bare", "--columns=name", "list", "Logical_Switch"])
        .unwrap();
    assert_eq!(switches.trim(), "foreign-switch");
    let pgs = server
        .nbctl(&["--bare", "--columns=name", "list", "Port_Group"])
        .unwrap();
    assert_eq!(pgs.trim(), "foreign-pg");
    assert!(
        server
            .nbctl(&["show"])
            .unwrap()
            .lines()
            .all(|l| !l.contains("net1"))
    );
}

#[tokio::test]
async fn ten_thousand_rows_in_one_apply() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    // 40 networks x 62 nodes: 40 x (4 x 62 + 6) = 10,160 rows.
    let units: Vec<DesiredUnit> = (0..40)
        .map(|i| sample_network(&format!("net{i}"), 62))
        .collect();
    let rows: usize = units.iter().map(|u| u.rows.len()).sum();
    assert_eq!(rows, 10_160);
    let started = Instant::now();
    let report = reconcile(&client, units.clone(), &Scope::OwnerType("Network".into())).await;
    let apply_s = started.elapsed().as_secs_f64();
    assert!(report.is_success(), "{:?}", report.failures().next());
    assert_eq!(report.ops, rows);
    let transactions = report.transactions;
    assert_eq!(owned_counts(&client), desired_ids(&units));
    let started = Instant::now();
    let plan = engine()
        .plan(
            &*client.replica(),
            units.clone(),
            &Scope::OwnerType("Network".into()),
        )
        .unwrap();
    let replan_s = started.elapsed().as_secs_f64();
    assert!(plan.is_empty());
    let report = reconcile(&client, units, &Scope::OwnerType("Network".into())).await;
    assert_eq!((report.transactions, report.ops), (0, 0));
    let count = server
        .nbctl(&["--bare", "--columns=_uuid", "list", "Logical_Switch_Port"])
        .unwrap();
    assert_eq!(count.split_whitespace().count(), 40 * 62 * 2);
    eprintln!(
        "engine 10k rows: apply {apply_s:.3}s in {transactions} transactions, unchanged replan {replan_s:.3}s"
    );
}

/// Kills the server before the transaction number `kill_before` is sent, or right after
/// transaction number `kill_after` committed (its reply then counts as lost).
struct KillingClient<'a> {
    client: &'a Client,
    server: &'a Mutex<OvsdbServer>,
    sent: AtomicUsize,
    kill_before: usize,
    kill_after: usize,
}

#[derive(Debug, thiserror::Error)]
#[error("connection lost with the reply")]
struct ReplyLost;

impl Transactor for KillingClient<'_> {
    async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, TransactFailure> {
        let n = self.sent.fetch_add(1, Ordering::SeqCst);
        if n == self.kill_before {
            self.server.lock().unwrap().kill().unwrap();
        }
        let result = Transactor::transact(self.client, ops).await;
        if n == self.kill_after && result.is_ok() {
            self.server.lock().unwrap().kill().unwrap();
            return Err(TransactFailure::Unavailable(std::sync::Arc::new(ReplyLost)));
        }
        result
    }
}

async fn restart_and_converge(client: &Client, server: &Mutex<OvsdbServer>, units: &[DesiredUnit]) {
    let generation = client.generation();
    server.lock().unwrap().restart().unwrap();
    tokio::time::timeout(Duration::from_secs(20), client.wait_resynced(generation))
        .await
        .unwrap()
        .unwrap();
    let scope = Scope::OwnerType("Network".into());
    let report = reconcile(client, units.to_vec(), &scope).await;
    assert!(report.is_success(), "{report:?}");
    assert_eq!(owned_counts(client), desired_ids(units), "one row per id");
    let report = reconcile(client, units.to_vec(), &scope).await;
    assert_eq!(report.transactions, 0);
}

#[tokio::test]
async fn server_killed_mid_run_converges_after_restart_without_duplicates() {
    let server = Mutex::new(OvsdbServer::start_nb().unwrap());
    let client_config = config(&server.lock().unwrap());
    let client = Client::connect(client_config).await.unwrap();
    let units: Vec<DesiredUnit> = (0..12)
        .map(|i| sample_network(&format!("net{i}"), 5))
        .collect();
    let policy = ApplyPolicy {
        max_ops: 60,
        in_flight: 1,
    };
    let scope = Scope::OwnerType("Network".into());
    for (kill_before, kill_after) in [(3, usize::MAX), (usize::MAX, 2)] {
        let killing = KillingClient {
            client: &client,
            server: &server,
            sent: AtomicUsize::new(0),
            kill_before,
            kill_after,
        };
        let plan = engine()
            .plan(&*client.replica(), units.clone(), &scope)
            .unwrap();
        let report = engine().apply(&killing, &plan, &policy).await;
        assert!(!report.is_success());
        assert!(
            report
                .failures()
                .all(|e| matches!(e, UnitError::Unavailable { .. })),
            "{report:?}"
        );
        assert!(
            report
                .units
                .values()
                .any(|o| matches!(o, UnitOutcome::NotAttempted))
        );
        restart_and_converge(&client, &server, &units).await;
        // Start over for the second case.
        let report = reconcile(&client, Vec::new(), &scope).await;
        assert!(report.is_success());
    }
}

#[tokio::test]
async fn index_collisions_are_typed_errors_naming_the_unit() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    // A Port_Group name already taken by a foreign row.
    server.nbctl(&["pg-add", "net2_pg"]).unwrap();
    client.echo().await.unwrap();
    // Two units with a Logical_Switch_Port of the same name.
    let mut net4 = sample_network("net4", 1);
    for row in &mut net4.rows {
        if row.id == "k8s-net4_node0" {
            *row = row.clone().string("name", "k8s-net3_node0");
        }
    }
    let units = vec![
        sample_network("net1", 1),
        sample_network("net2", 1),
        sample_network("net3", 1),
        net4,
    ];
    let report = reconcile(&client, units, &Scope::Units).await;
    let failed: BTreeMap<&UnitKey, &UnitError> = report.failures().map(|e| (e.unit(), e)).collect();
    assert_eq!(
        failed.keys().copied().collect::<Vec<_>>(),
        vec![&key("net2"), &key("net4")]
    );
    for (unit, error) in failed {
        let UnitError::Rejected {
            error: TransactError::Commit { error },
            ..
        } = error
        else {
            panic!("{error:?}")
        };
        assert_eq!(error.error, "constraint violation");
        let details = error.details.as_deref().unwrap();
        let (table, value) = if *unit == key("net2") {
            ("Port_Group", "net2_pg")
        } else {
            ("Logical_Switch_Port", "k8s-net3_node0")
        };
        assert!(
            details.contains(&format!("\"{table}\" table")) && details.contains(value),
            "{details}"
        );
    }
    let message = report.failures().next().unwrap().to_string();
    assert_eq!(message, "unit Network/net2: transaction rejected at commit");
    assert!(matches!(
        report.units.get(&key("net1")),
        Some(UnitOutcome::Applied { .. })
    ));
    assert!(matches!(
        report.units.get(&key("net3")),
        Some(UnitOutcome::Applied { .. })
    ));
}
