//! Schema parsing, canonical values and compatibility checks against the vendored NB schema,
#![allow(clippy::unwrap_used, clippy::expect_used)]
//! a newer-looking schema derived from it and one with a needed column removed.

use serde_json::{Value as Json, json};
use udn_ovsdb::nb::{DATABASE, SCHEMA_JSON, SCHEMA_VERSION};
use udn_ovsdb::protocol::{Atom, Uuid, Value};
use udn_ovsdb::schema::{DbSchema, Missing, RefType, Requirements, SchemaError, enum_strings};

fn vendored_json() -> Json {
    serde_json::from_str(SCHEMA_JSON).unwrap()
}

fn vendored() -> DbSchema {
    DbSchema::parse(&vendored_json()).unwrap()
}

fn needs() -> Requirements {
    Requirements::default()
        .with(
            "Logical_Switch",
            ["name", "ports", "other_config", "external_ids"],
        )
        .with(
            "Logical_Switch_Port",
            ["name", "addresses", "options", "external_ids"],
        )
        .with("ACL", ["priority", "match", "action", "label"])
}

#[test]
fn vendored_schema_parses_with_its_types() {
    let schema = vendored();
    assert_eq!(schema.name, DATABASE);
    assert_eq!(schema.version, SCHEMA_VERSION);
    assert_eq!(schema.tables.len(), 30);

    let ls = schema.table("Logical_Switch").unwrap();
    assert!(ls.is_root);
    let ports = &ls.columns["ports"].ty;
    assert!(ports.is_set() && !ports.is_map() && !ports.is_scalar());
    assert_eq!(
        ports.reference(),
        Some(("Logical_Switch_Port", RefType::Strong))
    );
    assert_eq!((ports.min, ports.max), (0, None));

    let lsp = schema.table("Logical_Switch_Port").unwrap();
    assert!(!lsp.is_root);
    assert_eq!(lsp.indexes, vec![vec!["name".to_owned()]]);
    assert!(lsp.columns["name"].ty.is_scalar());
    assert!(lsp.columns["options"].ty.is_map());

    let pg_ports = &schema.column("Port_Group", "ports").unwrap().ty;
    assert_eq!(
        pg_ports.reference(),
        Some(("Logical_Switch_Port", RefType::Weak))
    );
    let nat_type = &schema.column("NAT", "type").unwrap().ty;
    assert_eq!(
        enum_strings(&nat_type.key),
        ["dnat", "snat", "dnat_and_snat"]
    );
    let up = &schema.column("Logical_Switch_Port", "up").unwrap().ty;
    assert!(up.is_set() && up.max == Some(1) && up.min == 0);
    assert!(schema.column("ACL", "no_such").is_none());
}

#[test]
fn values_normalize_to_one_canonical_form() {
    let schema = vendored();
    let ty = |t: &str, c: &str| schema.column(t, c).unwrap().ty.clone();
    let u1 = Uuid::parse("00000000-0000-0000-0000-000000000001").unwrap();
    let u2 = Uuid::parse("00000000-0000-0000-0000-000000000002").unwrap();

    // A bare atom in a set column is a one-element set; sets are sorted and deduplicated.
    assert_eq!(
        ty("Logical_Switch", "ports").normalize(Value::Atom(Atom::Uuid(u1))),
        Ok(Value::Set(vec![Atom::Uuid(u1)]))
    );
    assert_eq!(
        ty("Logical_Switch", "ports").normalize(Value::Set(vec![
            Atom::Uuid(u2),
            Atom::Uuid(u1),
            Atom::Uuid(u2)
        ])),
        Ok(Value::Set(vec![Atom::Uuid(u1), Atom::Uuid(u2)]))
    );
    // Maps sort by key; the empty set is the empty map (the server never sends that, users may).
    let map = Value::Map(vec![
        (Atom::String("b".into()), Atom::String("2".into())),
        (Atom::String("a".into()), Atom::String("1".into())),
    ]);
    assert_eq!(
        ty("Logical_Switch", "external_ids").normalize(map),
        Ok(Value::Map(vec![
            (Atom::String("a".into()), Atom::String("1".into())),
            (Atom::String("b".into()), Atom::String("2".into())),
        ]))
    );
    // A one-element set in a scalar column is the scalar.
    assert_eq!(
        ty("ACL", "priority").normalize(Value::Set(vec![Atom::Integer(1001)])),
        Ok(Value::Atom(Atom::Integer(1001)))
    );
    // Wrong types name the type and the reason.
    let err = ty("ACL", "priority")
        .normalize(Value::Atom(Atom::String("x".into())))
        .unwrap_err();
    assert_eq!(
        err,
        SchemaError::Mismatch {
            value: "\"x\"".into(),
            ty: "integer".into(),
            reason: "expected an integer".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "value \"x\" does not fit type integer: expected an integer"
    );
    // Too many elements for an optional value.
    let err = ty("Logical_Switch_Port", "up")
        .normalize(Value::Set(vec![Atom::Boolean(true), Atom::Boolean(false)]))
        .unwrap_err();
    assert!(err.to_string().contains("2 elements"), "{err}");
}

#[test]
fn reals_accept_integers() {
    let schema = DbSchema::parse(&json!({
        "name": "T", "version": "1.0.0",
        "tables": {"R": {"columns": {"r": {"type": "real"}, "rs": {"type": {"key": "real", "min": 0, "max": "unlimited"}}}}}
    }))
    .unwrap();
    let r = &schema.column("R", "r").unwrap().ty;
    assert_eq!(
        r.normalize(Value::Atom(Atom::Integer(2))),
        Ok(Value::Atom(Atom::Real(2.0)))
    );
    assert_eq!(r.default_value(), Value::Atom(Atom::Real(0.0)));
    let rs = &schema.column("R", "rs").unwrap().ty;
    assert_eq!(
        rs.normalize(Value::Set(vec![Atom::Real(2.5), Atom::Integer(1)])),
        Ok(Value::Set(vec![Atom::Real(1.0), Atom::Real(2.5)]))
    );
    assert_eq!(rs.default_value(), Value::Set(vec![]));
}

/// The vendored schema plus a table and a column a newer OVN might have.
fn newer_json() -> Json {
    let mut json = vendored_json();
    json["version"] = json!("7.18.0");
    json["tables"]["Logical_Switch"]["columns"]["future_column"] =
        json!({"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}});
    json["tables"]["Future_Table"] =
        json!({"columns": {"name": {"type": "string"}}, "isRoot": true});
    json
}

#[test]
fn newer_schema_is_compatible_and_unknowns_are_not_monitored() {
    let newer = DbSchema::parse(&newer_json()).unwrap();
    assert_eq!(newer.check(&needs()), Ok(()));
    let wanted = Requirements::everything_in(&vendored());
    let monitored = newer.monitorable(&wanted);
    assert!(!monitored.contains_key("Future_Table"));
    assert!(!monitored["Logical_Switch"].contains(&"future_column".to_owned()));
    assert!(monitored["Logical_Switch"].contains(&"ports".to_owned()));
    let restricted = newer.restricted_to(&wanted);
    assert_eq!(restricted.tables.len(), 30);
    assert!(
        restricted
            .column("Logical_Switch", "future_column")
            .is_none()
    );
}

#[test]
fn missing_column_or_table_is_named() {
    // A server whose ACL table lacks a column we need, and a table we need.
    let mut json = vendored_json();
    json["tables"]["ACL"]["columns"]
        .as_object_mut()
        .unwrap()
        .remove("label");
    json["tables"]
        .as_object_mut()
        .unwrap()
        .remove("Logical_Switch_Port");
    let old = DbSchema::parse(&json).unwrap();
    let err = old.check(&needs()).unwrap_err();
    assert_eq!(
        err.missing,
        [
            Missing::Table("Logical_Switch_Port".into()),
            Missing::Column {
                table: "ACL".into(),
                column: "label".into()
            },
        ]
    );
    assert_eq!(
        err.to_string(),
        "server database OVN_Northbound (schema version 7.0.0) lacks table Logical_Switch_Port, \
         column ACL.label: this OVN is too old or differs from what udn supports"
    );
    // The implicit columns always exist.
    assert_eq!(
        old.check(&Requirements::default().with("ACL", ["_uuid", "match"])),
        Ok(())
    );
}

#[test]
fn malformed_schemas_say_where() {
    let err = DbSchema::parse(&json!({"name": "X", "version": "1", "tables": {"T": {"columns": {"c": {"type": "float"}}}}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid schema at column T.c: unknown atomic type \"float\": expected integer, real, boolean, string or uuid"
    );
    let err = DbSchema::parse(&json!({"name": "X", "tables": {}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid schema at schema: missing \"version\""
    );
    let err = DbSchema::parse(&json!({"name": "X", "version": "1", "tables": {"T": {"columns": {"c": {"type": {"key": "string", "min": 2}}}}}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid schema at column T.c: \"min\" must be 0 or 1"
    );
    assert!(DbSchema::from_text("{").is_err());
}
