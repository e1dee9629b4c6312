//! The client against an in-process fake server on a unix socket: echo both ways, probe
//! timeouts, request timeouts, truncated and malformed messages, monitor method fallback and
//! `monitor_cond_since` resumption.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value as Json, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use udn_ovsdb::client::{
    Client, ClientConfig, ClientError, Endpoint, MonitorMethod, ProtocolError, SyncKind,
};
use udn_ovsdb::jsonrpc::{JsonSplitter, Message, Request};
use udn_ovsdb::protocol::{Atom, Uuid, Value};
use udn_ovsdb::schema::Requirements;

const ROW_A: &str = "00000000-0000-0000-0000-00000000000a";
const ROW_B: &str = "00000000-0000-0000-0000-00000000000b";
const TXN_1: &str = "00000000-0000-0000-0000-000000000001";
const TXN_2: &str = "00000000-0000-0000-0000-000000000002";
const ZERO: &str = "00000000-0000-0000-0000-000000000000";
const WAIT: Duration = Duration::from_secs(5);

fn schema() -> Json {
    json!({"name": "Test", "version": "1.0.0", "tables": {
        "Item": {"columns": {"name": {"type": "string"},
                             "tags": {"type": {"key": "string", "min": 0, "max": "unlimited"}}},
                 "isRoot": true}}})
}

struct Fake {
    listener: UnixListener,
    _dir: tempfile::TempDir,
    endpoint: Endpoint,
}

impl Fake {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.sock");
        Self {
            listener: UnixListener::bind(&path).unwrap(),
            endpoint: Endpoint::Unix(path),
            _dir: dir,
        }
    }

    fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new(self.endpoint.clone(), "Test");
        config.monitor = Requirements::default().with("Item", ["name", "tags"]);
        config.request_timeout = Duration::from_secs(5);
        config.probe_interval = Duration::ZERO;
        config.reconnect_backoff = (Duration::from_millis(5), Duration::from_millis(50));
        config
    }

    async fn accept(&self) -> Peer {
        let (stream, _) = tokio::time::timeout(WAIT, self.listener.accept())
            .await
            .unwrap()
            .unwrap();
        Peer {
            stream,
            splitter: JsonSplitter::new(1 << 20),
            queue: Vec::new(),
        }
    }
}

struct Peer {
    stream: UnixStream,
    splitter: JsonSplitter,
    queue: Vec<Message>,
}

impl Peer {
    /// The next message, or `None` at EOF.
    async fn recv(&mut self) -> Option<Message> {
        let mut buf = [0u8; 4096];
        while self.queue.is_empty() {
            let n = tokio::time::timeout(WAIT, self.stream.read(&mut buf))
                .await
                .unwrap()
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
            for bytes in self.splitter.push(&buf[..n]).unwrap() {
                self.queue.push(Message::from_slice(&bytes).unwrap());
            }
        }
        Some(self.queue.remove(0))
    }

    async fn request(&mut self) -> Request {
        match self.recv().await {
            Some(Message::Request(r)) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    async fn send(&mut self, json: Json) {
        self.send_raw(json.to_string().as_bytes()).await;
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    async fn reply(&mut self, id: &Json, result: Json) {
        self.send(json!({"id": id, "result": result, "error": null}))
            .await;
    }

    async fn reply_error(&mut self, id: &Json, error: &str) {
        self.send(json!({"id": id, "error": error})).await;
    }

    /// Answers get_schema and a monitor_cond_since with `reply`; returns the monitor request.
    async fn handshake(&mut self, since_reply: Json) -> Request {
        let get_schema = self.request().await;
        assert_eq!(get_schema.method, "get_schema");
        assert_eq!(get_schema.params, vec![json!("Test")]);
        self.reply(&get_schema.id, schema()).await;
        let monitor = self.request().await;
        assert_eq!(monitor.method, "monitor_cond_since");
        self.reply(&monitor.id, since_reply).await;
        monitor
    }
}

fn initial(rows: &[(&str, &str)]) -> Json {
    let rows: serde_json::Map<String, Json> = rows
        .iter()
        .map(|(uuid, name)| ((*uuid).to_owned(), json!({"initial": {"name": name}})))
        .collect();
    json!({"Item": rows})
}

fn names(client: &Client) -> Vec<String> {
    client
        .replica()
        .rows("Item")
        .map(|(_, r)| match &r["name"] {
            Value::Atom(Atom::String(n)) => n.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

async fn connect(fake: &Fake, config: ClientConfig, since_reply: Json) -> (Client, Peer) {
    let (client, peer) = tokio::join!(Client::connect(config), async {
        let mut peer = fake.accept().await;
        peer.handshake(since_reply).await;
        peer
    });
    (client.unwrap(), peer)
}

#[tokio::test]
async fn handshake_monitors_requested_columns_and_loads_initial_rows() {
    let fake = Fake::new();
    let (client, mut peer) = tokio::join!(Client::connect(fake.config()), async {
        let mut peer = fake.accept().await;
        let monitor = peer
            .handshake(json!([false, TXN_1, initial(&[(ROW_A, "a")])]))
            .await;
        assert_eq!(
            monitor.params,
            vec![
                json!("Test"),
                json!("udn"),
                json!({"Item": [{"columns": ["name", "tags"]}]}),
                json!(ZERO)
            ]
        );
        peer
    });
    let client = client.unwrap();
    assert_eq!(names(&client), vec!["a"]);
    assert_eq!(client.generation(), 1);
    // update3 notifications apply in order, before later replies.
    peer.send(json!({"id": null, "method": "update3", "params": ["udn", TXN_2,
        {"Item": {ROW_A: {"modify": {"tags": ["set", ["x", "y"]]}}, ROW_B: {"insert": {"name": "b"}}}}]}))
        .await;
    let echo = tokio::spawn(async move {
        let request = peer.request().await;
        assert_eq!(request.method, "echo");
        peer.reply(&request.id, Json::Array(request.params)).await;
        peer
    });
    client.echo().await.unwrap();
    let _peer = echo.await.unwrap();
    assert_eq!(names(&client), vec!["a", "b"]);
    let row_a = Uuid::parse(ROW_A).unwrap();
    assert_eq!(
        client.replica().get("Item", &row_a).unwrap()["tags"],
        Value::Set(vec![Atom::String("x".into()), Atom::String("y".into())])
    );
}

#[tokio::test]
async fn server_echo_requests_are_answered() {
    let fake = Fake::new();
    let (_client, mut peer) = connect(&fake, fake.config(), json!([false, ZERO, {}])).await;
    peer.send(json!({"id": "echo", "method": "echo", "params": ["ping", 1]}))
        .await;
    match peer.recv().await {
        Some(Message::Response(r)) => {
            assert_eq!(r.id, json!("echo"));
            assert_eq!(r.result, json!(["ping", 1]));
            assert_eq!(r.error, Json::Null);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn idle_client_probes_and_drops_a_silent_server_then_reconnects() {
    let fake = Fake::new();
    let mut config = fake.config();
    config.probe_interval = Duration::from_millis(100);
    let (client, mut peer) = connect(
        &fake,
        config,
        json!([false, ZERO, initial(&[(ROW_A, "a")])]),
    )
    .await;
    // First probe: answered, the connection stays.
    let probe = peer.request().await;
    assert_eq!(probe.method, "echo");
    peer.reply(&probe.id, json!([])).await;
    // Second probe: unanswered, the client hangs up after another interval.
    let probe = peer.request().await;
    assert_eq!(probe.method, "echo");
    assert!(
        peer.recv().await.is_none(),
        "client should close the connection"
    );
    assert_eq!(client.generation(), 1);
    // It reconnects and resyncs from the new contents.
    let mut peer = fake.accept().await;
    peer.handshake(json!([false, ZERO, initial(&[(ROW_B, "b")])]))
        .await;
    tokio::time::timeout(WAIT, client.wait_resynced(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(client.generation(), 2);
    assert_eq!(names(&client), vec!["b"]);
}

#[tokio::test]
async fn request_timeout_is_typed_and_the_connection_survives() {
    let fake = Fake::new();
    let mut config = fake.config();
    config.request_timeout = Duration::from_millis(200);
    let (client, mut peer) = connect(&fake, config, json!([false, ZERO, {}])).await;
    let err = client.echo().await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Timeout { method, timeout } if method == "echo" && *timeout == Duration::from_millis(200)),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "OVSDB echo request got no reply within 200ms"
    );
    // The late reply is ignored; the next request works.
    let late = peer.request().await;
    peer.reply(&late.id, json!(["udn"])).await;
    let (result, ()) = tokio::join!(client.list_dbs(), async {
        let request = peer.request().await;
        assert_eq!(request.method, "list_dbs");
        peer.reply(&request.id, json!(["Test"])).await;
    });
    assert_eq!(result.unwrap(), vec!["Test"]);
}

#[tokio::test]
async fn truncated_reply_then_eof_fails_the_pending_request() {
    let fake = Fake::new();
    let (client, mut peer) = connect(&fake, fake.config(), json!([false, ZERO, {}])).await;
    let (result, ()) = tokio::join!(client.transact(vec![]), async {
        let request = peer.request().await;
        assert_eq!(request.method, "transact");
        let reply = format!("{{\"id\":{},\"result\":[{{\"uuid\":[\"uu", request.id);
        peer.send_raw(reply.as_bytes()).await;
        drop(peer);
    });
    assert!(
        matches!(result, Err(ClientError::Disconnected)),
        "{result:?}"
    );
    // Calls fail fast until the client is back.
    assert!(matches!(
        client.echo().await,
        Err(ClientError::Disconnected)
    ));
    let mut peer = fake.accept().await;
    peer.handshake(json!([false, ZERO, {}])).await;
    assert_eq!(client.wait_resynced(1).await.unwrap(), 2);
    assert_eq!(client.generation(), 2);
}

#[tokio::test]
async fn malformed_messages_drop_the_connection_and_resync() {
    let fake = Fake::new();
    let (client, mut peer) = connect(
        &fake,
        fake.config(),
        json!([false, ZERO, initial(&[(ROW_A, "a")])]),
    )
    .await;
    let garbage: [&[u8]; 4] = [
        b"not json",
        br#"{"id": null, "method": "update3", "params": ["udn", "not-a-uuid", {}]}"#,
        br#"{"id": null, "method": "update2", "params": ["udn", {"Item": {"00000000-0000-0000-0000-00000000000c": {"modify": {"name": "x"}}}}]}"#,
        br#"{"neither": "request nor response"}"#,
    ];
    for (round, bytes) in garbage.iter().enumerate() {
        peer.send_raw(bytes).await;
        assert!(
            peer.recv().await.is_none(),
            "round {round}: client keeps the connection"
        );
        peer = fake.accept().await;
        peer.handshake(json!([
            false,
            ZERO,
            initial(&[(ROW_B, &format!("b{round}"))])
        ]))
        .await;
        client.wait_resynced(1 + round as u64).await.unwrap();
        // The supervisor marks synced only after the reload: wait for the generation.
        assert_eq!(client.generation(), 2 + round as u64, "round {round}");
        assert_eq!(names(&client), vec![format!("b{round}")]);
    }
}

#[tokio::test]
async fn falls_back_to_monitor_cond() {
    let fake = Fake::new();
    let (client, _peer) = tokio::join!(Client::connect(fake.config()), async {
        let mut peer = fake.accept().await;
        let get_schema = peer.request().await;
        peer.reply(&get_schema.id, schema()).await;
        let since = peer.request().await;
        assert_eq!(since.method, "monitor_cond_since");
        peer.reply_error(&since.id, "unknown method").await;
        let cond = peer.request().await;
        assert_eq!(cond.method, "monitor_cond");
        assert_eq!(cond.params.len(), 3);
        peer.reply(&cond.id, initial(&[(ROW_A, "a")])).await;
        peer
    });
    let client = client.unwrap();
    assert_eq!(client.monitor_method(), Some(MonitorMethod::Cond));
    assert_eq!(names(&client), vec!["a"]);
}

#[tokio::test]
async fn monitor_cond_since_resumes_from_the_last_transaction() {
    let fake = Fake::new();
    let (client, mut peer) = connect(
        &fake,
        fake.config(),
        json!([false, TXN_1, initial(&[(ROW_A, "a")])]),
    )
    .await;
    peer.send(
        json!({"id": null, "method": "update3", "params": ["udn", TXN_2,
        {"Item": {ROW_B: {"insert": {"name": "b"}}}}]}),
    )
    .await;
    drop(peer);
    let mut peer = fake.accept().await;
    let monitor = peer
        .handshake(json!([true, TXN_2, {"Item": {ROW_A: {"modify": {"name": "a2"}}}}]))
        .await;
    // The last transaction id from the update3 notification.
    assert_eq!(monitor.params[3], json!(TXN_2));
    assert_eq!(client.wait_resynced(1).await.unwrap(), 2);
    assert_eq!(client.generation(), 2);
    assert_eq!(client.last_sync(), Some(SyncKind::Incremental));
    let mut got = names(&client);
    got.sort();
    assert_eq!(got, vec!["a2", "b"]);
}

#[tokio::test]
async fn unusable_monitor_reply_is_a_protocol_error_at_connect() {
    let fake = Fake::new();
    let (client, _peer) = tokio::join!(Client::connect(fake.config()), async {
        let mut peer = fake.accept().await;
        peer.handshake(json!([false, ZERO, {"Item": {ROW_A: {"initial": {"name": 7}}}}]))
            .await;
        peer
    });
    let err = client.unwrap_err();
    assert!(
        matches!(&err, ClientError::Protocol { context, source: ProtocolError::Replica(_) } if context == "monitor_cond_since"),
        "{err:?}"
    );
}

#[tokio::test]
async fn connect_errors_name_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = Endpoint::Unix(dir.path().join("absent.sock"));
    let err = Client::connect(ClientConfig::new(endpoint.clone(), "Test"))
        .await
        .unwrap_err();
    assert!(matches!(&err, ClientError::Connect { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("cannot connect to OVSDB server at {endpoint}")
    );
    assert!(err.is_retryable());
}
