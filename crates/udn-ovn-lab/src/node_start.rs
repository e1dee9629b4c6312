//! Bringing up one node: its netns (the node's host network), the underlay veth, optionally its
//! zone, OVS (`ovsdb-server` + `ovs-vswitchd` with the userspace datapath, started inside the
//! netns so its tap devices live there), `br-int`, the gateway bridge `breth0` holding the
//! underlay port and the node IP, and `ovn-controller`.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::command::Cmd;
use crate::daemon::Daemon;
use crate::error::LabError;
use crate::netns::{Netns, ip};
use crate::node::Node;
use crate::zone::{Zone, ZoneSockets, schema_file, start_ovsdb, whole_seconds};

/// The installed Open_vSwitch schema.
const VSWITCH_SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// The node's uplink inside its netns (a kind node's NIC name), a port of `breth0`.
pub(crate) const UPLINK: &str = "eth0";
/// The gateway bridge, as upstream names it for uplink `eth0`.
pub(crate) const GATEWAY_BRIDGE: &str = "breth0";
/// The physical network name upstream maps onto the gateway bridge.
pub(crate) const PHYSNET: &str = "physnet";

/// Everything a node needs to know to start.
#[derive(Debug)]
pub(crate) struct NodePlan {
    pub(crate) name: String,
    pub(crate) netns: String,
    /// The node's run and log directory.
    pub(crate) dir: PathBuf,
    pub(crate) ip: Ipv4Addr,
    pub(crate) prefix_len: u8,
    pub(crate) next_hop: Ipv4Addr,
    pub(crate) mac: String,
    pub(crate) mtu: u32,
    pub(crate) underlay_netns: String,
    /// The underlay bridge's port for this node (in the underlay netns).
    pub(crate) underlay_port: String,
    pub(crate) underlay_bridge: String,
    pub(crate) timeout: Duration,
}

/// Whether the node runs its zone's NB/SB/northd or uses another node's.
#[derive(Debug)]
pub(crate) enum ZoneRole {
    /// Runs zone `name`.
    Own(String),
    /// Joins a zone another node runs.
    Join(ZoneSockets),
}

pub(crate) fn vsctl(ovs: &Path, timeout: Duration) -> Cmd {
    Cmd::new("ovs-vsctl").args([
        format!("--db=unix:{}", ovs.display()),
        format!("--timeout={}", whole_seconds(timeout)),
    ])
}

/// `value` as an ovs-vsctl quoted string (so `:`, `=`, `,` and `/` stay inside one atom).
pub(crate) fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `external_ids:"key"="value"` for ovs-vsctl `set`.
pub(crate) fn external_id(key: &str, value: &str) -> String {
    format!("external_ids:{}={}", quoted(key), quoted(value))
}

/// Starts the node. Everything started so far is torn down if a step fails (each part cleans
/// up on drop).
pub(crate) fn start_node(plan: NodePlan, role: ZoneRole) -> Result<Node, LabError> {
    let step = format!("start node {}", plan.name);
    let step = step.as_str();
    create_dir(step, &plan.dir)?;
    let netns = Netns::create(step, &plan.netns)?;
    plug_underlay(step, &plan)?;
    let (zone, sockets) = match role {
        ZoneRole::Own(name) => {
            let zone = Zone::start(&name, &plan.dir, plan.timeout)?;
            let sockets = zone.sockets(&name);
            (Some(zone), sockets)
        }
        ZoneRole::Join(sockets) => (None, sockets),
    };
    let ovs = start_ovsdb(
        step,
        &schema_file(step, VSWITCH_SCHEMA, "openvswitch-common")?,
        &plan.dir,
    )?;
    let chassis_id = uuid::Uuid::new_v4().to_string();
    configure_open_vswitch(step, &plan, ovs.socket(), &sockets, &chassis_id)?;
    let vswitchd = start_vswitchd(step, &plan, ovs.socket())?;
    add_bridges(step, &plan, ovs.socket())?;
    hide_zero_snat(step, &plan, ovs.socket())?;
    address_gateway_bridge(step, &plan)?;
    let controller = start_controller(step, &plan, ovs.socket())?;
    tracing::info!(node = %plan.name, chassis = %chassis_id, ip = %plan.ip, "lab node started");
    Ok(Node {
        name: plan.name,
        chassis_id,
        zone: sockets.name.clone(),
        dir: plan.dir,
        ip: plan.ip,
        prefix_len: plan.prefix_len,
        next_hop: plan.next_hop,
        mac: plan.mac,
        sockets,
        timeout: plan.timeout,
        controller,
        vswitchd,
        ovs,
        zone_daemons: zone,
        netns,
    })
}

fn create_dir(step: &str, dir: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|source| LabError::File {
        step: step.to_owned(),
        action: "create",
        path: dir.to_owned(),
        source,
    })
}

/// The node's `eth0` (MTU 9000, the node MAC) and its peer on the underlay bridge.
fn plug_underlay(step: &str, plan: &NodePlan) -> Result<(), LabError> {
    let mtu = plan.mtu.to_string();
    ip(&plan.netns)
        .args(["link", "add", UPLINK, "mtu", &mtu, "address", &plan.mac])
        .args(["type", "veth", "peer", "name", &plan.underlay_port])
        .args(["mtu", &mtu, "netns", &plan.underlay_netns])
        .run(step)?;
    ip(&plan.underlay_netns)
        .args(["link", "set", &plan.underlay_port])
        .args(["master", &plan.underlay_bridge, "up"])
        .run(step)?;
    ip(&plan.netns)
        .args(["link", "set", UPLINK, "up"])
        .run(step)?;
    hide_uplink_from_host_stack(step, &plan.netns)
}

/// The nft table that keeps the uplink's frames from the node's own IP stack.
pub(crate) const UPLINK_TABLE: &str = "udn-lab-uplink";

/// On a real node the OVS kernel datapath takes the NIC's frames away from the host's IP
/// stack. The userspace datapath reads them through AF_PACKET, which leaves them to the stack
/// as well, and the node IP is local (on `breth0`): the stack would answer an external
/// host's SYN-ACK to a pod's connection (SNATed to the node IP by its gateway router) with a
/// RST before OVS delivers it. A netdev ingress hook runs after the AF_PACKET taps, so a drop
/// there hides the uplink from the stack and not from OVS.
fn hide_uplink_from_host_stack(step: &str, netns: &str) -> Result<(), LabError> {
    let ruleset = format!(
        "table netdev {UPLINK_TABLE} {{\n  chain ingress {{\n    type filter hook ingress device {UPLINK} priority 0; policy drop;\n  }}\n}}\n"
    );
    Cmd::new("nft")
        .netns(netns)
        .args(["-f", "-"])
        .stdin(ruleset.into_bytes())
        .run(step)?;
    Ok(())
}

/// The Open_vSwitch row as upstream's node leaves it (spec §5.1): ovs-ctl's random system-id,
/// setupOVNNode's keys, `ovn-remote`, and the bridge mapping of the gateway bridge.
fn configure_open_vswitch(
    step: &str,
    plan: &NodePlan,
    ovs: &Path,
    zone: &ZoneSockets,
    chassis_id: &str,
) -> Result<(), LabError> {
    let external_ids = [
        format!("system-id={chassis_id}"),
        format!("hostname=\"{}\"", plan.name),
        format!("ovn-remote=\"unix:{}\"", zone.sb.display()),
        "ovn-encap-type=geneve".to_owned(),
        format!("ovn-encap-ip={}", plan.ip),
        "ovn-remote-probe-interval=100000".to_owned(),
        "ovn-bridge-remote-probe-interval=0".to_owned(),
        "ovn-is-interconn=true".to_owned(),
        "ovn-monitor-all=true".to_owned(),
        "ovn-ofctrl-wait-before-clear=0".to_owned(),
        "ovn-enable-lflow-cache=true".to_owned(),
        "ovn-set-local-ip=\"true\"".to_owned(),
        format!("ovn-bridge-mappings=\"{PHYSNET}:{GATEWAY_BRIDGE}\""),
        "ovn-bridge-datapath-type=netdev".to_owned(),
    ];
    vsctl(ovs, plan.timeout)
        .args(["--no-wait", "--", "init", "--", "set", "Open_vSwitch", "."])
        .args(external_ids.iter().map(|id| format!("external_ids:{id}")))
        .run(step)?;
    Ok(())
}

/// ovs-vswitchd inside the node netns: on the netdev datapath every internal port becomes a
/// tap device in the daemon's netns, and `OVS_RUNDIR` puts `<bridge>.mgmt` in the node dir.
fn start_vswitchd(step: &str, plan: &NodePlan, ovs: &Path) -> Result<Daemon, LabError> {
    let pidfile = plan.dir.join("ovs-vswitchd.pid");
    let log = plan.dir.join("ovs-vswitchd.log");
    let command = Cmd::new("ovs-vswitchd")
        .netns_exec(&plan.netns)
        .rundir(&plan.dir)
        .args([
            format!("unix:{}", ovs.display()),
            format!("--pidfile={}", pidfile.display()),
            format!("--log-file={}", log.display()),
            format!("--unixctl={}", plan.dir.join("ovs-vswitchd.ctl").display()),
            "--detach".to_owned(),
            "--no-chdir".to_owned(),
        ]);
    Daemon::start(step, "ovs-vswitchd", &command, pidfile, log)
}

/// `br-int` and `breth0` as upstream's node has them (`breth0` as NicToBridge makes it).
/// ovs-vsctl waits until ovs-vswitchd has applied the transaction, so the bridges' tap devices
/// exist when this returns.
fn add_bridges(step: &str, plan: &NodePlan, ovs: &Path) -> Result<(), LabError> {
    let br = GATEWAY_BRIDGE;
    vsctl(ovs, plan.timeout)
        .args(["--", "--may-exist", "add-br", "br-int"])
        .args(["--", "set", "Bridge", "br-int", "datapath_type=netdev"])
        .args(["fail_mode=secure", "other_config:disable-in-band=true"])
        .args(["--", "--may-exist", "add-br", br])
        .args(["--", "set", "Bridge", br, "datapath_type=netdev"])
        .arg("fail_mode=standalone")
        .arg(format!("external_ids:bridge-id={br}"))
        .arg(format!("external_ids:bridge-uplink={UPLINK}"))
        .arg(format!("other_config:hwaddr=\"{}\"", plan.mac))
        .args(["--", "set", "Interface", br])
        .arg(format!("mtu_request={}", plan.mtu))
        .args(["--", "--may-exist", "add-port", br, UPLINK])
        .args(["--", "set", "Port", UPLINK, "other_config:transient=true"])
        .run(step)?;
    Ok(())
}

/// Tells ovn-controller that the datapath has no all-zero SNAT, so its ACL commits are plain
/// `ct(commit)` rather than `ct(commit, nat(src))`. OVS 3.1.0's userspace conntrack (the
/// Debian package) keeps a NAT connection's un-NAT twin in the same hash chain as the
/// connection itself when the NAT changes nothing, and a reply can then find the twin where it
/// looks for the parent: `conntrack.c:1063: assertion conn->conn_type ==
/// CT_CONN_TYPE_DEFAULT failed` aborts ovs-vswitchd (fixed in OVS 3.1.3, "conntrack: Remove
/// nat_conn introducing key directionality"). ovs-vswitchd writes a Datapath row's
/// capabilities only when it first sees the row, so ours stays; ovn-controller reads it.
fn hide_zero_snat(step: &str, plan: &NodePlan, ovs: &Path) -> Result<(), LabError> {
    vsctl(ovs, plan.timeout)
        .args([
            "--",
            "--id=@dp",
            "create",
            "Datapath",
            "datapath_version=\"\"",
        ])
        .args(["--", "set", "Open_vSwitch", ".", "datapaths:netdev=@dp"])
        .run(step)?;
    let dp = vsctl(ovs, plan.timeout)
        .args(["get", "Open_vSwitch", ".", "datapaths:netdev"])
        .run(step)?;
    let dp = dp.trim();
    vsctl(ovs, plan.timeout)
        .args([
            "wait-until",
            "Datapath",
            dp,
            "capabilities:ct_zero_snat=true",
        ])
        .args([
            "--",
            "set",
            "Datapath",
            dp,
            "capabilities:ct_zero_snat=false",
        ])
        .run(step)?;
    Ok(())
}

/// The node IP and the default route via the external host, on `breth0`'s internal port:
/// the userspace datapath routes geneve with OVS's own table, learned from this netns, so the
/// encap IP must be on an OVS bridge.
fn address_gateway_bridge(step: &str, plan: &NodePlan) -> Result<(), LabError> {
    let cidr = format!("{}/{}", plan.ip, plan.prefix_len);
    ip(&plan.netns)
        .args(["addr", "add", &cidr, "dev", GATEWAY_BRIDGE])
        .run(step)?;
    ip(&plan.netns)
        .args(["link", "set", GATEWAY_BRIDGE, "up"])
        .run(step)?;
    ip(&plan.netns)
        .args(["route", "add", "default", "via"])
        .arg(plan.next_hop.to_string())
        .args(["dev", GATEWAY_BRIDGE])
        .run(step)?;
    Ok(())
}

/// ovn-controller inside the node netns. 23.03 has no `--unixctl`: its control socket is
/// `$OVN_RUNDIR/ovn-controller.<pid>.ctl`.
fn start_controller(step: &str, plan: &NodePlan, ovs: &Path) -> Result<Daemon, LabError> {
    let pidfile = plan.dir.join("ovn-controller.pid");
    let log = plan.dir.join("ovn-controller.log");
    let command = Cmd::new("ovn-controller")
        .netns_exec(&plan.netns)
        .rundir(&plan.dir)
        .args([
            format!("unix:{}", ovs.display()),
            format!("--pidfile={}", pidfile.display()),
            format!("--log-file={}", log.display()),
            "--detach".to_owned(),
            "--no-chdir".to_owned(),
        ]);
    Daemon::start(step, "ovn-controller", &command, pidfile, log)
}
