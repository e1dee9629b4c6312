//! The NAD `spec.config` string, byte for byte as upstream: a Go `map[string]interface{}`
//! marshalled by `encoding/json`, so keys are sorted, only the keys upstream sets appear,
//! and strings use Go's escaping (HTML characters as `\u003c` etc.).

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::netconf::{EvpnNetConf, NetConf, VrfNetConf};

enum JsonValue {
    Str(String),
    Int(i64),
    True,
    Raw(String),
}

/// Render the CNI config JSON of a NAD from a rendered [`NetConf`]:
/// `cniVersion`, `type`, `name`, `netAttachDefName`, `topology` and `role` always;
/// `mtu` if > 0, `vlanID` if != 0, `allowPersistentIPs` if true, every other key if
/// non-empty.
pub fn cni_config_json(conf: &NetConf) -> String {
    let mut map: BTreeMap<&'static str, JsonValue> = BTreeMap::new();
    for (key, value) in [
        ("cniVersion", &conf.cni_version),
        ("type", &conf.plugin_type),
        ("name", &conf.name),
        ("netAttachDefName", &conf.nad_name),
        ("topology", &conf.topology),
        ("role", &conf.role),
    ] {
        map.insert(key, JsonValue::Str(value.clone()));
    }
    if conf.mtu > 0 {
        map.insert("mtu", JsonValue::Int(conf.mtu));
    }
    if conf.vlan_id != 0 {
        map.insert("vlanID", JsonValue::Int(conf.vlan_id));
    }
    if conf.allow_persistent_ips {
        map.insert("allowPersistentIPs", JsonValue::True);
    }
    for (key, value) in [
        ("joinSubnet", &conf.join_subnet),
        ("transitSubnet", &conf.transit_subnet),
        ("subnets", &conf.subnets),
        ("physicalNetworkName", &conf.physical_network_name),
        ("excludeSubnets", &conf.exclude_subnets),
        ("reservedSubnets", &conf.reserved_subnets),
        ("infrastructureSubnets", &conf.infrastructure_subnets),
        ("defaultGatewayIPs", &conf.default_gateway_ips),
        ("transport", &conf.transport),
        ("outboundSNAT", &conf.outbound_snat),
        ("uplink", &conf.uplink),
    ] {
        if !value.is_empty() {
            map.insert(key, JsonValue::Str(value.clone()));
        }
    }
    if let Some(evpn) = &conf.evpn {
        map.insert("evpn", JsonValue::Raw(evpn_json(evpn)));
    }
    let mut out = String::from("{");
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_go_string(&mut out, key);
        out.push(':');
        match value {
            JsonValue::Str(s) => push_go_string(&mut out, s),
            JsonValue::Int(n) => {
                let _ = write!(out, "{n}");
            }
            JsonValue::True => out.push_str("true"),
            JsonValue::Raw(raw) => out.push_str(raw),
        }
    }
    out.push('}');
    out
}

/// `EVPNConfig` in Go struct field order: `vtep`, `macVRF`, `ipVRF`.
fn evpn_json(evpn: &EvpnNetConf) -> String {
    let mut out = String::from("{\"vtep\":");
    push_go_string(&mut out, &evpn.vtep);
    for (key, vrf) in [("macVRF", &evpn.mac_vrf), ("ipVRF", &evpn.ip_vrf)] {
        if let Some(vrf) = vrf {
            let _ = write!(out, ",\"{key}\":");
            push_vrf(&mut out, vrf);
        }
    }
    out.push('}');
    out
}

/// `VRFConfig` in Go struct field order: `vni`, `routeTarget` (omitempty), `vid` (omitempty).
fn push_vrf(out: &mut String, vrf: &VrfNetConf) {
    let _ = write!(out, "{{\"vni\":{}", vrf.vni);
    if !vrf.route_target.is_empty() {
        out.push_str(",\"routeTarget\":");
        push_go_string(out, &vrf.route_target);
    }
    if vrf.vid != 0 {
        let _ = write!(out, ",\"vid\":{}", vrf.vid);
    }
    out.push('}');
}

/// A JSON string as Go's `encoding/json` writes it (with HTML escaping).
fn push_go_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_use_go_escaping() {
        let mut out = String::new();
        push_go_string(&mut out, "a<b>&\"\\\n\u{1}\u{2028}é");
        assert_eq!(out, r#""a\u003cb\u003e\u0026\"\\\n\u0001\u2028é""#);
    }

    #[test]
    fn evpn_block_in_struct_order() {
        let evpn = EvpnNetConf {
            vtep: "v".into(),
            mac_vrf: Some(VrfNetConf {
                vni: 100,
                route_target: String::new(),
                vid: 12,
            }),
            ip_vrf: Some(VrfNetConf {
                vni: 200,
                route_target: "65000:200".into(),
                vid: 0,
            }),
        };
        assert_eq!(
            evpn_json(&evpn),
            r#"{"vtep":"v","macVRF":{"vni":100,"vid":12},"ipVRF":{"vni":200,"routeTarget":"65000:200"}}"#
        );
    }
}
