//! The OVSDB table generator on small schemas: naming rules, types without `Ord` or
//! `Default`, types in words, and refused name collisions.

use udn_ovsdb::schema::DbSchema;
use xtask::codegen_ovsdb::{NB, SB, VSWITCH, column_constant, render, snake_name, type_name};

#[test]
fn type_names_are_upper_camel_case() {
    let cases = [
        ("Logical_Switch", "LogicalSwitch"),
        ("NB_Global", "NbGlobal"),
        ("ACL", "Acl"),
        ("BFD", "Bfd"),
        ("SSL", "Ssl"),
        ("NAT", "Nat"),
        ("QoS", "Qos"),
        ("DHCP_Options", "DhcpOptions"),
        ("HA_Chassis", "HaChassis"),
        ("DNS", "Dns"),
        ("Copp", "Copp"),
        ("Open_vSwitch", "OpenVswitch"),
        ("DHCPv6_Options", "Dhcpv6Options"),
        ("sFlow", "Sflow"),
        ("IPFIX", "Ipfix"),
        ("SB_Global", "SbGlobal"),
    ];
    for (table, ty) in cases {
        assert_eq!(type_name(table), ty, "{table}");
    }
}

#[test]
fn keywords_get_a_trailing_underscore() {
    assert_eq!(snake_name("type"), "type_");
    assert_eq!(snake_name("match"), "match_");
    assert_eq!(snake_name("self"), "self_");
    assert_eq!(snake_name("external_ids"), "external_ids");
    assert_eq!(snake_name("Logical_Switch"), "logical_switch");
    assert_eq!(snake_name("a-b"), "a_b");
    assert_eq!(snake_name("1x"), "_1x");
}

#[test]
fn a_column_named_table_does_not_take_the_table_constant() {
    assert_eq!(column_constant("table"), "TABLE_");
    assert_eq!(column_constant("match"), "MATCH");
    assert_eq!(column_constant("external_ids"), "EXTERNAL_IDS");
    let source = rendered(serde_json::json!({"RBAC_Permission": {"columns": {
        "table": {"type": "string"},
    }}}));
    assert!(
        source.contains("pub const TABLE: &str = \"RBAC_Permission\";"),
        "{source}"
    );
    assert!(
        source.contains("pub const TABLE_: &str = \"table\";"),
        "{source}"
    );
    assert!(
        source.contains("table: reader.scalar(self::TABLE_)?,"),
        "{source}"
    );
}

fn schema(tables: serde_json::Value) -> DbSchema {
    let json = serde_json::json!({"name": "T", "version": "1.0.0", "tables": tables});
    match DbSchema::parse(&json) {
        Ok(schema) => schema,
        Err(error) => panic!("{error}"),
    }
}

fn rendered(tables: serde_json::Value) -> String {
    match render(&NB, &schema(tables)) {
        Ok(files) => files
            .into_iter()
            .map(|(name, source)| format!("// file {name}\n{source}"))
            .collect(),
        Err(error) => panic!("{error:#}"),
    }
}

#[test]
fn reals_and_scalar_uuids_get_types_without_ord_or_default() {
    let source = rendered(serde_json::json!({
        "Weights": {"columns": {
            "w": {"type": {"key": "real", "min": 0, "max": "unlimited"}},
            "by_w": {"type": {"key": "real", "value": "string", "min": 0, "max": "unlimited"}},
            "target": {"type": {"key": {"type": "uuid", "refTable": "Weights"}}},
        }, "isRoot": true}
    }));
    assert!(source.contains("pub w: Vec<f64>,"), "{source}");
    assert!(source.contains("pub by_w: Vec<(f64, String)>,"), "{source}");
    assert!(source.contains("map_value(self.by_w.iter().map(|(k, v)| (k, v)))"));
    assert!(source.contains("pub target: Uuid,"));
    assert!(source.contains("/// `target`: strong reference to `Weights`."));
    assert!(source.contains("#[derive(Debug, Clone, PartialEq)]"));
    assert!(source.contains("impl Default for Weights {"));
    assert!(source.contains("target: reader.scalar_or(self::TARGET, || Uuid::from_u128(0))?,"));
    assert!(!source.contains("use std::collections"), "{source}");
}

#[test]
fn types_are_described_in_words() {
    let source = rendered(serde_json::json!({
        "T": {"columns": {
            "kind": {"type": {"key": {"type": "string", "enum": ["set", ["a", "b"]]}}},
            "peers": {"type": {"key": {"type": "uuid", "refTable": "T", "refType": "weak"}, "min": 1, "max": "unlimited"}},
            "tags": {"type": {"key": "integer", "min": 0, "max": 4}},
            "up": {"type": {"key": "boolean", "min": 0, "max": 1}, "mutable": false},
        }}
    }));
    for doc in [
        "/// `kind`: string.\n    ///\n    /// Allowed values: `\"a\"`, `\"b\"`.\n    pub kind: String,",
        "/// `peers`: set of 1 or more weak references to `T`.\n    pub peers: BTreeSet<Uuid>,",
        "/// `tags`: set of at most 4 integers.\n    pub tags: BTreeSet<i64>,",
        "/// `up`: optional boolean.\n    ///\n    /// Immutable: set on insert only.\n    pub up: Option<bool>,",
        "/// Not a root table: the server deletes rows no strong reference points at.",
    ] {
        assert!(source.contains(doc), "missing {doc:?} in\n{source}");
    }
}

#[test]
fn colliding_names_are_refused() {
    let tables = serde_json::json!({
        "Port": {"columns": {}},
        "PORT": {"columns": {}},
    });
    let error = render(&NB, &schema(tables)).map(|_| ()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "table Port: struct name \"Port\" is empty, reserved or taken by another table"
    );
    let tables = serde_json::json!({"T": {"columns": {
        "a-b": {"type": "string"},
        "a_b": {"type": "string"},
    }}});
    let error = render(&NB, &schema(tables)).map(|_| ()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "column T.a_b: field name \"a_b\" is empty or taken"
    );
}

#[test]
fn impls_name_the_database_of_their_module() {
    let tables = serde_json::json!({"T": {"columns": {"name": {"type": "string"}}}});
    for (database, line) in [
        (NB, "const DATABASE: &'static str = crate::nb::DATABASE;"),
        (SB, "const DATABASE: &'static str = crate::sb::DATABASE;"),
        (
            VSWITCH,
            "const DATABASE: &'static str = crate::vswitch::DATABASE;",
        ),
    ] {
        let files = match render(&database, &schema(tables.clone())) {
            Ok(files) => files,
            Err(error) => panic!("{error:#}"),
        };
        let table = files
            .iter()
            .find(|(name, _)| name == "t.rs")
            .map(|(_, source)| source.as_str())
            .unwrap_or_default();
        assert!(table.contains(line), "{line:?} not in\n{table}");
        assert!(
            table.starts_with(&format!(
                "// @generated by `cargo xtask codegen` from {}; do not edit.",
                database.schema_path
            )),
            "{table}"
        );
    }
}
