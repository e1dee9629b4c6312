//! CPU cost of the client's wire path, piece by piece, on real ovsdb-server traffic (ignored by
//! default: run with
//! `cargo test --release -p udn-ovsdb --test client_wire_bench -- --ignored --nocapture`).
//! `UDN_WIRE_SCALE=<networks>x<nodes>` picks the size (default 400x20, 32,400 rows).
//!
//! It plans a Layer3-shaped topology, applies it through the engine while a second, raw
//! connection monitors every table, then times on the bytes that connection received: framing,
//! message decoding, update decoding (the generic JSON-tree path and the direct one) and
//! loading into a replica; and the encoding of the plan's operations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{
    ApplyPolicy, DesiredRow, DesiredUnit, Engine, INDEXED_KEYS, RowRef, Scope, UnitKey,
};
use udn_ovsdb::jsonrpc::{JsonSplitter, Message, RawMessage, encode_request};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{MonitorUpdate, Operation, TransactParams};
use udn_ovsdb::replica::Replica;
use udn_ovsdb::schema::{DbSchema, Requirements};
use udn_ovsdb::testing::OvsdbServer;

fn network(name: &str, nodes: usize) -> DesiredUnit {
    let ids = [
        ("k8s.ovn.org/network", name),
        ("k8s.ovn.org/topology", "layer3"),
    ];
    let router = format!("{name}_ovn_cluster_router");
    let mut unit = DesiredUnit::new(UnitKey::new("Network", name));
    let mut router_ports = Vec::new();
    for node in 0..nodes {
        let switch = format!("{name}_node{node}");
        let (rtos, stor) = (format!("rtos-{switch}"), format!("stor-{switch}"));
        unit = unit
            .row(
                DesiredRow::new("Logical_Router_Port", &rtos)
                    .string("name", &rtos)
                    .string("mac", "0a:58:0a:80:00:01")
                    .strings("networks", [format!("10.128.{node}.1/24").as_str()])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &stor)
                    .string("name", &stor)
                    .string("type", "router")
                    .strings("addresses", ["router"])
                    .map("options", [("router-port", rtos.as_str())])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch", &switch)
                    .string("name", &switch)
                    .map(
                        "other_config",
                        [("subnet", format!("10.128.{node}.0/24").as_str())],
                    )
                    .map("external_ids", ids)
                    .refs("ports", [RowRef::desired("Logical_Switch_Port", &stor)]),
            );
        router_ports.push(RowRef::desired("Logical_Router_Port", &rtos));
    }
    unit.row(
        DesiredRow::new("Logical_Router", &router)
            .string("name", &router)
            .map("external_ids", ids)
            .refs("ports", router_ports),
    )
}

/// Monitors every table of the NB database on a raw connection; returns it with the reply read.
fn raw_monitor(server: &OvsdbServer, schema: &DbSchema) -> (UnixStream, JsonSplitter) {
    let mut stream = UnixStream::connect(server.socket()).unwrap();
    let requests: serde_json::Map<String, Json> = schema
        .tables
        .keys()
        .map(|t| (t.clone(), json!([{}])))
        .collect();
    let request = json!({"id": 1, "method": "monitor_cond_since",
        "params": [nb::DATABASE, "udn", requests, "00000000-0000-0000-0000-000000000000"]});
    stream.write_all(request.to_string().as_bytes()).unwrap();
    let mut splitter = JsonSplitter::new(1 << 30);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = stream.read(&mut buf).unwrap();
        if !splitter.push(&buf[..n]).unwrap().is_empty() {
            return (stream, splitter);
        }
    }
}

/// Everything the raw connection receives until the reply to the `echo` with id `drain`.
fn drain(mut stream: UnixStream, mut splitter: JsonSplitter) -> Vec<Vec<u8>> {
    let mut messages = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = stream.read(&mut buf).unwrap();
        for m in splitter.push(&buf[..n]).unwrap() {
            if m.starts_with(br#"{"id":"drain""#) {
                return messages;
            }
            messages.push(m);
        }
    }
}

fn timed<T>(what: &str, rows: usize, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    let s = started.elapsed().as_secs_f64();
    eprintln!(
        "{what:<44} {s:>7.3} s {:>7.2} us/row",
        s * 1e6 / rows as f64
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "cost measurement; run explicitly"]
async fn wire_costs() {
    let size = std::env::var("UDN_WIRE_SCALE").unwrap_or_else(|_| "400x20".into());
    let (networks, nodes) = size.split_once('x').unwrap();
    let (networks, nodes): (usize, usize) = (networks.parse().unwrap(), nodes.parse().unwrap());
    let server = OvsdbServer::start_nb().unwrap();
    let schema = DbSchema::from_text(nb::SCHEMA_JSON).unwrap();
    let everything = Requirements::everything_in(&schema);
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = everything.clone();
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(600);
    let client = Client::connect(config).await.unwrap();
    let (raw, splitter) = raw_monitor(&server, &schema);
    let mut raw_writer = raw.try_clone().unwrap();
    // Read while the engine writes, as the client does: ovsdb-server merges the updates of a
    // connection that does not keep up.
    let reader = std::thread::spawn(move || drain(raw, splitter));

    let engine = Engine::new("bench");
    let units: Vec<DesiredUnit> = (0..networks)
        .map(|i| network(&format!("net{i}"), nodes))
        .collect();
    let scope = Scope::OwnerType("Network".into());
    let plan = engine.plan(&*client.replica(), units, &scope).unwrap();
    let ops: Vec<Operation> = plan.operations().map(|(_, op)| op.clone()).collect();
    let rows = ops.len();
    eprintln!("wire-bench networks={networks} nodes={nodes} rows={rows}");

    let encoded = timed("encode: Operation::to_json + to_string", rows, || {
        ops.chunks(300)
            .map(|chunk| {
                let mut params = vec![json!(nb::DATABASE)];
                params.extend(chunk.iter().map(Operation::to_json));
                Json::Array(params).to_string().len()
            })
            .sum::<usize>()
    });
    eprintln!("encoded {:.1} MB", encoded as f64 / 1e6);
    let direct = timed("encode: encode_request(TransactParams)", rows, || {
        ops.chunks(300)
            .enumerate()
            .map(|(id, chunk)| {
                let mut out = Vec::new();
                let params = TransactParams {
                    database: nb::DATABASE,
                    operations: chunk,
                };
                encode_request(&mut out, &id, "transact", &params).unwrap();
                out.len()
            })
            .sum::<usize>()
    });
    assert!(direct > encoded);

    let started = Instant::now();
    let report = engine.apply(&client, &plan, &ApplyPolicy::default()).await;
    assert!(report.is_success());
    eprintln!("engine apply {:.3} s", started.elapsed().as_secs_f64());

    raw_writer
        .write_all(br#"{"id":"drain","method":"echo","params":[]}"#)
        .unwrap();
    let messages = reader.join().unwrap();
    let stream: Vec<u8> = messages.concat();
    if let Ok(path) = std::env::var("UDN_WIRE_DUMP") {
        std::fs::write(path, &stream).unwrap();
    }
    eprintln!(
        "received {} update messages, {:.1} MB",
        messages.len(),
        stream.len() as f64 / 1e6
    );

    let framed = timed("framing: JsonSplitter::push, 64 KiB reads", rows, || {
        let mut s = JsonSplitter::new(1 << 30);
        stream
            .chunks(1 << 16)
            .map(|c| s.push(c).unwrap().len())
            .sum::<usize>()
    });
    assert_eq!(framed, messages.len());

    let framed = timed("framing: JsonSplitter::frames, 256 KiB reads", rows, || {
        let mut s = JsonSplitter::new(1 << 30);
        let mut n = 0;
        for chunk in stream.chunks(1 << 18) {
            let mut frames = s.frames(chunk);
            while let Some(m) = frames.next_message() {
                m.unwrap();
                n += 1;
            }
        }
        n
    });
    assert_eq!(framed, messages.len());

    let direct = timed("decode: RawMessage + from_notification_slice", rows, || {
        messages
            .iter()
            .map(|m| {
                let RawMessage::Notification(n) = RawMessage::from_slice(m).unwrap() else {
                    panic!("not a notification")
                };
                MonitorUpdate::from_notification_slice(&n.method, n.params.get().as_bytes())
                    .unwrap()
                    .unwrap()
            })
            .collect::<Vec<_>>()
    });
    let decoded = timed("decode: Message + from_notification", rows, || {
        messages
            .iter()
            .map(|m| {
                let Message::Notification(n) = Message::from_slice(m).unwrap() else {
                    panic!("not a notification")
                };
                MonitorUpdate::from_notification(&n.method, &n.params)
                    .unwrap()
                    .unwrap()
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(direct, decoded);
    timed("drop decoded updates", rows, || drop(direct));
    let restricted = Arc::new(schema.restricted_to(&everything));
    let mut replica = Replica::new(restricted, &INDEXED_KEYS);
    timed("replica: apply_owned", rows, || {
        for update in decoded {
            replica.apply_owned(update.updates).unwrap();
        }
    });
    assert_eq!(replica.len(), client.replica().len());
}

/// Decodes the messages of a stream written by `wire_costs` (`UDN_WIRE_DUMP=<path>`) many
/// times (`UDN_WIRE_REPEAT`, default 20): a steady loop to profile.
#[test]
#[ignore = "profiling loop; run explicitly with UDN_WIRE_DUMP set"]
fn decode_dump() {
    let path = std::env::var("UDN_WIRE_DUMP").unwrap();
    let repeat: usize = std::env::var("UDN_WIRE_REPEAT").map_or(20, |r| r.parse().unwrap());
    let stream = std::fs::read(path).unwrap();
    let mut splitter = JsonSplitter::new(1 << 30);
    let messages = splitter.push(&stream).unwrap();
    let started = Instant::now();
    let mut rows = 0;
    for _ in 0..repeat {
        for m in &messages {
            let RawMessage::Notification(n) = RawMessage::from_slice(m).unwrap() else {
                panic!("not a notification")
            };
            let update =
                MonitorUpdate::from_notification_slice(&n.method, n.params.get().as_bytes())
                    .unwrap()
                    .unwrap();
            rows += update.updates.len();
        }
    }
    let s = started.elapsed().as_secs_f64();
    eprintln!(
        "decoded {rows} rows in {s:.3} s: {:.2} us/row",
        s * 1e6 / rows as f64
    );
}
