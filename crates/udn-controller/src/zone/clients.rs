//! The zone's two OVSDB connections: what the replicas hold and index.

use std::time::Duration;

use udn_ovsdb::client::{Client, ClientConfig, ClientError, Endpoint};
use udn_ovsdb::engine::INDEXED_KEYS;
use udn_ovsdb::protocol::{Atom, Condition, ConditionFunction, Value};
use udn_ovsdb::schema::Requirements;

/// Northbound tables the controller writes (all columns are kept in its replica).
pub const WRITTEN_TABLES: [&str; 16] = [
    "Logical_Switch",
    "Logical_Switch_Port",
    "Logical_Router",
    "Logical_Router_Port",
    "Logical_Router_Static_Route",
    "Logical_Router_Policy",
    "NAT",
    "ACL",
    "Port_Group",
    "Load_Balancer",
    "Load_Balancer_Group",
    "Gateway_Chassis",
    "Static_MAC_Binding",
    "Copp",
    "Meter",
    "Meter_Band",
];

/// Northbound tables the controller monitors: those it writes, and `NB_Global`.
pub const NB_TABLES: [&str; 17] = {
    let mut tables = [""; 17];
    tables[0] = "NB_Global";
    let mut i = 0;
    while i < WRITTEN_TABLES.len() {
        tables[i + 1] = WRITTEN_TABLES[i];
        i += 1;
    }
    tables
};

/// Southbound tables and columns the controller reads: chassis and their encaps (remote
/// chassis), port bindings of `type=remote` (binding remote ports), SB_Global (northd
/// progress).
const SB_COLUMNS: [(&str, &[&str]); 4] = [
    (
        "Chassis",
        &["name", "hostname", "encaps", "other_config", "external_ids"],
    ),
    ("Encap", &["type", "ip", "options", "chassis_name"]),
    (
        "Port_Binding",
        &[
            "logical_port",
            "type",
            "chassis",
            "requested_chassis",
            "options",
        ],
    ),
    ("SB_Global", &["nb_cfg"]),
];

/// Inactivity probe of both connections: a busy server (northd's large Southbound
/// transactions, a big Northbound write) must not look dead. Upstream's libovsdb clients
/// wait minutes; 30 s still notices a dead peer soon.
const PROBE_INTERVAL: Duration = Duration::from_secs(30);
/// Request timeout: a transaction of a few thousand rows on a loaded server takes seconds.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Connects to the zone's Northbound database.
pub async fn connect_nb(endpoint: Endpoint) -> Result<Client, ClientError> {
    let mut monitor = Requirements::default();
    for table in NB_TABLES {
        monitor = monitor.with(table, []);
    }
    let mut config = ClientConfig::new(endpoint, udn_ovsdb::nb::DATABASE);
    config.probe_interval = PROBE_INTERVAL;
    config.request_timeout = REQUEST_TIMEOUT;
    config.required = monitor.clone();
    config.monitor = monitor;
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    Client::connect(config).await
}

/// Connects to the zone's Southbound database.
pub async fn connect_sb(endpoint: Endpoint) -> Result<Client, ClientError> {
    let mut monitor = Requirements::default();
    let mut required = Requirements::default();
    for (table, columns) in SB_COLUMNS {
        monitor = monitor.with(table, columns.iter().copied());
        required = required.with(table, []);
    }
    let mut config = ClientConfig::new(endpoint, "OVN_Southbound");
    config.probe_interval = PROBE_INTERVAL;
    config.request_timeout = REQUEST_TIMEOUT;
    config.monitor = monitor;
    config.required = required;
    // Only remote ports are bound here; a local pod's binding changes (ovn-controller
    // claiming it, on every CNI ADD) would otherwise wake a whole pass each.
    config.conditions.insert(
        "Port_Binding".to_owned(),
        vec![Condition {
            column: "type".to_owned(),
            function: ConditionFunction::Equal,
            value: Value::Atom(Atom::String("remote".to_owned())),
        }],
    );
    Client::connect(config).await
}
