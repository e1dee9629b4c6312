//! `k8s.v1.cni.cncf.io/network-status`: the attachments Multus made, one element per pod
//! interface (network-attachment-definition-client `NetworkStatus`).
//!
//! Multus writes each element with Go's `json.MarshalIndent(status, "", "    ")` and joins them
//! as `[` + elements joined by `,` + `]`; [`format_network_status`] reproduces those bytes.
//! Fields keep Go's semantics: an empty string/list, `mtu` 0 and `default` false are omitted;
//! `dns` is always written (`"dns": {}` when empty). IPs and gateways are kept as written
//! (Multus has been seen writing `"gateway": ["<nil>"]`); [`NetworkStatus::ip_addrs`] parses them.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::{AnnotationError, from_json, null_as_default};
use crate::names::ANNOTATION_NETWORK_STATUS;

/// One attached interface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStatus {
    /// `ns/nad` for secondary attachments; the CNI network name for the cluster default
    /// network (e.g. `ovn-kubernetes`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Interface name in the pod (e.g. `eth0`, `ovn-udn1`, `net1`); empty = not written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub interface: String,
    /// IP addresses (without prefix length) as written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ips: Vec<String>,
    /// MAC address as written; empty = not written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mac: String,
    /// Interface MTU; 0 = not written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub mtu: i64,
    /// Whether this interface carries the pod's default route; false = not written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub default: bool,
    /// DNS settings from the CNI result; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub dns: NetworkStatusDns,
    /// Device details (SR-IOV, vDPA, vhost-user, memif).
    #[serde(
        rename = "device-info",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub device_info: Option<DeviceInfo>,
    /// Default-route gateways as written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub gateway: Vec<String>,
}

/// DNS settings (`dns`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStatusDns {
    /// Name servers.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nameservers: Vec<String>,
    /// Local domain.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub domain: String,
    /// Search domains.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub search: Vec<String>,
    /// Resolver options.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub options: Vec<String>,
}

/// Device details (`device-info`, version `1.1.0`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// `pci`, `vhost-user`, `memif` or `vdpa`.
    #[serde(
        rename = "type",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub device_type: String,
    /// Device-info spec version.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub version: String,
    /// PCI device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<PciDevice>,
    /// vDPA device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdpa: Option<VdpaDevice>,
    /// vhost-user socket.
    #[serde(
        rename = "vhost-user",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub vhost_user: Option<VhostDevice>,
    /// memif socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memif: Option<MemifDevice>,
}

/// PCI device details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciDevice {
    /// `pci-address`.
    #[serde(
        rename = "pci-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub pci_address: String,
    /// `vhost-net`.
    #[serde(
        rename = "vhost-net",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub vhost_net: String,
    /// `rdma-device`.
    #[serde(
        rename = "rdma-device",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub rdma_device: String,
    /// `pf-pci-address`.
    #[serde(
        rename = "pf-pci-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub pf_pci_address: String,
    /// `representor-device`.
    #[serde(
        rename = "representor-device",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub representor_device: String,
}

/// vDPA device details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VdpaDevice {
    /// `parent-device`.
    #[serde(
        rename = "parent-device",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub parent_device: String,
    /// `driver`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub driver: String,
    /// `path`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub path: String,
    /// `pci-address`.
    #[serde(
        rename = "pci-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub pci_address: String,
    /// `pf-pci-address`.
    #[serde(
        rename = "pf-pci-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub pf_pci_address: String,
    /// `representor-device`.
    #[serde(
        rename = "representor-device",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub representor_device: String,
}

/// vhost-user socket details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VhostDevice {
    /// `client` or `server`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mode: String,
    /// Socket path.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub path: String,
}

/// memif socket details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemifDevice {
    /// `master` or `slave`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub role: String,
    /// Socket path.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub path: String,
    /// `ethernet`, `ip` or `punt`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mode: String,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl NetworkStatus {
    /// The entry's IPs parsed as addresses; an error names the entry and the bad value.
    pub fn ip_addrs(&self) -> Result<Vec<IpAddr>, AnnotationError> {
        self.ips
            .iter()
            .map(|text| {
                text.parse::<IpAddr>().map_err(|_| {
                    AnnotationError::field(
                        ANNOTATION_NETWORK_STATUS,
                        format!("network {:?} interface {:?}", self.name, self.interface),
                        "ips",
                        text,
                        "not an IP address",
                    )
                })
            })
            .collect()
    }
}

/// Parses the annotation value: a JSON array of elements (`null` is an empty list).
pub fn parse_network_status(value: &str) -> Result<Vec<NetworkStatus>, AnnotationError> {
    let statuses: Option<Vec<NetworkStatus>> = from_json(ANNOTATION_NETWORK_STATUS, value)?;
    Ok(statuses.unwrap_or_default())
}

/// Formats the annotation value byte for byte as Multus writes it.
pub fn format_network_status(statuses: &[NetworkStatus]) -> Result<String, AnnotationError> {
    let elements = statuses
        .iter()
        .map(|status| super::to_go_json_indented(ANNOTATION_NETWORK_STATUS, status))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!("[{}]", elements.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::test_strategies::{ip, text};
    use proptest::prelude::*;

    /// A primary-UDN pod as Multus writes it (spec control-plane §4).
    const PRIMARY_UDN_POD: &str = r#"[{
    "name": "ovn-kubernetes",
    "interface": "eth0",
    "ips": [
        "10.244.1.5"
    ],
    "mac": "0a:58:0a:f4:01:05",
    "dns": {}
},{
    "name": "ovn-kubernetes",
    "interface": "ovn-udn1",
    "ips": [
        "203.203.2.5"
    ],
    "mac": "0a:58:cb:cb:02:05",
    "default": true,
    "dns": {}
},{
    "name": "green/green-secondary-network",
    "interface": "net1",
    "ips": [
        "100.10.1.7",
        "fd00:10::7"
    ],
    "mac": "0a:58:64:0a:01:07",
    "mtu": 1400,
    "dns": {
        "nameservers": [
            "10.96.0.10"
        ],
        "search": [
            "green.svc.cluster.local"
        ]
    },
    "device-info": {
        "type": "pci",
        "version": "1.1.0",
        "pci": {
            "pci-address": "0000:03:00.1"
        }
    },
    "gateway": [
        "\u003cnil\u003e"
    ]
}]"#;

    #[test]
    fn parses_and_reformats_multus_bytes() {
        let statuses = parse_network_status(PRIMARY_UDN_POD).unwrap();
        assert_eq!(statuses.len(), 3);
        assert_eq!(
            statuses
                .iter()
                .filter(|s| s.default)
                .map(|s| s.interface.as_str())
                .collect::<Vec<_>>(),
            vec!["ovn-udn1"]
        );
        let secondary = &statuses[2];
        assert_eq!(secondary.name, "green/green-secondary-network");
        assert_eq!(secondary.mtu, 1400);
        assert_eq!(
            secondary.ip_addrs().unwrap(),
            vec![
                "100.10.1.7".parse::<IpAddr>().unwrap(),
                "fd00:10::7".parse().unwrap()
            ]
        );
        assert_eq!(
            secondary.device_info.as_ref().and_then(|d| d.pci.as_ref()),
            Some(&PciDevice {
                pci_address: "0000:03:00.1".to_owned(),
                ..PciDevice::default()
            })
        );
        // Go escapes `<` and `>`: Multus writes `["<nil>"]` as `["\u003cnil\u003e"]`.
        assert_eq!(secondary.gateway, vec!["<nil>".to_owned()]);
        assert_eq!(format_network_status(&statuses).unwrap(), PRIMARY_UDN_POD);
    }

    #[test]
    fn compact_input_and_nulls_are_accepted() {
        let compact = r#"[{"name":"ovn-kubernetes","interface":"eth0","ips":["10.244.1.5"],"mac":"0a:58:0a:f4:01:05","default":true,"dns":{}},{"name":"default/br0","ips":null,"gateway":null}]"#;
        let statuses = parse_network_status(compact).unwrap();
        assert_eq!(statuses[1].name, "default/br0");
        assert!(statuses[1].ips.is_empty());
        assert_eq!(parse_network_status("null").unwrap(), vec![]);
        assert_eq!(parse_network_status("[]").unwrap(), vec![]);
        assert_eq!(format_network_status(&[]).unwrap(), "[]");
    }

    #[test]
    fn errors_name_annotation_and_entry() {
        for bad in ["", "{}", r#"[{"name":1}]"#, "[", r#"{"name":"x"}"#] {
            assert_eq!(
                parse_network_status(bad).unwrap_err().to_string(),
                "annotation k8s.v1.cni.cncf.io/network-status: value is not JSON of the expected shape",
                "{bad}"
            );
        }
        let status = NetworkStatus {
            name: "ns/nad".to_owned(),
            interface: "net1".to_owned(),
            ips: vec!["<nil>".to_owned()],
            ..NetworkStatus::default()
        };
        assert_eq!(
            status.ip_addrs().unwrap_err().to_string(),
            "annotation k8s.v1.cni.cncf.io/network-status: network \"ns/nad\" interface \"net1\": \
             field ips \"<nil>\": not an IP address"
        );
    }

    #[test]
    fn go_html_escaping_is_applied() {
        let status = NetworkStatus {
            name: "a&b".to_owned(),
            gateway: vec!["<nil>".to_owned()],
            ..NetworkStatus::default()
        };
        assert_eq!(
            format_network_status(&[status]).unwrap(),
            "[{\n    \"name\": \"a\\u0026b\",\n    \"dns\": {},\n    \"gateway\": [\n        \"\\u003cnil\\u003e\"\n    ]\n}]"
        );
    }

    fn status_strategy() -> impl Strategy<Value = NetworkStatus> {
        let strings = || proptest::collection::vec(text(), 0..3);
        let dns = (
            strings(),
            proptest::option::of(text()),
            strings(),
            strings(),
        )
            .prop_map(|(nameservers, domain, search, options)| NetworkStatusDns {
                nameservers,
                domain: domain.unwrap_or_default(),
                search,
                options,
            });
        let device =
            proptest::option::of((text(), text()).prop_map(|(device_type, path)| DeviceInfo {
                device_type,
                version: "1.1.0".to_owned(),
                vhost_user: Some(VhostDevice {
                    mode: "client".to_owned(),
                    path,
                }),
                ..DeviceInfo::default()
            }));
        (
            text(),
            proptest::option::of(text()),
            proptest::collection::vec(ip().prop_map(|ip| ip.to_string()), 0..3),
            any::<u16>(),
            any::<bool>(),
            dns,
            device,
            strings(),
        )
            .prop_map(
                |(name, interface, ips, mtu, default, dns, device_info, gateway)| NetworkStatus {
                    name,
                    interface: interface.unwrap_or_default(),
                    ips,
                    mac: String::new(),
                    mtu: i64::from(mtu),
                    default,
                    dns,
                    device_info,
                    gateway,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics(value in ".{0,64}") {
            let _ = parse_network_status(&value);
        }

        #[test]
        fn format_parse_format_is_stable(
            statuses in proptest::collection::vec(status_strategy(), 0..4),
        ) {
            let formatted = format_network_status(&statuses).unwrap();
            let parsed = parse_network_status(&formatted).unwrap();
            prop_assert_eq!(&parsed, &statuses);
            prop_assert_eq!(format_network_status(&parsed).unwrap(), formatted);
        }
    }
}
