//! What the zone lifecycle and problem tests share beyond `support`: zones against their own
//! Northbound/Southbound servers, full Northbound dumps to compare, the Kubernetes Events the
//! controllers published, the warnings they logged, dual-stack nodes and polling.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node as KubeNode;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_controller::model::ZoneConfig;
use udn_controller::zone::{NB_TABLES, connect_nb};
use udn_ovsdb::client::Endpoint;
use udn_ovsdb::engine::{ID_KEY, OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY};
use udn_ovsdb::protocol::{Atom, Row, Uuid, Value as OvsValue};
use udn_ovsdb::testing::OvsdbServer;
use udn_test_support::TestCluster;

use crate::support::{NodeAnnotations, RunningZone, start_zone};

/// Names of the namespaces [`Zones::more_passes`] creates.
static POKES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How long anything may take to converge.
pub const WAIT: Duration = Duration::from_secs(30);

/// One zone: its databases and its controller.
pub struct ZoneUnderTest {
    pub name: String,
    pub nb: OvsdbServer,
    pub sb: OvsdbServer,
    pub controller: RunningZone,
}

/// Zones (one per node, named after it) against one in-memory API server.
pub struct Zones {
    pub cluster: TestCluster,
    pub client: kube::Client,
    pub zones: Vec<ZoneUnderTest>,
}

impl Zones {
    /// Starts a controller for each zone, with `config(zone)` as its configuration.
    pub async fn start(names: &[&str], config: impl Fn(&str) -> ZoneConfig) -> Self {
        let cluster = TestCluster::new();
        let client = cluster.client();
        let mut zones = Vec::new();
        for name in names {
            let nb = OvsdbServer::start_nb().unwrap();
            let sb = OvsdbServer::start_sb().unwrap();
            let controller = start_zone(&cluster, config(name), nb.endpoint(), sb.endpoint()).await;
            zones.push(ZoneUnderTest {
                name: (*name).to_owned(),
                nb,
                sb,
                controller,
            });
        }
        Self {
            cluster,
            client,
            zones,
        }
    }

    /// The zone named `name`.
    pub fn zone(&self, name: &str) -> &ZoneUnderTest {
        self.zones.iter().find(|z| z.name == name).unwrap()
    }

    /// Waits until every zone's passes find nothing to do: a clean pass (nothing failed,
    /// pending or annotated) and no further pass for a moment.
    pub async fn converged(&self) {
        for zone in &self.zones {
            let deadline = Instant::now() + WAIT;
            loop {
                let (count, report) = zone.controller.last();
                let clean = count > 0
                    && report.failures == 0
                    && report.pending == 0
                    && report.pods_annotated == 0;
                if clean {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    if zone.controller.last().0 == count {
                        break;
                    }
                    continue;
                }
                assert!(
                    Instant::now() < deadline,
                    "zone {} did not converge: pass {count}: {report:?}",
                    zone.name
                );
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
    }

    /// Makes every zone run `count` more passes (each after a change that concerns none of
    /// the tests' objects: a new namespace), then waits until all converged.
    pub async fn more_passes(&self, count: usize) {
        for _ in 0..count {
            let before: Vec<u64> = self.zones.iter().map(|z| z.controller.last().0).collect();
            let n = POKES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::support::put_namespace(&self.client, &format!("poke-{n}"), false).await;
            for (zone, count) in self.zones.iter().zip(before) {
                eventually("a pass after the change", || async {
                    zone.controller.last().0 > count
                })
                .await;
            }
        }
        self.converged().await;
    }

    /// Stops every controller.
    pub async fn stop(self) {
        for zone in self.zones {
            zone.controller.stop().await;
        }
    }
}

/// Polls `condition` until it holds; fails the test after [`WAIT`].
pub async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if condition().await {
            return;
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

// ---- Northbound dumps ----

/// One row, canonical: every column rendered as text, sets and maps sorted (so two reads of
/// the same row compare equal whatever order the server sent); each `external_ids` entry
/// also as `external_ids:<key>` -> its plain value (ovn-nbctl's syntax).
pub type DumpRow = BTreeMap<String, String>;

/// A whole Northbound database as the controller monitors it: table -> UUID -> row.
pub type Dump = BTreeMap<String, BTreeMap<Uuid, DumpRow>>;

fn atom_text(atom: &Atom) -> String {
    match atom {
        Atom::String(text) => format!("{text:?}"),
        other => format!("{other:?}"),
    }
}

fn value_text(value: &OvsValue) -> String {
    match value {
        OvsValue::Atom(atom) => atom_text(atom),
        OvsValue::Set(atoms) => {
            let mut items: Vec<String> = atoms.iter().map(atom_text).collect();
            items.sort();
            format!("[{}]", items.join(", "))
        }
        OvsValue::Map(pairs) => {
            let mut items: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}={}", atom_text(k), atom_text(v)))
                .collect();
            items.sort();
            format!("{{{}}}", items.join(", "))
        }
    }
}

fn canonical(row: &Row) -> DumpRow {
    let mut out: DumpRow = row
        .iter()
        .filter(|(column, _)| !column.starts_with('_'))
        .map(|(column, value)| (column.clone(), value_text(value)))
        .collect();
    if let Some(OvsValue::Map(pairs)) = row.get("external_ids") {
        for (key, value) in pairs {
            if let (Atom::String(key), Atom::String(value)) = (key, value) {
                out.insert(format!("external_ids:{key}"), value.clone());
            }
        }
    }
    out
}

/// Every row of the tables the controller monitors (a fresh connection, so the dump is the
/// server's current content).
pub async fn nb_dump(nb: &OvsdbServer) -> Dump {
    nb_dump_at(&nb.endpoint()).await
}

/// [`nb_dump`] of the server at `endpoint`.
pub async fn nb_dump_at(endpoint: &Endpoint) -> Dump {
    let client = connect_nb(endpoint.clone()).await.unwrap();
    let replica = client.replica();
    NB_TABLES
        .iter()
        .map(|table| {
            let rows = replica
                .rows(table)
                .map(|(uuid, row)| (*uuid, canonical(row)))
                .collect();
            ((*table).to_owned(), rows)
        })
        .collect()
}

/// The value of `key` in a row's `external_ids`.
pub fn external_id<'r>(row: &'r DumpRow, key: &str) -> Option<&'r str> {
    row.get(&format!("external_ids:{key}")).map(String::as_str)
}

/// Whether any column of the row (names, options, matches, external_ids) mentions `needle`.
pub fn mentions(row: &DumpRow, needle: &str) -> bool {
    row.values().any(|v| v.contains(needle))
}

/// The rows of `dump` for which `keep` holds.
pub fn filter(dump: &Dump, keep: impl Fn(&str, &DumpRow) -> bool) -> Dump {
    dump.iter()
        .map(|(table, rows)| {
            let rows = rows
                .iter()
                .filter(|(_, row)| keep(table, row))
                .map(|(uuid, row)| (*uuid, row.clone()))
                .collect();
            (table.clone(), rows)
        })
        .collect()
}

/// Number of rows.
pub fn count(dump: &Dump) -> usize {
    dump.values().map(BTreeMap::len).sum()
}

/// The UUIDs of every row.
pub fn uuids(dump: &Dump) -> BTreeSet<Uuid> {
    dump.values()
        .flat_map(|rows| rows.keys().copied())
        .collect()
}

/// `(table, owner-type, owner, id)` of every stamped row: which rows exist, whatever their
/// UUIDs.
pub fn identities(dump: &Dump) -> BTreeSet<(String, String, String, String)> {
    dump.iter()
        .flat_map(|(table, rows)| {
            rows.values().filter_map(move |row| {
                Some((
                    table.clone(),
                    external_id(row, OWNER_TYPE_KEY)?.to_owned(),
                    external_id(row, OWNER_KEY)?.to_owned(),
                    external_id(row, ID_KEY)?.to_owned(),
                ))
            })
        })
        .collect()
}

/// The rows `controller` owns.
pub fn owned_by(dump: &Dump, controller: &str) -> Dump {
    filter(dump, |_, row| {
        external_id(row, OWNER_CONTROLLER_KEY) == Some(controller)
    })
}

/// The row of `table` named `name`.
pub fn named<'d>(dump: &'d Dump, table: &str, name: &str) -> Option<(&'d Uuid, &'d DumpRow)> {
    let quoted = format!("{name:?}");
    dump.get(table)?
        .iter()
        .find(|(_, row)| row.get("name") == Some(&quoted))
}

/// A readable difference of two dumps (rows only in one, rows that changed).
pub fn diff(before: &Dump, after: &Dump) -> String {
    let mut out = String::new();
    for (table, rows) in before {
        let empty = BTreeMap::new();
        let other = after.get(table).unwrap_or(&empty);
        for (uuid, row) in rows {
            match other.get(uuid) {
                None => out.push_str(&format!("- {table} {row:?}\n")),
                Some(new) if new != row => {
                    out.push_str(&format!("~ {table} {row:?}\n    -> {new:?}\n"));
                }
                Some(_) => {}
            }
        }
        for (uuid, row) in other {
            if !rows.contains_key(uuid) {
                out.push_str(&format!("+ {table} {row:?}\n"));
            }
        }
    }
    out
}

// ---- Kubernetes objects ----

/// Creates a node from its JSON, or merges the JSON into the existing node.
pub async fn put_node_json(client: &kube::Client, body: Value) {
    let api: Api<KubeNode> = Api::all(client.clone());
    let name = body["metadata"]["name"].as_str().unwrap().to_owned();
    if api.get_opt(&name).await.unwrap().is_some() {
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .unwrap();
    } else {
        let node: KubeNode = serde_json::from_value(body).unwrap();
        api.create(&PostParams::default(), &node).await.unwrap();
    }
}

pub async fn delete_node(client: &kube::Client, name: &str) {
    let api: Api<KubeNode> = Api::all(client.clone());
    api.delete(name, &Default::default()).await.unwrap();
}

/// Replaces a NAD's `spec.config` and annotations with those of `nad` (as cluster-manager
/// does when it re-renders a network).
pub async fn update_nad(client: &kube::Client, nad: Value) {
    let ns = nad["metadata"]["namespace"].as_str().unwrap().to_owned();
    let name = nad["metadata"]["name"].as_str().unwrap().to_owned();
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), &ns);
    let body = json!({"metadata": {"annotations": nad["metadata"]["annotations"]},
        "spec": nad["spec"]});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap();
}

/// Sets (or with `None` removes) one annotation of a pod.
pub async fn annotate_pod(
    client: &kube::Client,
    ns: &str,
    name: &str,
    key: &str,
    value: Option<&str>,
) {
    let api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), ns);
    let body = json!({"metadata": {"annotations": {key: value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap();
}

/// The raw `k8s.ovn.org/pod-networks` of a pod.
pub async fn raw_pod_networks(client: &kube::Client, ns: &str, name: &str) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), ns);
    api.get(name)
        .await
        .unwrap()
        .metadata
        .annotations
        .and_then(|a| a.get(udn_api::names::ANNOTATION_POD_NETWORKS).cloned())
}

/// The JSON of a node as cluster-manager and the node agent annotate it; with `dual_stack`
/// its transit switch addresses, gateway addresses and next hops have both families
/// (`fd97::<id>`, `fc00:f853:ccd:e793::<id>`).
pub fn node_json(node: &NodeAnnotations, dual_stack: bool) -> Value {
    let mut body = node.to_json();
    if !dual_stack {
        return body;
    }
    let id = node.id;
    let annotations = &mut body["metadata"]["annotations"];
    annotations["k8s.ovn.org/node-transit-switch-port-ifaddr"] = json!(
        json!({"ipv4": format!("100.88.0.{id}/16"), "ipv6": format!("fd97::{id}/64")}).to_string()
    );
    let v6 = format!("fc00:f853:ccd:e793::{id}/64");
    let gateway = json!({"default": {
        "mode": "shared", "bridge-id": "breth0",
        "interface-id": format!("breth0_{}", node.name),
        "mac-address": node.mac, "ip-addresses": [node.node_cidr, v6],
        "ip-address": node.node_cidr,
        "next-hops": [node.next_hop, "fc00:f853:ccd:e793::1"], "next-hop": node.next_hop,
        "node-port-enable": "true", "vlan-id": "0"}});
    annotations["k8s.ovn.org/l3-gateway-config"] = json!(gateway.to_string());
    annotations["k8s.ovn.org/host-cidrs"] = json!(json!([node.node_cidr, v6]).to_string());
    body
}

/// A node of the tests: ID `id`, chassis `chassis-<name>`, node IP `172.18.0.<id>`, host
/// subnets per network.
pub fn test_node(name: &str, id: u32, subnets: &[(&str, &[&str])]) -> NodeAnnotations {
    NodeAnnotations {
        name: name.to_owned(),
        id,
        chassis: format!("chassis-{name}"),
        node_cidr: format!("172.18.0.{id}/16"),
        node_ip: format!("172.18.0.{id}"),
        mac: format!("02:00:ac:12:00:{id:02x}"),
        next_hop: "172.18.0.1".to_owned(),
        subnets: subnets
            .iter()
            .map(|(n, s)| ((*n).to_owned(), s.iter().map(|x| (*x).to_owned()).collect()))
            .collect(),
        layer2_tunnel_ids: BTreeMap::new(),
    }
}

// ---- Events ----

/// An event as the tests look at it.
#[derive(Clone, Debug)]
pub struct SeenEvent {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub type_: String,
    pub reason: String,
    pub note: String,
    /// `series.count` (`None`: published once).
    pub series: Option<i32>,
}

/// Every event (events.k8s.io/v1) in the cluster.
pub async fn events(client: &kube::Client) -> Vec<SeenEvent> {
    let api: Api<Event> = Api::all(client.clone());
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|event| {
            let regarding = event.regarding.unwrap_or_default();
            SeenEvent {
                kind: regarding.kind.unwrap_or_default(),
                namespace: regarding.namespace,
                name: regarding.name.unwrap_or_default(),
                type_: event.type_.unwrap_or_default(),
                reason: event.reason.unwrap_or_default(),
                note: event.note.unwrap_or_default(),
                series: event.series.map(|s| s.count),
            }
        })
        .collect()
}

/// The events about one object (`kind`, `namespace/name` or `name`).
pub async fn events_about(client: &kube::Client, kind: &str, key: &str) -> Vec<SeenEvent> {
    let (namespace, name) = match key.split_once('/') {
        Some((ns, name)) => (Some(ns.to_owned()), name.to_owned()),
        None => (None, key.to_owned()),
    };
    events(client)
        .await
        .into_iter()
        .filter(|e| e.kind == kind && e.name == name && e.namespace == namespace)
        .collect()
}

/// Waits for a Warning event about the object with `reason` whose note contains `text`.
pub async fn wait_event(
    client: &kube::Client,
    kind: &str,
    key: &str,
    reason: &str,
    text: &str,
) -> SeenEvent {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = events_about(client, kind, key)
            .await
            .into_iter()
            .find(|e| e.reason == reason && e.note.contains(text));
        if let Some(event) = found {
            assert_eq!(event.type_, "Warning", "{event:?}");
            return event;
        }
        assert!(
            Instant::now() < deadline,
            "no {reason} event on {kind} {key} with {text:?}; events: {:#?} logs {:#?}",
            events(client).await,
            logged()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

// ---- Logs ----

/// One warning the process logged: its message and fields.
#[derive(Clone, Debug)]
pub struct LogLine {
    pub message: String,
    pub fields: BTreeMap<String, String>,
}

type LogBuffer = Arc<Mutex<Vec<LogLine>>>;

struct Capture(LogBuffer);

struct Fields(BTreeMap<String, String>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::WARN)
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(BTreeMap::new());
        event.record(&mut fields);
        let mut fields = fields.0;
        let message = fields.remove("message").unwrap_or_default();
        self.0.lock().unwrap().push(LogLine { message, fields });
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// The warnings logged by this test process so far (capture starts at the first call).
pub fn logged() -> Vec<LogLine> {
    static BUFFER: OnceLock<LogBuffer> = OnceLock::new();
    let buffer = BUFFER.get_or_init(|| {
        let buffer = LogBuffer::default();
        // Another subscriber may be set already (then nothing is captured and the log
        // assertions say so).
        let _ = tracing::subscriber::set_global_default(Capture(Arc::clone(&buffer)));
        buffer
    });
    buffer.lock().unwrap().clone()
}

/// Waits for a logged warning with `message` whose fields include all of `fields`.
pub async fn wait_logged(message: &str, fields: &[(&str, &str)]) -> LogLine {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = logged().into_iter().find(|line| {
            line.message == message
                && fields
                    .iter()
                    .all(|(k, v)| line.fields.get(*k).is_some_and(|have| have.contains(v)))
        });
        if let Some(line) = found {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no warning {message:?} with {fields:?} logged"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
