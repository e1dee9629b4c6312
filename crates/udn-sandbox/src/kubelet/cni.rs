//! CNI as kubelet's CRI runtime runs it (libcni): the lexically first `*.conf`,
//! `*.conflist` or `*.json` in the conf dir is the cluster default network; each plugin of its
//! list is executed from the bin dir with the CNI environment (added to the kubelet's own, as
//! libcni does) and its config on stdin (`name` and `cniVersion` from the list,
//! `prevResult` chained). `k8s.v1.cni.cncf.io/networks` is delegated per
//! NetworkAttachmentDefinition as Multus does, and the outcome is written the way Multus
//! writes `k8s.v1.cni.cncf.io/network-status`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use udn_api::annotations::network_status::{NetworkStatus, NetworkStatusDns};
use udn_cni_protocol::CniResult;

use super::KubeletError;

/// A network configuration list (a `.conf` becomes a one-plugin list).
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// The network's `name`.
    pub name: String,
    /// `cniVersion`.
    pub cni_version: String,
    /// The plugins' configs, in order.
    pub plugins: Vec<Value>,
}

impl NetworkConfig {
    /// Parses a `.conf` (one plugin) or `.conflist` (`plugins`).
    pub fn parse(origin: &str, text: &str) -> Result<Self, KubeletError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| KubeletError::Cni(format!("{origin}: invalid JSON: {e}")))?;
        let name = value["name"].as_str().unwrap_or_default().to_owned();
        let cni_version = value["cniVersion"].as_str().unwrap_or("0.4.0").to_owned();
        let plugins = match value.get("plugins").and_then(Value::as_array) {
            Some(list) => list.clone(),
            None => vec![value.clone()],
        };
        if plugins
            .iter()
            .any(|p| p["type"].as_str().is_none_or(str::is_empty))
        {
            return Err(KubeletError::Cni(format!(
                "{origin}: a plugin has no \"type\""
            )));
        }
        Ok(Self {
            name,
            cni_version,
            plugins,
        })
    }

    /// The cluster default network: the lexically first config file in `dir`, or `None`
    /// while there is none (the node's network is not ready).
    pub fn default_network(dir: &Path) -> Result<Option<Self>, KubeletError> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "conf" || e == "conflist" || e == "json")
            })
            .collect();
        files.sort();
        let Some(path) = files.first() else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| KubeletError::Cni(format!("reading {}: {e}", path.display())))?;
        Self::parse(&path.display().to_string(), &text).map(Some)
    }
}

/// One execution context: the pod's sandbox and who it is.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// `CNI_CONTAINERID`.
    pub container_id: &'a str,
    /// The netns path.
    pub netns: &'a str,
    /// `CNI_IFNAME`.
    pub ifname: &'a str,
    /// Pod namespace, name, uid.
    pub pod: (&'a str, &'a str, &'a str),
    /// The plugin dir.
    pub bin_dir: &'a Path,
}

/// Runs every plugin of `config` for `command` (`ADD`: in order, chaining `prevResult`;
/// `DEL`: in reverse); the last ADD result.
pub fn exec_list(
    config: &NetworkConfig,
    command: &str,
    call: &Invocation<'_>,
) -> Result<Option<Value>, KubeletError> {
    let mut prev: Option<Value> = None;
    let plugins: Vec<&Value> = if command == "DEL" {
        config.plugins.iter().rev().collect()
    } else {
        config.plugins.iter().collect()
    };
    for plugin in plugins {
        let mut stdin = plugin.clone();
        stdin["name"] = Value::String(config.name.clone());
        stdin["cniVersion"] = Value::String(config.cni_version.clone());
        if let Some(prev) = &prev {
            stdin["prevResult"] = prev.clone();
        }
        let out = exec_plugin(
            plugin["type"].as_str().unwrap_or_default(),
            command,
            &stdin,
            call,
        )?;
        if command == "ADD" {
            prev = Some(out);
        }
    }
    Ok(prev)
}

fn exec_plugin(
    kind: &str,
    command: &str,
    stdin: &Value,
    call: &Invocation<'_>,
) -> Result<Value, KubeletError> {
    let binary = call.bin_dir.join(kind);
    let args = format!(
        "IgnoreUnknown=1;K8S_POD_NAMESPACE={};K8S_POD_NAME={};K8S_POD_INFRA_CONTAINER_ID={};K8S_POD_UID={}",
        call.pod.0, call.pod.1, call.container_id, call.pod.2
    );
    let mut child = Command::new(&binary)
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", call.container_id)
        .env("CNI_NETNS", call.netns)
        .env("CNI_IFNAME", call.ifname)
        .env("CNI_PATH", call.bin_dir)
        .env("CNI_ARGS", args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| KubeletError::Cni(format!("executing {}: {e}", binary.display())))?;
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.to_string().as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| KubeletError::Cni(format!("waiting for {}: {e}", binary.display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // A plugin's error is a CNI error object on stdout.
        let detail = serde_json::from_str::<Value>(&stdout)
            .ok()
            .map(|e| {
                format!(
                    "{} {}",
                    e["msg"].as_str().unwrap_or_default(),
                    e["details"].as_str().unwrap_or_default()
                )
            })
            .unwrap_or_else(|| format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)));
        return Err(KubeletError::Cni(format!(
            "plugin type={kind:?} failed ({command}): {}",
            detail.trim()
        )));
    }
    if command != "ADD" {
        return Ok(Value::Null);
    }
    serde_json::from_str(&stdout).map_err(|e| {
        KubeletError::Cni(format!(
            "plugin type={kind:?} printed no result ({e}): {stdout}"
        ))
    })
}

/// Multus' network-status entries for one result: each interface with a sandbox, with the
/// IPs assigned to it (no prefix length), named `name`. `default` marks the interface that
/// carries the pod's default route: the one whose IP's gateway a `0.0.0.0/0` (or `::/0`)
/// route uses; only for the cluster default network.
pub fn network_status(
    name: &str,
    result: &Value,
    cluster_default: bool,
) -> Result<Vec<NetworkStatus>, KubeletError> {
    let parsed: CniResult = serde_json::from_value(result.clone())
        .map_err(|e| KubeletError::Cni(format!("the {name} result: {e}")))?;
    let default_gateways: Vec<std::net::IpAddr> = parsed
        .routes
        .iter()
        .filter(|r| r.dst.to_string() == "0.0.0.0/0" || r.dst.to_string() == "::/0")
        .filter_map(|r| r.gw)
        .collect();
    let mut out = Vec::new();
    for (index, interface) in parsed.interfaces.iter().enumerate() {
        if interface.sandbox.is_empty() {
            continue;
        }
        let ips: Vec<_> = parsed
            .ips
            .iter()
            .filter(|ip| ip.interface.and_then(|i| usize::try_from(i).ok()) == Some(index))
            .collect();
        let default = cluster_default
            && ips.iter().any(|ip| {
                ip.gateway
                    .is_some_and(|gw| default_gateways.contains(&gw) || default_gateways.is_empty())
            });
        out.push(NetworkStatus {
            name: name.to_owned(),
            interface: interface.name.clone(),
            ips: ips
                .iter()
                .map(|ip| {
                    ip.address
                        .to_string()
                        .split('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect(),
            mac: interface.mac.clone(),
            default,
            dns: NetworkStatusDns::default(),
            ..NetworkStatus::default()
        });
    }
    // Without routes, Multus marks the first sandbox interface of the default network.
    if cluster_default
        && !out.iter().any(|s| s.default)
        && default_gateways.is_empty()
        && let Some(first) = out.first_mut()
    {
        first.default = true;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_primary_udn_result_marks_ovn_udn1_default() {
        let result = serde_json::json!({
            "cniVersion": "1.0.0",
            "interfaces": [
                {"name": "eth0", "mac": "0a:58:0a:f4:00:06", "sandbox": "/run/netns/x"},
                {"name": "ovn-udn1", "mac": "0a:58:c8:0a:02:05", "sandbox": "/run/netns/x"}
            ],
            "ips": [
                {"address": "10.244.0.6/24", "gateway": "10.244.0.1", "interface": 0},
                {"address": "200.203.2.5/24", "gateway": "200.203.2.1", "interface": 1}
            ],
            "routes": [{"dst": "0.0.0.0/0", "gw": "200.203.2.1"}]
        });
        let status = network_status("ovn-kubernetes", &result, true).unwrap();
        assert_eq!(status.len(), 2);
        assert!(!status[0].default);
        assert!(status[1].default);
        assert_eq!(status[1].ips, vec!["200.203.2.5".to_owned()]);
        assert_eq!(status[0].mac, "0a:58:0a:f4:00:06");
    }

    #[test]
    fn a_conf_is_a_one_plugin_list_and_a_plugin_without_type_is_refused() {
        let config = NetworkConfig::parse(
            "x.conf",
            r#"{"cniVersion":"1.0.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}"#,
        )
        .unwrap();
        assert_eq!(config.plugins.len(), 1);
        assert_eq!(config.name, "ovn-kubernetes");
        let error =
            NetworkConfig::parse("y.conflist", r#"{"name":"n","plugins":[{}]}"#).unwrap_err();
        assert!(error.to_string().contains("y.conflist"), "{error}");
    }
}
