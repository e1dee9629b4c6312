//! The generated typed tables of every vendored schema (OVN Northbound, OVN Southbound,
//! Open vSwitch) against their schemas: one struct per table with the schema's columns,
//! canonical rows (what `ColumnType::normalize` produces), round trips, RFC defaults,
//! tolerance of unknown columns and exact errors on wrong types.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use serde_json::json;
use udn_ovsdb::nb::{Acl, DhcpOptions, LogicalSwitch, LogicalSwitchPort, NbGlobal, NbTable, Qos};
use udn_ovsdb::protocol::{Atom, Row, Uuid, Value, row_to_json};
use udn_ovsdb::schema::{AtomicType, BaseType, ColumnType, DbSchema};
use udn_ovsdb::table::{RowError, Table};
use udn_ovsdb::{nb, sb, vswitch};

/// Calls `$check::<T>()` for every generated table type of every database and collects the
/// results.
macro_rules! every_table {
    ($check:ident) => {
        vec![
            $check::<nb::Acl>(),
            $check::<nb::AddressSet>(),
            $check::<nb::Bfd>(),
            $check::<nb::ChassisTemplateVar>(),
            $check::<nb::Connection>(),
            $check::<nb::Copp>(),
            $check::<nb::DhcpOptions>(),
            $check::<nb::Dns>(),
            $check::<nb::ForwardingGroup>(),
            $check::<nb::GatewayChassis>(),
            $check::<nb::HaChassis>(),
            $check::<nb::HaChassisGroup>(),
            $check::<nb::LoadBalancer>(),
            $check::<nb::LoadBalancerGroup>(),
            $check::<nb::LoadBalancerHealthCheck>(),
            $check::<nb::LogicalRouter>(),
            $check::<nb::LogicalRouterPolicy>(),
            $check::<nb::LogicalRouterPort>(),
            $check::<nb::LogicalRouterStaticRoute>(),
            $check::<nb::LogicalSwitch>(),
            $check::<nb::LogicalSwitchPort>(),
            $check::<nb::Meter>(),
            $check::<nb::MeterBand>(),
            $check::<nb::Mirror>(),
            $check::<nb::Nat>(),
            $check::<nb::NbGlobal>(),
            $check::<nb::PortGroup>(),
            $check::<nb::Qos>(),
            $check::<nb::Ssl>(),
            $check::<nb::StaticMacBinding>(),
            $check::<sb::AddressSet>(),
            $check::<sb::Bfd>(),
            $check::<sb::Chassis>(),
            $check::<sb::ChassisPrivate>(),
            $check::<sb::ChassisTemplateVar>(),
            $check::<sb::Connection>(),
            $check::<sb::ControllerEvent>(),
            $check::<sb::DatapathBinding>(),
            $check::<sb::DhcpOptions>(),
            $check::<sb::Dhcpv6Options>(),
            $check::<sb::Dns>(),
            $check::<sb::Encap>(),
            $check::<sb::Fdb>(),
            $check::<sb::GatewayChassis>(),
            $check::<sb::HaChassis>(),
            $check::<sb::HaChassisGroup>(),
            $check::<sb::IgmpGroup>(),
            $check::<sb::IpMulticast>(),
            $check::<sb::LoadBalancer>(),
            $check::<sb::LogicalDpGroup>(),
            $check::<sb::LogicalFlow>(),
            $check::<sb::MacBinding>(),
            $check::<sb::Meter>(),
            $check::<sb::MeterBand>(),
            $check::<sb::Mirror>(),
            $check::<sb::MulticastGroup>(),
            $check::<sb::PortBinding>(),
            $check::<sb::PortGroup>(),
            $check::<sb::RbacPermission>(),
            $check::<sb::RbacRole>(),
            $check::<sb::SbGlobal>(),
            $check::<sb::ServiceMonitor>(),
            $check::<sb::Ssl>(),
            $check::<sb::StaticMacBinding>(),
            $check::<vswitch::Autoattach>(),
            $check::<vswitch::Bridge>(),
            $check::<vswitch::Controller>(),
            $check::<vswitch::CtTimeoutPolicy>(),
            $check::<vswitch::CtZone>(),
            $check::<vswitch::Datapath>(),
            $check::<vswitch::FlowSampleCollectorSet>(),
            $check::<vswitch::FlowTable>(),
            $check::<vswitch::Interface>(),
            $check::<vswitch::Ipfix>(),
            $check::<vswitch::Manager>(),
            $check::<vswitch::Mirror>(),
            $check::<vswitch::Netflow>(),
            $check::<vswitch::OpenVswitch>(),
            $check::<vswitch::Port>(),
            $check::<vswitch::Qos>(),
            $check::<vswitch::Queue>(),
            $check::<vswitch::Sflow>(),
            $check::<vswitch::Ssl>(),
        ]
    };
}

/// Tables per database: `OVN_Northbound`, `OVN_Southbound`, `Open_vSwitch`.
const TABLE_COUNTS: [(&str, usize); 3] = [
    (nb::DATABASE, 30),
    (sb::DATABASE, 34),
    (vswitch::DATABASE, 19),
];

/// The vendored schema of `database`.
fn schema(database: &str) -> DbSchema {
    match database {
        nb::DATABASE => nb::schema(),
        sb::DATABASE => sb::schema(),
        vswitch::DATABASE => vswitch::schema(),
        other => panic!("no vendored schema {other}"),
    }
    .unwrap()
}

/// What a check of one table type returns: its database and table.
type Checked = (&'static str, &'static str);

fn total() -> usize {
    TABLE_COUNTS.iter().map(|(_, n)| n).sum()
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

/// Every column of `table` of `database` with a sample value: (raw row, canonical row).
fn sample_rows(database: &str, table: &str) -> (Row, Row) {
    let schema = schema(database);
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

fn columns_match_schema<T: Table>() -> Checked {
    let schema = schema(T::DATABASE);
    let table = schema
        .table(T::TABLE)
        .unwrap_or_else(|| panic!("{} not in the schema", T::TABLE));
    let columns: Vec<&str> = table.columns.keys().map(String::as_str).collect();
    assert_eq!(T::COLUMNS, columns.as_slice(), "{}", T::TABLE);
    (T::DATABASE, T::TABLE)
}

#[test]
fn every_table_has_a_struct_with_the_schema_columns() {
    let checked = every_table!(columns_match_schema);
    assert_eq!(checked.len(), total());
    let lists = [
        (nb::DATABASE, nb::TABLES),
        (sb::DATABASE, sb::TABLES),
        (vswitch::DATABASE, vswitch::TABLES),
    ];
    for ((database, count), (listed_database, listed)) in TABLE_COUNTS.into_iter().zip(lists) {
        assert_eq!(database, listed_database);
        let tables: BTreeSet<&str> = checked
            .iter()
            .filter(|(db, _)| *db == database)
            .map(|(_, table)| *table)
            .collect();
        let schema = schema(database);
        assert_eq!(schema.name, database);
        let expected: BTreeSet<&str> = schema.tables.keys().map(String::as_str).collect();
        assert_eq!(tables, expected, "{database}");
        assert_eq!(tables.len(), count, "{database}");
        assert_eq!(
            listed,
            expected.into_iter().collect::<Vec<_>>().as_slice(),
            "{database}"
        );
    }
}

#[test]
fn schema_versions_are_the_vendored_ones() {
    for (database, version) in [
        (nb::DATABASE, nb::SCHEMA_VERSION),
        (sb::DATABASE, sb::SCHEMA_VERSION),
        (vswitch::DATABASE, vswitch::SCHEMA_VERSION),
    ] {
        assert_eq!(schema(database).version, version, "{database}");
    }
    assert_eq!(
        (
            nb::SCHEMA_VERSION,
            sb::SCHEMA_VERSION,
            vswitch::SCHEMA_VERSION
        ),
        ("7.0.0", "20.27.0", "8.3.1")
    );
}

fn populated_round_trip<T: Table + Debug + PartialEq + Default>() -> Checked {
    let (raw, canonical) = sample_rows(T::DATABASE, T::TABLE);
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
    (T::DATABASE, T::TABLE)
}

#[test]
fn populated_rows_round_trip_in_canonical_form() {
    assert_eq!(every_table!(populated_round_trip).len(), total());
}

fn to_row_is_normalized<T: Table>() -> Checked {
    let (raw, _) = sample_rows(T::DATABASE, T::TABLE);
    let schema = schema(T::DATABASE);
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
    (T::DATABASE, T::TABLE)
}

#[test]
fn to_row_equals_normalize_for_every_column() {
    assert_eq!(every_table!(to_row_is_normalized).len(), total());
}

fn missing_columns_are_defaults<T: Table + Debug + PartialEq + Default>() -> Checked {
    let schema = schema(T::DATABASE);
    let value = T::from_row(None, &Row::new()).unwrap();
    assert_eq!(value, T::default(), "{}", T::TABLE);
    for (column, default) in value.to_row() {
        let ty = &schema.column(T::TABLE, &column).unwrap().ty;
        assert_eq!(default, ty.default_value(), "{}.{column}", T::TABLE);
    }
    (T::DATABASE, T::TABLE)
}

#[test]
fn missing_columns_take_the_rfc_default() {
    assert_eq!(every_table!(missing_columns_are_defaults).len(), total());
}

fn unknown_columns_ignored<T: Table + Debug + PartialEq>() -> Checked {
    let (raw, _) = sample_rows(T::DATABASE, T::TABLE);
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
    (T::DATABASE, T::TABLE)
}

#[test]
fn unknown_columns_are_ignored() {
    assert_eq!(every_table!(unknown_columns_ignored).len(), total());
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
    assert_eq!(LogicalSwitch::DATABASE, "OVN_Northbound");
    assert_eq!(sb::PortBinding::TABLE, "Port_Binding");
    assert_eq!(sb::PortBinding::DATABASE, "OVN_Southbound");
    assert_eq!(sb::port_binding::TYPE, "type");
    assert_eq!(sb::Dhcpv6Options::TABLE, "DHCPv6_Options");
    // A column named `table` leaves `TABLE` to the table name.
    assert_eq!(sb::rbac_permission::TABLE, "RBAC_Permission");
    assert_eq!(sb::rbac_permission::TABLE_, "table");
    assert_eq!(vswitch::OpenVswitch::TABLE, "Open_vSwitch");
    assert_eq!(vswitch::OpenVswitch::DATABASE, "Open_vSwitch");
    assert_eq!(vswitch::Sflow::TABLE, "sFlow");
    assert_eq!(vswitch::interface::TYPE, "type");
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
