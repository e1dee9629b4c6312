//! RFC 7047 value, operation and transact-result encoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use serde_json::json;
use udn_ovsdb::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, OperationError,
    OperationResult, TransactError, Uuid, Value, ValueError, WaitUntil, decode_transact_result,
    decode_transact_result_slice, row_from_json,
};

const U: &str = "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a0";

#[test]
fn uuid_validation() {
    assert_eq!(Uuid::parse(U).unwrap().to_string(), U);
    assert_eq!(Uuid::parse(&U.to_uppercase()).unwrap().to_string(), U);
    for bad in [
        "",
        "36bc5ba7d2c74a59a3e89cf5b2c7d1a0",
        "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1aZ",
        "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a00",
        "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7-1a0",
        "36bc5ba7d-2c7-4a59-a3e8-9cf5b2c7d1a0",
        "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a ",
        "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1aé",
        "g6bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a0",
    ] {
        assert_eq!(
            Uuid::parse(bad),
            Err(ValueError::InvalidUuid {
                value: bad.to_owned()
            })
        );
    }
}

#[test]
fn atom_encodings() {
    assert_eq!(Atom::Integer(-3).to_json(), json!(-3));
    assert_eq!(Atom::Real(1.5).to_json(), json!(1.5));
    assert_eq!(Atom::Boolean(true).to_json(), json!(true));
    assert_eq!(Atom::String("a".into()).to_json(), json!("a"));
    assert_eq!(
        Atom::Uuid(Uuid::parse(U).unwrap()).to_json(),
        json!(["uuid", U])
    );
    assert_eq!(
        Atom::NamedUuid("row0".into()).to_json(),
        json!(["named-uuid", "row0"])
    );
    assert_eq!(
        Atom::from_json(&json!(["named-uuid", "row0"])).unwrap(),
        Atom::NamedUuid("row0".into())
    );
    assert_eq!(Atom::from_json(&json!(2.0)).unwrap(), Atom::Real(2.0));
    assert_eq!(Atom::from_json(&json!(2)).unwrap(), Atom::Integer(2));
    assert!(Atom::from_json(&json!(null)).is_err());
    assert!(Atom::from_json(&json!(["uuid", "nope"])).is_err());
    assert!(Atom::from_json(&json!(["x"])).is_err());
}

#[test]
fn one_element_set_is_set_form_on_encode_and_bare_atom_accepted_on_decode() {
    let set = Value::Set(vec![Atom::String("x".into())]);
    assert_eq!(set.to_json(), json!(["set", ["x"]]));
    assert_ne!(set.to_json(), json!(["x"]));
    assert_eq!(Value::from_json(&json!(["set", ["x"]])).unwrap(), set);
    // A bare atom decodes as an atom, and reads as a one-element set.
    let bare = Value::from_json(&json!("x")).unwrap();
    assert_eq!(bare, Value::Atom(Atom::String("x".into())));
    assert_eq!(bare.into_set(), Some(vec![Atom::String("x".into())]));
    // ["x"] is neither a set nor an atom.
    assert!(Value::from_json(&json!(["x"])).is_err());
    assert_eq!(Value::Set(vec![]).to_json(), json!(["set", []]));
}

#[test]
fn map_encoding() {
    let m = Value::Map(vec![
        (Atom::String("k".into()), Atom::Integer(1)),
        (
            Atom::String("u".into()),
            Atom::Uuid(Uuid::parse(U).unwrap()),
        ),
    ]);
    let j = json!(["map", [["k", 1], ["u", ["uuid", U]]]]);
    assert_eq!(m.to_json(), j);
    assert_eq!(Value::from_json(&j).unwrap(), m);
    assert!(Value::from_json(&json!(["map", [["k"]]])).is_err());
    assert!(Value::from_json(&json!(["map", "k"])).is_err());
    assert!(Value::from_json(&json!(["set", 1])).is_err());
}

#[test]
fn row_decode_reports_column() {
    let err = row_from_json(&json!({"name": "a", "_uuid": ["uuid", "bad"]})).unwrap_err();
    assert!(
        matches!(err, ValueError::Column { ref column, .. } if column == "_uuid"),
        "{err}"
    );
    assert!(row_from_json(&json!([1])).is_err());
}

fn eq(column: &str, value: Value) -> Condition {
    Condition {
        column: column.into(),
        function: ConditionFunction::Equal,
        value,
    }
}

#[test]
fn operation_encodings_match_rfc_7047() {
    let mut row = BTreeMap::new();
    row.insert("name".to_owned(), Value::Atom(Atom::String("ls0".into())));
    let insert = Operation::Insert {
        table: "Logical_Switch".into(),
        row: row.clone(),
        uuid_name: Some("new_ls".into()),
        uuid: None,
    };
    assert_eq!(
        insert.to_json(),
        json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "ls0"}, "uuid-name": "new_ls"})
    );
    let no_name = Operation::Insert {
        table: "T".into(),
        row: BTreeMap::new(),
        uuid_name: None,
        uuid: None,
    };
    assert_eq!(
        no_name.to_json(),
        json!({"op": "insert", "table": "T", "row": {}})
    );

    let select = Operation::Select {
        table: "T".into(),
        where_: vec![eq("name", Value::Atom(Atom::String("a".into())))],
        columns: Some(vec!["_uuid".into()]),
    };
    assert_eq!(
        select.to_json(),
        json!({"op": "select", "table": "T", "where": [["name", "==", "a"]], "columns": ["_uuid"]})
    );

    let update = Operation::Update {
        table: "T".into(),
        where_: vec![],
        row,
    };
    assert_eq!(
        update.to_json(),
        json!({"op": "update", "table": "T", "where": [], "row": {"name": "ls0"}})
    );

    let mutate = Operation::Mutate {
        table: "Logical_Switch".into(),
        where_: vec![eq(
            "_uuid",
            Value::Atom(Atom::Uuid(Uuid::parse(U).unwrap())),
        )],
        mutations: vec![Mutation {
            column: "ports".into(),
            mutator: Mutator::Insert,
            value: Value::Set(vec![Atom::NamedUuid("p".into())]),
        }],
    };
    assert_eq!(
        mutate.to_json(),
        json!({"op": "mutate", "table": "Logical_Switch", "where": [["_uuid", "==", ["uuid", U]]],
               "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]})
    );

    let delete = Operation::Delete {
        table: "T".into(),
        where_: vec![Condition {
            column: "n".into(),
            function: ConditionFunction::GreaterThanOrEqual,
            value: Value::Atom(Atom::Integer(3)),
        }],
    };
    assert_eq!(
        delete.to_json(),
        json!({"op": "delete", "table": "T", "where": [["n", ">=", 3]]})
    );

    let wait = Operation::Wait {
        table: "T".into(),
        where_: vec![],
        columns: vec!["name".into()],
        until: WaitUntil::NotEqual,
        rows: vec![],
        timeout_ms: Some(0),
    };
    assert_eq!(
        wait.to_json(),
        json!({"op": "wait", "timeout": 0, "table": "T", "where": [], "columns": ["name"], "until": "!=", "rows": []})
    );

    assert_eq!(
        Operation::Assert { lock: "l".into() }.to_json(),
        json!({"op": "assert", "lock": "l"})
    );
    assert_eq!(
        Operation::Comment {
            comment: "c".into()
        }
        .to_json(),
        json!({"op": "comment", "comment": "c"})
    );
}

#[test]
fn function_and_mutator_spellings() {
    let f: Vec<_> = [
        ConditionFunction::Equal,
        ConditionFunction::NotEqual,
        ConditionFunction::LessThan,
        ConditionFunction::LessThanOrEqual,
        ConditionFunction::GreaterThan,
        ConditionFunction::GreaterThanOrEqual,
        ConditionFunction::Includes,
        ConditionFunction::Excludes,
    ]
    .iter()
    .map(|f| f.as_str())
    .collect();
    assert_eq!(
        f,
        ["==", "!=", "<", "<=", ">", ">=", "includes", "excludes"]
    );
    let m: Vec<_> = [
        Mutator::Add,
        Mutator::Subtract,
        Mutator::Multiply,
        Mutator::Divide,
        Mutator::Modulo,
        Mutator::Insert,
        Mutator::Delete,
    ]
    .iter()
    .map(|m| m.as_str())
    .collect();
    assert_eq!(m, ["+=", "-=", "*=", "/=", "%=", "insert", "delete"]);
}

#[test]
fn transact_results_decode() {
    let res = json!([{"uuid": ["uuid", U]}, {"rows": [{"name": "a"}]}, {"count": 2}, {}]);
    let out = decode_transact_result(4, &res).unwrap();
    let mut row = BTreeMap::new();
    row.insert("name".to_owned(), Value::Atom(Atom::String("a".into())));
    assert_eq!(
        out,
        vec![
            OperationResult::Inserted(Uuid::parse(U).unwrap()),
            OperationResult::Rows(vec![row]),
            OperationResult::Count(2),
            OperationResult::Empty
        ]
    );
}

#[test]
fn per_operation_error_in_result_array() {
    let res =
        json!([{"count": 1}, {"error": "constraint violation", "details": "duplicate name"}, null]);
    let err = decode_transact_result(3, &res).unwrap_err();
    assert_eq!(
        err,
        TransactError::Operation {
            index: 1,
            error: OperationError {
                error: "constraint violation".into(),
                details: Some("duplicate name".into())
            }
        }
    );
    assert_eq!(
        err.to_string(),
        "operation 1 failed: constraint violation (duplicate name)"
    );
}

#[test]
fn commit_error_is_the_extra_trailing_element() {
    let res = json!([{}, {"count": 0}, {"error": "referential integrity violation"}]);
    let err = decode_transact_result(2, &res).unwrap_err();
    assert_eq!(
        err,
        TransactError::Commit {
            error: OperationError {
                error: "referential integrity violation".into(),
                details: None
            }
        }
    );
}

#[test]
fn malformed_results() {
    assert!(matches!(
        decode_transact_result(1, &json!({})),
        Err(TransactError::Malformed { .. })
    ));
    assert!(matches!(
        decode_transact_result(1, &json!([1])),
        Err(TransactError::Malformed { .. })
    ));
    assert!(matches!(
        decode_transact_result(1, &json!([{"count": -1}])),
        Err(TransactError::Malformed { .. })
    ));
    assert!(matches!(
        decode_transact_result(1, &json!([{"uuid": ["uuid", "x"]}])),
        Err(TransactError::Value { index: 0, .. })
    ));
    assert_eq!(
        decode_transact_result(2, &json!([{}])),
        Err(TransactError::MissingResults {
            expected: 2,
            got: 1
        })
    );
}

#[test]
fn transact_results_decode_from_text_as_from_trees() {
    for (n, text) in [
        (
            4,
            r#"[{"uuid":["uuid","36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a0"]},{"rows":[{"name":"a"}]},{"count":2},{}]"#,
        ),
        (
            3,
            r#"[{"count":1},{"error":"constraint violation","details":"duplicate name"},null]"#,
        ),
        (
            2,
            r#"[{},{"count":0},{"error":"referential integrity violation"}]"#,
        ),
        (1, r#"[{"count":-1}]"#),
        (1, r#"[{"uuid":["uuid","x"]}]"#),
        (1, r#"[null,{}]"#),
        (2, r#"[{}]"#),
        (1, r#"{}"#),
    ] {
        let tree = serde_json::from_str(text).unwrap();
        assert_eq!(
            decode_transact_result_slice(n, text.as_bytes()),
            decode_transact_result(n, &tree),
            "{text}"
        );
    }
    let err = decode_transact_result_slice(1, b"[{\"count\":").unwrap_err();
    assert!(matches!(err, TransactError::Json { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("transact result is not valid JSON: "),
        "{err}"
    );
}

#[test]
fn direct_encoding_is_the_rfc_text() {
    let op = Operation::Insert {
        table: "Logical_Switch".into(),
        row: [(
            "ports".to_owned(),
            Value::Set(vec![Atom::Uuid(Uuid::parse(U).unwrap())]),
        )]
        .into(),
        uuid_name: Some("ls".into()),
        uuid: None,
    };
    assert_eq!(
        serde_json::to_string(&op).unwrap(),
        format!(
            r#"{{"op":"insert","table":"Logical_Switch","row":{{"ports":["set",[["uuid","{U}"]]]}},"uuid-name":"ls"}}"#
        )
    );
}
