//! `k8s.ovn.org/open-default-ports`: default-network ports opened on a primary-UDN pod
//! (upstream `UnmarshalUDNOpenPortsAnnotation`).
//!
//! Users write it as a YAML list (JSON works too, being YAML):
//! ```yaml
//! - protocol: tcp
//!   port: 80
//! - protocol: icmp
//! ```
//! `protocol` is one of `tcp`, `udp`, `sctp`, `icmp` (exact spelling); `port` is required for
//! tcp/udp/sctp and forbidden for icmp. An empty value or `null` means no ports. Unlike
//! upstream, which lets port 0 through, a port must be 1..=65535.

use std::num::NonZeroU16;

use serde::{Deserialize, Serialize};

use super::{AnnotationError, null_as_default, to_go_json};
use crate::names::ANNOTATION_OPEN_DEFAULT_PORTS;

/// One opened port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpenPort {
    /// A TCP port.
    Tcp(NonZeroU16),
    /// A UDP port.
    Udp(NonZeroU16),
    /// An SCTP port.
    Sctp(NonZeroU16),
    /// ICMP (and ICMPv6), no port.
    Icmp,
}

impl OpenPort {
    /// The `protocol` spelling.
    pub fn protocol(self) -> &'static str {
        match self {
            Self::Tcp(_) => "tcp",
            Self::Udp(_) => "udp",
            Self::Sctp(_) => "sctp",
            Self::Icmp => "icmp",
        }
    }

    /// The port, `None` for ICMP.
    pub fn port(self) -> Option<NonZeroU16> {
        match self {
            Self::Tcp(port) | Self::Udp(port) | Self::Sctp(port) => Some(port),
            Self::Icmp => None,
        }
    }
}

/// An entry as written (upstream `OpenPort`), field order significant.
#[derive(Debug, Serialize, Deserialize)]
struct WirePort {
    #[serde(default, deserialize_with = "null_as_default")]
    protocol: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    port: Option<i64>,
}

/// Parses the annotation value. Errors name the entry index and the reason.
pub fn parse_open_default_ports(value: &str) -> Result<Vec<OpenPort>, AnnotationError> {
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    let wire: Option<Vec<WirePort>> =
        serde_saphyr::from_str(value).map_err(|source| AnnotationError::Yaml {
            annotation: ANNOTATION_OPEN_DEFAULT_PORTS,
            source: Box::new(source),
        })?;
    wire.unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, entry)| port_from_wire(index, entry))
        .collect()
}

fn port_from_wire(index: usize, entry: WirePort) -> Result<OpenPort, AnnotationError> {
    let error = |field: &'static str, value: String, reason: &str| {
        AnnotationError::field(
            ANNOTATION_OPEN_DEFAULT_PORTS,
            format!("entry {index}"),
            field,
            value,
            reason,
        )
    };
    let port_text = || entry.port.map(|p| p.to_string()).unwrap_or_default();
    let make: fn(NonZeroU16) -> OpenPort = match entry.protocol.as_str() {
        "icmp" => {
            return match entry.port {
                None => Ok(OpenPort::Icmp),
                Some(_) => Err(error("port", port_text(), "icmp takes no port")),
            };
        }
        "tcp" => OpenPort::Tcp,
        "udp" => OpenPort::Udp,
        "sctp" => OpenPort::Sctp,
        _ => {
            return Err(error(
                "protocol",
                entry.protocol.clone(),
                "not one of tcp, udp, sctp, icmp",
            ));
        }
    };
    let Some(port) = entry.port else {
        return Err(error(
            "port",
            String::new(),
            &format!("a port is required for {}", entry.protocol),
        ));
    };
    u16::try_from(port)
        .ok()
        .and_then(NonZeroU16::new)
        .map(make)
        .ok_or_else(|| error("port", port_text(), "not a port number (1..=65535)"))
}

/// Formats the ports as JSON (valid YAML), as Go's `json.Marshal([]OpenPort)` writes it:
/// `[{"protocol":"tcp","port":80},{"protocol":"icmp"}]`.
pub fn format_open_default_ports(ports: &[OpenPort]) -> Result<String, AnnotationError> {
    let wire: Vec<WirePort> = ports
        .iter()
        .map(|port| WirePort {
            protocol: port.protocol().to_owned(),
            port: port.port().map(|p| i64::from(p.get())),
        })
        .collect();
    to_go_json(ANNOTATION_OPEN_DEFAULT_PORTS, &wire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn port(n: u16) -> NonZeroU16 {
        NonZeroU16::new(n).unwrap()
    }

    #[test]
    fn parses_yaml_and_json_forms() {
        let yaml = "- protocol: tcp\n  port: 80\n- protocol: udp\n  port: 53\n- protocol: sctp\n  port: 65535\n- protocol: icmp\n";
        let expected = vec![
            OpenPort::Tcp(port(80)),
            OpenPort::Udp(port(53)),
            OpenPort::Sctp(port(65535)),
            OpenPort::Icmp,
        ];
        assert_eq!(parse_open_default_ports(yaml).unwrap(), expected);
        let json = r#"[{"protocol":"tcp","port":80},{"protocol":"udp","port":53},{"protocol":"sctp","port":65535},{"protocol":"icmp"}]"#;
        assert_eq!(parse_open_default_ports(json).unwrap(), expected);
        assert_eq!(format_open_default_ports(&expected).unwrap(), json);
        let flow = "[{protocol: tcp, port: 8080}]";
        assert_eq!(
            parse_open_default_ports(flow).unwrap(),
            vec![OpenPort::Tcp(port(8080))]
        );
    }

    #[test]
    fn empty_or_null_is_no_ports() {
        for value in ["", "  \n", "null", "~", "[]"] {
            assert_eq!(
                parse_open_default_ports(value).unwrap(),
                vec![],
                "{value:?}"
            );
        }
    }

    #[test]
    fn errors_name_entry_index_and_reason() {
        let prefix = "annotation k8s.ovn.org/open-default-ports: ";
        let cases = [
            (
                "- protocol: tcp\n  port: 80\n- protocol: http\n  port: 80\n",
                "entry 1: field protocol \"http\": not one of tcp, udp, sctp, icmp",
            ),
            (
                "- protocol: TCP\n  port: 80\n",
                "entry 0: field protocol \"TCP\": not one of tcp, udp, sctp, icmp",
            ),
            (
                "- port: 80\n",
                "entry 0: field protocol \"\": not one of tcp, udp, sctp, icmp",
            ),
            (
                "- protocol: icmp\n  port: 1\n",
                "entry 0: field port \"1\": icmp takes no port",
            ),
            (
                "- protocol: udp\n",
                "entry 0: field port \"\": a port is required for udp",
            ),
            (
                "- protocol: tcp\n  port: 0\n",
                "entry 0: field port \"0\": not a port number (1..=65535)",
            ),
            (
                "- protocol: sctp\n  port: 65536\n",
                "entry 0: field port \"65536\": not a port number (1..=65535)",
            ),
            (
                "- protocol: tcp\n  port: -5\n",
                "entry 0: field port \"-5\": not a port number (1..=65535)",
            ),
        ];
        for (value, expected) in cases {
            let message = parse_open_default_ports(value).unwrap_err().to_string();
            assert_eq!(message, format!("{prefix}{expected}"), "{value}");
        }
        for bad in [
            "protocol: tcp",
            "- protocol: tcp\n  port: eighty\n",
            "- [tcp, 80]",
            "[",
        ] {
            assert_eq!(
                parse_open_default_ports(bad).unwrap_err().to_string(),
                "annotation k8s.ovn.org/open-default-ports: value is not YAML of the expected shape",
                "{bad}"
            );
        }
    }

    fn open_port() -> impl Strategy<Value = OpenPort> {
        let p = || (1u16..).prop_map(port);
        prop_oneof![
            p().prop_map(OpenPort::Tcp),
            p().prop_map(OpenPort::Udp),
            p().prop_map(OpenPort::Sctp),
            Just(OpenPort::Icmp),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics(value in ".{0,64}") {
            let _ = parse_open_default_ports(&value);
        }

        #[test]
        fn parse_never_panics_on_yaml_shaped_input(
            protocol in "[a-z]{0,5}",
            port in proptest::option::of(any::<i32>()),
            junk in "[ :\\-\\[\\]{},a-z0-9\n]{0,12}",
        ) {
            let port = port.map(|p| format!("\n  port: {p}")).unwrap_or_default();
            let _ = parse_open_default_ports(&format!("- protocol: {protocol}{port}\n{junk}"));
        }

        #[test]
        fn format_parse_format_is_stable(ports in proptest::collection::vec(open_port(), 0..5)) {
            let formatted = format_open_default_ports(&ports).unwrap();
            let parsed = parse_open_default_ports(&formatted).unwrap();
            prop_assert_eq!(&parsed, &ports);
            prop_assert_eq!(format_open_default_ports(&parsed).unwrap(), formatted);
        }
    }
}
