//! `spec.config` -> [`NetConf`], as upstream `config.ParseNetConf`: a single config or a
//! one-plugin config list, unknown keys ignored, keys matched case-insensitively (Go
//! `encoding/json`), JSON `null` leaves a field unset, a missing `mtu` takes the cluster
//! default, and a config without `topology` is the default network.

use serde_json::{Map, Value};

use super::{NameFieldsError, NetConf};
use crate::names::{CNI_TYPE, DEFAULT_NETWORK_NAME};

/// Why a NAD config was not accepted. Type errors name the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetConfParseError {
    /// The text is not JSON.
    #[error("invalid JSON in CNI config: {reason}")]
    Json {
        /// The JSON parser's message.
        reason: String,
    },
    /// The JSON is not an object.
    #[error("json: cannot unmarshal {kind} into Go value of type types.NetConf")]
    NotObject {
        /// The JSON kind found.
        kind: String,
    },
    /// A known field has the wrong JSON type.
    #[error(
        "json: cannot unmarshal {found} into Go struct field NetConf.{field} of type {expected}"
    )]
    FieldType {
        /// The field (JSON key as upstream spells it).
        field: &'static str,
        /// The JSON value kind found (`string`, `number 1.5`, `object`, ...).
        found: String,
        /// The Go type expected.
        expected: &'static str,
    },
    /// A nested field (`evpn`, `ipam`, `runtimeConfig`, ...) does not decode.
    #[error("json: cannot unmarshal NetConf.{field}: {reason}")]
    Nested {
        /// The field.
        field: &'static str,
        /// The decoder's message.
        reason: String,
    },
    /// `type` is not `ovn-k8s-cni-overlay`: not ours, ignore silently.
    #[error("net-attach-def not managed by OVN")]
    NotOvnManaged,
    /// A config list with more than one plugin.
    #[error("CNI plugin chaining is not supported")]
    ChainingNotSupported,
    /// A config list without plugins.
    #[error(
        "error parsing configuration list {}: no plugins found",
        super::subnets::go_quote(name)
    )]
    NoPlugins {
        /// The list name.
        name: String,
    },
    /// A config list the CNI library rejects (`name`, `cniVersion`, `plugins` shape).
    #[error("error parsing configuration list: {reason}")]
    InvalidList {
        /// What is wrong.
        reason: String,
    },
    /// A plugin of a config list without a `type`.
    #[error("failed to parse plugin config {index}: error parsing configuration: missing 'type'")]
    PluginWithoutType {
        /// Plugin index.
        index: usize,
    },
    /// Both a plugin list and a valid single config at top level.
    #[error("CNI config cannot have both a plugin list and a single config")]
    ListAndSingle,
    /// Invalid name fields.
    #[error(transparent)]
    NameFields(#[from] NameFieldsError),
}

impl NetConf {
    /// Parse a NAD `spec.config` (upstream `config.ParseNetConf`). `default_mtu` is used
    /// when the config has no `mtu` key (upstream `Default.MTU`, 1400).
    pub fn parse(config: &str, default_mtu: u32) -> Result<Self, NetConfParseError> {
        let value: Value = serde_json::from_str(config).map_err(|e| NetConfParseError::Json {
            reason: e.to_string(),
        })?;
        let Value::Object(object) = value else {
            return Err(NetConfParseError::NotObject {
                kind: json_kind(&value),
            });
        };
        let has_plugins = object.keys().any(|key| key.eq_ignore_ascii_case("plugins"));
        let mut conf = if has_plugins {
            let conf = parse_list(&object, default_mtu)?;
            if parse_single(&object, default_mtu).is_ok() {
                return Err(NetConfParseError::ListAndSingle);
            }
            conf
        } else {
            parse_single(&object, default_mtu)?
        };
        if conf.topology.is_empty() {
            conf.name = DEFAULT_NETWORK_NAME.to_owned();
        }
        Ok(conf)
    }
}

fn parse_single(
    object: &Map<String, Value>,
    default_mtu: u32,
) -> Result<NetConf, NetConfParseError> {
    let conf = decode_fields(object, default_mtu)?;
    if conf.plugin_type != CNI_TYPE {
        return Err(NetConfParseError::NotOvnManaged);
    }
    conf.check_name_fields()?;
    Ok(conf)
}

fn parse_list(object: &Map<String, Value>, default_mtu: u32) -> Result<NetConf, NetConfParseError> {
    let invalid = |reason: String| NetConfParseError::InvalidList { reason };
    let name = match object.get("name") {
        None => return Err(invalid("no name".to_owned())),
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(invalid(format!("invalid name type {}", go_type(other)))),
    };
    let cni_version = match object.get("cniVersion") {
        None => String::new(),
        Some(Value::String(version)) => version.clone(),
        Some(other) => {
            return Err(invalid(format!(
                "invalid cniVersion type {}",
                go_type(other)
            )));
        }
    };
    let plugins = match object.get("plugins") {
        None => return Err(NetConfParseError::NoPlugins { name }),
        Some(Value::Array(plugins)) if plugins.is_empty() => {
            return Err(invalid("no plugins in list".to_owned()));
        }
        Some(Value::Array(plugins)) => plugins,
        Some(other) => {
            return Err(invalid(format!(
                "invalid 'plugins' type {}",
                go_type(other)
            )));
        }
    };
    for (index, plugin) in plugins.iter().enumerate() {
        let typed = plugin
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        if !typed {
            return Err(NetConfParseError::PluginWithoutType { index });
        }
    }
    let Some(Value::Object(first)) = plugins.first() else {
        return Err(NetConfParseError::PluginWithoutType { index: 0 });
    };
    let mut conf = decode_fields(first, default_mtu)?;
    if conf.plugin_type != CNI_TYPE {
        return Err(NetConfParseError::NotOvnManaged);
    }
    if plugins.len() > 1 {
        return Err(NetConfParseError::ChainingNotSupported);
    }
    conf.name = name;
    conf.cni_version = cni_version;
    conf.check_name_fields()?;
    Ok(conf)
}

/// Decode the known keys in document order (later duplicates win, as in Go).
fn decode_fields(
    object: &Map<String, Value>,
    default_mtu: u32,
) -> Result<NetConf, NetConfParseError> {
    let mut conf = NetConf {
        mtu: i64::from(default_mtu),
        ..NetConf::default()
    };
    for (key, value) in object {
        if value.is_null() {
            continue;
        }
        decode_field(&mut conf, &key.to_ascii_lowercase(), value)?;
    }
    Ok(conf)
}

fn decode_field(conf: &mut NetConf, key: &str, value: &Value) -> Result<(), NetConfParseError> {
    let string_field = match key {
        "cniversion" => Some((&mut conf.cni_version, "cniVersion")),
        "name" => Some((&mut conf.name, "name")),
        "type" => Some((&mut conf.plugin_type, "type")),
        "role" => Some((&mut conf.role, "role")),
        "topology" => Some((&mut conf.topology, "topology")),
        "netattachdefname" => Some((&mut conf.nad_name, "netAttachDefName")),
        "subnets" => Some((&mut conf.subnets, "subnets")),
        "excludesubnets" => Some((&mut conf.exclude_subnets, "excludeSubnets")),
        "reservedsubnets" => Some((&mut conf.reserved_subnets, "reservedSubnets")),
        "infrastructuresubnets" => {
            Some((&mut conf.infrastructure_subnets, "infrastructureSubnets"))
        }
        "joinsubnet" => Some((&mut conf.join_subnet, "joinSubnet")),
        "transitsubnet" => Some((&mut conf.transit_subnet, "transitSubnet")),
        "defaultgatewayips" => Some((&mut conf.default_gateway_ips, "defaultGatewayIPs")),
        "physicalnetworkname" => Some((&mut conf.physical_network_name, "physicalNetworkName")),
        "transport" => Some((&mut conf.transport, "transport")),
        "outboundsnat" => Some((&mut conf.outbound_snat, "outboundSNAT")),
        "uplink" => Some((&mut conf.uplink, "uplink")),
        "deviceid" => Some((&mut conf.device_id, "deviceID")),
        "logfile" => Some((&mut conf.log_file, "logFile")),
        "loglevel" => Some((&mut conf.log_level, "logLevel")),
        _ => None,
    };
    if let Some((slot, field)) = string_field {
        *slot = decode_string(value, field)?;
        return Ok(());
    }
    let int_field = match key {
        "mtu" => Some((&mut conf.mtu, "mtu")),
        "vlanid" => Some((&mut conf.vlan_id, "vlanID")),
        "logfile-maxsize" => Some((&mut conf.log_file_max_size, "logfile-maxsize")),
        "logfile-maxbackups" => Some((&mut conf.log_file_max_backups, "logfile-maxbackups")),
        "logfile-maxage" => Some((&mut conf.log_file_max_age, "logfile-maxage")),
        _ => None,
    };
    if let Some((slot, field)) = int_field {
        *slot = decode_int(value, field)?;
        return Ok(());
    }
    decode_nested(conf, key, value)
}

fn decode_nested(conf: &mut NetConf, key: &str, value: &Value) -> Result<(), NetConfParseError> {
    match key {
        "allowpersistentips" => {
            conf.allow_persistent_ips =
                value
                    .as_bool()
                    .ok_or_else(|| NetConfParseError::FieldType {
                        field: "allowPersistentIPs",
                        found: json_kind(value),
                        expected: "bool",
                    })?;
        }
        "evpn" => conf.evpn = Some(decode_json(value, "evpn")?),
        "capabilities" => conf.capabilities = decode_json(value, "capabilities")?,
        "prevresult" => conf.prev_result = Some(value.clone()),
        "ipam" => {
            let ipam: Map<String, Value> = decode_json(value, "ipam")?;
            if let Some(plugin) = ipam.get("type").filter(|v| !v.is_null()) {
                conf.ipam_type = decode_string(plugin, "ipam.type")?;
            }
        }
        "runtimeconfig" => {
            let runtime: Map<String, Value> = decode_json(value, "runtimeConfig")?;
            if let Some(file) = runtime.get("CNIDeviceInfoFile").filter(|v| !v.is_null()) {
                conf.cni_device_info_file = decode_string(file, "runtimeConfig.CNIDeviceInfoFile")?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn decode_string(value: &Value, field: &'static str) -> Result<String, NetConfParseError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| NetConfParseError::FieldType {
            field,
            found: json_kind(value),
            expected: "string",
        })
}

fn decode_int(value: &Value, field: &'static str) -> Result<i64, NetConfParseError> {
    value.as_i64().ok_or_else(|| NetConfParseError::FieldType {
        field,
        found: json_kind(value),
        expected: "int",
    })
}

fn decode_json<T: serde::de::DeserializeOwned>(
    value: &Value,
    field: &'static str,
) -> Result<T, NetConfParseError> {
    serde_json::from_value(value.clone()).map_err(|e| NetConfParseError::Nested {
        field,
        reason: e.to_string(),
    })
}

/// Go's name for a JSON value kind in unmarshal errors.
fn json_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "bool".to_owned(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".to_owned(),
        Value::Array(_) => "array".to_owned(),
        Value::Object(_) => "object".to_owned(),
    }
}

/// Go's `%T` of a decoded `interface{}`.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(config: &str) -> Result<NetConf, NetConfParseError> {
        NetConf::parse(config, 1400)
    }

    #[test]
    fn parses_rendered_config_and_ignores_unknown_keys() {
        let conf = parse(
            r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"ns_net","netAttachDefName":"ns/net","role":"primary","subnets":"10.1.0.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay","somethingNew":{"a":1}}"#,
        )
        .unwrap();
        assert_eq!(conf.name, "ns_net");
        assert_eq!(conf.mtu, 1500);
        assert!(conf.is_primary());
        assert_eq!(
            conf.topology_kind(),
            Some(crate::crd::NetworkTopology::Layer3)
        );
    }

    #[test]
    fn missing_mtu_takes_default_and_keys_fold_case() {
        let conf = parse(
            r#"{"type":"ovn-k8s-cni-overlay","name":"n","TOPOLOGY":"layer2","netAttachDefName":"a/b","mtu":null,"ipam":{"type":"whereabouts"}}"#,
        )
        .unwrap();
        assert_eq!(conf.mtu, 1400);
        assert_eq!(conf.topology, "layer2");
        assert_eq!(conf.ipam_type, "whereabouts");
    }

    #[test]
    fn no_topology_is_default_network() {
        let conf =
            parse(r#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}"#)
                .unwrap();
        assert_eq!(conf.name, "default");
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            parse(r#"{"type":"ovn-k8s-cni-overlay","mtu":"9000"}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal string into Go struct field NetConf.mtu of type int"
        );
        assert_eq!(
            parse(r#"{"type":"ovn-k8s-cni-overlay","vlanID":1.5}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal number 1.5 into Go struct field NetConf.vlanID of type int"
        );
        assert_eq!(
            parse(r#"{"type":"ovn-k8s-cni-overlay","subnets":["a"]}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal array into Go struct field NetConf.subnets of type string"
        );
    }

    #[test]
    fn rejects_foreign_and_badly_named_configs() {
        assert_eq!(
            parse(r#"{"type":"bridge","name":"x"}"#).unwrap_err(),
            NetConfParseError::NotOvnManaged
        );
        assert_eq!(
            parse(r#"{"type":"ovn-k8s-cni-overlay","name":"x","topology":"layer2"}"#)
                .unwrap_err()
                .to_string(),
            "missing NADName in secondary network netconf x"
        );
        assert_eq!(
            parse(r#"{"type":"ovn-k8s-cni-overlay","name":"default","topology":"layer2","netAttachDefName":"a/b"}"#)
                .unwrap_err()
                .to_string(),
            "invalid name in in secondary network netconf (default)"
        );
        assert!(matches!(
            parse("[]").unwrap_err(),
            NetConfParseError::NotObject { .. }
        ));
        assert!(matches!(
            parse("{").unwrap_err(),
            NetConfParseError::Json { .. }
        ));
    }

    #[test]
    fn config_lists() {
        let conf = parse(
            r#"{"cniVersion":"1.0.0","name":"ns_net","plugins":[{"type":"ovn-k8s-cni-overlay","topology":"layer2","netAttachDefName":"ns/net","subnets":"10.0.0.0/24"}]}"#,
        )
        .unwrap();
        assert_eq!(
            (conf.name.as_str(), conf.cni_version.as_str()),
            ("ns_net", "1.0.0")
        );
        assert_eq!(
            parse(r#"{"name":"l","plugins":[{"type":"ovn-k8s-cni-overlay"},{"type":"tuning"}]}"#)
                .unwrap_err(),
            NetConfParseError::ChainingNotSupported
        );
        assert_eq!(
            parse(r#"{"name":"l","plugins":[]}"#)
                .unwrap_err()
                .to_string(),
            "error parsing configuration list: no plugins in list"
        );
        assert_eq!(
            parse(r#"{"name":"l","plugins":null}"#)
                .unwrap_err()
                .to_string(),
            "error parsing configuration list: invalid 'plugins' type <nil>"
        );
        assert_eq!(
            parse(r#"{"plugins":[{"type":"ovn-k8s-cni-overlay"}]}"#)
                .unwrap_err()
                .to_string(),
            "error parsing configuration list: no name"
        );
        assert_eq!(
            parse(r#"{"name":"l","plugins":[{"mtu":1}]}"#)
                .unwrap_err()
                .to_string(),
            "failed to parse plugin config 0: error parsing configuration: missing 'type'"
        );
        assert_eq!(
            parse(r#"{"name":"l","type":"ovn-k8s-cni-overlay","plugins":[{"type":"ovn-k8s-cni-overlay"}]}"#)
                .unwrap_err(),
            NetConfParseError::ListAndSingle
        );
    }
}
