//! The `Open_vSwitch` row: the chassis configuration ovn-controller reads, as upstream's
//! `setupOVNNode` writes it (spec §5.1), merged into `external_ids` and `other_config` with
//! every key we do not own kept; and `ovn-bridge-mappings` (§5.2).

use std::collections::BTreeMap;

use udn_ovsdb::protocol::Operation;
use udn_ovsdb::vswitch::open_vswitch;

use super::error::OvsError;
use super::ops::{map_changes, map_merge, mutate};
use super::state::OvsState;

/// `external_ids` key of the bridge mappings.
pub const BRIDGE_MAPPINGS: &str = "ovn-bridge-mappings";

/// What the node agent sets on the `Open_vSwitch` row. Defaults are upstream's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChassisConfig {
    /// `ovn-encap-type` (`geneve`).
    pub encap_type: String,
    /// `ovn-encap-ip` (`--encap-ip`, else the node's InternalIP).
    pub encap_ip: String,
    /// `ovn-remote-probe-interval`, ms (100000).
    pub inactivity_probe_ms: u64,
    /// `ovn-bridge-remote-probe-interval` and `other_config:bundle-idle-timeout` (0).
    pub openflow_probe: u64,
    /// `ovn-monitor-all` (true).
    pub monitor_all: bool,
    /// `ovn-ofctrl-wait-before-clear`, ms (0).
    pub ofctrl_wait_before_clear_ms: u64,
    /// `ovn-enable-lflow-cache` (true).
    pub lflow_cache_enable: bool,
    /// `ovn-limit-lflow-cache`, written when set and > 0.
    pub lflow_cache_limit: Option<u64>,
    /// `ovn-memlimit-lflow-cache-kb`, written when set and > 0.
    pub lflow_cache_limit_kb: Option<u64>,
    /// `hostname` (full mode: the node name).
    pub hostname: Option<String>,
    /// `ovn-remote` (the local SB, `unix:/var/run/ovn/ovnsb_db.sock`).
    pub ovn_remote: Option<String>,
    /// Further `external_ids` (e.g. `ovn-bridge-datapath-type=netdev` for a userspace
    /// datapath, which upstream leaves to the deployment).
    pub extra_external_ids: BTreeMap<String, String>,
}

impl ChassisConfig {
    /// Upstream's defaults for a node with this encap IP and name.
    pub fn new(encap_ip: &str, hostname: &str) -> Self {
        Self {
            encap_type: "geneve".to_owned(),
            encap_ip: encap_ip.to_owned(),
            inactivity_probe_ms: 100_000,
            openflow_probe: 0,
            monitor_all: true,
            ofctrl_wait_before_clear_ms: 0,
            lflow_cache_enable: true,
            lflow_cache_limit: None,
            lflow_cache_limit_kb: None,
            hostname: Some(hostname.to_owned()),
            ovn_remote: None,
            extra_external_ids: BTreeMap::new(),
        }
    }

    /// The `external_ids` pairs.
    pub fn external_ids(&self) -> BTreeMap<String, String> {
        let mut ids: BTreeMap<String, String> = [
            ("ovn-encap-type", self.encap_type.clone()),
            ("ovn-encap-ip", self.encap_ip.clone()),
            (
                "ovn-remote-probe-interval",
                self.inactivity_probe_ms.to_string(),
            ),
            (
                "ovn-bridge-remote-probe-interval",
                self.openflow_probe.to_string(),
            ),
            ("ovn-is-interconn", "true".to_owned()),
            ("ovn-monitor-all", self.monitor_all.to_string()),
            (
                "ovn-ofctrl-wait-before-clear",
                self.ofctrl_wait_before_clear_ms.to_string(),
            ),
            (
                "ovn-enable-lflow-cache",
                self.lflow_cache_enable.to_string(),
            ),
            ("ovn-set-local-ip", "true".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let optional = [
            (
                "ovn-limit-lflow-cache",
                self.lflow_cache_limit
                    .filter(|v| *v > 0)
                    .map(|v| v.to_string()),
            ),
            (
                "ovn-memlimit-lflow-cache-kb",
                self.lflow_cache_limit_kb
                    .filter(|v| *v > 0)
                    .map(|v| v.to_string()),
            ),
            ("hostname", self.hostname.clone()),
            ("ovn-remote", self.ovn_remote.clone()),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                ids.insert(key.to_owned(), value);
            }
        }
        ids.extend(self.extra_external_ids.clone());
        ids
    }

    /// The `other_config` pairs.
    pub fn other_config(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(
            "bundle-idle-timeout".to_owned(),
            self.openflow_probe.to_string(),
        )])
    }
}

/// Plans merging `external_ids` and `other_config` pairs into the `Open_vSwitch` row (only
/// keys whose value differs are written; others are kept). Empty when converged.
pub fn plan_open_vswitch(
    state: &OvsState,
    external_ids: &BTreeMap<String, String>,
    other_config: &BTreeMap<String, String>,
) -> Result<Vec<Operation>, OvsError> {
    let row = state
        .open_vswitch
        .as_ref()
        .ok_or(OvsError::NoOpenVswitchRow)?;
    let uuid = row.uuid.ok_or(OvsError::NoOpenVswitchRow)?;
    let (ids, _) = map_changes(&row.external_ids, external_ids, &[]);
    let (config, _) = map_changes(&row.other_config, other_config, &[]);
    let mut mutations = map_merge(open_vswitch::EXTERNAL_IDS, &ids, &Default::default());
    mutations.extend(map_merge(
        open_vswitch::OTHER_CONFIG,
        &config,
        &Default::default(),
    ));
    if mutations.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![mutate(open_vswitch::TABLE, uuid, mutations)])
}

/// `existing` (`net1:br1,net2:br2`) with `physnet` mapped to `bridge`: other entries kept
/// in order, the mapping for `physnet` (re)placed at the end, as upstream.
pub fn merge_bridge_mappings(existing: &str, physnet: &str, bridge: &str) -> String {
    let mut entries: Vec<&str> = existing
        .split(',')
        .filter(|entry| !entry.is_empty())
        .filter(|entry| entry.split(':').next() != Some(physnet))
        .collect();
    let ours = format!("{physnet}:{bridge}");
    entries.push(&ours);
    entries.join(",")
}

/// Plans mapping `physnet` to `bridge` in `ovn-bridge-mappings` (empty: converged).
pub fn plan_bridge_mapping(
    state: &OvsState,
    physnet: &str,
    bridge: &str,
) -> Result<Vec<Operation>, OvsError> {
    let row = state
        .open_vswitch
        .as_ref()
        .ok_or(OvsError::NoOpenVswitchRow)?;
    let existing = row
        .external_ids
        .get(BRIDGE_MAPPINGS)
        .map_or("", String::as_str);
    let merged = merge_bridge_mappings(existing, physnet, bridge);
    plan_open_vswitch(
        state,
        &BTreeMap::from([(BRIDGE_MAPPINGS.to_owned(), merged)]),
        &BTreeMap::new(),
    )
}
