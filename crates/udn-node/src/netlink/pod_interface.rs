//! A pod's interface as upstream's CNI plumbs it (`setupInterface` / `setupNetwork`): a veth
//! pair created inside the pod netns, the host end created straight in the host netns by fd,
//! the pod end configured (MAC, MTU, addresses, default routes, routes), the host end named
//! for the network and brought up.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use rtnetlink::packet_route::link::{InfoData, InfoVeth};
use rtnetlink::{LinkMessageBuilder, LinkUnspec, LinkVeth};
use udn_api::annotations::{MacAddress, PodRoute};

use super::address::{add_address, settle_addresses};
use super::error::NetlinkError;
use super::link::{
    DesiredLink, LinkInfo, LinkOp, apply_link, reconcile_link, rename_link, require_link,
};
use super::netns::{Netlink, NetnsPair, NetnsPath, in_netns_pair};
use super::offload::disable_tx_checksum_offload;
use super::route::{MAIN_TABLE, Route, RouteKind, add_route, default_dest};
use super::rule::IpFamily;
use super::sysctl::Sysctl;

/// How long IPv6 addresses may stay tentative once the link is up (upstream's 10 s).
const SETTLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest Linux interface name.
pub const IFNAME_MAX: usize = 15;

/// Whether TX checksum offload stays on in the pod (kernel datapath) or is turned off
/// (`datapath_type=netdev`: see [`super::offload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxChecksumOffload {
    /// Leave the veth's default (on).
    Keep,
    /// `ethtool -K <if> tx off` in the pod.
    Disable,
}

/// What one pod interface gets (the plumbing part of upstream's `PodInterfaceInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInterfaceSpec {
    /// The pod's netns (`CNI_NETNS`).
    pub pod_netns: NetnsPath,
    /// The netns the host end goes to (the agent's: [`NetnsPath::agent`]).
    pub host_netns: NetnsPath,
    /// `CNI_CONTAINERID` (the sandbox id).
    pub container_id: String,
    /// `CNI_IFNAME`: the pod end's name (`eth0`, `ovn-udn1`, `net1`).
    pub ifname: String,
    /// Whether this is the default network (decides the host end's name).
    pub default_network: bool,
    /// The annotation's MAC.
    pub mac: MacAddress,
    /// The network MTU (both ends).
    pub mtu: u32,
    /// The MTU of the default and annotation routes (`routable-mtu`), when set.
    pub routable_mtu: Option<u32>,
    /// Addresses with prefix.
    pub ips: Vec<IpNetwork>,
    /// A default route via each.
    pub gateways: Vec<IpAddr>,
    /// The annotation's routes.
    pub routes: Vec<PodRoute>,
    /// Leave the addresses and routes alone (upstream `SkipIPConfig`).
    pub skip_ip_config: bool,
    /// TX checksum offload in the pod.
    pub tx_checksum_offload: TxChecksumOffload,
}

/// One end of the veth pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VethEnd {
    /// Its name.
    pub name: String,
    /// Its ifindex in its netns.
    pub index: u32,
    /// Its MAC.
    pub mac: Option<MacAddress>,
}

impl From<LinkInfo> for VethEnd {
    fn from(link: LinkInfo) -> Self {
        Self {
            name: link.name,
            index: link.index,
            mac: link.mac,
        }
    }
}

/// A plumbed pod interface (what the CNI result lists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInterface {
    /// The host end (to become a `br-int` port).
    pub host: VethEnd,
    /// The pod end.
    pub container: VethEnd,
    /// The pod netns (the result's `sandbox`).
    pub sandbox: NetnsPath,
}

/// The host end's name: the first 15 characters of the container id for the default
/// network, `<id[:15 - len("_<ifindex>")]>_<ifindex>` (the pod end's ifindex) for any other.
pub fn host_veth_name(container_id: &str, default_network: bool, container_ifindex: u32) -> String {
    let suffix = if default_network {
        String::new()
    } else {
        format!("_{container_ifindex}")
    };
    let keep = IFNAME_MAX.saturating_sub(suffix.len());
    let prefix: String = container_id.chars().take(keep).collect();
    prefix + &suffix
}

fn temporary_veth_name(spec: &PodInterfaceSpec) -> String {
    // Each worker thread seeds its keys afresh, so two ADDs at once never pick the same name.
    let hash = RandomState::new().hash_one((&spec.container_id, &spec.ifname));
    format!("veth{:08x}", hash as u32)
}

fn check_spec(spec: &PodInterfaceSpec) -> Result<(), NetlinkError> {
    let invalid = |field: &str, reason: String| NetlinkError::Invalid {
        field: format!("pod interface {}: {field}", spec.ifname),
        reason,
    };
    if spec.ifname.is_empty()
        || spec.ifname.len() > IFNAME_MAX
        || spec.ifname.contains(['/', ' ', ':'])
    {
        return Err(invalid(
            "ifname",
            format!("{:?} is not a link name (1-15 bytes)", spec.ifname),
        ));
    }
    if spec.container_id.is_empty() {
        return Err(invalid("container_id", "empty".to_owned()));
    }
    if !(68..=65535).contains(&spec.mtu) {
        return Err(invalid(
            "mtu",
            format!("{} is out of range 68-65535", spec.mtu),
        ));
    }
    Ok(())
}

/// Creates and configures the pod interface. On failure after the veth exists, the veth is
/// deleted again (both ends go with the pod end).
pub async fn setup_pod_interface(spec: &PodInterfaceSpec) -> Result<PodInterface, NetlinkError> {
    check_spec(spec)?;
    let spec = spec.clone();
    let (host, pod) = (spec.host_netns.clone(), spec.pod_netns.clone());
    in_netns_pair(&host, &pod, move |pair| async move {
        let peer_name = if spec.default_network {
            host_veth_name(&spec.container_id, true, 0)
        } else {
            temporary_veth_name(&spec)
        };
        create_veth(&pair, &spec, &peer_name).await?;
        match configure(&pair, &spec, &peer_name).await {
            Ok(interface) => Ok(interface),
            Err(error) => {
                if let Err(cleanup) = pair.enter_pod() {
                    tracing::warn!(error = %cleanup, "cannot re-enter the pod netns to clean up");
                }
                if let Err(cleanup) = super::link::delete_link(&pair.pod, &spec.ifname).await {
                    tracing::warn!(ifname = %spec.ifname, error = %cleanup, "cannot delete a half-made pod veth");
                }
                Err(error)
            }
        }
    })
    .await
}

async fn create_veth(
    pair: &NetnsPair,
    spec: &PodInterfaceSpec,
    peer_name: &str,
) -> Result<(), NetlinkError> {
    let peer = LinkMessageBuilder::<LinkUnspec>::new()
        .name(peer_name)
        .mtu(spec.mtu)
        .setns_by_fd(pair.host_fd())
        .build();
    let message = LinkVeth::new(&spec.ifname, peer_name)
        .mtu(spec.mtu)
        .address(spec.mac.0.to_vec())
        .set_info_data(InfoData::Veth(InfoVeth::Peer(peer)))
        .build();
    pair.pod
        .handle()
        .link()
        .add(message)
        .execute()
        .await
        .map_err(|error| {
            pair.pod.request_error(
                "create veth",
                format!("{} (peer {peer_name} in {})", spec.ifname, spec.host_netns),
                error,
            )
        })
}

async fn configure(
    pair: &NetnsPair,
    spec: &PodInterfaceSpec,
    peer_name: &str,
) -> Result<PodInterface, NetlinkError> {
    let pod = &pair.pod;
    let container = require_link(pod, &spec.ifname).await?;
    if spec.ips.iter().any(IpNetwork::is_ipv6) {
        disable_dad(pod.netns(), &spec.ifname);
    }
    reconcile_link(pod, &DesiredLink::up("lo", None)).await?;
    apply_link(pod, container.index, &spec.ifname, &[LinkOp::SetUp]).await?;
    if !spec.skip_ip_config {
        configure_addresses_and_routes(pod, spec, container.index).await?;
    }
    if spec.tx_checksum_offload == TxChecksumOffload::Disable {
        disable_tx_checksum_offload(pod.netns(), &spec.ifname)?;
    }
    let host = bring_up_host_end(pair, spec, peer_name, container.index).await?;
    if spec.ips.iter().any(IpNetwork::is_ipv6)
        && !settle_addresses(pod, container.index, SETTLE_TIMEOUT).await?
    {
        tracing::warn!(ifname = %spec.ifname, "pod IPv6 addresses still tentative");
    }
    Ok(PodInterface {
        host,
        container: container.into(),
        sandbox: spec.pod_netns.clone(),
    })
}

/// No duplicate address detection on the pod end (upstream writes `dad_transmits=0` and
/// `addr_gen_mode=0`), written before any address exists so none waits on DAD. A pod with
/// IPv6 turned off has no such files: that is fine.
fn disable_dad(netns: &str, ifname: &str) {
    for key in ["dad_transmits", "addr_gen_mode"] {
        let sysctl = Sysctl::interface(IpFamily::V6, ifname, key);
        if sysctl.path().exists()
            && let Err(error) = sysctl.write(netns, "0")
        {
            tracing::warn!(%error, "cannot turn off IPv6 duplicate address detection");
        }
    }
}

async fn configure_addresses_and_routes(
    pod: &Netlink,
    spec: &PodInterfaceSpec,
    index: u32,
) -> Result<(), NetlinkError> {
    for address in &spec.ips {
        add_address(pod, index, &spec.ifname, *address, true).await?;
    }
    let route = |dest: IpNetwork, gateway: Option<IpAddr>| Route {
        dest,
        gateway,
        oif: Some(index),
        table: MAIN_TABLE,
        mtu: spec.routable_mtu.filter(|mtu| *mtu > 0),
        src: None,
        kind: RouteKind::Unicast,
        metric: None,
    };
    for gateway in &spec.gateways {
        add_route(pod, &route(default_dest(*gateway), Some(*gateway))).await?;
    }
    for extra in &spec.routes {
        add_route(pod, &route(extra.dest, extra.next_hop)).await?;
    }
    Ok(())
}

async fn bring_up_host_end(
    pair: &NetnsPair,
    spec: &PodInterfaceSpec,
    peer_name: &str,
    container_index: u32,
) -> Result<VethEnd, NetlinkError> {
    let host = &pair.host;
    let peer = require_link(host, peer_name).await?;
    let name = host_veth_name(&spec.container_id, spec.default_network, container_index);
    if name != peer_name {
        rename_link(host, peer.index, &name).await?;
    }
    apply_link(host, peer.index, &name, &[LinkOp::SetUp]).await?;
    // The agent owns the host end's routes (the CNI plugins' veth setup does the same).
    pair.enter_host()?;
    let accept_ra = Sysctl::interface(IpFamily::V6, &name, "accept_ra");
    if accept_ra.path().exists()
        && let Err(error) = accept_ra.write(host.netns(), "0")
    {
        tracing::debug!(%error, "cannot turn off router advertisements on the host veth");
    }
    pair.enter_pod()?;
    Ok(require_link(host, &name).await?.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f1b2c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b";

    #[test]
    fn host_names_as_upstream() {
        assert_eq!(host_veth_name(ID, true, 0), "3f1b2c4d5e6f7a8");
        assert_eq!(host_veth_name(ID, false, 3), "3f1b2c4d5e6f7_3");
        assert_eq!(host_veth_name(ID, false, 1234), "3f1b2c4d5e_1234");
        assert_eq!(host_veth_name("abc", true, 0), "abc");
        for name in [
            host_veth_name(ID, false, 99_999),
            host_veth_name(ID, true, 0),
        ] {
            assert!(name.len() <= IFNAME_MAX, "{name}");
        }
    }

    fn spec() -> PodInterfaceSpec {
        PodInterfaceSpec {
            pod_netns: NetnsPath::named("p"),
            host_netns: NetnsPath::agent(),
            container_id: ID.into(),
            ifname: "eth0".into(),
            default_network: true,
            mac: MacAddress([0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x05]),
            mtu: 1400,
            routable_mtu: None,
            ips: Vec::new(),
            gateways: Vec::new(),
            routes: Vec::new(),
            skip_ip_config: false,
            tx_checksum_offload: TxChecksumOffload::Keep,
        }
    }

    #[test]
    fn spec_checks_name_mtu_and_id() {
        check_spec(&spec()).unwrap();
        let long = PodInterfaceSpec {
            ifname: "a-very-long-ifname".into(),
            ..spec()
        };
        assert_eq!(
            check_spec(&long).unwrap_err().to_string(),
            "invalid pod interface a-very-long-ifname: ifname: \"a-very-long-ifname\" is not a link name (1-15 bytes)"
        );
        assert!(check_spec(&PodInterfaceSpec { mtu: 20, ..spec() }).is_err());
        assert!(
            check_spec(&PodInterfaceSpec {
                container_id: String::new(),
                ..spec()
            })
            .is_err()
        );
    }

    #[test]
    fn temporary_names_fit_and_differ() {
        let a = temporary_veth_name(&spec());
        let b = temporary_veth_name(&spec());
        assert_eq!(a.len(), 12);
        assert_ne!(a, b);
    }
}
