//! Pod attachments: one unit per logical switch port (upstream `addLogicalPortToNetwork`):
//! local pods on every topology, and on Layer2 (interconnect) the pods of remote nodes as
//! `remote` ports. On the default network, the ports of primary-UDN pods join the
//! `SecondaryPods` port group and get their open-default-ports ACLs (`addLogicalPort`,
//! `setUDNPodOpenPortsOps`).

use std::collections::BTreeSet;

use udn_api::annotations::{OpenPort, PodNetworkRole};
use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::nb::logical_switch_port;

use super::acl::{AclSpec, PRIMARY_TIER, Pipeline, acl_row};
use super::columns::{NAD_KEY, NETWORK_KEY, Pairs, TOPOLOGY_KEY, string_map, string_set};
use super::context::NetCtx;
use super::dbids::{ACL_UDN, DbIds};
use super::desired::{Build, POD_UNIT, Rows};
use super::names::pod_port_name;
use super::problem::{Missing, Problem};
use crate::model::{PodAttachment, Topology};

/// Prefix of the open-ports ACL names (`OpenPortACLPrefix`).
const OPEN_PORT_PREFIX: &str = "OpenPort-";
/// Priority of the UDN isolation allow ACLs (`types.PrimaryUDNAllowPriority`).
pub(crate) const PRIMARY_UDN_ALLOW_PRIORITY: i64 = 1001;

/// The pod units of the network; `switch_ready(node)` tells whether a local node's switch
/// is rendered (Layer3, default network).
pub(crate) fn build(
    ctx: &NetCtx<'_>,
    pods: &[PodAttachment],
    switch_ready: &dyn Fn(&str) -> bool,
    build: &mut Build,
) {
    let mut sorted: Vec<&PodAttachment> = pods.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.namespace, &a.pod, &a.nad_key).cmp(&(&b.namespace, &b.pod, &b.nad_key))
    });
    let mut seen = BTreeSet::new();
    for pod in sorted {
        let name = pod_port_name(ctx.is_default(), &pod.nad_key, &pod.namespace, &pod.pod);
        if !seen.insert(name.clone()) {
            continue;
        }
        match pod_port(ctx, pod, &name, switch_ready) {
            Ok(Some(port)) => {
                let mut rows = Rows::default();
                let reference = rows.add(port.row);
                build.unit(POD_UNIT, &name, rows);
                attach(ctx, pod, &name, port.local, reference, build);
            }
            Ok(None) => {}
            Err(missing) => build.problems.push(Problem::Pod {
                namespace: pod.namespace.clone(),
                pod: pod.pod.clone(),
                nad_key: pod.nad_key.clone(),
                missing,
            }),
        }
    }
}

struct PodPort {
    row: DesiredRow,
    local: bool,
}

/// The pod's port, `None` when this zone has none (a remote pod outside Layer2).
fn pod_port(
    ctx: &NetCtx<'_>,
    pod: &PodAttachment,
    name: &str,
    switch_ready: &dyn Fn(&str) -> bool,
) -> Result<Option<PodPort>, Missing> {
    let node = ctx
        .zone
        .node(&pod.node)
        .ok_or_else(|| Missing::UnknownNode {
            node: pod.node.clone(),
        })?;
    let layer2 = ctx.topology == Topology::Layer2;
    if !node.local && !layer2 {
        return Ok(None);
    }
    if node.local
        && matches!(ctx.topology, Topology::Default | Topology::Layer3)
        && !switch_ready(&node.name)
    {
        return Err(Missing::NodeSwitch {
            node: node.name.clone(),
        });
    }
    let chassis = node.chassis_id.as_deref().ok_or(Missing::ChassisId)?;
    let mut options = Vec::new();
    if !pod.uid.is_empty() {
        options.push(("iface-id-ver", pod.uid.clone()));
    }
    options.push(("requested-chassis", chassis.to_owned()));
    if layer2 {
        let key = pod
            .tunnel_id
            .filter(|k| *k != 0)
            .ok_or(Missing::PodTunnelId)?;
        options.push(("requested-tnl-key", key.to_string()));
    }
    let mut address = pod.mac.to_string();
    for ip in &pod.ips {
        address.push(' ');
        address.push_str(&ip.ip().to_string());
    }
    let mut ids: Pairs = vec![
        ("namespace", pod.namespace.clone()),
        ("pod", "true".to_owned()),
    ];
    if ctx.is_udn() {
        ids.push((NETWORK_KEY, ctx.net.name.clone()));
        ids.push((NAD_KEY, pod.nad_key.clone()));
        ids.push((TOPOLOGY_KEY, ctx.markers.topology().to_owned()));
    }
    // `type` is managed on every pod port: a Layer2 pod whose node moved into the zone
    // stops being `remote`.
    let port_type = if node.local { "" } else { "remote" };
    let row = DesiredRow::new(logical_switch_port::TABLE, name)
        .string(logical_switch_port::NAME, name)
        .string(logical_switch_port::TYPE, port_type)
        .value(logical_switch_port::ADDRESSES, string_set([&address]))
        .value(logical_switch_port::PORT_SECURITY, string_set([&address]))
        .value(logical_switch_port::OPTIONS, string_map(options))
        .value(logical_switch_port::EXTERNAL_IDS, string_map(ids));
    Ok(Some(PodPort {
        row,
        local: node.local,
    }))
}

fn attach(
    ctx: &NetCtx<'_>,
    pod: &PodAttachment,
    name: &str,
    local: bool,
    port: RowRef,
    build: &mut Build,
) {
    match ctx.topology {
        Topology::Layer2 | Topology::Localnet => build.links.switch_ports.push(port),
        Topology::Default | Topology::Layer3 => {
            if ctx.is_default()
                && ctx.zone.config.segmentation
                && local
                && pod.role == PodNetworkRole::InfrastructureLocked
            {
                build.links.secondary_pods.push(port.clone());
                let acls = open_port_acls(ctx, pod, name);
                build.links.open_port_acls.extend(acls);
            }
            build
                .links
                .node_switch_ports
                .entry(pod.node.clone())
                .or_default()
                .push(port);
        }
    }
}

/// The two open-ports ACLs of a primary-UDN pod's default-network port (none without open
/// ports).
fn open_port_acls(ctx: &NetCtx<'_>, pod: &PodAttachment, port: &str) -> Vec<DesiredRow> {
    if pod.open_ports.is_empty() {
        return Vec::new();
    }
    let ports: Vec<String> = pod.open_ports.iter().map(|p| port_match(*p)).collect();
    let ingress = format!(
        "outport == \"{port}\" && (arp || nd || ({}))",
        ports.join(" || ")
    );
    let egress = format!("inport == \"{port}\" && (arp || nd)");
    let name = format!("{OPEN_PORT_PREFIX}{}/{}", pod.namespace, pod.pod);
    [
        ("Ingress", ingress, "allow-related", Pipeline::Ingress),
        ("Egress", egress, "allow", Pipeline::Egress),
    ]
    .into_iter()
    .map(|(direction, match_, action, pipeline)| {
        let ids = DbIds::new(ACL_UDN, &ctx.controller, [&name, direction]);
        let spec = AclSpec {
            priority: PRIMARY_UDN_ALLOW_PRIORITY,
            match_: &match_,
            action,
            pipeline,
            tier: PRIMARY_TIER,
        };
        acl_row(&ids, spec, ctx.zone.features)
    })
    .collect()
}

/// One open port's match: `tcp.dst == 80`, or `icmp` (which OVN expands to icmp4 || icmp6).
fn port_match(port: OpenPort) -> String {
    match port.port() {
        Some(number) => format!("{}.dst == {number}", port.protocol()),
        None => "icmp".to_owned(),
    }
}
