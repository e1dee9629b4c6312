//! The raw baseline of `cargo xtask bench nb`: the rows the engine writes (same columns, same
//! ownership stamps), as JSON-RPC `transact` requests written straight on the server's unix
//! socket, no client library. Requests are encoded before the clock starts and sent back to
//! back from a writer thread while the replies are read, so the time is the server's: how
//! fast it commits these rows in transactions of this size.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, anyhow, bail, ensure};
use serde::Deserialize;
use serde_json::{Value as Json, json};
use udn_ovsdb::engine::{
    DesiredUnit, ID_KEY, OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY, RowRef,
};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Operation, Row, Value};

/// How the rows are cut into transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// Everything in one transaction.
    Single,
    /// This many networks per transaction.
    Networks(usize),
}

impl Batching {
    /// The variants the bench measures: one transaction, then 10, 50 and 200 networks each.
    pub const ALL: [Batching; 4] = [
        Batching::Single,
        Batching::Networks(10),
        Batching::Networks(50),
        Batching::Networks(200),
    ];

    /// A short label, e.g. `one transaction`, `10 networks/txn`.
    pub fn label(&self) -> String {
        match self {
            Self::Single => "one transaction".to_owned(),
            Self::Networks(1) => "1 network/txn".to_owned(),
            Self::Networks(n) => format!("{n} networks/txn"),
        }
    }

    /// Networks per transaction when there are `networks` in all.
    pub fn networks_per_transaction(&self, networks: usize) -> usize {
        match self {
            Self::Single => networks.max(1),
            Self::Networks(n) => (*n).max(1),
        }
    }
}

/// One request, encoded.
#[derive(Debug, Clone)]
pub struct RawTransaction {
    /// JSON-RPC id.
    pub id: u64,
    /// Operations (inserts) it holds.
    pub ops: usize,
    /// The request's JSON text.
    pub request: Vec<u8>,
}

/// What sending a set of transactions took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawRun {
    /// Transactions committed.
    pub transactions: usize,
    /// Rows inserted.
    pub rows: usize,
    /// Seconds from the first byte written to the last reply read.
    pub seconds: f64,
}

/// The insert operations of `unit` as the engine would write them for `controller`: each
/// row's columns, `external_ids` with the four ownership stamps added, references as
/// named UUIDs `<prefix><row index>`. Rows that others reference come first in the unit, so
/// every name is inserted before it is used.
pub fn insert_ops(
    unit: &DesiredUnit,
    controller: &str,
    prefix: &str,
) -> anyhow::Result<Vec<Operation>> {
    let names: HashMap<(&str, &str), String> = unit
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            (
                (row.table.as_str(), row.id.as_str()),
                format!("{prefix}{i}"),
            )
        })
        .collect();
    let mut ops = Vec::with_capacity(unit.rows.len());
    for (i, row) in unit.rows.iter().enumerate() {
        let mut values: Row = row.columns.clone();
        let mut pairs = match values.remove("external_ids") {
            Some(Value::Map(pairs)) => pairs,
            None => Vec::new(),
            Some(other) => bail!(
                "{} {}: external_ids is not a map: {other:?}",
                row.table,
                row.id
            ),
        };
        for (key, value) in [
            (OWNER_CONTROLLER_KEY, controller),
            (OWNER_TYPE_KEY, unit.key.owner_type.as_str()),
            (OWNER_KEY, unit.key.name.as_str()),
            (ID_KEY, row.id.as_str()),
        ] {
            pairs.push((Atom::String(key.to_owned()), Atom::String(value.to_owned())));
        }
        values.insert("external_ids".to_owned(), Value::Map(pairs));
        for (column, targets) in &row.refs {
            if targets.is_empty() {
                continue;
            }
            let atoms = targets
                .iter()
                .map(|target| match target {
                    RowRef::Existing(uuid) | RowRef::Ahead(uuid) => Ok(Atom::Uuid(*uuid)),
                    RowRef::Desired { table, id } => names
                        .get(&(table.as_str(), id.as_str()))
                        .map(|name| Atom::NamedUuid(name.clone()))
                        .ok_or_else(|| {
                            anyhow!(
                                "{} {} column {column}: {table} row {id} is not in unit {}",
                                row.table,
                                row.id,
                                unit.key
                            )
                        }),
                })
                .collect::<anyhow::Result<Vec<Atom>>>()?;
            values.insert(column.clone(), Value::Set(atoms));
        }
        ops.push(Operation::Insert {
            table: row.table.clone(),
            row: values,
            uuid_name: Some(format!("{prefix}{i}")),
            uuid: None,
        });
    }
    Ok(ops)
}

/// Encodes `units` as `transact` requests cut per `batching`, ids from 1.
pub fn encode(
    units: &[DesiredUnit],
    batching: Batching,
    controller: &str,
) -> anyhow::Result<Vec<RawTransaction>> {
    let per = batching.networks_per_transaction(units.len());
    let chunks = units
        .chunks(per)
        .map(|chunk| {
            let mut ops = Vec::new();
            for (u, unit) in chunk.iter().enumerate() {
                for op in insert_ops(unit, controller, &format!("u{u}r"))? {
                    ops.push(op.to_json());
                }
            }
            anyhow::Ok(ops)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    encode_json(chunks)
}

/// Encodes each chunk of operations (RFC 7047 operation objects) as one `transact` request
/// on the NB database, ids from 1.
pub fn encode_json(
    chunks: impl IntoIterator<Item = Vec<Json>>,
) -> anyhow::Result<Vec<RawTransaction>> {
    let mut transactions = Vec::new();
    for (id, chunk) in (1u64..).zip(chunks) {
        let mut request = format!(
            r#"{{"id":{id},"method":"transact","params":[{}"#,
            json!(nb::DATABASE)
        )
        .into_bytes();
        for op in &chunk {
            request.push(b',');
            serde_json::to_writer(&mut request, op).context("encoding an operation")?;
        }
        request.extend_from_slice(b"]}");
        transactions.push(RawTransaction {
            id,
            ops: chunk.len(),
            request,
        });
    }
    Ok(transactions)
}

/// A message from the server: a reply, or a request (`echo`).
#[derive(Debug, Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Json,
    #[serde(default)]
    method: Option<String>,
    /// Skipped without building values (monitor updates are big).
    #[serde(default)]
    params: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    result: Option<Vec<Option<Outcome>>>,
    #[serde(default)]
    error: Option<Json>,
}

/// One operation's result (`null` after a failed one); only failures matter here.
#[derive(Debug, Deserialize)]
struct Outcome {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    details: Option<String>,
}

fn write_locked(writer: &Mutex<UnixStream>, bytes: &[u8]) -> std::io::Result<()> {
    let mut stream = writer
        .lock()
        .map_err(|_| std::io::Error::other("writer lock poisoned"))?;
    stream.write_all(bytes)
}

/// How the raw connection monitors the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonitorMethod {
    /// `monitor_cond` (updates as `update2`).
    Cond,
    /// `monitor_cond_since` (updates as `update3`), as udn's client and libovsdb monitor:
    /// ovsdb-server spends measurably more per transaction on it.
    CondSince,
}

impl MonitorMethod {
    /// The JSON-RPC method.
    pub fn method(self) -> &'static str {
        match self {
            Self::Cond => "monitor_cond",
            Self::CondSince => "monitor_cond_since",
        }
    }
}

/// Sends `transactions` on the unix socket `socket` back to back and waits for every reply;
/// fails naming the first operation the server rejected. The time counts from the first byte
/// written to the last reply read. With `monitor`, the connection first monitors every column
/// of `tables` (with `method`), so the server also sends (and the reader skips) the updates,
/// each before its transaction's reply, as a client keeping a replica would receive them.
pub fn send(
    socket: &Path,
    transactions: &[RawTransaction],
    monitor: Option<&[&str]>,
    method: MonitorMethod,
) -> anyhow::Result<RawRun> {
    let mut stream = UnixStream::connect(socket)
        .with_context(|| format!("connecting to {}", socket.display()))?;
    if let Some(tables) = monitor {
        start_monitor(&mut stream, tables, method)?;
    }
    let reader = stream.try_clone().context("cloning the socket")?;
    let writer = Mutex::new(stream);
    let pending: HashMap<u64, usize> = transactions.iter().map(|t| (t.id, t.ops)).collect();
    let started = Instant::now();
    let rows = std::thread::scope(|scope| -> anyhow::Result<usize> {
        let sender = scope.spawn(|| -> std::io::Result<()> {
            for transaction in transactions {
                write_locked(&writer, &transaction.request)?;
            }
            Ok(())
        });
        let rows = read_replies(reader, &writer, pending);
        let sent = sender
            .join()
            .map_err(|_| anyhow!("the writer thread panicked"))?;
        sent.context("writing the requests")?;
        rows
    })?;
    Ok(RawRun {
        transactions: transactions.len(),
        rows,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Sends a `monitor_cond` (or `monitor_cond_since`) of every column of `tables` and reads its
/// (empty) initial reply.
fn start_monitor(
    stream: &mut UnixStream,
    tables: &[&str],
    method: MonitorMethod,
) -> anyhow::Result<()> {
    let requests: serde_json::Map<String, Json> = tables
        .iter()
        .map(|t| ((*t).to_owned(), json!({})))
        .collect();
    let params = match method {
        MonitorMethod::Cond => json!([nb::DATABASE, "bench", requests]),
        // No transaction seen yet: the whole (empty) database.
        MonitorMethod::CondSince => json!([
            nb::DATABASE,
            "bench",
            requests,
            "00000000-0000-0000-0000-000000000000"
        ]),
    };
    let request = json!({
        "id": "monitor",
        "method": method.method(),
        "params": params,
    });
    stream
        .write_all(request.to_string().as_bytes())
        .context("sending monitor_cond")?;
    let mut replies = serde_json::Deserializer::from_reader(&*stream).into_iter::<Json>();
    let reply = replies
        .next()
        .ok_or_else(|| anyhow!("the server closed the connection after monitor_cond"))?
        .context("reading the monitor_cond reply")?;
    ensure!(
        reply["id"] == "monitor" && reply["error"].is_null(),
        "monitor_cond failed: {reply}"
    );
    Ok(())
}

/// Reads until every pending transaction is answered; returns the rows inserted.
fn read_replies(
    reader: UnixStream,
    writer: &Mutex<UnixStream>,
    mut pending: HashMap<u64, usize>,
) -> anyhow::Result<usize> {
    let mut messages =
        serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, reader))
            .into_iter::<Incoming>();
    let mut rows = 0;
    while !pending.is_empty() {
        let message = messages
            .next()
            .ok_or_else(|| {
                anyhow!(
                    "the server closed the connection with {} replies pending",
                    pending.len()
                )
            })?
            .context("reading a reply")?;
        match message.method.as_deref() {
            // ovsdb-server's probes carry no parameters: the reply echoes none.
            Some("echo") => {
                let reply = json!({"id": message.id, "result": [], "error": null});
                write_locked(writer, reply.to_string().as_bytes()).context("answering an echo")?;
                continue;
            }
            Some("update" | "update2" | "update3") if message.params.is_some() => continue,
            Some(method) => bail!("unexpected message {method:?} from the server"),
            None => {}
        }
        let id = message
            .id
            .as_u64()
            .ok_or_else(|| anyhow!("reply with id {} to no request", message.id))?;
        let ops = pending
            .remove(&id)
            .ok_or_else(|| anyhow!("reply with id {id} to no pending request"))?;
        if let Some(error) = message.error {
            bail!("transaction {id} failed: {error}");
        }
        let results = message
            .result
            .ok_or_else(|| anyhow!("transaction {id}: reply without a result"))?;
        if let Some((index, failed)) = results.iter().enumerate().find_map(|(i, outcome)| {
            outcome
                .as_ref()
                .filter(|o| o.error.is_some())
                .map(|o| (i, o))
        }) {
            bail!(
                "transaction {id}: operation {index} failed: {} ({})",
                failed.error.as_deref().unwrap_or_default(),
                failed.details.as_deref().unwrap_or_default()
            );
        }
        ensure!(
            results.len() == ops,
            "transaction {id}: {} results for {ops} operations",
            results.len()
        );
        rows += ops;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::nb_topology::{CONTROLLER, Topology};

    #[test]
    fn inserts_carry_stamps_and_named_references() {
        let units = Topology::new(1, 1).unwrap().units();
        let unit = &units[0];
        let ops = insert_ops(unit, CONTROLLER, "u0r").unwrap();
        assert_eq!(ops.len(), unit.rows.len());
        let router = ops
            .iter()
            .map(Operation::to_json)
            .find(|op| op["row"]["name"] == "cluster_udn_net0_ovn_cluster_router")
            .unwrap();
        assert_eq!(router["op"], "insert");
        assert_eq!(router["table"], "Logical_Router");
        let ids: HashMap<String, String> = router["row"]["external_ids"][1]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| {
                (
                    pair[0].as_str().unwrap().to_owned(),
                    pair[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(ids[OWNER_CONTROLLER_KEY], CONTROLLER);
        assert_eq!(ids[OWNER_TYPE_KEY], "Network");
        assert_eq!(ids[OWNER_KEY], "cluster_udn_net0");
        assert_eq!(ids[ID_KEY], "cluster_udn_net0_ovn_cluster_router");
        assert_eq!(ids["k8s.ovn.org/network"], "cluster_udn_net0");
        let ports = router["row"]["ports"][1].as_array().unwrap();
        assert_eq!(ports.len(), 2);
        assert!(ports.iter().all(|p| p[0] == "named-uuid"));
        // Every name used is defined by an earlier insert.
        let mut defined = std::collections::HashSet::new();
        for op in &ops {
            let json = op.to_json();
            let text = json["row"].to_string();
            for used in text.split(r#"["named-uuid",""#).skip(1) {
                let name = used.split('"').next().unwrap();
                assert!(defined.contains(name), "{name} used before its insert");
            }
            defined.insert(json["uuid-name"].as_str().unwrap().to_owned());
        }
    }

    #[test]
    fn batches_cut_by_networks() {
        let units = Topology::new(5, 1).unwrap().units();
        let per_network = units[0].rows.len();
        let single = encode(&units, Batching::Single, CONTROLLER).unwrap();
        assert_eq!(single.len(), 1);
        assert_eq!(single[0].ops, 5 * per_network);
        let batched = encode(&units, Batching::Networks(2), CONTROLLER).unwrap();
        let sizes: Vec<usize> = batched.iter().map(|t| t.ops).collect();
        assert_eq!(sizes, [2 * per_network, 2 * per_network, per_network]);
        let request: Json = serde_json::from_slice(&batched[2].request).unwrap();
        assert_eq!(request["id"], 3);
        assert_eq!(request["method"], "transact");
        assert_eq!(request["params"][0], "OVN_Northbound");
        assert_eq!(request["params"].as_array().unwrap().len(), per_network + 1);
        assert_eq!(Batching::Networks(50).label(), "50 networks/txn");
    }
}
