//! A gateway interface that is a plain NIC moves into a new OVS bridge, as upstream's
//! `util.NicToBridge` does (`pkg/util/nicstobridge.go`, called from `bridgeconfig.go` when
//! the interface is neither an OVS bridge nor a port of one): bridge `br<nic>` with the NIC's
//! MAC and upstream's columns ([`crate::ovs::nic_bridge`]), the NIC as its port, the NIC's
//! global unicast addresses and its main-table routes moved onto the bridge, which is
//! brought up.
//!
//! The plan ([`plan_nic_to_bridge`]) is pure: from what the kernel and OVS say about the NIC
//! and the bridge to the ordered operations; [`ensure`] observes, plans and applies. Upstream
//! creates the bridge with the NIC in one transaction, then moves each address (delete from
//! the NIC, add to the bridge) and each route; the host is cut off from the moment the NIC
//! is a port until the last route is back. The order here shortens that to the time
//! ovs-vswitchd takes to open the NIC, and leaves the NIC's addresses and routes in place
//! until the bridge has copies, so a crash at any point leaves what the next run needs:
//!
//! 1. the bridge without the NIC, and its netdev with the NIC's MAC (the MAC must be in
//!    place before the link goes up, or IPv6 would derive its link-local address from the
//!    random one);
//! 2. the NIC's addresses copied onto the bridge (upstream's flags and lifetimes, label =
//!    the bridge; IPv6 without duplicate address detection: the address already passed it
//!    on the same link with the same MAC), then the bridge up;
//! 3. the NIC becomes a port, and the agent waits for ovs-vswitchd's ofport: from here the
//!    NIC's frames reach the host through the bridge;
//! 4. the routes copied out of the bridge (upstream's order: others first, default routes
//!    last, for a /32 whose gateway needs its own route first), added without `NLM_F_EXCL`
//!    so a copy goes in next to the NIC's route of the same destination and metric;
//! 5. the NIC's routes removed, then its addresses (secondary ones first).
//!
//! A second run finds nothing to do; a run after a crash finds the missing steps.

mod apply;
mod kernel;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr};

use ipnetwork::IpNetwork;
use rtnetlink::packet_route::address::{AddressFlags, AddressScope};
use rtnetlink::packet_route::route::{RouteMessage, RouteProtocol};
use udn_api::annotations::MacAddress;

pub use apply::{NicToBridgeError, ensure};

use crate::netlink::route::MAIN_TABLE;
use crate::ovs::{NicBridge, nic_bridge_name};

/// What to build: `nic` into `bridge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicToBridge {
    /// The NIC.
    pub nic: String,
    /// The bridge (upstream: `br<nic>`).
    pub bridge: String,
    /// `datapath_type` of a new bridge (`system`, or `netdev` for the userspace datapath).
    pub datapath_type: String,
}

impl NicToBridge {
    /// `nic` into upstream's `br<nic>`.
    pub fn for_nic(nic: &str, datapath_type: &str) -> Self {
        Self {
            nic: nic.to_owned(),
            bridge: nic_bridge_name(nic),
            datapath_type: datapath_type.to_owned(),
        }
    }
}

/// An address of the NIC as the kernel lists it, with what moving it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicAddress {
    /// The address and prefix length.
    pub address: IpNetwork,
    /// The peer of a point-to-point address.
    pub peer: Option<IpAddr>,
    /// The IPv4 broadcast address.
    pub broadcast: Option<Ipv4Addr>,
    /// Its scope.
    pub scope: AddressScope,
    /// Its flags (`IFA_FLAGS`).
    pub flags: AddressFlags,
    /// Valid lifetime left, seconds (`u32::MAX`: forever).
    pub valid_lft: u32,
    /// Preferred lifetime left, seconds (`u32::MAX`: forever).
    pub preferred_lft: u32,
}

impl NicAddress {
    /// A permanent global address without peer or broadcast.
    pub fn permanent(address: IpNetwork) -> Self {
        Self {
            address,
            peer: None,
            broadcast: None,
            scope: AddressScope::Universe,
            flags: AddressFlags::Permanent,
            valid_lft: u32::MAX,
            preferred_lft: u32::MAX,
        }
    }
}

/// A route out of the NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicRoute {
    /// Destination (`0.0.0.0/0` / `::/0` for a default route).
    pub dest: IpNetwork,
    /// Next hop.
    pub gateway: Option<IpAddr>,
    /// Routing table.
    pub table: u32,
    /// Who added it (`kernel` for an address's prefix route).
    pub protocol: RouteProtocol,
    /// A multipath route (out of the NIC among others; upstream leaves these).
    pub multipath: bool,
    /// The kernel's message: the copy on the bridge is this route with the bridge as its
    /// output link (protocol, scope, type, flags, source, metric, metrics and preference
    /// kept, as upstream re-adds the whole route).
    pub message: RouteMessage,
}

impl NicRoute {
    fn is_default(&self) -> bool {
        self.dest.prefix() == 0
    }
}

/// What the kernel says about the NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedNic {
    /// Its MAC.
    pub mac: MacAddress,
    /// Its MTU.
    pub mtu: u32,
    /// Its addresses, in the kernel's order (primary before secondary).
    pub addresses: Vec<NicAddress>,
    /// The routes out of it, in the kernel's order.
    pub routes: Vec<NicRoute>,
}

/// What OVS and the kernel say about the bridge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObservedBridge {
    /// The bridge is in OVS's database.
    pub exists: bool,
    /// The NIC is one of its ports.
    pub nic_attached: bool,
    /// Its netdev exists.
    pub netdev: bool,
    /// Its netdev is up.
    pub up: bool,
    /// The addresses on its netdev.
    pub addresses: Vec<IpNetwork>,
}

/// One step of the move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicBridgeOp {
    /// Create or complete the bridge in OVS, without the NIC.
    EnsureBridge(NicBridge),
    /// Wait for the bridge's netdev to carry the NIC's MAC.
    WaitNetdev(MacAddress),
    /// Copy an address of the NIC onto the bridge.
    AddAddress(NicAddress),
    /// Bring the bridge up.
    BridgeUp,
    /// Make the NIC a port of the bridge and wait for ovs-vswitchd to open it.
    AttachNic(NicBridge),
    /// Copy a route of the NIC out of the bridge.
    AddRoute(NicRoute),
    /// Remove a route from the NIC.
    RemoveRoute(NicRoute),
    /// Remove an address from the NIC.
    RemoveAddress(NicAddress),
}

/// Go's `net.IP.IsGlobalUnicast`, upstream's test of what moves: not unspecified, loopback,
/// multicast, link-local or the IPv4 broadcast address (private and unique-local addresses
/// are global unicast).
pub fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => {
            !(ip.is_unspecified()
                || ip.is_loopback()
                || ip.is_multicast()
                || ip.is_link_local()
                || ip.is_broadcast())
        }
        IpAddr::V6(ip) => {
            !(ip.is_unspecified()
                || ip.is_loopback()
                || ip.is_multicast()
                || ip.is_unicast_link_local())
        }
    }
}

/// The addresses that move: the global unicast ones.
fn movable_addresses(nic: &ObservedNic) -> Vec<&NicAddress> {
    nic.addresses
        .iter()
        .filter(|address| is_global_unicast(address.address.ip()))
        .collect()
}

/// The routes that move, in upstream's order: main-table routes out of the NIC alone, not
/// the kernel's prefix routes (the bridge's addresses get their own, the NIC's go with its
/// addresses), to a global unicast destination in the kernel's order, then the default
/// routes (upstream defers those with a gateway and, since its netlink library reports
/// `0.0.0.0/0` for a default route, leaves a gateway-less one behind; it moves here too).
fn movable_routes(nic: &ObservedNic) -> Vec<&NicRoute> {
    let candidates = nic.routes.iter().filter(|route| {
        route.table == MAIN_TABLE && !route.multipath && route.protocol != RouteProtocol::Kernel
    });
    let (defaults, others): (Vec<&NicRoute>, Vec<&NicRoute>) =
        candidates.partition(|route| route.is_default());
    others
        .into_iter()
        .filter(|route| is_global_unicast(route.dest.network()))
        .chain(defaults)
        .collect()
}

/// The OVS side of the bridge: upstream's columns, and on the userspace datapath the NIC's
/// MTU as the internal port's `mtu_request` (its tap does not follow the NIC's MTU).
pub fn desired_ovs_bridge(spec: &NicToBridge, nic: &ObservedNic) -> NicBridge {
    NicBridge {
        bridge: spec.bridge.clone(),
        nic: spec.nic.clone(),
        mac: nic.mac,
        datapath_type: spec.datapath_type.clone(),
        mtu_request: (spec.datapath_type == "netdev").then_some(i64::from(nic.mtu)),
    }
}

/// The steps that move `nic` into `bridge` (see the module docs for the order); empty when
/// the move is complete.
pub fn plan_nic_to_bridge(
    spec: &NicToBridge,
    nic: &ObservedNic,
    bridge: &ObservedBridge,
) -> Vec<NicBridgeOp> {
    let ovs = desired_ovs_bridge(spec, nic);
    let addresses = movable_addresses(nic);
    let routes = movable_routes(nic);
    let mut ops = Vec::new();
    if !bridge.exists || !bridge.netdev {
        ops.push(NicBridgeOp::EnsureBridge(ovs.clone()));
        ops.push(NicBridgeOp::WaitNetdev(nic.mac));
    }
    ops.extend(
        addresses
            .iter()
            .filter(|address| !bridge.addresses.contains(&address.address))
            .map(|address| NicBridgeOp::AddAddress((*address).clone())),
    );
    if !bridge.up {
        ops.push(NicBridgeOp::BridgeUp);
    }
    if !bridge.nic_attached {
        ops.push(NicBridgeOp::AttachNic(ovs));
    }
    ops.extend(
        routes
            .iter()
            .map(|route| NicBridgeOp::AddRoute((*route).clone())),
    );
    ops.extend(
        routes
            .iter()
            .map(|route| NicBridgeOp::RemoveRoute((*route).clone())),
    );
    ops.extend(
        addresses
            .iter()
            .rev()
            .map(|address| NicBridgeOp::RemoveAddress((*address).clone())),
    );
    ops
}
