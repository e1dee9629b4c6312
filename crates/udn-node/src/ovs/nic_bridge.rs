//! The gateway bridge for a plain NIC, as upstream's `NicToBridge` makes it
//! (`CreateOrUpdateNicBridge`, `pkg/libovsdb/ops/vswitchdb.go`): bridge `br<nic>` with
//! `fail_mode=standalone` (so a fresh bridge forwards with `NORMAL`), `other_config:hwaddr`
//! = the NIC's MAC, `external_ids:bridge-id=<bridge>` and `bridge-uplink=<nic>`, its internal
//! port, and the NIC as a port with `other_config:transient=true`. Keys we do not set are
//! kept; a port of either name on another bridge is refused, as `ovs-vsctl add-port` would.
//!
//! The NIC's port is a separate step ([`plan_nic_bridge`]'s `attach`), so the caller can
//! make the bridge's netdev ready before the NIC stops delivering to the host.

use std::collections::BTreeMap;
use std::time::Duration;

use udn_api::annotations::MacAddress;
use udn_ovsdb::client::ClientError;
use udn_ovsdb::protocol::Operation;
use udn_ovsdb::vswitch::port;

use super::bridge::{BridgePort, DesiredBridge, plan_bridge};
use super::client::Ovs;
use super::error::OvsError;
use super::ops::{map_changes, map_merge, mutate};
use super::state::OvsState;

/// `external_ids` key naming the bridge itself.
pub const BRIDGE_ID: &str = "bridge-id";
/// `external_ids` key naming the bridge's uplink NIC (upstream's `GetNicName` reads it).
pub const BRIDGE_UPLINK: &str = "bridge-uplink";
/// `other_config` key of the bridge's MAC.
pub const HWADDR: &str = "hwaddr";
/// Port `other_config` key: `ovs-ctl --delete-transient-ports` removes such ports at start.
pub const TRANSIENT: &str = "transient";

/// Upstream's bridge name for `nic` (`GetBridgeName`): `eth0` -> `breth0`.
pub fn nic_bridge_name(nic: &str) -> String {
    format!("br{nic}")
}

/// A NIC's gateway bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicBridge {
    /// The bridge (and its internal port).
    pub bridge: String,
    /// The NIC.
    pub nic: String,
    /// The NIC's MAC, which the bridge takes.
    pub mac: MacAddress,
    /// `datapath_type` for a bridge that does not exist yet (an existing one keeps its own).
    pub datapath_type: String,
    /// The internal interface's `mtu_request` (upstream sets none: the kernel datapath makes
    /// an internal port follow its bridge's ports, a userspace tap does not).
    pub mtu_request: Option<i64>,
}

impl NicBridge {
    fn desired(&self, state: &OvsState, attach: bool) -> DesiredBridge {
        let datapath_type = state
            .bridge(&self.bridge)
            .map_or(&self.datapath_type, |(_, current)| &current.datapath_type);
        let uplink = BridgePort {
            name: self.nic.clone(),
            iface_type: String::new(),
            other_config: BTreeMap::from([(TRANSIENT.to_owned(), "true".to_owned())]),
            mtu_request: None,
        };
        DesiredBridge {
            name: self.bridge.clone(),
            datapath_type: datapath_type.clone(),
            fail_mode: Some("standalone".to_owned()),
            other_config: BTreeMap::from([(HWADDR.to_owned(), self.mac.to_string())]),
            external_ids: BTreeMap::from([
                (BRIDGE_ID.to_owned(), self.bridge.clone()),
                (BRIDGE_UPLINK.to_owned(), self.nic.clone()),
            ]),
            ports: if attach { vec![uplink] } else { Vec::new() },
            mtu_request: self.mtu_request,
        }
    }
}

/// Plans the bridge (with the NIC as a port when `attach`); empty when converged.
pub fn plan_nic_bridge(
    state: &OvsState,
    nic: &NicBridge,
    attach: bool,
) -> Result<Vec<Operation>, OvsError> {
    for name in [&nic.bridge, &nic.nic] {
        if let Some((uuid, _)) = state.port(name)
            && let Some((_, holder)) = state.bridge_of_port(uuid)
            && holder.name != nic.bridge
        {
            return Err(OvsError::PortOnOtherBridge {
                port: name.clone(),
                bridge: holder.name.clone(),
            });
        }
    }
    let mut ops = plan_bridge(state, &nic.desired(state, attach))?;
    // An uplink port that is already there (made by hand, or by a run a crash cut short)
    // still gets upstream's transient mark.
    if let Some((uuid, current)) = state.port(&nic.nic)
        && state.bridge_of_port(uuid).is_some()
    {
        let wanted = BTreeMap::from([(TRANSIENT.to_owned(), "true".to_owned())]);
        let (set, _) = map_changes(&current.other_config, &wanted, &[]);
        let mutations = map_merge(port::OTHER_CONFIG, &set, &Default::default());
        if !mutations.is_empty() {
            ops.push(mutate(port::TABLE, uuid, mutations));
        }
    }
    Ok(ops)
}

/// Whether ovs-vswitchd has opened an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    /// It has, with this OpenFlow port number.
    Attached(i64),
    /// It could not (the interface's `error` column).
    Failed(String),
    /// Not yet (or there is no such interface).
    Pending,
}

/// Where interface `name` stands in `state`.
pub fn attachment(state: &OvsState, name: &str) -> Attachment {
    let Some((_, interface)) = state.interface(name) else {
        return Attachment::Pending;
    };
    match (interface.ofport, interface.error.as_deref()) {
        (Some(ofport), _) if ofport > 0 => Attachment::Attached(ofport),
        (_, Some(error)) if !error.is_empty() => Attachment::Failed(error.to_owned()),
        _ => Attachment::Pending,
    }
}

impl Ovs {
    /// Creates or updates a NIC's bridge (the NIC as a port when `attach`); returns whether
    /// anything was sent.
    pub async fn ensure_nic_bridge(&self, nic: &NicBridge, attach: bool) -> Result<bool, OvsError> {
        let ops = plan_nic_bridge(&*self.state()?, nic, attach)?;
        if ops.is_empty() {
            return Ok(false);
        }
        let step = if attach {
            format!("add {} to bridge {}", nic.nic, nic.bridge)
        } else {
            format!("ensure bridge {} for {}", nic.bridge, nic.nic)
        };
        self.client()
            .transact(ops)
            .await
            .map_err(|source| OvsError::client(step, source))?;
        Ok(true)
    }

    /// The `bridge-uplink` of `bridge`, when it has one (the NIC `NicToBridge` moved into it).
    pub fn bridge_uplink(&self, bridge: &str) -> Result<Option<String>, OvsError> {
        Ok(self
            .state()?
            .bridge(bridge)
            .and_then(|(_, row)| row.external_ids.get(BRIDGE_UPLINK).cloned())
            .filter(|uplink| !uplink.is_empty()))
    }

    /// Waits (through the replica's change notifications, up to `timeout`) until
    /// ovs-vswitchd has opened interface `name` or said why it cannot; `Pending` when the
    /// time ran out.
    pub async fn wait_attached(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Attachment, OvsError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut changes = self.client().changes();
        loop {
            // Marked seen before reading, so a change after the read wakes the select.
            changes.borrow_and_update();
            let status = attachment(&*self.state()?, name);
            if status != Attachment::Pending {
                return Ok(status);
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Err(OvsError::client(
                            format!("wait for interface {name}'s ofport"),
                            ClientError::Disconnected,
                        ));
                    }
                }
                () = tokio::time::sleep_until(deadline) => return Ok(Attachment::Pending),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeSet;

    use udn_ovsdb::protocol::Uuid;
    use udn_ovsdb::vswitch::{Bridge, Interface, OpenVswitch, Port};

    use super::super::ops::pairs;
    use super::*;

    fn uuid(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn nic() -> NicBridge {
        NicBridge {
            bridge: nic_bridge_name("eth0"),
            nic: "eth0".into(),
            mac: "02:00:0a:09:00:05".parse().unwrap(),
            datapath_type: "netdev".into(),
            mtu_request: Some(9000),
        }
    }

    fn root() -> OvsState {
        OvsState {
            open_vswitch: Some(OpenVswitch {
                uuid: Some(uuid(1)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Port `id` (interface `id + 1`) named `name` on bridge `bridge`.
    fn add_port(state: &mut OvsState, bridge: u128, id: u128, name: &str, kind: &str) {
        state.interfaces.insert(
            uuid(id + 1),
            Interface {
                uuid: Some(uuid(id + 1)),
                name: name.into(),
                type_: kind.into(),
                ..Default::default()
            },
        );
        state.ports.insert(
            uuid(id),
            Port {
                uuid: Some(uuid(id)),
                name: name.into(),
                interfaces: BTreeSet::from([uuid(id + 1)]),
                ..Default::default()
            },
        );
        if let Some(row) = state.bridges.get_mut(&uuid(bridge)) {
            row.ports.insert(uuid(id));
        }
    }

    fn add_bridge(state: &mut OvsState, id: u128, name: &str) {
        state.bridges.insert(
            uuid(id),
            Bridge {
                uuid: Some(uuid(id)),
                name: name.into(),
                ..Default::default()
            },
        );
        if let Some(root) = &mut state.open_vswitch {
            root.bridges.insert(uuid(id));
        }
        add_port(state, id, id + 10, name, "internal");
    }

    fn json(ops: &[Operation]) -> String {
        serde_json::Value::Array(ops.iter().map(Operation::to_json).collect()).to_string()
    }

    #[test]
    fn a_new_bridge_has_upstreams_columns_and_no_uplink_until_attached() {
        let ops = plan_nic_bridge(&root(), &nic(), false).unwrap();
        let text = json(&ops);
        for expected in [
            r#""name":"breth0""#,
            r#""fail_mode":"standalone""#,
            r#""datapath_type":"netdev""#,
            r#"["hwaddr","02:00:0a:09:00:05"]"#,
            r#"["bridge-id","breth0"]"#,
            r#"["bridge-uplink","eth0"]"#,
            r#""type":"internal""#,
            r#""mtu_request":9000"#,
        ] {
            assert!(text.contains(expected), "{expected} not in {text}");
        }
        assert!(!text.contains(r#""name":"eth0""#), "{text}");
        let attached = json(&plan_nic_bridge(&root(), &nic(), true).unwrap());
        assert!(attached.contains(r#""name":"eth0""#), "{attached}");
        assert!(attached.contains(r#"["transient","true"]"#), "{attached}");
    }

    #[test]
    fn an_existing_bridge_gets_what_is_missing_and_keeps_its_datapath() {
        let mut state = root();
        add_bridge(&mut state, 10, "breth0");
        let bridge = state.bridges.get_mut(&uuid(10)).unwrap();
        bridge.datapath_type = "system".into();
        bridge.external_ids = pairs(&[("owner", "someone")]);
        let text = json(&plan_nic_bridge(&state, &nic(), true).unwrap());
        assert!(!text.contains("datapath_type"), "{text}");
        assert!(text.contains(r#""fail_mode":"standalone""#), "{text}");
        assert!(text.contains(r#"["bridge-uplink","eth0"]"#), "{text}");
        assert!(
            !text.contains("owner"),
            "other keys are not rewritten: {text}"
        );
        assert!(text.contains(r#""mtu_request":9000"#), "{text}");
        assert!(text.contains(r#""name":"eth0""#), "{text}");
    }

    #[test]
    fn converged_plans_nothing_and_an_uplink_port_gets_its_transient_mark() {
        let mut state = root();
        add_bridge(&mut state, 10, "breth0");
        add_port(&mut state, 10, 30, "eth0", "");
        let bridge = state.bridges.get_mut(&uuid(10)).unwrap();
        bridge.datapath_type = "netdev".into();
        bridge.fail_mode = Some("standalone".into());
        bridge.other_config = pairs(&[("hwaddr", "02:00:0a:09:00:05")]);
        bridge.external_ids = pairs(&[("bridge-id", "breth0"), ("bridge-uplink", "eth0")]);
        state.interfaces.get_mut(&uuid(21)).unwrap().mtu_request = Some(9000);
        let ops = plan_nic_bridge(&state, &nic(), true).unwrap();
        let expected: serde_json::Value = serde_json::from_str(&format!(
            r#"[{{"mutations":[["other_config","delete",["set",["transient"]]],["other_config","insert",["map",[["transient","true"]]]]],"op":"mutate","table":"Port","where":[["_uuid","==",["uuid","{}"]]]}}]"#,
            uuid(30)
        ))
        .unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&json(&ops)).unwrap(),
            expected
        );
        state.ports.get_mut(&uuid(30)).unwrap().other_config = pairs(&[("transient", "true")]);
        assert_eq!(plan_nic_bridge(&state, &nic(), true).unwrap(), []);
        assert_eq!(plan_nic_bridge(&state, &nic(), false).unwrap(), []);
    }

    #[test]
    fn a_nic_or_bridge_port_on_another_bridge_is_refused() {
        let mut state = root();
        add_bridge(&mut state, 10, "br-int");
        add_port(&mut state, 10, 30, "eth0", "");
        let error = plan_nic_bridge(&state, &nic(), true).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"port "eth0" is already attached to bridge "br-int""#
        );
        let mut state = root();
        add_bridge(&mut state, 10, "br-int");
        add_port(&mut state, 10, 30, "breth0", "internal");
        assert!(matches!(
            plan_nic_bridge(&state, &nic(), false),
            Err(OvsError::PortOnOtherBridge { .. })
        ));
    }

    #[test]
    fn attachment_reads_ofport_and_error() {
        let mut state = root();
        assert_eq!(attachment(&state, "eth0"), Attachment::Pending);
        add_bridge(&mut state, 10, "breth0");
        add_port(&mut state, 10, 30, "eth0", "");
        assert_eq!(attachment(&state, "eth0"), Attachment::Pending);
        let iface = state.interfaces.get_mut(&uuid(31)).unwrap();
        iface.ofport = Some(-1);
        iface.error = Some("could not open network device eth0 (No such device)".into());
        assert_eq!(
            attachment(&state, "eth0"),
            Attachment::Failed("could not open network device eth0 (No such device)".into())
        );
        let iface = state.interfaces.get_mut(&uuid(31)).unwrap();
        iface.ofport = Some(1);
        iface.error = None;
        assert_eq!(attachment(&state, "eth0"), Attachment::Attached(1));
    }
}
