//! Schema compatibility against real servers running derived schemas, and the TCP transport with
//! the server's inactivity probe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value as Json, json};
use tokio::io::AsyncReadExt;
use udn_ovsdb::client::{Client, ClientConfig, ClientError};
use udn_ovsdb::jsonrpc::{JsonSplitter, Message};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Operation, OperationResult, Row, Value};
use udn_ovsdb::schema::{Missing, Requirements};
use udn_ovsdb::testing::OvsdbServer;

fn nb_json() -> Json {
    serde_json::from_str(nb::SCHEMA_JSON).unwrap()
}

fn config(endpoint: udn_ovsdb::client::Endpoint) -> ClientConfig {
    let mut config = ClientConfig::new(endpoint, nb::DATABASE);
    config.request_timeout = Duration::from_secs(10);
    config
}

fn s(text: &str) -> Value {
    Value::Atom(Atom::String(text.to_owned()))
}

#[tokio::test]
async fn missing_required_column_fails_naming_it() {
    let mut schema = nb_json();
    let columns = schema["tables"]["Logical_Switch"]["columns"]
        .as_object_mut()
        .unwrap();
    assert!(columns.remove("other_config").is_some());
    let server = OvsdbServer::start_schema_text(&schema.to_string()).unwrap();
    let mut config = config(server.endpoint());
    config.required = Requirements::default()
        .with("Logical_Switch", ["name", "other_config"])
        .with("Logical_Switch_Port", ["name"]);
    config.monitor = config.required.clone();
    let err = Client::connect(config).await.unwrap_err();
    let ClientError::Schema(compat) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        compat.missing,
        vec![Missing::Column {
            table: "Logical_Switch".into(),
            column: "other_config".into()
        }]
    );
    assert_eq!(
        compat.to_string(),
        "server database OVN_Northbound (schema version 7.0.0) lacks column Logical_Switch.other_config: this OVN is too old or differs from what udn supports"
    );
}

#[tokio::test]
async fn newer_server_with_extra_tables_and_columns_is_accepted() {
    let mut schema = nb_json();
    schema["version"] = json!("7.18.0");
    schema["tables"]["Future_Table"] = json!({
        "columns": {"name": {"type": "string"}},
        "isRoot": true,
    });
    schema["tables"]["Logical_Switch"]["columns"]["future_col"] = json!({
        "type": {"key": "string", "min": 0, "max": "unlimited"}
    });
    let server = OvsdbServer::start_schema_text(&schema.to_string()).unwrap();
    let mut config = config(server.endpoint());
    config.required = Requirements::default().with("Logical_Switch", ["name"]);
    // Wanted but absent from this server (a table from an even newer OVN): not monitored.
    config.monitor = Requirements::default()
        .with("Logical_Switch", ["name", "ports", "not_here_either"])
        .with("Table_From_The_Future", ["x"]);
    let client = Client::connect(config).await.unwrap();
    assert_eq!(client.schema().version, "7.18.0");
    let row = |pairs: &[(&str, Value)]| -> Row {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    };
    let results = client
        .transact(vec![
            Operation::Insert {
                table: "Future_Table".into(),
                row: row(&[("name", s("f"))]),
                uuid_name: None,
                uuid: None,
            },
            Operation::Insert {
                table: "Logical_Switch".into(),
                row: row(&[
                    ("name", s("sw")),
                    ("future_col", Value::Set(vec![Atom::String("x".into())])),
                ]),
                uuid_name: None,
                uuid: None,
            },
        ])
        .await
        .unwrap();
    let OperationResult::Inserted(sw) = results[1] else {
        panic!("{results:?}")
    };
    let replica = client.replica();
    assert_eq!(replica.len(), 1);
    assert_eq!(replica.rows("Future_Table").count(), 0);
    let sw = replica.get("Logical_Switch", &sw).unwrap();
    assert_eq!(
        sw.keys().map(String::as_str).collect::<Vec<_>>(),
        vec!["name", "ports"]
    );
    assert!(replica.schema().table("Table_From_The_Future").is_none());
}

/// Reads messages from a raw connection that never answers until the server closes it.
async fn silent_peer(endpoint: &str) -> Vec<Message> {
    let mut stream = tokio::net::TcpStream::connect(endpoint).await.unwrap();
    let mut splitter = JsonSplitter::new(1 << 20);
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return received;
        }
        for bytes in splitter.push(&buf[..n]).unwrap() {
            received.push(Message::from_slice(&bytes).unwrap());
        }
    }
}

#[tokio::test]
async fn tcp_client_answers_the_server_inactivity_probe() {
    let server = OvsdbServer::start_nb_tcp(Duration::from_secs(1)).unwrap();
    let endpoint = server.tcp_endpoint().unwrap();
    let udn_ovsdb::client::Endpoint::Tcp(address) = &endpoint else {
        panic!()
    };
    let mut config = config(endpoint.clone());
    config.monitor = Requirements::default().with("Logical_Switch", ["name"]);
    // Only the server probes here.
    config.probe_interval = Duration::ZERO;
    let client = Client::connect(config).await.unwrap();
    // A peer that does not answer is probed after 1 s and dropped after 2 s; our client, idle
    // as long, stays connected.
    let (silent, ()) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(10), silent_peer(address)),
        tokio::time::sleep(Duration::from_millis(2500)),
    );
    let silent = silent.unwrap();
    assert!(
        silent
            .iter()
            .any(|m| matches!(m, Message::Request(r) if r.method == "echo")),
        "{silent:?}"
    );
    assert!(client.is_synced());
    assert_eq!(client.generation(), 1);
    client
        .transact(vec![Operation::Insert {
            table: "Logical_Switch".into(),
            row: [("name".to_owned(), s("tcp"))].into_iter().collect(),
            uuid_name: None,
            uuid: None,
        }])
        .await
        .unwrap();
    assert_eq!(client.replica().len(), 1);
    let log = server.log_text().unwrap();
    assert_eq!(
        log.matches("no response to inactivity probe").count(),
        1,
        "{log}"
    );
}
