//! Rows the network units refer to but do not own (the default network's COPP, the
//! `Load_Balancer_Group` rows, which have no `external_ids` and are kept by name), and
//! upstream's wording of an open-ports annotation error.

use std::collections::BTreeMap;

use udn_api::annotations::AnnotationError;
use udn_ovsdb::protocol::{Atom, Row, Uuid, Value};
use udn_ovsdb::replica::Replica;

use crate::topology::DEFAULT_COPP;

fn string<'r>(row: &'r Row, column: &str) -> Option<&'r str> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(text))) => Some(text),
        _ => None,
    }
}

/// The COPP `ovnkube-default` and the load balancer groups, by name.
pub(crate) fn shared_rows(nb: &Replica) -> (Option<Uuid>, BTreeMap<String, Uuid>) {
    let copp = nb
        .rows("Copp")
        .find(|(_, row)| string(row, "name") == Some(DEFAULT_COPP))
        .map(|(uuid, _)| *uuid);
    let groups = nb
        .rows("Load_Balancer_Group")
        .filter_map(|(uuid, row)| Some((string(row, "name")?.to_owned(), *uuid)))
        .collect();
    (copp, groups)
}

/// The reason upstream gives for an unreadable `k8s.ovn.org/open-default-ports`
/// (`UnmarshalUDNOpenPortsAnnotation`: `invalid protocol ppp`, `port is required for tcp
/// protocol`, ...).
pub(crate) fn open_ports_message(error: &AnnotationError) -> String {
    match error {
        AnnotationError::Field {
            field: "protocol",
            value,
            ..
        } => format!("invalid protocol {value}"),
        AnnotationError::Field {
            field: "port",
            value,
            reason,
            ..
        } if reason.contains("icmp") => {
            format!("invalid port {value} for icmp protocol, should be empty")
        }
        AnnotationError::Field {
            field: "port",
            value,
            reason,
            ..
        } if value.is_empty() => {
            let protocol = reason.rsplit(' ').next().unwrap_or_default();
            format!("port is required for {protocol} protocol")
        }
        AnnotationError::Field {
            field: "port",
            value,
            ..
        } => format!("invalid port {value}"),
        other => format!("failed to unmarshal UDN open ports annotation: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use udn_api::annotations::parse_open_default_ports;

    use super::*;

    fn message(value: &str) -> String {
        open_ports_message(&parse_open_default_ports(value).unwrap_err())
    }

    #[test]
    fn open_ports_errors_read_as_upstream_writes_them() {
        assert_eq!(
            message("- protocol: ppp\n  port: 80"),
            "invalid protocol ppp"
        );
        assert_eq!(
            message("- protocol: tcp"),
            "port is required for tcp protocol"
        );
        assert_eq!(
            message("- protocol: icmp\n  port: 7"),
            "invalid port 7 for icmp protocol, should be empty"
        );
        assert_eq!(
            message("- protocol: udp\n  port: 70000"),
            "invalid port 70000"
        );
        assert!(
            message("{not a list").starts_with("failed to unmarshal UDN open ports annotation")
        );
    }
}
