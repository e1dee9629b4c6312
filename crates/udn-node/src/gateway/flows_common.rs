//! The flows every gateway bridge gets (upstream `commonFlows`): traffic to the bridge MAC to
//! OVN and the host, ARP fan-out filtering, source-MAC checks on patch ports, egress commits
//! (with the SNAT of a UDN's masquerade source to the node IP), replies from outside, and
//! table 1's catch-alls.
//!
//! Texts are upstream's, shared gateway mode; EgressIP, multiple-external-gateway,
//! advertised-network and no-overlay variants are not rendered.

use super::flow::{CT_MARK_HOST, DEFAULT_OPENFLOW_COOKIE as C, NODE_SNAT_PKT_MARK};
use super::render::{Family, Net, Render};

/// ICMPv6 router advertisement.
const ICMPV6_ROUTER_ADVERTISEMENT: u8 = 134;
/// ICMPv6 neighbor solicitation.
const ICMPV6_NEIGHBOR_SOLICITATION: u8 = 135;
/// ICMPv6 neighbor advertisement.
const ICMPV6_NEIGHBOR_ADVERTISEMENT: u8 = 136;
/// BFD control packets (UDP).
const BFD_PORT: u16 = 3784;

/// Appends the common flows to `out`.
pub(super) fn common_flows(r: &Render, out: &mut Vec<String>) {
    let (mac, mv) = (&r.mac, &r.vlan.matching);
    if let Some(phys) = &r.phys {
        // Unicast to the bridge MAC: every network's GR and the host may own the address.
        out.push(format!(
            "cookie={C}, priority=10, table=0, {mv} dl_dst={mac}, actions={outputs}NORMAL",
            outputs = r.patch_outputs(false)
        ));
        if r.network_segmentation {
            arp_fanout_filter(r, phys, out);
        }
    }
    for net in &r.nets {
        // Non-IP from OVN is switched only with the bridge MAC as source.
        out.push(format!(
            "cookie={C}, priority=10, table=0, in_port={patch}, dl_src={mac}, actions=output:NORMAL",
            patch = net.patch
        ));
        out.push(format!(
            "cookie={C}, priority=9, table=0, in_port={patch}, actions=drop",
            patch = net.patch
        ));
    }
    for (family, v6) in [(&r.v4, false), (&r.v6, true)] {
        if let Some(family) = family {
            egress(r, family, v6, out);
        }
    }
    if let Some(phys) = &r.phys {
        table1_tail(r, phys, out);
    }
}

/// ARP requests and neighbour solicitations for the node IP go only to the default network
/// and the host (every UDN GR owns the node IP too and would answer); broadcast ARP from
/// outside is still copied to every GR. Relies on the UDN patch ports being no-flood.
fn arp_fanout_filter(r: &Render, phys: &str, out: &mut Vec<String>) {
    let (mv, default) = (&r.vlan.matching, &r.default_patch);
    for ip in &r.bridge_ips {
        if ip.is_ipv4() {
            out.push(format!(
                "cookie={C}, priority=12, table=0, {mv} arp, arp_op=1, arp_tpa={ip}, actions=output:{default},NORMAL"
            ));
        } else {
            out.push(format!(
                "cookie={C}, priority=12, table=0, {mv} icmp6, icmpv6_type={ICMPV6_NEIGHBOR_SOLICITATION}, nd_target={ip}, actions=output:{default},NORMAL"
            ));
        }
    }
    if r.udns().next().is_none() {
        return;
    }
    let all = r.patch_outputs(false);
    if r.v4.is_some() {
        out.push(format!(
            "cookie={C}, priority=11, table=0, in_port={phys}, {mv} dl_dst=ff:ff:ff:ff:ff:ff, arp, actions={all}NORMAL"
        ));
    }
    if r.v6.is_some() {
        out.push(format!(
            "cookie={C}, priority=11, table=0, in_port={phys}, {mv} dl_dst=33:33:00:00:00:01, icmp6, icmpv6_type={ICMPV6_NEIGHBOR_ADVERTISEMENT}, actions={all}NORMAL"
        ));
    }
}

/// Egress commits in zone 64000 (table 0): from OVN (a UDN's masquerade source SNATed to the
/// node IP), from the host, to the local LAN, and replies from outside into table 1.
fn egress(r: &Render, family: &Family, v6: bool, out: &mut Vec<String>) {
    let (mac, host, modv) = (&r.mac, &r.host, &r.vlan.modify);
    let (p, node_ip, zone) = (family.proto, family.node_ip, r.zones.conntrack);
    if let Some(phys) = &r.phys {
        for net in &r.nets {
            let (patch, mark) = (&net.patch, &net.ct_mark);
            // Marked for a last SNAT to the node IP (EgressIP, egress services); always
            // present upstream, whatever features are on.
            out.push(format!(
                "cookie={C}, priority=105, in_port={patch}, dl_src={mac}, {p}, pkt_mark={NODE_SNAT_PKT_MARK} actions=ct(commit, zone={zone}, nat(src={node_ip}), exec(set_field:{mark}->ct_mark)),output:{phys}"
            ));
            match &net.udn {
                None => {
                    // The default network's GR already SNATed to the node IP.
                    out.push(format!(
                        "cookie={C}, priority=100, in_port={patch}, dl_src={mac}, {p}, actions=ct(commit, zone={zone}, exec(set_field:{mark}->ct_mark)), output:{phys}"
                    ));
                    host_network_normal(r, net, v6, out);
                }
                Some(udn) => {
                    let masq = if v6 { &udn.v6 } else { &udn.v4 };
                    if let Some(masq) = masq {
                        // A UDN's GR SNATed to its own masquerade IP, unique per network, so
                        // zone 64000 tells the networks apart while SNATing all of them to
                        // the node IP; the mark sends replies back to this patch port.
                        out.push(format!(
                            "cookie={C}, priority=100, in_port={patch}, dl_src={mac}, {p}, {p}_src={gr}, actions=ct(commit, zone={zone}, nat(src={node_ip}), exec(set_field:{mark}->ct_mark)), output:{phys}",
                            gr = masq.gateway_router.ip()
                        ));
                    }
                }
            }
        }
        out.push(format!(
            "cookie={C}, priority=100, in_port={host}, {p}, actions=ct(commit, zone={zone}, exec(set_field:{CT_MARK_HOST}->ct_mark)), {modv}output:{phys}"
        ));
        out.push(format!(
            "cookie={C}, priority=50, {p}, dl_dst={mac}, actions=ct(zone={zone}, nat, table=1)"
        ));
    }
}

/// OVN (default network) and host traffic to the node's own subnets is committed and
/// switched rather than sent out of the uplink (upstream `hostNetworkNormalActionFlows`).
fn host_network_normal(r: &Render, net: &Net, v6: bool, out: &mut Vec<String>) {
    let (mac, zone) = (&r.mac, r.zones.conntrack);
    let (p, dst) = if v6 {
        ("ipv6", "ipv6_dst")
    } else {
        ("ip", "nw_dst")
    };
    let flow = |in_port: &str, subnet: &str, mark: &str| {
        format!(
            "cookie={C}, priority=102, in_port={in_port}, dl_src={mac}, {p}, {dst}={subnet}, actions=ct(commit, zone={zone}, exec(set_field:{mark}->ct_mark)), output:NORMAL"
        )
    };
    let subnets: Vec<String> = r
        .host_subnets
        .iter()
        .filter(|subnet| subnet.is_ipv6() == v6)
        .map(ToString::to_string)
        .collect();
    for subnet in &subnets {
        out.push(flow(&net.patch, subnet, &net.ct_mark));
    }
    for subnet in &subnets {
        out.push(flow("LOCAL", subnet, CT_MARK_HOST));
    }
    if v6 {
        // Neighbour discovery goes to ff02::1:ff00:0/104, outside the host subnets.
        let icmp = |in_port: &str, mark: &str, kind: u8| {
            format!(
                "cookie={C}, priority=102, in_port={in_port}, dl_src={mac}, icmp6, icmpv6_type={kind}, actions=ct(commit, zone={zone}, exec(set_field:{mark}->ct_mark)), output:NORMAL"
            )
        };
        for kind in [ICMPV6_NEIGHBOR_SOLICITATION, ICMPV6_NEIGHBOR_ADVERTISEMENT] {
            out.push(icmp(&net.patch, &net.ct_mark, kind));
            out.push(icmp("LOCAL", CT_MARK_HOST, kind));
        }
    }
}

/// Table 1's tail: new traffic to the bridge MAC to the host, IPv6 RA/NA flooding, BFD to
/// both OVN and the host, and NORMAL for the rest.
fn table1_tail(r: &Render, phys: &str, out: &mut Vec<String>) {
    let (mac, host, mv, sv) = (&r.mac, &r.host, &r.vlan.matching, &r.vlan.strip);
    let default = &r.default_patch;
    out.push(format!(
        "cookie={C}, priority=10, table=1, {mv} dl_dst={mac}, actions={sv}output:{host}"
    ));
    if r.v6.is_some() {
        // RA and NA fail to create a conntrack entry and must be flooded; UDN patch ports are
        // no-flood, so they are named.
        let udns = r.patch_outputs(true);
        for kind in [ICMPV6_ROUTER_ADVERTISEMENT, ICMPV6_NEIGHBOR_ADVERTISEMENT] {
            out.push(format!(
                "cookie={C}, priority=14, table=1,icmp6,icmpv6_type={kind} actions={udns}FLOOD"
            ));
        }
        out.push(format!(
            "cookie={C}, priority=13, table=1, in_port={phys}, udp6, tp_dst={BFD_PORT}, actions=output:{default},output:{host}"
        ));
    }
    if r.v4.is_some() {
        out.push(format!(
            "cookie={C}, priority=13, table=1, in_port={phys}, udp, tp_dst={BFD_PORT}, actions=output:{default},output:{host}"
        ));
    }
    out.push(format!(
        "cookie={C}, priority=0, table=1, actions=output:NORMAL"
    ));
}
