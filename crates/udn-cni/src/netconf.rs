//! The few network-configuration facts the plugin needs before forwarding: the server
//! re-reads the whole config from the request, so nothing else is interpreted here.
//!
//! Two levels of checks, as upstream: the CNI library's (`skel`: valid JSON, a valid
//! `name`, a supported `cniVersion`) before any command runs, then upstream's
//! `config.ReadCNIConfig` ones (our plugin type, no chaining, a UDN netconf names its NAD)
//! inside the command.

use serde_json::{Map, Value};
use udn_cni_protocol::{CniError, CniVersion, ErrorCode};

/// The plugin `type` upstream accepts.
pub(crate) const PLUGIN_TYPE: &str = "ovn-k8s-cni-overlay";

/// What the plugin reads from stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StdinConfig {
    /// `name` (the list's for a config list).
    pub(crate) name: String,
    /// `cniVersion`, resolved to a supported version.
    pub(crate) version: CniVersion,
    /// The plugin object: the config itself, or a config list's first plugin.
    plugin: Map<String, Value>,
    /// Number of plugins when stdin is a config list.
    list_len: Option<usize>,
    /// For a list: whether the top level also reads as a single config of ours.
    list_is_also_single: bool,
}

impl StdinConfig {
    /// The CNI library's checks: JSON object, non-empty valid `name`, string `cniVersion`
    /// naming a supported version.
    pub(crate) fn parse(bytes: &[u8]) -> Result<StdinConfig, CniError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|err| {
            CniError::new(
                ErrorCode::Decode,
                format!("error unmarshall network config: {err}"),
            )
        })?;
        let top = match value {
            Value::Object(map) => map,
            // Go decodes `null` into a struct as "nothing set", so the name is missing.
            Value::Null => Map::new(),
            other => {
                return Err(CniError::new(
                    ErrorCode::Decode,
                    format!(
                        "error unmarshall network config: expected an object, found {}",
                        kind(&other)
                    ),
                ));
            }
        };
        let name = string_field(
            &top,
            "name",
            ErrorCode::Decode,
            "error unmarshall network config",
        )?;
        validate_network_name(&name)?;
        let version_text = string_field(
            &top,
            "cniVersion",
            ErrorCode::Decode,
            "decoding version from network config",
        )?;
        // The CNI library reads an absent version as 0.1.0.
        let version_text = if version_text.is_empty() {
            "0.1.0".to_owned()
        } else {
            version_text
        };
        let version = CniVersion::negotiate(&version_text)?;

        let (plugin, list_len, list_is_also_single) = match top.get("plugins") {
            Some(Value::Array(plugins)) => {
                let first = match plugins.first() {
                    Some(Value::Object(first)) => first.clone(),
                    _ => Map::new(),
                };
                let also_single = top.get("type").and_then(Value::as_str) == Some(PLUGIN_TYPE);
                (first, Some(plugins.len()), also_single)
            }
            _ => (top, None, false),
        };
        Ok(StdinConfig {
            name,
            version,
            plugin,
            list_len,
            list_is_also_single,
        })
    }

    /// Upstream's `ParseNetConf` refusals, with its texts: not our plugin type, chaining,
    /// a config that is both a list and a single config, a UDN netconf without
    /// `netAttachDefName` or with a reserved name.
    pub(crate) fn check_ours(&self) -> Result<(), String> {
        if self.list_len == Some(0) {
            return Err(format!(
                "error parsing configuration list \"{}\": no plugins found",
                self.name
            ));
        }
        if self.str_field("type") != PLUGIN_TYPE {
            return Err("net-attach-def not managed by OVN".to_owned());
        }
        if self.list_len.is_some_and(|n| n > 1) {
            return Err("CNI plugin chaining is not supported".to_owned());
        }
        if self.list_is_also_single {
            return Err("CNI config cannot have both a plugin list and a single config".to_owned());
        }
        if !self.str_field("topology").is_empty() {
            if self.str_field("netAttachDefName").is_empty() {
                return Err(format!(
                    "missing NADName in secondary network netconf {}",
                    self.name
                ));
            }
            if matches!(self.name.as_str(), "default" | "ovn-kubernetes") {
                return Err(format!(
                    "invalid name in in secondary network netconf ({})",
                    self.name
                ));
            }
        }
        Ok(())
    }

    /// `logFile`: where the plugin also writes its log lines.
    pub(crate) fn log_file(&self) -> Option<&str> {
        Some(self.str_field("logFile")).filter(|s| !s.is_empty())
    }

    /// `runtimeConfig.CNIDeviceInfoFile` (Multus, for SR-IOV devices).
    pub(crate) fn device_info_file(&self) -> Option<&str> {
        self.plugin
            .get("runtimeConfig")
            .and_then(|rc| rc.get("CNIDeviceInfoFile"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    fn str_field(&self, key: &str) -> &str {
        self.plugin
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// A string field, absent or `null` = empty; any other type is a decode error.
fn string_field(
    map: &Map<String, Value>,
    key: &str,
    code: ErrorCode,
    context: &str,
) -> Result<String, CniError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(CniError::new(
            code,
            format!("{context}: {key} must be a string, found {}", kind(other)),
        )),
    }
}

/// The CNI library's `ValidateNetworkName`: `[a-zA-Z0-9][a-zA-Z0-9_.-]*`.
fn validate_network_name(name: &str) -> Result<(), CniError> {
    if name.is_empty() {
        return Err(CniError::new(
            ErrorCode::InvalidNetworkConfig,
            "missing network name",
        ));
    }
    let mut bytes = name.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric());
    if !first_ok || !bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        return Err(CniError::new(
            ErrorCode::InvalidNetworkConfig,
            "invalid characters found in network name",
        )
        .with_details(name));
    }
    Ok(())
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT_CONF: &str = r#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{},"dns":{},"logFile":"/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log","logLevel":"4","logfile-maxsize":100,"logfile-maxbackups":5,"logfile-maxage":5,"runtimeConfig":{}}"#;

    fn err(bytes: &str) -> CniError {
        StdinConfig::parse(bytes.as_bytes()).unwrap_err()
    }

    #[test]
    fn upstreams_default_conf_file() {
        let conf = StdinConfig::parse(DEFAULT_CONF.as_bytes()).unwrap();
        assert_eq!(conf.name, "ovn-kubernetes");
        assert_eq!(conf.version, CniVersion::V1_1_0);
        assert_eq!(
            conf.log_file(),
            Some("/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log")
        );
        assert_eq!(conf.device_info_file(), None);
        conf.check_ours().unwrap();
    }

    #[test]
    fn multus_udn_netconf_with_device_info() {
        let conf = StdinConfig::parse(
            br#"{"cniVersion":"1.0.0","name":"ns_net","type":"ovn-k8s-cni-overlay","topology":"layer2","netAttachDefName":"ns/net","role":"primary","runtimeConfig":{"CNIDeviceInfoFile":"/var/run/k8s.cni.cncf.io/devinfo/x.json"}}"#,
        )
        .unwrap();
        assert_eq!(conf.version, CniVersion::V1_0_0);
        assert_eq!(
            conf.device_info_file(),
            Some("/var/run/k8s.cni.cncf.io/devinfo/x.json")
        );
        conf.check_ours().unwrap();
    }

    #[test]
    fn config_lists_take_the_first_plugin() {
        let list = r#"{"cniVersion":"0.4.0","name":"ns_net","plugins":[{"type":"ovn-k8s-cni-overlay","topology":"layer3","netAttachDefName":"ns/net","logFile":"/tmp/l"}]}"#;
        let conf = StdinConfig::parse(list.as_bytes()).unwrap();
        assert_eq!(conf.version, CniVersion::V0_4_0);
        assert_eq!(conf.log_file(), Some("/tmp/l"));
        conf.check_ours().unwrap();
        let chained = r#"{"cniVersion":"1.1.0","name":"n","plugins":[{"type":"ovn-k8s-cni-overlay"},{"type":"tuning"}]}"#;
        assert_eq!(
            StdinConfig::parse(chained.as_bytes())
                .unwrap()
                .check_ours()
                .unwrap_err(),
            "CNI plugin chaining is not supported"
        );
        let empty = r#"{"cniVersion":"1.1.0","name":"n","plugins":[]}"#;
        assert_eq!(
            StdinConfig::parse(empty.as_bytes())
                .unwrap()
                .check_ours()
                .unwrap_err(),
            "error parsing configuration list \"n\": no plugins found"
        );
        let both = r#"{"cniVersion":"1.1.0","name":"n","type":"ovn-k8s-cni-overlay","plugins":[{"type":"ovn-k8s-cni-overlay"}]}"#;
        assert_eq!(
            StdinConfig::parse(both.as_bytes())
                .unwrap()
                .check_ours()
                .unwrap_err(),
            "CNI config cannot have both a plugin list and a single config"
        );
    }

    #[test]
    fn library_level_errors_and_codes() {
        let e = err(r#"{"cniVersion":"1.1.0","name":"n""#);
        assert_eq!(e.code, ErrorCode::Decode);
        assert!(
            e.msg.starts_with("error unmarshall network config: "),
            "{}",
            e.msg
        );
        assert_eq!(err("").code, ErrorCode::Decode);
        assert_eq!(err("[1]").code, ErrorCode::Decode);
        assert_eq!(err(r#"{"name":7}"#).code, ErrorCode::Decode);
        assert_eq!(
            err(r#"{"name":"n","cniVersion":1}"#).code,
            ErrorCode::Decode
        );

        let e = err(r#"{"cniVersion":"1.1.0"}"#);
        assert_eq!(
            (e.code, e.msg.as_str()),
            (ErrorCode::InvalidNetworkConfig, "missing network name")
        );
        assert_eq!(err("null").msg, "missing network name");
        let e = err(r#"{"cniVersion":"1.1.0","name":"bad/name"}"#);
        assert_eq!(
            (e.code, e.details.as_deref()),
            (ErrorCode::InvalidNetworkConfig, Some("bad/name"))
        );
        assert_eq!(
            err(r#"{"cniVersion":"1.1.0","name":"-lead"}"#).code,
            ErrorCode::InvalidNetworkConfig
        );

        let e = err(r#"{"cniVersion":"0.3.1","name":"n"}"#);
        assert_eq!(e.code, ErrorCode::IncompatibleVersion);
        assert!(e.to_string().contains(r#"config is "0.3.1""#), "{e}");
        assert!(
            err(r#"{"name":"n"}"#)
                .to_string()
                .contains(r#"config is "0.1.0""#)
        );
    }

    #[test]
    fn ovn_level_refusals() {
        let check = |text: &str| StdinConfig::parse(text.as_bytes()).unwrap().check_ours();
        assert_eq!(
            check(r#"{"cniVersion":"1.1.0","name":"n","type":"bridge"}"#).unwrap_err(),
            "net-attach-def not managed by OVN"
        );
        assert_eq!(
            check(r#"{"cniVersion":"1.1.0","name":"ns_net","type":"ovn-k8s-cni-overlay","topology":"layer3"}"#).unwrap_err(),
            "missing NADName in secondary network netconf ns_net"
        );
        assert_eq!(
            check(r#"{"cniVersion":"1.1.0","name":"default","type":"ovn-k8s-cni-overlay","topology":"layer3","netAttachDefName":"a/b"}"#).unwrap_err(),
            "invalid name in in secondary network netconf (default)"
        );
    }
}
