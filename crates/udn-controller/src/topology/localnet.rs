//! A localnet network (upstream `LocalnetUserDefinedNetworkController.init`): one switch
//! bridged onto a physical network through its localnet port (`network_name`: the NetConf
//! `physicalNetworkName`, else the network name; `tag_request`: the VLAN), with the local
//! pods' ports. Always secondary: no gateway, no interconnect, no load balancer groups.

use std::collections::BTreeMap;

use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::{logical_switch, logical_switch_port};

use super::columns::string_map;
use super::context::NetCtx;
use super::desired::{Build, CLUSTER_UNIT, Rows};
use super::pods;
use super::routing::cidr;
use crate::model::PodAttachment;

/// Every unit of a localnet network.
pub(crate) fn build(ctx: &NetCtx<'_>, pods: &[PodAttachment], build: &mut Build) {
    pods::build(ctx, pods, &|_| true, build);
    let mut rows = Rows::default();
    let port_name = ctx.names.localnet_port();
    let info = ctx.net.user_defined();
    let network_name = info
        .map(|i| i.physical_network_name.as_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(&ctx.net.name);
    let mut port = DesiredRow::new(logical_switch_port::TABLE, &port_name)
        .string(logical_switch_port::NAME, &port_name)
        .string(logical_switch_port::TYPE, "localnet")
        .strings(logical_switch_port::ADDRESSES, ["unknown"])
        .map(
            logical_switch_port::OPTIONS,
            [("network_name", network_name)],
        );
    let vlan = info.map_or(0, |i| i.vlan_id);
    if vlan != 0 {
        port = port.integer(logical_switch_port::TAG_REQUEST, vlan);
    }
    let mut ports = vec![rows.add(port)];
    ports.extend(build.links.switch_ports.iter().cloned());
    let mut other_config: BTreeMap<&str, String> = BTreeMap::new();
    for subnet in info.map(|i| i.subnets.as_slice()).unwrap_or_default() {
        if subnet.cidr.is_ipv6() {
            other_config.insert("ipv6_prefix", subnet.cidr.network().to_string());
        } else {
            other_config.insert("subnet", cidr(subnet.cidr));
        }
    }
    let name = ctx.names.localnet_switch();
    rows.add(
        DesiredRow::new(logical_switch::TABLE, &name)
            .string(logical_switch::NAME, &name)
            .value(
                logical_switch::EXTERNAL_IDS,
                string_map(ctx.markers.switch()),
            )
            .value(logical_switch::OTHER_CONFIG, string_map(other_config))
            .refs(logical_switch::PORTS, ports),
    );
    build.unit(CLUSTER_UNIT, &ctx.net.name, rows);
}
