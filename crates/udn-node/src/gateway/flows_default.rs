//! The flows only the default gateway bridge gets (upstream `flowsForDefaultBridge`): geneve
//! around conntrack, service traffic between host and OVN in the masquerade zones (tables
//! 2–5), the cross-network service drop, fragment reassembly and the replies of table 1.
//!
//! The texts are upstream's, spacing included (so a flow can be compared with an
//! ovnkube-node's); shared gateway mode, without the GARP, no-overlay and advertised-network
//! variants.

use super::flow::{CT_MARK_HOST, DEFAULT_OPENFLOW_COOKIE as C};
use super::render::{Family, Render};

/// Appends the default bridge's own flows to `out`.
pub(super) fn default_bridge_flows(r: &Render, out: &mut Vec<String>) {
    if let Some(v4) = &r.v4 {
        host_and_geneve(r, v4, false, out);
    }
    if let Some(v6) = &r.v6 {
        host_and_geneve(r, v6, true, out);
    }
    services(r, out);
    reassembly(r, out);
    replies(r, out);
    dispatch(r, out);
}

/// Geneve skipping conntrack, the hairpin from OVN to the host and the replies of host to
/// OVN service traffic (table 0).
fn host_and_geneve(r: &Render, family: &Family, v6: bool, out: &mut Vec<String>) {
    let (mac, host, port) = (&r.mac, &r.host, r.encap_port);
    let udp = if v6 { "udp6" } else { "udp" };
    if let Some(phys) = &r.phys {
        // Geneve from outside to the bridge MAC goes straight to the host, other geneve is
        // switched, and the host's geneve goes straight out: none of it through conntrack.
        out.push(format!(
            "cookie={C}, priority=205, in_port={phys}, dl_dst={mac}, {udp}, udp_dst={port}, actions=output:{host}"
        ));
        out.push(format!(
            "cookie={C}, priority=200, in_port={phys}, {udp}, udp_dst={port}, actions=NORMAL"
        ));
        // Upstream names the host port LOCAL here for IPv6 even with a representor.
        let from = if v6 { "LOCAL" } else { host.as_str() };
        out.push(format!(
            "cookie={C}, priority=200, in_port={from}, {udp}, udp_dst={port}, actions=output:{phys}"
        ));
    }
    let p = family.proto;
    let node_ip = family.node_ip;
    let masq = if v6 { &r.masq_v6 } else { &r.masq_v4 };
    let host_masq = masq.host;
    let host_zone = r.zones.host_masq;
    // Service hairpin from OVN to the host: OVN sent it to the host masquerade IP; DNAT it to
    // the node IP and finish in table 4.
    for net in &r.nets {
        out.push(format!(
            "cookie={C}, priority=500, in_port={patch}, {p}, {p}_dst={host_masq}, {p}_src={node_ip},actions=ct(commit,zone={host_zone},nat(dst={node_ip}),table=4)",
            patch = net.patch
        ));
    }
    // The same hairpin to the node's other addresses needs no DNAT.
    for ip in &r.host_ips {
        if ip.is_ipv6() != v6 || *ip == node_ip || *ip == host_masq {
            continue;
        }
        for net in &r.nets {
            out.push(format!(
                "cookie={C}, priority=500, in_port={patch}, {p}, {p}_dst={ip}, {p}_src={node_ip},actions=ct(commit,zone={host_zone},table=4)",
                patch = net.patch
            ));
        }
    }
    // Replies of the host to OVN's service traffic: un-SNAT and finish in table 5.
    out.push(format!(
        "cookie={C}, priority=500, in_port={host}, {p}, {p}_dst={ovn_masq},actions=ct(zone={ovn_zone},nat,table=5)",
        ovn_masq = masq.ovn,
        ovn_zone = r.zones.ovn_masq
    ));
}

/// Host to service CIDRs (SNAT to the host masquerade IP, or as is from a UDN's masquerade
/// address), the replies from OVN, and the drop of service traffic no load balancer took.
fn services(r: &Render, out: &mut Vec<String>) {
    let (host, host_zone) = (&r.host, r.zones.host_masq);
    for svc in &r.service_cidrs {
        let (p, masq) = r.masquerade_of(svc);
        let (masq_ip, masq_subnet) = (masq.host, &masq.subnet);
        out.push(format!(
            "cookie={C}, priority=500, in_port={host}, {p}, {p}_dst={svc}, actions=ct(commit,zone={host_zone},nat(src={masq_ip}),table=2)"
        ));
        if r.network_segmentation {
            // From a UDN's host side the source is already that UDN's masquerade IP.
            out.push(format!(
                "cookie={C}, priority=550, in_port={host}, {p}, {p}_src={masq_subnet}, {p}_dst={svc}, actions=ct(commit,zone={host_zone},table=2)"
            ));
        }
        let masq_dst = if r.network_segmentation {
            masq_subnet.clone()
        } else {
            masq_ip.to_string()
        };
        for net in &r.nets {
            let patch = &net.patch;
            out.push(format!(
                "cookie={C}, priority=500, in_port={patch}, {p}, {p}_src={svc}, {p}_dst={masq_dst},actions=ct(zone={host_zone},nat,table=3)"
            ));
            // Service traffic OVN did not DNAT (no load balancer of this network took it:
            // another network's ClusterIP, or a wrong port) must not leave the node.
            out.push(format!(
                "cookie={C}, priority=115, in_port={patch}, {p}, {p}_dst={svc},actions=drop"
            ));
        }
    }
}

/// Fragments from outside are reassembled in their own zone before anything matches on L4.
fn reassembly(r: &Render, out: &mut Vec<String>) {
    let Some(phys) = &r.phys else { return };
    let zone = r.zones.reassembly;
    for family in [&r.v4, &r.v6].into_iter().flatten() {
        let p = family.proto;
        out.push(format!(
            "cookie={C}, priority=110, table=0, in_port={phys}, {p}, nw_frag=yes, actions=ct(table=0,zone={zone})"
        ));
    }
}

/// Table 1: replies of tracked connections go back to the network (by its conntrack mark) or
/// the host; new traffic to the bridge MAC goes to the host.
fn replies(r: &Render, out: &mut Vec<String>) {
    if r.phys.is_none() {
        return;
    }
    let (mac, host, mv, sv) = (&r.mac, &r.host, &r.vlan.matching, &r.vlan.strip);
    for net in &r.nets {
        for family in [&r.v4, &r.v6].into_iter().flatten() {
            let p = family.proto;
            for state in ["+trk+est", "+trk+rel"] {
                out.push(format!(
                    "cookie={C}, priority=100, table=1, {p}, ct_state={state}, ct_mark={mark}, actions=output:{patch}",
                    mark = net.ct_mark,
                    patch = net.patch
                ));
            }
        }
    }
    for family in [&r.v4, &r.v6].into_iter().flatten() {
        let p = family.proto;
        for state in ["+trk+est", "+trk+rel"] {
            out.push(format!(
                "cookie={C}, priority=100, table=1, {mv} {p}, ct_state={state}, ct_mark={CT_MARK_HOST}, actions={sv}output:{host}"
            ));
        }
    }
    out.push(format!(
        "cookie={C}, priority=10, table=1, {mv} dl_dst={mac}, actions={sv}output:{host}"
    ));
}

/// Tables 2–5: host-to-OVN service dispatch (by packet mark for UDNs), OVN-to-host dispatch,
/// and the hairpin SNAT and reply un-DNAT.
fn dispatch(r: &Render, out: &mut Vec<String>) {
    let (mac, host) = (&r.mac, &r.host);
    let (mv, sv, modv) = (&r.vlan.matching, &r.vlan.strip, &r.vlan.modify);
    out.push(format!(
        "cookie={C}, priority=100, table=2, actions=set_field:{mac}->eth_dst,{modv}output:{default}",
        default = r.default_patch
    ));
    for (family, v6) in [(&r.v4, false), (&r.v6, true)] {
        let Some(family) = family else { continue };
        let p = family.proto;
        for (net, udn) in r.udns() {
            let masq = if v6 { &udn.v6 } else { &udn.v4 };
            if let Some(masq) = masq {
                // A UDN's management port masquerade source reaching table 2 came from a
                // UDN pod through the host towards another network's service.
                out.push(format!(
                    "cookie={C}, priority=200, table=2, {p}, {p}_src={mgmt}, actions=drop",
                    mgmt = masq.management_port.ip()
                ));
            }
            // Host traffic nftables marked for this UDN's services goes to its patch port.
            out.push(format!(
                "cookie={C}, priority=250, table=2, {p}, pkt_mark={mark}, actions=set_field:{mac}->eth_dst,{modv}output:{patch}",
                mark = udn.pkt_mark,
                patch = net.patch
            ));
        }
    }
    out.push(format!(
        "cookie={C}, table=3, {mv} actions=move:NXM_OF_ETH_DST[]->NXM_OF_ETH_SRC[],set_field:{mac}->eth_dst,{sv}output:{host}"
    ));
    let ovn_zone = r.zones.ovn_masq;
    if r.v4.is_some() {
        out.push(format!(
            "cookie={C}, priority=0, table=4,ip,actions=ct(commit,zone={ovn_zone},nat(src={ovn}),table=3)",
            ovn = r.masq_v4.ovn
        ));
    }
    if r.v6.is_some() {
        // Upstream's IPv6 text has a space before `actions` that the IPv4 one lacks.
        out.push(format!(
            "cookie={C}, priority=0, table=4,ipv6, actions=ct(commit,zone={ovn_zone},nat(src={ovn}),table=3)",
            ovn = r.masq_v6.ovn
        ));
    }
    let host_zone = r.zones.host_masq;
    for family in [&r.v4, &r.v6].into_iter().flatten() {
        let p = family.proto;
        out.push(format!(
            "cookie={C}, priority=0, table=5, {p}, actions=ct(commit,zone={host_zone},nat,table=2)"
        ));
    }
}
