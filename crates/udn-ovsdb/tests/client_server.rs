//! The client against a real ovsdb-server (private per test): schema, transact with every
//! operation, typed errors, monitors fed by ovn-nbctl, kill/restart with resync.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use udn_ovsdb::client::{Client, ClientConfig, ClientError, MonitorMethod, SyncKind};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, OperationError,
    OperationResult, Row, TransactError, Uuid, Value, WaitUntil,
};
use udn_ovsdb::schema::Requirements;
use udn_ovsdb::testing::OvsdbServer;

fn s(text: &str) -> Value {
    Value::Atom(Atom::String(text.to_owned()))
}

fn row(pairs: &[(&str, Value)]) -> Row {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn ids(pairs: &[(&str, &str)]) -> Value {
    Value::Map(
        pairs
            .iter()
            .map(|(k, v)| (Atom::String((*k).into()), Atom::String((*v).into())))
            .collect(),
    )
}

fn name_is(name: &str) -> Vec<Condition> {
    vec![Condition {
        column: "name".into(),
        function: ConditionFunction::Equal,
        value: s(name),
    }]
}

fn wanted() -> Requirements {
    Requirements::default()
        .with(
            "Logical_Switch",
            ["name", "ports", "external_ids", "other_config"],
        )
        .with("Logical_Switch_Port", ["name", "addresses", "external_ids"])
        .with("Port_Group", ["name", "ports"])
        .with("Logical_Router", [])
}

fn config(server: &OvsdbServer) -> ClientConfig {
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = wanted();
    config.indexed_keys = vec!["k8s.ovn.org/network".into()];
    config.request_timeout = Duration::from_secs(10);
    config.reconnect_backoff = (Duration::from_millis(10), Duration::from_millis(200));
    config
}

fn insert_switch(name: &str, uuid_name: Option<&str>) -> Operation {
    Operation::Insert {
        table: "Logical_Switch".into(),
        row: row(&[("name", s(name))]),
        uuid_name: uuid_name.map(str::to_owned),
        uuid: None,
    }
}

fn switch_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .replica()
        .rows("Logical_Switch")
        .map(|(_, r)| match &r["name"] {
            Value::Atom(Atom::String(n)) => n.clone(),
            other => panic!("name {other:?}"),
        })
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn schema_list_dbs_and_echo() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    assert_eq!(
        client.list_dbs().await.unwrap(),
        vec!["OVN_Northbound", "_Server"]
    );
    let schema = client.get_schema(nb::DATABASE).await.unwrap();
    assert_eq!(schema.version, nb::SCHEMA_VERSION);
    assert_eq!(*client.schema(), schema);
    client.echo().await.unwrap();
    assert_eq!(client.generation(), 1);
    assert_eq!(client.monitor_method(), Some(MonitorMethod::CondSince));
    let err = client.get_schema("Nope").await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Rpc { method, error, details } if method == "get_schema" && error == "unknown database"
        && details.as_deref() == Some("get_schema request specifies unknown database Nope")),
        "{err:?}"
    );
}

#[tokio::test]
async fn transact_every_operation_kind() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    // insert with named-uuid referenced by another insert in the same transaction.
    let results = client
        .transact(vec![
            Operation::Comment {
                comment: "udn test".into(),
            },
            Operation::Insert {
                table: "Logical_Switch_Port".into(),
                row: row(&[
                    ("name", s("p1")),
                    (
                        "addresses",
                        Value::Set(vec![Atom::String("0a:58:0a:80:00:05 10.128.0.5".into())]),
                    ),
                ]),
                uuid_name: Some("p1".into()),
                uuid: None,
            },
            Operation::Insert {
                table: "Logical_Switch".into(),
                row: row(&[
                    ("name", s("sw")),
                    ("ports", Value::Set(vec![Atom::NamedUuid("p1".into())])),
                    ("external_ids", ids(&[("k8s.ovn.org/network", "blue")])),
                ]),
                uuid_name: None,
                uuid: None,
            },
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], OperationResult::Empty);
    let (OperationResult::Inserted(port), OperationResult::Inserted(switch)) =
        (&results[1], &results[2])
    else {
        panic!("{results:?}")
    };
    {
        let replica = client.replica();
        let sw = replica.get("Logical_Switch", switch).unwrap();
        assert_eq!(sw["ports"], Value::Set(vec![Atom::Uuid(*port)]));
        assert_eq!(
            replica.find("Logical_Switch", "k8s.ovn.org/network", "blue"),
            vec![*switch]
        );
        assert_eq!(
            replica.referrers(port),
            vec![("Logical_Switch".to_owned(), *switch, "ports".to_owned())]
        );
    }
    // select, update, mutate, wait in one transaction.
    let results = client
        .transact(vec![
            Operation::Update {
                table: "Logical_Switch".into(),
                where_: name_is("sw"),
                row: row(&[("other_config", ids(&[("mcast_snoop", "true")]))]),
            },
            Operation::Mutate {
                table: "Logical_Switch".into(),
                where_: name_is("sw"),
                mutations: vec![Mutation {
                    column: "external_ids".into(),
                    mutator: Mutator::Insert,
                    value: ids(&[("k8s.ovn.org/owner", "x")]),
                }],
            },
            Operation::Wait {
                table: "Logical_Switch".into(),
                where_: name_is("sw"),
                columns: vec!["name".into()],
                until: WaitUntil::Equal,
                rows: vec![row(&[("name", s("sw"))])],
                timeout_ms: Some(0),
            },
            Operation::Select {
                table: "Logical_Switch".into(),
                where_: name_is("sw"),
                columns: Some(vec!["name".into(), "external_ids".into()]),
            },
        ])
        .await
        .unwrap();
    assert_eq!(results[0], OperationResult::Count(1));
    assert_eq!(results[1], OperationResult::Count(1));
    assert_eq!(results[2], OperationResult::Empty);
    assert_eq!(
        results[3],
        OperationResult::Rows(vec![row(&[
            ("name", s("sw")),
            (
                "external_ids",
                ids(&[("k8s.ovn.org/network", "blue"), ("k8s.ovn.org/owner", "x")])
            ),
        ])])
    );
    {
        let replica = client.replica();
        let sw = replica.get("Logical_Switch", switch).unwrap();
        assert_eq!(sw["other_config"], ids(&[("mcast_snoop", "true")]));
        assert_eq!(
            sw["external_ids"],
            ids(&[("k8s.ovn.org/network", "blue"), ("k8s.ovn.org/owner", "x")])
        );
    }
    // delete: the switch goes, and its port (no longer referenced, not a root table) with it.
    let results = client
        .transact(vec![Operation::Delete {
            table: "Logical_Switch".into(),
            where_: name_is("sw"),
        }])
        .await
        .unwrap();
    assert_eq!(results, vec![OperationResult::Count(1)]);
    assert!(client.replica().is_empty());
}

#[tokio::test]
async fn transaction_errors_are_typed_with_server_details() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let pg = |name: &str| Operation::Insert {
        table: "Port_Group".into(),
        row: row(&[("name", s(name))]),
        uuid_name: None,
        uuid: None,
    };
    client.transact(vec![pg("pg1")]).await.unwrap();
    // Index collision: Port_Group has a unique index on name.
    let err = client.transact(vec![pg("pg1")]).await.unwrap_err();
    let ClientError::Transact(TransactError::Commit { error }) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(error.error, "constraint violation");
    let details = error.details.as_deref().unwrap();
    assert!(
        details.contains("Transaction causes multiple rows in \"Port_Group\" table to have identical values (pg1) for index on column \"name\""),
        "{details}"
    );
    // Referential integrity: a strong reference to a row that does not exist.
    let missing = Uuid::parse("11111111-2222-3333-4444-555555555555").unwrap();
    let err = client
        .transact(vec![Operation::Insert {
            table: "Logical_Switch".into(),
            row: row(&[
                ("name", s("sw")),
                ("ports", Value::Set(vec![Atom::Uuid(missing)])),
            ]),
            uuid_name: None,
            uuid: None,
        }])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Transact(TransactError::Commit { error })
            if error.error == "referential integrity violation"
            && error.details.as_deref().is_some_and(|d| d.contains(&missing.to_string()))),
        "{err:?}"
    );
    // assert without holding the lock: the operation's own error, with its index.
    let err = client
        .transact(vec![
            insert_switch("ok", None),
            Operation::Assert { lock: "udn".into() },
        ])
        .await
        .unwrap_err();
    let ClientError::Transact(TransactError::Operation { index, error }) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*index, 1);
    assert_eq!(
        error,
        &OperationError {
            error: "not owner".into(),
            details: Some("Asserted lock udn not held.".into()),
        }
    );
    // A failing wait (timeout 0) is an operation error too; nothing was committed.
    let err = client
        .transact(vec![Operation::Wait {
            table: "Port_Group".into(),
            where_: name_is("pg1"),
            columns: vec!["name".into()],
            until: WaitUntil::NotEqual,
            rows: vec![row(&[("name", s("pg1"))])],
            timeout_ms: Some(0),
        }])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Transact(TransactError::Operation { index: 0, error }) if error.error == "timed out"),
        "{err:?}"
    );
    assert_eq!(switch_names(&client), Vec::<String>::new());
}

#[tokio::test]
async fn changes_wake_a_waiter_once_the_replica_shows_them() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let mut changes = client.changes();
    changes.borrow_and_update();
    server.nbctl(&["ls-add", "sw1"]).unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("a change within 10 s")
        .unwrap();
    assert_eq!(switch_names(&client), vec!["sw1"]);
    // Nothing happened since: no change pending.
    assert!(!changes.has_changed().unwrap());
}

/// A monitor condition keeps only the matching rows: rows that stop matching leave the
/// replica, rows that start matching enter it, and other rows' changes wake nobody.
#[tokio::test]
async fn monitor_conditions_keep_only_matching_rows() {
    let server = OvsdbServer::start_nb().unwrap();
    let mut config = config(&server);
    config.conditions = BTreeMap::from([(
        "Logical_Switch".to_owned(),
        vec![Condition {
            column: "name".into(),
            function: ConditionFunction::NotEqual,
            value: s("ignored"),
        }],
    )]);
    let client = Client::connect(config).await.unwrap();
    server.nbctl(&["ls-add", "kept"]).unwrap();
    server.nbctl(&["ls-add", "ignored"]).unwrap();
    client.echo().await.unwrap();
    assert_eq!(switch_names(&client), vec!["kept"]);
    let mut changes = client.changes();
    changes.borrow_and_update();
    server
        .nbctl(&["set", "Logical_Switch", "ignored", "other_config:x=1"])
        .unwrap();
    client.echo().await.unwrap();
    assert!(
        !changes.has_changed().unwrap(),
        "a change to an unmonitored row"
    );
    server
        .nbctl(&["set", "Logical_Switch", "kept", "name=ignored2"])
        .unwrap();
    server
        .nbctl(&["set", "Logical_Switch", "ignored", "name=now-kept"])
        .unwrap();
    client.echo().await.unwrap();
    assert_eq!(switch_names(&client), vec!["ignored2", "now-kept"]);
    // Renaming "ignored2" to the excluded name takes it out.
    server
        .nbctl(&["set", "Logical_Switch", "ignored2", "name=ignored"])
        .unwrap();
    client.echo().await.unwrap();
    assert_eq!(switch_names(&client), vec!["now-kept"]);
}

#[tokio::test]
async fn monitor_sees_ovn_nbctl_changes() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    server.nbctl(&["ls-add", "sw1"]).unwrap();
    server
        .nbctl(&[
            "lsp-add",
            "sw1",
            "p1",
            "--",
            "lsp-set-addresses",
            "p1",
            "0a:58:0a:80:00:05 10.128.0.5",
        ])
        .unwrap();
    server.nbctl(&["lr-add", "lr1"]).unwrap();
    // ovn-nbctl returned after the commit; our update may still be in flight: an echo's reply
    // comes after it.
    client.echo().await.unwrap();
    assert_eq!(switch_names(&client), vec!["sw1"]);
    let replica = client.replica();
    let (sw, sw_row) = replica.rows("Logical_Switch").next().unwrap();
    let Value::Set(ports) = &sw_row["ports"] else {
        panic!()
    };
    let [Atom::Uuid(port)] = ports.as_slice() else {
        panic!("{ports:?}")
    };
    let lsp = replica.get("Logical_Switch_Port", port).unwrap();
    assert_eq!(lsp["name"], s("p1"));
    assert_eq!(
        lsp["addresses"],
        Value::Set(vec![Atom::String("0a:58:0a:80:00:05 10.128.0.5".into())])
    );
    assert_eq!(
        replica.referrers(port),
        vec![("Logical_Switch".to_owned(), *sw, "ports".to_owned())]
    );
    // A table wanted with no columns is monitored with all of them.
    let (_, lr) = replica.rows("Logical_Router").next().unwrap();
    assert_eq!(lr["name"], s("lr1"));
    assert!(lr.contains_key("static_routes") && lr.contains_key("options"));
}

#[tokio::test]
async fn awkward_strings_round_trip_through_pipelined_transactions() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let names = [
        "quote \" backslash \\ slash /",
        "control \u{1} \n \t \u{1f}",
        "unicode é ü 漢字 🦀",
        "{\"looks\": [\"like json\"]}",
    ];
    let batches: Vec<Vec<Operation>> = names
        .iter()
        .map(|name| {
            vec![
                insert_switch(name, None),
                Operation::Comment {
                    comment: (*name).to_owned(),
                },
            ]
        })
        .collect();
    let (a, b, c, d) = tokio::join!(
        client.transact_slice(&batches[0]),
        client.transact_slice(&batches[1]),
        client.transact(batches[2].clone()),
        client.transact_slice(&batches[3]),
    );
    for (name, results) in names.iter().zip([a, b, c, d]) {
        let results = results.unwrap();
        let OperationResult::Inserted(uuid) = results[0] else {
            panic!("{results:?}")
        };
        assert_eq!(results[1], OperationResult::Empty);
        assert_eq!(
            client
                .replica()
                .get("Logical_Switch", &uuid)
                .map(|r| r["name"].clone()),
            Some(s(name))
        );
    }
    let listed = server
        .nbctl(&["--bare", "--columns=name", "list", "Logical_Switch"])
        .unwrap();
    assert!(listed.contains("unicode é ü 漢字 🦀"), "{listed}");
}

#[tokio::test]
async fn replica_reflects_each_commit_when_transact_returns() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    for i in 0..200 {
        let name = format!("sw{i}");
        let results = client
            .transact(vec![insert_switch(&name, None)])
            .await
            .unwrap();
        let OperationResult::Inserted(uuid) = results[0] else {
            panic!()
        };
        let name_in_replica = client
            .replica()
            .get("Logical_Switch", &uuid)
            .map(|r| r["name"].clone());
        assert_eq!(name_in_replica, Some(s(&name)), "iteration {i}");
        client
            .transact(vec![Operation::Mutate {
                table: "Logical_Switch".into(),
                where_: name_is(&name),
                mutations: vec![Mutation {
                    column: "external_ids".into(),
                    mutator: Mutator::Insert,
                    value: ids(&[("i", &i.to_string())]),
                }],
            }])
            .await
            .unwrap();
        assert_eq!(
            client.replica().find("Logical_Switch", "i", &i.to_string()),
            vec![uuid],
            "iteration {i}"
        );
    }
    assert_eq!(client.replica().len(), 200);
}

#[tokio::test]
async fn reconnects_and_resyncs_after_server_restart() {
    let mut server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    client
        .transact(vec![insert_switch("before", None)])
        .await
        .unwrap();
    assert_eq!(client.generation(), 1);
    let pid = server.pid();
    server.kill().unwrap();
    assert!(!server.is_running());
    // While the server is down calls fail fast.
    let err = client.transact(vec![insert_switch("during", None)]).await;
    assert!(matches!(err, Err(ClientError::Disconnected)), "{err:?}");
    // Changed behind the client's back while it is disconnected: the resync must see it.
    server.restart().unwrap();
    assert_ne!(server.pid(), pid);
    server.nbctl(&["ls-add", "while-away"]).unwrap();
    server.nbctl(&["ls-del", "before"]).unwrap();
    let generation = tokio::time::timeout(Duration::from_secs(10), client.wait_resynced(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(generation, 2);
    client
        .transact(vec![insert_switch("after", None)])
        .await
        .unwrap();
    assert_eq!(switch_names(&client), vec!["after", "while-away"]);
    // A standalone server has no transaction ids to resume from: a full resync.
    assert_eq!(client.last_sync(), Some(SyncKind::Full));
    let fresh = Client::connect(config(&server)).await.unwrap();
    assert!(*client.replica() == *fresh.replica());
}

#[tokio::test]
async fn resumes_incrementally_from_a_clustered_server_after_restart() {
    let mut server = OvsdbServer::start_nb_clustered().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    assert_eq!(client.monitor_method(), Some(MonitorMethod::CondSince));
    client
        .transact(vec![insert_switch("before", None)])
        .await
        .unwrap();
    server.kill().unwrap();
    server.restart().unwrap();
    server.nbctl(&["ls-add", "while-away"]).unwrap();
    let generation = tokio::time::timeout(Duration::from_secs(10), client.wait_resynced(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(generation, 2);
    assert_eq!(client.last_sync(), Some(SyncKind::Incremental));
    client
        .transact(vec![insert_switch("after", None)])
        .await
        .unwrap();
    assert_eq!(switch_names(&client), vec!["after", "before", "while-away"]);
    let fresh = Client::connect(config(&server)).await.unwrap();
    assert_eq!(fresh.last_sync(), Some(SyncKind::Full));
    assert!(*client.replica() == *fresh.replica());
}

#[tokio::test]
async fn falls_back_to_plain_monitor_when_monitor_cond_is_disabled() {
    let server = OvsdbServer::start_nb().unwrap();
    server.nbctl(&["ls-add", "sw0"]).unwrap();
    server
        .appctl(&["ovsdb-server/disable-monitor-cond"])
        .unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    assert_eq!(client.monitor_method(), Some(MonitorMethod::Plain));
    assert_eq!(switch_names(&client), vec!["sw0"]);
    client
        .transact(vec![
            insert_switch("sw1", None),
            Operation::Mutate {
                table: "Logical_Switch".into(),
                where_: name_is("sw0"),
                mutations: vec![Mutation {
                    column: "external_ids".into(),
                    mutator: Mutator::Insert,
                    value: ids(&[("k8s.ovn.org/network", "red")]),
                }],
            },
        ])
        .await
        .unwrap();
    assert_eq!(switch_names(&client), vec!["sw0", "sw1"]);
    let found = client
        .replica()
        .find("Logical_Switch", "k8s.ovn.org/network", "red");
    assert_eq!(found.len(), 1);
    client
        .transact(vec![Operation::Delete {
            table: "Logical_Switch".into(),
            where_: name_is("sw0"),
        }])
        .await
        .unwrap();
    assert_eq!(switch_names(&client), vec!["sw1"]);
    let fresh_cond = {
        let server2 = OvsdbServer::start_nb().unwrap();
        server2.nbctl(&["ls-add", "sw1"]).unwrap();
        let c = Client::connect(config(&server2)).await.unwrap();
        let rows: BTreeMap<String, Row> = c
            .replica()
            .rows("Logical_Switch")
            .map(|(_, r)| ("sw1".to_owned(), r.clone()))
            .collect();
        rows
    };
    // Rows read through `monitor` (v1) and `monitor_cond_since` (update3) have the same
    // canonical shape.
    let rows: BTreeMap<String, Row> = client
        .replica()
        .rows("Logical_Switch")
        .map(|(_, r)| ("sw1".to_owned(), r.clone()))
        .collect();
    assert_eq!(rows, fresh_cond);
}
