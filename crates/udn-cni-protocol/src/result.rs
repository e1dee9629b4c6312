//! The ADD result, CNI 1.x types (upstream `types/100.Result`), and its conversions.
//!
//! Go writes a 1.x result through a map (its `MarshalJSON` re-encodes a
//! `map[string]interface{}` to drop an empty `dns`), so every object's keys come out
//! sorted. The fields below are declared in that sorted order, which makes serde's output
//! byte-identical; empty lists and an empty `dns` are omitted, as Go's `omitempty`.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::cidr::IpCidr;
use crate::go_json::{self, null_as_default};
use crate::result_040::Result040;
use crate::versions::CniVersion;

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_empty(text: &str) -> bool {
    text.is_empty()
}

/// A CNI 1.0/1.1 result (the types did not change between the two).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CniResult {
    /// Absent on the server -> shim wire (upstream's server never sets it); the plugin
    /// sets the requested version when printing.
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cni_version: Option<String>,
    /// DNS settings (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "Dns::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub dns: Dns,
    /// Every interface the attachment created, host side included.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub interfaces: Vec<Interface>,
    /// Addresses, each pointing at an interface by index.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub ips: Vec<IpConfig>,
    /// Routes the attachment created.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub routes: Vec<Route>,
}

/// `interfaces[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// Hardware address (if any).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub mac: String,
    /// MTU (0 = not reported).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtu: u32,
    /// Interface name.
    pub name: String,
    /// PCI ID of the device behind it (SR-IOV).
    #[serde(rename = "pciID", default, skip_serializing_if = "is_empty")]
    pub pci_id: String,
    /// The netns path for interfaces in the container; empty on the host.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub sandbox: String,
    /// A socket file for this interface (vhost-user and the like).
    #[serde(rename = "socketPath", default, skip_serializing_if = "is_empty")]
    pub socket_path: String,
}

impl Interface {
    /// A host-side interface (no sandbox).
    pub fn host(name: impl Into<String>, mac: impl Into<String>) -> Interface {
        Interface {
            name: name.into(),
            mac: mac.into(),
            ..Default::default()
        }
    }

    /// An interface inside the container's netns.
    pub fn in_sandbox(
        name: impl Into<String>,
        mac: impl Into<String>,
        sandbox: impl Into<String>,
    ) -> Interface {
        Interface {
            name: name.into(),
            mac: mac.into(),
            sandbox: sandbox.into(),
            ..Default::default()
        }
    }
}

/// `ips[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig {
    /// The address with its prefix length.
    pub address: IpCidr,
    /// The subnet's default gateway, if one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Index into `interfaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<u32>,
}

/// `routes[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// Advertised MSS (0 = unset).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub advmss: u32,
    /// Destination.
    pub dst: IpCidr,
    /// Next hop; unset means the `ips[].gateway`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    /// Path MTU (0 = unset).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtu: u32,
    /// Route priority, lower wins (0 = unset).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: u32,
    /// Scope (global 0, link 253, host 254), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u32>,
    /// Routing table, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
}

impl Route {
    /// A route to `dst`, optionally via `gw`, nothing else set.
    pub fn new(dst: IpCidr, gw: Option<IpAddr>) -> Route {
        Route {
            advmss: 0,
            dst,
            gw,
            mtu: 0,
            priority: 0,
            scope: None,
            table: None,
        }
    }
}

/// `dns`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dns {
    /// Local domain.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub domain: String,
    /// Name servers, in priority order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub nameservers: Vec<String>,
    /// Resolver options.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub options: Vec<String>,
    /// Search domains, in priority order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub search: Vec<String>,
}

impl Dns {
    /// True when nothing is set (the CNI library then leaves `dns` out).
    pub fn is_empty(&self) -> bool {
        self.domain.is_empty()
            && self.nameservers.is_empty()
            && self.options.is_empty()
            && self.search.is_empty()
    }
}

/// A result in the shape of one spec version, ready to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionedResult {
    /// 0.4.0 shape.
    V0_4(Result040),
    /// 1.0.0 or 1.1.0 shape (with `cniVersion` set).
    V1(CniResult),
}

impl VersionedResult {
    /// What the CNI library prints: `json.MarshalIndent(result, "", "    ")`, no newline.
    pub fn to_printed_json(&self) -> Vec<u8> {
        // Strings, integers and addresses only: serializing cannot fail.
        match self {
            VersionedResult::V0_4(result) => go_json::to_vec_indented(result),
            VersionedResult::V1(result) => go_json::to_vec_indented(result),
        }
        .unwrap_or_default()
    }
}

impl CniResult {
    /// The result in `version`'s shape with `cniVersion` set to it (the CNI library's
    /// `GetAsVersion`): 1.x keeps every field, 0.4.0 drops the interfaces' `mtu`,
    /// `socketPath` and `pciID` and gives each IP a `version` of `"4"` or `"6"`.
    pub fn to_version(&self, version: CniVersion) -> VersionedResult {
        match version {
            CniVersion::V0_4_0 => VersionedResult::V0_4(Result040::from_current(self, version)),
            CniVersion::V1_0_0 | CniVersion::V1_1_0 => {
                let mut result = self.clone();
                result.cni_version = Some(version.as_str().to_owned());
                VersionedResult::V1(result)
            }
        }
    }

    /// Upstream's `mergePrimaryUDNResponse` (privileged mode): the primary UDN's
    /// interfaces, IPs and routes are appended to this (the default network's) result,
    /// and each appended IP's `interface` index is shifted by the number of interfaces
    /// this result had, so it still points at the same interface.
    pub fn merge_primary_udn(&mut self, primary: CniResult) {
        let shift = u32::try_from(self.interfaces.len()).unwrap_or(u32::MAX);
        self.routes.extend(primary.routes);
        self.interfaces.extend(primary.interfaces);
        self.ips.extend(primary.ips.into_iter().map(|mut ip| {
            ip.interface = ip.interface.map(|index| index.saturating_add(shift));
            ip
        }));
    }

    /// The JSON the server puts in `Response.Result` (compact, Go's bytes).
    pub fn to_json(&self) -> Vec<u8> {
        go_json::to_vec(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cidr(text: &str) -> IpCidr {
        text.parse().unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// getCNIResult for the default network: host veth, container eth0, one IP on eth0.
    fn default_network() -> CniResult {
        CniResult {
            interfaces: vec![
                Interface::host("3f1b2c4d5e6f7a8", "aa:bb:cc:dd:ee:01"),
                Interface::in_sandbox("eth0", "0a:58:0a:f4:01:05", "/var/run/netns/cni-1"),
            ],
            ips: vec![IpConfig {
                address: cidr("10.244.1.5/24"),
                gateway: None,
                interface: Some(1),
            }],
            ..Default::default()
        }
    }

    fn primary_udn() -> CniResult {
        CniResult {
            interfaces: vec![
                Interface::host("3f1b2c4d5e6f7_3", "be:bb:cc:dd:ee:02"),
                Interface::in_sandbox("ovn-udn1", "0a:58:0a:80:01:05", "/var/run/netns/cni-1"),
            ],
            ips: vec![IpConfig {
                address: cidr("10.128.1.5/24"),
                gateway: Some(ip("10.128.1.1")),
                interface: Some(1),
            }],
            routes: vec![Route::new(cidr("0.0.0.0/0"), Some(ip("10.128.1.1")))],
            ..Default::default()
        }
    }

    #[test]
    fn wire_form_has_sorted_keys_and_no_version() {
        assert_eq!(
            String::from_utf8(default_network().to_json()).unwrap(),
            r#"{"interfaces":[{"mac":"aa:bb:cc:dd:ee:01","name":"3f1b2c4d5e6f7a8"},{"mac":"0a:58:0a:f4:01:05","name":"eth0","sandbox":"/var/run/netns/cni-1"}],"ips":[{"address":"10.244.1.5/24","interface":1}]}"#
        );
        // cmdDel's `&current.Result{}`.
        assert_eq!(CniResult::default().to_json(), b"{}");
    }

    #[test]
    fn merge_matches_upstreams_dual_interface_result() {
        let mut merged = default_network();
        merged.merge_primary_udn(primary_udn());
        let printed = merged.to_version(CniVersion::V1_1_0).to_printed_json();
        let want = r#"{
    "cniVersion": "1.1.0",
    "interfaces": [
        {
            "mac": "aa:bb:cc:dd:ee:01",
            "name": "3f1b2c4d5e6f7a8"
        },
        {
            "mac": "0a:58:0a:f4:01:05",
            "name": "eth0",
            "sandbox": "/var/run/netns/cni-1"
        },
        {
            "mac": "be:bb:cc:dd:ee:02",
            "name": "3f1b2c4d5e6f7_3"
        },
        {
            "mac": "0a:58:0a:80:01:05",
            "name": "ovn-udn1",
            "sandbox": "/var/run/netns/cni-1"
        }
    ],
    "ips": [
        {
            "address": "10.244.1.5/24",
            "interface": 1
        },
        {
            "address": "10.128.1.5/24",
            "gateway": "10.128.1.1",
            "interface": 3
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0",
            "gw": "10.128.1.1"
        }
    ]
}"#;
        assert_eq!(String::from_utf8(printed).unwrap(), want);
    }

    #[test]
    fn merge_keeps_ips_without_an_interface_index() {
        let mut merged = default_network();
        let mut primary = primary_udn();
        primary.ips[0].interface = None;
        merged.merge_primary_udn(primary);
        assert_eq!(merged.ips[1].interface, None);
        assert_eq!(merged.ips[0].interface, Some(1));
    }

    #[test]
    fn version_1_0_keeps_every_field() {
        let mut result = default_network();
        result.interfaces[1].mtu = 1400;
        result.dns.nameservers = vec!["10.96.0.10".into()];
        let VersionedResult::V1(printed) = result.to_version(CniVersion::V1_0_0) else {
            panic!("1.0.0 is a 1.x shape");
        };
        assert_eq!(printed.cni_version.as_deref(), Some("1.0.0"));
        assert_eq!(printed.interfaces[1].mtu, 1400);
        let json = String::from_utf8(go_json::to_vec(&printed).unwrap()).unwrap();
        assert!(
            json.starts_with(r#"{"cniVersion":"1.0.0","dns":{"nameservers":["10.96.0.10"]},"#),
            "{json}"
        );
    }

    #[test]
    fn go_nulls_parse_as_empty() {
        let parsed: CniResult =
            serde_json::from_str(r#"{"interfaces":null,"ips":null,"routes":null,"dns":null}"#)
                .unwrap();
        assert_eq!(parsed, CniResult::default());
    }

    #[test]
    fn every_route_field_in_sorted_order() {
        let route = Route {
            advmss: 1,
            dst: cidr("10.0.0.0/8"),
            gw: Some(ip("10.0.0.1")),
            mtu: 2,
            priority: 3,
            scope: Some(0),
            table: Some(100),
        };
        assert_eq!(
            String::from_utf8(go_json::to_vec(&route).unwrap()).unwrap(),
            r#"{"advmss":1,"dst":"10.0.0.0/8","gw":"10.0.0.1","mtu":2,"priority":3,"scope":0,"table":100}"#
        );
    }

    fn arb_cidr() -> impl Strategy<Value = IpCidr> {
        prop_oneof![
            (any::<[u8; 4]>(), 0u8..=32)
                .prop_map(|(a, p)| IpCidr::new(IpAddr::from(a), p).unwrap()),
            (any::<[u8; 16]>(), 0u8..=128)
                .prop_map(|(a, p)| IpCidr::new(IpAddr::from(a), p).unwrap()),
        ]
    }

    fn arb_result() -> impl Strategy<Value = CniResult> {
        let iface = (
            "[a-z0-9_-]{1,15}",
            "[0-9a-f:]{0,17}",
            0u32..9000,
            "[a-z/]{0,10}",
        )
            .prop_map(|(name, mac, mtu, sandbox)| Interface {
                name,
                mac,
                mtu,
                sandbox,
                ..Default::default()
            });
        let ipc = (
            arb_cidr(),
            proptest::option::of(any::<[u8; 4]>()),
            proptest::option::of(0u32..8),
        )
            .prop_map(|(address, gw, interface)| IpConfig {
                address,
                gateway: gw.map(IpAddr::from),
                interface,
            });
        let route = (
            arb_cidr(),
            proptest::option::of(any::<[u8; 16]>()),
            0u32..9000,
            proptest::option::of(0u32..255),
        )
            .prop_map(|(dst, gw, mtu, table)| Route {
                mtu,
                table,
                ..Route::new(dst, gw.map(IpAddr::from))
            });
        (
            proptest::collection::vec(iface, 0..4),
            proptest::collection::vec(ipc, 0..4),
            proptest::collection::vec(route, 0..3),
            proptest::collection::vec("[0-9.]{1,15}", 0..2),
        )
            .prop_map(|(interfaces, ips, routes, nameservers)| CniResult {
                cni_version: None,
                dns: Dns {
                    nameservers,
                    ..Default::default()
                },
                interfaces,
                ips,
                routes,
            })
    }

    proptest! {
        #[test]
        fn wire_round_trip(result in arb_result()) {
            let back: CniResult = serde_json::from_slice(&result.to_json()).unwrap();
            prop_assert_eq!(back, result);
        }

        #[test]
        fn merge_shifts_every_appended_index(a in arb_result(), b in arb_result()) {
            let mut merged = a.clone();
            merged.merge_primary_udn(b.clone());
            prop_assert_eq!(merged.interfaces.len(), a.interfaces.len() + b.interfaces.len());
            prop_assert_eq!(&merged.ips[..a.ips.len()], &a.ips[..]);
            for (got, orig) in merged.ips[a.ips.len()..].iter().zip(&b.ips) {
                prop_assert_eq!(got.interface, orig.interface.map(|i| i + a.interfaces.len() as u32));
                prop_assert_eq!(got.address, orig.address);
            }
            prop_assert_eq!(merged.routes.len(), a.routes.len() + b.routes.len());
        }
    }
}
