//! The generated typed NB tables against the vendored schema: one struct per table with the
//! schema's columns, canonical rows (what `ColumnType::normalize` produces), round trips,
//! RFC defaults, tolerance of unknown columns and exact errors on wrong types.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use serde_json::json;
use udn_ovsdb::nb::{self, NbTable, RowError, SCHEMA_JSON};
use udn_ovsdb::nb::{
    Acl, AddressSet, Bfd, ChassisTemplateVar, Connection, Copp, DhcpOptions, Dns, ForwardingGroup,
    GatewayChassis, HaChassis, HaChassisGroup, LoadBalancer, LoadBalancerGroup,
    LoadBalancerHealthCheck, LogicalRouter, LogicalRouterPolicy, LogicalRouterPort,
    LogicalRouterStaticRoute, LogicalSwitch, LogicalSwitchPort, Meter, MeterBand, Mirror, Nat,
    NbGlobal, PortGroup, Qos, Ssl, StaticMacBinding,
};
use udn_ovsdb::protocol::{Atom, Row, Uuid, Value, row_to_json};
use udn_ovsdb::schema::{AtomicType, BaseType, ColumnType, DbSchema};

/// Calls `$check::<T>()` for every generated table type and collects the results.
macro_rules! every_table {
    ($check:ident) => {
        vec![
            $check::<Acl>(),
            $check::<AddressSet>(),
            $check::<Bfd>(),
            $check::<ChassisTemplateVar>(),
            $check::<Connection>(),
            $check::<Copp>(),
            $check::<DhcpOptions>(),
            $check::<Dns>(),
            $check::<ForwardingGroup>(),
            $check::<GatewayChassis>(),
            $check::<HaChassis>(),
            $check::<HaChassisGroup>(),
            $check::<LoadBalancer>(),
            $check::<LoadBalancerGroup>(),
            $check::<LoadBalancerHealthCheck>(),
            $check::<LogicalRouter>(),
            $check::<LogicalRouterPolicy>(),
            $check::<LogicalRouterPort>(),
            $check::<LogicalRouterStaticRoute>(),
            $check::<LogicalSwitch>(),
            $check::<LogicalSwitchPort>(),
            $check::<Meter>(),
            $check::<MeterBand>(),
            $check::<Mirror>(),
            $check::<Nat>(),
            $check::<NbGlobal>(),
            $check::<PortGroup>(),
            $check::<Qos>(),
            $check::<Ssl>(),
            $check::<StaticMacBinding>(),
        ]
    };
}

fn schema() -> DbSchema {
    DbSchema::from_text(SCHEMA_JSON).unwrap()
}

/// A sample atom of `base`, the `i`th of its kind (enum columns cycle through their values).
fn sample_atom(base: &BaseType, i: usize) -> Atom {
    if let Some(values) = &base.enum_values {
        return values[i % values.len()].clone();
    }
    match base.atomic {
        AtomicType::Integer => Atom::Integer(i64::try_from(i).unwrap() + 7),
        AtomicType::Real => Atom::Real(0.5 + f64::from(u32::try_from(i).unwrap())),
        AtomicType::Boolean => Atom::Boolean(i % 2 == 1),
        AtomicType::String => Atom::String(format!("value-{i}")),
        AtomicType::Uuid => Atom::Uuid(Uuid::from_u128(0x1000 + u128::try_from(i).unwrap())),
    }
}

/// A populated, deliberately non-canonical value of `ty`: unsorted sets with duplicates,
/// bare atoms for one-element sets, maps with unsorted and repeated keys.
fn sample_value(ty: &ColumnType) -> Value {
    if let Some(value) = &ty.value {
        return Value::Map(vec![
            (sample_atom(&ty.key, 1), sample_atom(value, 0)),
            (sample_atom(&ty.key, 0), sample_atom(value, 1)),
            (sample_atom(&ty.key, 1), sample_atom(value, 2)),
        ]);
    }
    if ty.is_scalar() {
        return Value::Atom(sample_atom(&ty.key, 1));
    }
    if ty.max == Some(1) {
        return Value::Atom(sample_atom(&ty.key, 1));
    }
    Value::Set(vec![
        sample_atom(&ty.key, 1),
        sample_atom(&ty.key, 0),
        sample_atom(&ty.key, 1),
    ])
}

/// Every column of `table` with a sample value: (raw row, canonical row).
fn sample_rows(table: &str) -> (Row, Row) {
    let schema = schema();
    let mut raw = Row::new();
    let mut canonical = Row::new();
    for (name, column) in &schema.table(table).unwrap().columns {
        let value = sample_value(&column.ty);
        let normal = column.ty.normalize(value.clone()).unwrap();
        assert_ne!(normal, column.ty.default_value(), "{table}.{name} sample");
        raw.insert(name.clone(), value);
        canonical.insert(name.clone(), normal);
    }
    (raw, canonical)
}

fn columns_match_schema<T: NbTable>() -> &'static str {
    let schema = schema();
    let table = schema
        .table(T::TABLE)
        .unwrap_or_else(|| panic!("{} not in the schema", T::TABLE));
    let columns: Vec<&str> = table.columns.keys().map(String::as_str).collect();
    assert_eq!(T::COLUMNS, columns.as_slice(), "{}", T::TABLE);
    T::TABLE
}

#[test]
fn every_table_has_a_struct_with_the_schema_columns() {
    let tables: BTreeSet<&str> = every_table!(columns_match_schema).into_iter().collect();
    let schema = schema();
    let expected: BTreeSet<&str> = schema.tables.keys().map(String::as_str).collect();
    assert_eq!(tables, expected);
    assert_eq!(tables.len(), 30);
    assert_eq!(
        nb::TABLES,
        expected.into_iter().collect::<Vec<_>>().as_slice()
    );
}

fn populated_round_trip<T: NbTable + Debug + PartialEq + Default>() -> &'static str {
    let (raw, canonical) = sample_rows(T::TABLE);
    let uuid = Uuid::from_u128(0xabc);
    let value = T::from_row(Some(uuid), &raw).unwrap();
    assert_eq!(value.uuid(), Some(uuid));
    assert_ne!(value, T::default(), "{}", T::TABLE);
    let row = value.to_row();
    assert_eq!(row, canonical, "{}: to_row is the normalized row", T::TABLE);
    assert_eq!(
        T::from_row(Some(uuid), &row).unwrap(),
        value,
        "{}",
        T::TABLE
    );
    T::TABLE
}

#[test]
fn populated_rows_round_trip_in_canonical_form() {
    assert_eq!(every_table!(populated_round_trip).len(), 30);
}

fn to_row_is_normalized<T: NbTable>() -> &'static str {
    let (raw, _) = sample_rows(T::TABLE);
    let schema = schema();
    let row = T::from_row(None, &raw).unwrap().to_row();
    assert_eq!(
        row.keys().map(String::as_str).collect::<Vec<_>>(),
        T::COLUMNS
    );
    for (column, value) in &row {
        let ty = &schema.column(T::TABLE, column).unwrap().ty;
        assert_eq!(
            ty.normalize(value.clone()).as_ref(),
            Ok(value),
            "{}.{column}",
            T::TABLE
        );
    }
    T::TABLE
}

#[test]
fn to_row_equals_normalize_for_every_column() {
    assert_eq!(every_table!(to_row_is_normalized).len(), 30);
}

fn missing_columns_are_defaults<T: NbTable + Debug + PartialEq + Default>() -> &'static str {
    let schema = schema();
    let value = T::from_row(None, &Row::new()).unwrap();
    assert_eq!(value, T::default(), "{}", T::TABLE);
    for (column, default) in value.to_row() {
        let ty = &schema.column(T::TABLE, &column).unwrap().ty;
        assert_eq!(default, ty.default_value(), "{}.{column}", T::TABLE);
    }
    T::TABLE
}

#[test]
fn missing_columns_take_the_rfc_default() {
    assert_eq!(every_table!(missing_columns_are_defaults).len(), 30);
}

fn unknown_columns_ignored<T: NbTable + Debug + PartialEq>() -> &'static str {
    let (raw, _) = sample_rows(T::TABLE);
    let mut newer = raw.clone();
    newer.insert(
        "column_from_a_newer_schema".to_owned(),
        Value::Map(vec![(Atom::Integer(1), Atom::Boolean(true))]),
    );
    newer.insert(
        "_version".to_owned(),
        Value::Atom(Atom::Uuid(Uuid::from_u128(9))),
    );
    assert_eq!(
        T::from_row(None, &newer).unwrap(),
        T::from_row(None, &raw).unwrap(),
        "{}",
        T::TABLE
    );
    T::TABLE
}

#[test]
fn unknown_columns_are_ignored() {
    assert_eq!(every_table!(unknown_columns_ignored).len(), 30);
}

#[test]
fn typed_fields_render_the_expected_wire_row() {
    let port = Uuid::parse("36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a0").unwrap();
    let switch = LogicalSwitch {
        name: "l3.network_node1".to_owned(),
        ports: BTreeSet::from([port]),
        external_ids: BTreeMap::from([
            ("k8s.ovn.org/network".to_owned(), "l3.network".to_owned()),
            ("k8s.ovn.org/owner-type".to_owned(), "Network".to_owned()),
        ]),
        other_config: BTreeMap::from([("subnet".to_owned(), "10.1.0.0/24".to_owned())]),
        ..LogicalSwitch::default()
    };
    assert_eq!(
        row_to_json(&switch.to_row()),
        json!({
            "acls": ["set", []],
            "copp": ["set", []],
            "dns_records": ["set", []],
            "external_ids": ["map", [
                ["k8s.ovn.org/network", "l3.network"],
                ["k8s.ovn.org/owner-type", "Network"],
            ]],
            "forwarding_groups": ["set", []],
            "load_balancer": ["set", []],
            "load_balancer_group": ["set", []],
            "name": "l3.network_node1",
            "other_config": ["map", [["subnet", "10.1.0.0/24"]]],
            "ports": ["set", [["uuid", "36bc5ba7-d2c7-4a59-a3e8-9cf5b2c7d1a0"]]],
            "qos_rules": ["set", []],
        })
    );

    let acl = Acl {
        action: "allow-related".to_owned(),
        direction: "to-lport".to_owned(),
        match_: "ip4.src == 10.1.0.0/16".to_owned(),
        priority: 1001,
        severity: Some("info".to_owned()),
        ..Acl::default()
    };
    let row = acl.to_row();
    assert_eq!(
        row[nb::acl::MATCH],
        Value::Atom(Atom::String("ip4.src == 10.1.0.0/16".to_owned()))
    );
    assert_eq!(row[nb::acl::PRIORITY], Value::Atom(Atom::Integer(1001)));
    assert_eq!(
        row[nb::acl::SEVERITY],
        Value::Set(vec![Atom::String("info".to_owned())])
    );
    assert_eq!(row[nb::acl::NAME], Value::Set(vec![]));
    assert_eq!(Acl::from_row(None, &row).unwrap(), acl);

    let lsp = LogicalSwitchPort {
        type_: "router".to_owned(),
        tag_request: Some(0),
        enabled: Some(true),
        ..LogicalSwitchPort::default()
    };
    let row = lsp.to_row();
    assert_eq!(
        row[nb::logical_switch_port::TYPE],
        Value::Atom(Atom::String("router".to_owned()))
    );
    assert_eq!(row[nb::logical_switch_port::TAG], Value::Set(vec![]));
    assert_eq!(
        row[nb::logical_switch_port::TAG_REQUEST],
        Value::Set(vec![Atom::Integer(0)])
    );
    assert_eq!(LogicalSwitchPort::from_row(None, &row).unwrap(), lsp);
}

#[test]
fn names_follow_the_schema() {
    assert_eq!(LogicalSwitch::TABLE, "Logical_Switch");
    assert_eq!(nb::logical_switch::TABLE, "Logical_Switch");
    assert_eq!(nb::logical_switch::PORTS, "ports");
    assert_eq!(NbGlobal::TABLE, "NB_Global");
    assert_eq!(Qos::TABLE, "QoS");
    assert_eq!(DhcpOptions::TABLE, "DHCP_Options");
    assert_eq!(nb::nat::TYPE, "type");
    assert_eq!(nb::acl::MATCH, "match");
}

fn read_error(table: &str, column: &str, value: Value) -> String {
    let row = Row::from([(column.to_owned(), value)]);
    let error = match table {
        "Logical_Switch" => LogicalSwitch::from_row(None, &row).map(|_| ()),
        "Logical_Switch_Port" => LogicalSwitchPort::from_row(None, &row).map(|_| ()),
        "ACL" => Acl::from_row(None, &row).map(|_| ()),
        other => panic!("no case for {other}"),
    }
    .unwrap_err();
    assert_eq!((error.table, error.column), (table, column));
    error.to_string()
}

#[test]
fn wrong_types_name_table_column_and_reason() {
    let s = |text: &str| Atom::String(text.to_owned());
    let cases = [
        (
            "Logical_Switch",
            "name",
            Value::Atom(Atom::Integer(5)),
            "cannot read column Logical_Switch.name: expected a string, got 5",
        ),
        (
            "Logical_Switch",
            "ports",
            Value::Set(vec![s("lsp1")]),
            "cannot read column Logical_Switch.ports: expected a uuid, got \"lsp1\"",
        ),
        (
            "Logical_Switch",
            "ports",
            Value::Map(vec![]),
            "cannot read column Logical_Switch.ports: expected a set, got a map",
        ),
        (
            "Logical_Switch",
            "external_ids",
            Value::Set(vec![s("a")]),
            "cannot read column Logical_Switch.external_ids: expected a map, got a set of 1",
        ),
        (
            "Logical_Switch",
            "external_ids",
            Value::Map(vec![(s("k"), Atom::Integer(1))]),
            "cannot read column Logical_Switch.external_ids: expected a string, got 1",
        ),
        (
            "Logical_Switch",
            "other_config",
            Value::Atom(s("x")),
            "cannot read column Logical_Switch.other_config: expected a map, got \"x\"",
        ),
        (
            "Logical_Switch_Port",
            "tag",
            Value::Set(vec![Atom::Integer(1), Atom::Integer(2)]),
            "cannot read column Logical_Switch_Port.tag: expected at most one value, got a set of 2",
        ),
        (
            "Logical_Switch_Port",
            "enabled",
            Value::Atom(s("yes")),
            "cannot read column Logical_Switch_Port.enabled: expected a boolean, got \"yes\"",
        ),
        (
            "ACL",
            "priority",
            Value::Set(vec![]),
            "cannot read column ACL.priority: expected exactly one value, got a set of 0",
        ),
        (
            "ACL",
            "priority",
            Value::Map(vec![]),
            "cannot read column ACL.priority: expected exactly one value, got a map",
        ),
        (
            "ACL",
            "priority",
            Value::Atom(Atom::Real(1.5)),
            "cannot read column ACL.priority: expected an integer, got 1.5",
        ),
    ];
    for (table, column, value, message) in cases {
        assert_eq!(read_error(table, column, value), message);
    }
}

#[test]
fn lenient_encodings_a_server_may_send_are_read() {
    let u = Uuid::from_u128(1);
    let row = Row::from([
        // A one-element set as a bare atom.
        ("ports".to_owned(), Value::Atom(Atom::Uuid(u))),
        // A scalar as a one-element set.
        (
            "name".to_owned(),
            Value::Set(vec![Atom::String("ls".to_owned())]),
        ),
        // An empty map as an empty set.
        ("external_ids".to_owned(), Value::Set(vec![])),
        // An optional value as a bare atom.
        ("copp".to_owned(), Value::Atom(Atom::Uuid(u))),
    ]);
    let switch = LogicalSwitch::from_row(None, &row).unwrap();
    assert_eq!(switch.ports, BTreeSet::from([u]));
    assert_eq!(switch.name, "ls");
    assert!(switch.external_ids.is_empty());
    assert_eq!(switch.copp, Some(u));
}

#[test]
fn row_error_is_comparable_data() {
    let error = RowError {
        table: "ACL",
        column: "label",
        reason: "expected an integer, got true".to_owned(),
    };
    assert_eq!(
        error.to_string(),
        "cannot read column ACL.label: expected an integer, got true"
    );
}
