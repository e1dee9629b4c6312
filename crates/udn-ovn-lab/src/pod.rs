//! Pods: a netns per pod, each interface a veth whose host end is a port of the node's
//! `br-int` (never an internal or tap port: those break when ovs-vswitchd restarts), bound to
//! its logical switch port by `external_ids:iface-id`, as the CNI does.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::command::Cmd;
use crate::error::LabError;
use crate::netns::{Netns, ip};
use crate::node::Node;
use crate::node_start::external_id;

/// A route in a pod or on a management port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Destination.
    pub dest: IpNetwork,
    /// Next hop.
    pub via: IpAddr,
}

impl Route {
    /// `dest` via `via`.
    pub fn new(dest: IpNetwork, via: IpAddr) -> Self {
        Self { dest, via }
    }
}

/// One pod interface as the CNI would plumb it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceSpec {
    /// The name inside the pod: `eth0`, or `ovn-udn1` for a primary-UDN interface.
    pub ifname: String,
    /// The logical switch port name (`external_ids:iface-id`).
    pub iface_id: String,
    /// The MAC, `0a:58:...` form.
    pub mac: String,
    /// Addresses with prefix.
    pub ips: Vec<IpNetwork>,
    /// Default route via this address, if any.
    pub gateway: Option<IpAddr>,
    /// Further routes on this interface.
    pub routes: Vec<Route>,
    /// MTU of both veth ends (1500 by default: the underlay is 9000, so geneve fits).
    pub mtu: u32,
    /// Extra `external_ids` on the OVS Interface, as the CNI sets them (`iface-id-ver`,
    /// `sandbox`, `attached_mac`, `ip_addresses`, `k8s.ovn.org/network`, `k8s.ovn.org/nad`).
    pub external_ids: BTreeMap<String, String>,
    /// The host end's name in the node netns (at most 15 bytes); the lab picks a unique one
    /// when `None`.
    pub host_ifname: Option<String>,
}

impl InterfaceSpec {
    /// An interface with no addresses or routes, MTU 1500.
    pub fn new(ifname: &str, iface_id: &str, mac: &str) -> Self {
        Self {
            ifname: ifname.to_owned(),
            iface_id: iface_id.to_owned(),
            mac: mac.to_owned(),
            ips: Vec::new(),
            gateway: None,
            routes: Vec::new(),
            mtu: 1500,
            external_ids: BTreeMap::new(),
            host_ifname: None,
        }
    }

    /// Adds an address.
    pub fn ip(mut self, ip: IpNetwork) -> Self {
        self.ips.push(ip);
        self
    }

    /// Sets the default route.
    pub fn gateway(mut self, gateway: IpAddr) -> Self {
        self.gateway = Some(gateway);
        self
    }

    /// Adds a route.
    pub fn route(mut self, dest: IpNetwork, via: IpAddr) -> Self {
        self.routes.push(Route::new(dest, via));
        self
    }

    /// Sets the MTU.
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = mtu;
        self
    }

    /// Adds an `external_ids` entry on the OVS Interface.
    pub fn external_id(mut self, key: &str, value: &str) -> Self {
        self.external_ids.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Names the host end.
    pub fn host_ifname(mut self, name: &str) -> Self {
        self.host_ifname = Some(name.to_owned());
        self
    }
}

/// A pod to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSpec {
    /// The pod's name in the lab (its netns is `<prefix>-pod-<name>`).
    pub name: String,
    /// The node it runs on.
    pub node: String,
    /// Its interfaces, in order.
    pub interfaces: Vec<InterfaceSpec>,
    /// Turn IPv6 off in the pod (no router solicitations in packet counts).
    pub disable_ipv6: bool,
}

impl PodSpec {
    /// A pod with no interfaces yet.
    pub fn new(name: &str, node: &str) -> Self {
        Self {
            name: name.to_owned(),
            node: node.to_owned(),
            interfaces: Vec::new(),
            disable_ipv6: false,
        }
    }

    /// Adds an interface.
    pub fn interface(mut self, interface: InterfaceSpec) -> Self {
        self.interfaces.push(interface);
        self
    }

    /// Turns IPv6 off in the pod.
    pub fn disable_ipv6(mut self) -> Self {
        self.disable_ipv6 = true;
        self
    }
}

/// A plumbed pod interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInterface {
    /// The name inside the pod.
    pub ifname: String,
    /// The host end (an OVS port of `br-int`) in the node netns.
    pub host_ifname: String,
    /// The logical switch port it binds to.
    pub iface_id: String,
    /// Its MAC.
    pub mac: String,
    /// Its addresses.
    pub ips: Vec<IpNetwork>,
}

/// A running pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// The pod's name in the lab.
    pub name: String,
    /// Its node.
    pub node: String,
    /// Its netns.
    pub netns: String,
    /// Its interfaces, in the order they were added.
    pub interfaces: Vec<PodInterface>,
}

impl Pod {
    /// The interface named `ifname` inside the pod.
    pub fn interface(&self, ifname: &str) -> Option<&PodInterface> {
        self.interfaces.iter().find(|i| i.ifname == ifname)
    }

    /// The first address of the first interface (a pod's primary IP).
    pub fn ip(&self) -> Option<IpAddr> {
        self.interfaces.first()?.ips.first().map(IpNetwork::ip)
    }
}

/// The lab's record of a pod: what tests see, and the netns it owns.
#[derive(Debug)]
pub(crate) struct PodEntry {
    pub(crate) pod: Pod,
    /// Held for its drop, which deletes the pod netns.
    pub(crate) _netns: Netns,
}

/// A pod name as a netns name suffix: anything but `[A-Za-z0-9_.-]` becomes `-`.
pub(crate) fn netns_suffix(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Checks what the kernel and OVS would refuse later with a less helpful message.
pub(crate) fn check_interface(
    interface: &InterfaceSpec,
    host_ifname: &str,
) -> Result<(), LabError> {
    let invalid = |field: &str, reason: String| LabError::Invalid {
        field: format!("interface {}: {field}", interface.ifname),
        reason,
    };
    for (field, name) in [
        ("ifname", interface.ifname.as_str()),
        ("host_ifname", host_ifname),
    ] {
        if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', ':']) {
            return Err(invalid(
                field,
                format!("{name:?} is not a link name (1-15 bytes)"),
            ));
        }
    }
    if interface.iface_id.is_empty() {
        return Err(invalid("iface_id", "empty".to_owned()));
    }
    if !(68..=65535).contains(&interface.mtu) {
        return Err(invalid("mtu", format!("{} is out of range", interface.mtu)));
    }
    Ok(())
}

/// Creates the veth, configures the pod end, and adds the host end to `br-int`.
pub(crate) fn plumb_interface(
    node: &Node,
    pod_netns: &str,
    interface: &InterfaceSpec,
    host_ifname: &str,
) -> Result<PodInterface, LabError> {
    let step = format!("plumb {} of pod netns {pod_netns}", interface.ifname);
    let step = step.as_str();
    let mtu = interface.mtu.to_string();
    ip(node.netns())
        .args(["link", "add", host_ifname, "mtu", &mtu, "type", "veth"])
        .args([
            "peer",
            "name",
            &interface.ifname,
            "mtu",
            &mtu,
            "netns",
            pod_netns,
        ])
        .run(step)?;
    configure_pod_end(step, pod_netns, interface)?;
    ip(node.netns())
        .args(["link", "set", host_ifname, "up"])
        .run(step)?;
    let mut args = vec![
        "--".to_owned(),
        "--may-exist".to_owned(),
        "add-port".to_owned(),
        "br-int".to_owned(),
        host_ifname.to_owned(),
        "other_config:transient=true".to_owned(),
        "--".to_owned(),
        "set".to_owned(),
        "Interface".to_owned(),
        host_ifname.to_owned(),
        external_id("iface-id", &interface.iface_id),
    ];
    args.extend(
        interface
            .external_ids
            .iter()
            .map(|(k, v)| external_id(k, v)),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    node.vsctl(&args)?;
    Ok(PodInterface {
        ifname: interface.ifname.clone(),
        host_ifname: host_ifname.to_owned(),
        iface_id: interface.iface_id.clone(),
        mac: interface.mac.clone(),
        ips: interface.ips.clone(),
    })
}

/// MAC, addresses, link up, checksum offload off, routes: inside the pod.
fn configure_pod_end(
    step: &str,
    pod_netns: &str,
    interface: &InterfaceSpec,
) -> Result<(), LabError> {
    let ifname = interface.ifname.as_str();
    ip(pod_netns)
        .args(["link", "set", ifname, "address", &interface.mac])
        .run(step)?;
    for address in &interface.ips {
        let mut add = ip(pod_netns).args(["addr", "add", &address.to_string(), "dev", ifname]);
        if address.is_ipv6() {
            add = add.arg("nodad");
        }
        add.run(step)?;
    }
    ip(pod_netns)
        .args(["link", "set", ifname, "up"])
        .run(step)?;
    // The userspace datapath reads the host end with AF_PACKET, which does not complete
    // offloaded checksums: without this ICMP works and TCP silently does not.
    Cmd::new("ethtool")
        .netns(pod_netns)
        .args(["-K", ifname, "tx", "off"])
        .run(step)?;
    let default = interface
        .gateway
        .map(|gateway| ("default".to_owned(), gateway));
    let routes = interface
        .routes
        .iter()
        .map(|route| (route.dest.to_string(), route.via));
    for (dest, via) in default.into_iter().chain(routes) {
        ip(pod_netns)
            .args([
                "route",
                "add",
                &dest,
                "via",
                &via.to_string(),
                "dev",
                ifname,
            ])
            .run(step)?;
    }
    Ok(())
}

/// Turns IPv6 off in a pod netns. Net sysctls belong to the netns of the process that opens
/// them, so a shell in the netns writes them (no procps needed).
pub(crate) fn disable_ipv6(pod_netns: &str) -> Result<(), LabError> {
    Cmd::new("sh")
        .netns(pod_netns)
        .args(["-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"])
        .run(&format!("disable IPv6 in {pod_netns}"))
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netns_suffix_keeps_safe_characters() {
        assert_eq!(netns_suffix("blue_pod-1.a"), "blue_pod-1.a");
        assert_eq!(netns_suffix("ns/pod x"), "ns-pod-x");
    }

    #[test]
    fn interface_names_are_checked() {
        let ok = InterfaceSpec::new("eth0", "ns_pod", "0a:58:0a:00:00:02");
        check_interface(&ok, "vp1").unwrap();
        assert!(check_interface(&ok, "a-very-long-interface").is_err());
        let no_id = InterfaceSpec::new("eth0", "", "0a:58:0a:00:00:02");
        assert!(check_interface(&no_id, "vp1").is_err());
    }
}
