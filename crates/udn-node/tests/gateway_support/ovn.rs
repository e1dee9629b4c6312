//! Real OVN gateway routers on a lab node, as upstream's are for what breth0 sees: a GR per
//! network bound to the node's chassis, with the node IP (and a UDN's masquerade IP) on its
//! external port and the bridge MAC, an external switch with a localnet port (so
//! ovn-controller makes the network's patch port on breth0), a pod switch right behind the
//! GR and pods on it; and running async code inside a named netns.

use std::fs::File;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
use udn_api::names::ovn_prefix;
use udn_node::gateway::patch_port_name;
use udn_ovn_lab::{InterfaceSpec, Lab, Node, PodSpec};

use super::block_on;

/// How long a lab step may take.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// One network of the test.
pub(crate) struct Network {
    /// The OVN name prefix (`""` for the default network).
    pub(crate) prefix: String,
    /// `None` for the default network.
    pub(crate) network_id: Option<u32>,
    /// The address the GR SNATs its pods to.
    pub(crate) snat_ip: Ipv4Addr,
    pub(crate) pod_ip: Ipv4Addr,
    pub(crate) pod_gateway: Ipv4Addr,
    pub(crate) pod_subnet: &'static str,
}

impl Network {
    pub(crate) fn default_network() -> Self {
        Self {
            prefix: String::new(),
            network_id: None,
            snat_ip: Ipv4Addr::new(172, 18, 0, 2),
            pod_ip: Ipv4Addr::new(10, 244, 0, 5),
            pod_gateway: Ipv4Addr::new(10, 244, 0, 1),
            pod_subnet: "10.244.0.0/24",
        }
    }

    pub(crate) fn udn(name: &str, network_id: u32, snat_ip: Ipv4Addr) -> Self {
        Self {
            prefix: ovn_prefix(name),
            network_id: Some(network_id),
            snat_ip,
            pod_ip: Ipv4Addr::new(10, 100, 0, 5),
            pod_gateway: Ipv4Addr::new(10, 100, 0, 1),
            pod_subnet: "10.100.0.0/24",
        }
    }

    pub(crate) fn pod_name(&self) -> String {
        format!("{}pod", self.prefix).replace('_', "-")
    }

    pub(crate) fn patch_port(&self, node: &Node) -> String {
        patch_port_name(node.gateway_bridge(), &self.prefix, node.name())
    }
}

/// The MAC upstream derives from an IPv4 address (`0a:58:` + its octets).
pub(crate) fn mac_of(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("0a:58:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
}

/// Writes `network`'s GR, external switch (localnet port on `physnet`) and pod switch in NB.
pub(crate) fn build_gateway(node: &Node, network: &Network) {
    let p = &network.prefix;
    let n = node.name();
    let gr = format!("GR_{p}{n}");
    let rtoe = format!("rtoe-{gr}");
    let etor = format!("etor-{gr}");
    let to_pods = format!("{p}gr-to-pods");
    let pods = format!("{p}pods");
    let pod_lsp = format!("{p}pod");
    let ext = format!("{p}ext_{n}");
    let localnet = format!("breth0_{p}{n}");
    let node_ip = format!("{}/{}", node.node_ip(), node.node_prefix_len());
    // A UDN's GR also carries its masquerade IP as /32 on the external port.
    let mut rtoe_networks = vec![node_ip];
    if network.network_id.is_some() {
        rtoe_networks.push(format!("{}/32", network.snat_ip));
    }
    let chassis = format!("options:chassis={}", node.chassis_id());
    let pod_addresses = format!("{} {}", mac_of(network.pod_ip), network.pod_ip);
    let gateway_cidr = format!("{}/24", network.pod_gateway);
    let router_port = |port: &str| format!("router-port={port}");
    let mut args: Vec<String> = Vec::new();
    let mut cmd = |words: &[&str]| {
        if !args.is_empty() {
            args.push("--".into());
        }
        args.extend(words.iter().map(|word| (*word).to_owned()));
    };
    cmd(&["lr-add", &gr]);
    cmd(&["set", "logical_router", &gr, &chassis]);
    cmd(&[
        "lrp-add",
        &gr,
        &to_pods,
        &mac_of(network.pod_gateway),
        &gateway_cidr,
    ]);
    let mut rtoe_add = vec!["lrp-add", &gr, &rtoe, node.breth0_mac()];
    rtoe_add.extend(rtoe_networks.iter().map(String::as_str));
    cmd(&rtoe_add);
    cmd(&["ls-add", &pods]);
    cmd(&["lsp-add", &pods, &pod_lsp]);
    cmd(&["lsp-set-addresses", &pod_lsp, &pod_addresses]);
    let pods_to_gr = format!("{p}pods-to-gr");
    cmd(&["lsp-add", &pods, &pods_to_gr]);
    cmd(&["lsp-set-type", &pods_to_gr, "router"]);
    cmd(&["lsp-set-addresses", &pods_to_gr, "router"]);
    cmd(&["lsp-set-options", &pods_to_gr, &router_port(&to_pods)]);
    cmd(&["ls-add", &ext]);
    cmd(&["lsp-add", &ext, &etor]);
    cmd(&["lsp-set-type", &etor, "router"]);
    cmd(&["lsp-set-addresses", &etor, node.breth0_mac()]);
    cmd(&["lsp-set-options", &etor, &router_port(&rtoe)]);
    cmd(&["lsp-add", &ext, &localnet]);
    cmd(&["lsp-set-type", &localnet, "localnet"]);
    cmd(&["lsp-set-addresses", &localnet, "unknown"]);
    cmd(&["lsp-set-options", &localnet, "network_name=physnet"]);
    let next_hop = node.next_hop().to_string();
    cmd(&["lr-route-add", &gr, "0.0.0.0/0", &next_hop, &rtoe]);
    let snat_ip = network.snat_ip.to_string();
    cmd(&["lr-nat-add", &gr, "snat", &snat_ip, network.pod_subnet]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    node.nbctl(&refs).unwrap();
}

pub(crate) fn add_pod(lab: &Lab, node: &Node, network: &Network) -> String {
    let nic = InterfaceSpec::new(
        "eth0",
        &format!("{}pod", network.prefix),
        &mac_of(network.pod_ip),
    )
    .ip(format!("{}/24", network.pod_ip).parse().unwrap())
    .gateway(IpAddr::V4(network.pod_gateway));
    let name = network.pod_name();
    lab.add_pod(
        PodSpec::new(&name, node.name())
            .interface(nic)
            .disable_ipv6(),
    )
    .unwrap();
    lab.wait_installed(&name, WAIT)
        .unwrap_or_else(|error| panic!("{name}: {error}\n{}", lab.diagnostics()));
    lab.pod(&name).unwrap().netns
}

/// Runs `body` on a thread inside netns `name` with its own runtime.
pub(crate) fn in_named_netns<T, F, Fut>(name: &str, body: F) -> JoinHandle<T>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
{
    let path = format!("/run/netns/{name}");
    std::thread::spawn(move || {
        let file = File::open(&path).unwrap();
        move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network)).unwrap();
        block_on(body())
    })
}
