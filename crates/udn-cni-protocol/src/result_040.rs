//! The 0.4.0 result shape (upstream `types/040.Result`), for configs that ask for 0.4.0.
//!
//! Unlike 1.x, Go writes this struct directly: keys in struct order, and `dns` always
//! present (`omitempty` does not drop a struct), as `"dns": {}` when empty.

use std::net::IpAddr;

use serde::Serialize;

use crate::cidr::IpCidr;
use crate::result::{CniResult, Dns, Route};
use crate::versions::CniVersion;

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_empty(text: &str) -> bool {
    text.is_empty()
}

/// A 0.4.0 result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Result040 {
    /// Always `"0.4.0"` here.
    #[serde(rename = "cniVersion")]
    pub cni_version: String,
    /// Interfaces: name, mac and sandbox only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface040>,
    /// Addresses with their IP version.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpConfig040>,
    /// Routes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route040>,
    /// DNS, always written.
    pub dns: Dns040,
}

/// `interfaces[]` in 0.4.0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interface040 {
    /// Interface name.
    pub name: String,
    /// Hardware address.
    #[serde(skip_serializing_if = "is_empty")]
    pub mac: String,
    /// Netns path, empty on the host.
    #[serde(skip_serializing_if = "is_empty")]
    pub sandbox: String,
}

/// `ips[]` in 0.4.0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpConfig040 {
    /// `"4"` or `"6"`.
    pub version: &'static str,
    /// Index into `interfaces`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<u32>,
    /// Address with prefix length.
    pub address: IpCidr,
    /// Default gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

/// `routes[]` in 0.4.0 (the CNI library's route struct order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route040 {
    /// Destination.
    pub dst: IpCidr,
    /// Next hop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    /// Path MTU.
    #[serde(skip_serializing_if = "is_zero")]
    pub mtu: u32,
    /// Advertised MSS.
    #[serde(skip_serializing_if = "is_zero")]
    pub advmss: u32,
    /// Priority.
    #[serde(skip_serializing_if = "is_zero")]
    pub priority: u32,
    /// Routing table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    /// Scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<u32>,
}

/// `dns` in 0.4.0 (struct order).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Dns040 {
    /// Name servers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// Local domain.
    #[serde(skip_serializing_if = "is_empty")]
    pub domain: String,
    /// Search domains.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// Resolver options.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Result040 {
    /// The CNI library's `convertTo04x`.
    pub(crate) fn from_current(result: &CniResult, version: CniVersion) -> Result040 {
        Result040 {
            cni_version: version.as_str().to_owned(),
            interfaces: result
                .interfaces
                .iter()
                .map(|i| Interface040 {
                    name: i.name.clone(),
                    mac: i.mac.clone(),
                    sandbox: i.sandbox.clone(),
                })
                .collect(),
            ips: result
                .ips
                .iter()
                .map(|ip| IpConfig040 {
                    version: if ip.address.is_ipv4_like() { "4" } else { "6" },
                    interface: ip.interface,
                    address: ip.address,
                    gateway: ip.gateway,
                })
                .collect(),
            routes: result.routes.iter().map(route_040).collect(),
            dns: dns_040(&result.dns),
        }
    }
}

fn route_040(route: &Route) -> Route040 {
    Route040 {
        dst: route.dst,
        gw: route.gw,
        mtu: route.mtu,
        advmss: route.advmss,
        priority: route.priority,
        table: route.table,
        scope: route.scope,
    }
}

fn dns_040(dns: &Dns) -> Dns040 {
    Dns040 {
        nameservers: dns.nameservers.clone(),
        domain: dns.domain.clone(),
        search: dns.search.clone(),
        options: dns.options.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Interface, IpConfig, VersionedResult};

    #[test]
    fn printed_like_the_cni_library() {
        let mut iface = Interface::in_sandbox("eth0", "0a:58:0a:f4:01:05", "/var/run/netns/cni-1");
        iface.mtu = 1400;
        iface.pci_id = "0000:03:00.2".into();
        let result = CniResult {
            interfaces: vec![
                Interface::host("3f1b2c4d5e6f7a8", "aa:bb:cc:dd:ee:01"),
                iface,
            ],
            ips: vec![
                IpConfig {
                    address: "10.244.1.5/24".parse().unwrap(),
                    gateway: Some("10.244.1.1".parse().unwrap()),
                    interface: Some(1),
                },
                IpConfig {
                    address: "fd00:10:244:1::5/64".parse().unwrap(),
                    gateway: None,
                    interface: Some(1),
                },
            ],
            routes: vec![Route {
                mtu: 1300,
                ..Route::new(
                    "10.96.0.0/16".parse().unwrap(),
                    Some("10.244.1.1".parse().unwrap()),
                )
            }],
            ..Default::default()
        };
        let VersionedResult::V0_4(converted) = result.to_version(CniVersion::V0_4_0) else {
            panic!("0.4.0 shape expected");
        };
        let want = r#"{
    "cniVersion": "0.4.0",
    "interfaces": [
        {
            "name": "3f1b2c4d5e6f7a8",
            "mac": "aa:bb:cc:dd:ee:01"
        },
        {
            "name": "eth0",
            "mac": "0a:58:0a:f4:01:05",
            "sandbox": "/var/run/netns/cni-1"
        }
    ],
    "ips": [
        {
            "version": "4",
            "interface": 1,
            "address": "10.244.1.5/24",
            "gateway": "10.244.1.1"
        },
        {
            "version": "6",
            "interface": 1,
            "address": "fd00:10:244:1::5/64"
        }
    ],
    "routes": [
        {
            "dst": "10.96.0.0/16",
            "gw": "10.244.1.1",
            "mtu": 1300
        }
    ],
    "dns": {}
}"#;
        assert_eq!(
            String::from_utf8(VersionedResult::V0_4(converted).to_printed_json()).unwrap(),
            want
        );
    }

    #[test]
    fn empty_result_keeps_dns() {
        let printed = CniResult::default()
            .to_version(CniVersion::V0_4_0)
            .to_printed_json();
        assert_eq!(
            String::from_utf8(printed).unwrap(),
            "{\n    \"cniVersion\": \"0.4.0\",\n    \"dns\": {}\n}"
        );
    }
}
