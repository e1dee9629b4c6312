//! The per-Service flows (upstream `nodePortWatcher.updateServiceFlowCache` and
//! `createLbAndExternalSvcFlows`, shared gateway mode, "case2": ETP=Cluster, or ETP=Local
//! without a host-network endpoint on this node): NodePorts, external IPs and load balancer
//! ingress IPs arriving on the uplink go to the patch port of the Service's network, and
//! their replies from that patch port go back out of the uplink. A primary UDN's Service gets
//! flows only while that UDN's patch port exists (upstream `getActiveNetwork`).
//!
//! Also the table 2 flows of the `--udn-allowed-default-services` Services: host traffic to
//! their cluster IPs goes to the default network even when it came from a UDN's management
//! port (priority 300 wins over that UDN's drop at 200).
//!
//! Each Service port's flows carry upstream's cookie (`svcToCookie`: FNV-1a 64 of namespace,
//! name, a token and a port), so a dump can be matched with an ovnkube-node's; the table 2
//! flows carry the default cookie. Texts are upstream's, spacing included.

use std::net::IpAddr;

use super::flow::DEFAULT_OPENFLOW_COOKIE;
use super::inputs::BridgeInputs;
use super::render::Render;
use crate::services::{ServiceNetwork, ServicePortView, ServiceView};

/// ICMP "destination unreachable, fragmentation needed" (IPv4) and "packet too big" (IPv6):
/// sent to OVN as well so path MTU discovery keeps working.
const ICMP_FRAG_V4: (u8, u8) = (3, 4);
const ICMP_FRAG_V6: (u8, u8) = (2, 0);
/// The priority of every per-Service flow in table 0.
const PRIORITY: u16 = 110;

/// Upstream's `svcToCookie`: `0x` + the FNV-1a 64-bit hash of
/// `<namespace><name><token><port>` in lower-case hex. The token is the flow protocol
/// (`tcp`, `udp6`, ...) for a NodePort, the address for an external or ingress IP.
pub fn service_cookie(namespace: &str, name: &str, token: &str, port: u16) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let id = format!("{namespace}{name}{token}{port}");
    let hash = id.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    });
    format!("0x{hash:x}")
}

/// Appends every Service's flows to `out`, Services in input order.
pub(super) fn service_flows(r: &Render, inputs: &BridgeInputs, out: &mut Vec<String>) {
    for service in &inputs.services {
        if let (Some(phys), Some(patch)) = (&r.phys, patch_of(r, inputs, &service.network)) {
            let ports = arp_ports(inputs, &patch, phys);
            let ctx = ServiceCtx {
                r,
                service,
                phys,
                patch: &patch,
                arp_ports: &ports,
            };
            for port in &service.ports {
                ctx.node_port_flows(port, out);
                // Upstream's order: ingress IPs, then external IPs.
                for ip in &service.ingress_ips {
                    ctx.external_ip_flows(port, *ip, out);
                }
                for ip in &service.external_ips {
                    ctx.external_ip_flows(port, *ip, out);
                }
            }
        }
        if r.network_segmentation
            && service.network == ServiceNetwork::Default
            && inputs
                .cluster
                .is_udn_enabled_service(&service.namespace, &service.name)
        {
            udn_allowed_flows(r, service, out);
        }
    }
}

/// The patch port of `network` on the bridge: the default network's, or the UDN's once
/// ovn-controller made it.
fn patch_of(r: &Render, inputs: &BridgeInputs, network: &ServiceNetwork) -> Option<String> {
    match network {
        ServiceNetwork::Default => Some(r.default_patch.clone()),
        ServiceNetwork::Udn(name) => inputs
            .udns
            .iter()
            .find(|udn| &udn.network == name)
            .and_then(|udn| udn.ofport.as_ref())
            .map(ToString::to_string),
    }
}

/// Where ARP requests and neighbour solicitations for an external IP go: every port of the
/// bridge but the uplink and the Service's patch port (OVN must not answer: the node does).
fn arp_ports(inputs: &BridgeInputs, patch: &str, phys: &str) -> Vec<String> {
    inputs
        .bridge_ports
        .iter()
        .map(ToString::to_string)
        .filter(|port| port != patch && port != phys)
        .collect()
}

/// One Service's rendering context on the bridge.
struct ServiceCtx<'a> {
    r: &'a Render,
    service: &'a ServiceView,
    phys: &'a str,
    patch: &'a str,
    /// `None`-like when empty: the bridge's ports are unknown.
    arp_ports: &'a [String],
}

impl ServiceCtx<'_> {
    fn cookie(&self, token: &str, port: u16) -> String {
        service_cookie(&self.service.namespace, &self.service.name, token, port)
    }

    /// A NodePort, per enabled family: to the network's patch port, and its replies out.
    fn node_port_flows(&self, port: &ServicePortView, out: &mut Vec<String>) {
        let Some(node_port) = port.node_port else {
            return;
        };
        let (r, phys, patch, mac) = (self.r, self.phys, self.patch, &self.r.mac);
        let proto = port.protocol.as_str();
        let families = [
            r.v4.as_ref().map(|_| proto.to_owned()),
            r.v6.as_ref().map(|_| format!("{proto}6")),
        ];
        for flow_proto in families.into_iter().flatten() {
            let cookie = self.cookie(&flow_proto, node_port);
            out.push(format!(
                "cookie={cookie}, priority={PRIORITY}, in_port={phys}, {flow_proto}, tp_dst={node_port}, actions=output:{patch}"
            ));
            out.push(format!(
                "cookie={cookie}, priority={PRIORITY}, in_port={patch}, dl_src={mac}, {flow_proto}, tp_src={node_port}, actions=output:{phys}"
            ));
        }
    }

    /// An external or ingress IP on a Service port: the ARP/NS bypass, the ICMP
    /// fragmentation-needed copy to OVN, and the pair to OVN and back.
    fn external_ip_flows(&self, port: &ServicePortView, ip: IpAddr, out: &mut Vec<String>) {
        let (phys, patch, mac) = (self.phys, self.patch, &self.r.mac);
        let cookie = self.cookie(&ip.to_string(), port.port);
        let v6 = ip.is_ipv6();
        let proto = port.protocol.as_str();
        let (flow_proto, nw_dst, nw_src) = if v6 {
            (format!("{proto}6"), "ipv6_dst", "ipv6_src")
        } else {
            (proto.to_owned(), "nw_dst", "nw_src")
        };
        out.push(self.arp_bypass(&cookie, ip));
        let (icmp, (icmp_type, icmp_code)) = if v6 {
            ("icmp6", ICMP_FRAG_V6)
        } else {
            ("icmp", ICMP_FRAG_V4)
        };
        out.push(format!(
            "cookie={cookie}, priority={PRIORITY}, in_port={phys}, {icmp}, {nw_dst}={ip}, icmp_type={icmp_type}, icmp_code={icmp_code}, actions=output:{patch}"
        ));
        let service_port = port.port;
        out.push(format!(
            "cookie={cookie}, priority={PRIORITY}, in_port={phys}, {flow_proto}, {nw_dst}={ip}, tp_dst={service_port}, actions=output:{patch}"
        ));
        out.push(format!(
            "cookie={cookie}, priority={PRIORITY}, in_port={patch}, dl_src={mac}, {flow_proto}, {nw_src}={ip}, tp_src={service_port}, actions=output:{phys}"
        ));
    }

    /// Upstream `generateARPBypassFlow`: ARP requests (NS for IPv6) for the address go to the
    /// host and every other port, never to OVN. With a gateway VLAN the tag is stripped
    /// (upstream's text has a doubled comma there, which OVS reads).
    fn arp_bypass(&self, cookie: &str, ip: IpAddr) -> String {
        let phys = self.phys;
        let (proto, dst) = if ip.is_ipv6() {
            ("icmp6, icmp_type=135, icmp_code=0", "nd_target")
        } else {
            ("arp, arp_op=1", "arp_tpa")
        };
        if self.arp_ports.is_empty() {
            return format!(
                "cookie={cookie}, priority={PRIORITY}, in_port={phys}, {proto}, {dst}={ip}, actions=output:LOCAL"
            );
        }
        let ports = self.arp_ports.join(",");
        let vlan = &self.r.vlan;
        if vlan.matching.is_empty() {
            format!(
                "cookie={cookie}, priority={PRIORITY}, in_port={phys}, {proto}, {dst}={ip}, actions=output:{ports}"
            )
        } else {
            format!(
                "cookie={cookie}, priority={PRIORITY}, in_port={phys}, {mv}, {proto}, {dst}={ip}, actions={sv}output:{ports}",
                mv = vlan.matching,
                sv = vlan.strip
            )
        }
    }
}

/// Table 2: host traffic to an allowed default-network Service's cluster IPs goes to the
/// default network, whichever network's host side it came from.
fn udn_allowed_flows(r: &Render, service: &ServiceView, out: &mut Vec<String>) {
    let (mac, modv, default) = (&r.mac, &r.vlan.modify, &r.default_patch);
    for ip in &service.cluster_ips {
        let p = if ip.is_ipv6() { "ipv6" } else { "ip" };
        out.push(format!(
            "cookie={DEFAULT_OPENFLOW_COOKIE}, priority=300, table=2, {p}, {p}_dst={ip}, actions=set_field:{mac}->eth_dst,{modv}output:{default}"
        ));
    }
}
