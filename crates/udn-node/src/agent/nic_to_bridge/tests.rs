//! The pure plan for each state a move can be in, and the kernel messages it sends.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteMetric, RouteProtocol, RouteScope,
    RouteType,
};

use super::kernel::{address_message, address_of, retargeted, route_of};
use super::*;

const NIC: u32 = 2;
const BRIDGE: u32 = 7;

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn spec() -> NicToBridge {
    NicToBridge::for_nic("eth0", "netdev")
}

fn address(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(ip) => RouteAddress::Inet(ip),
        IpAddr::V6(ip) => RouteAddress::Inet6(ip),
    }
}

/// A route message as the kernel dumps it.
fn message(
    dest: &str,
    gateway: Option<&str>,
    protocol: RouteProtocol,
    metric: u32,
) -> RouteMessage {
    let dest = net(dest);
    let mut message = RouteMessage::default();
    let header = &mut message.header;
    header.address_family = if dest.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    header.destination_prefix_length = dest.prefix();
    header.table = 254;
    header.protocol = protocol;
    header.kind = RouteType::Unicast;
    header.scope = if gateway.is_some() {
        RouteScope::Universe
    } else {
        RouteScope::Link
    };
    let attributes = &mut message.attributes;
    attributes.push(RouteAttribute::Table(254));
    if dest.prefix() > 0 {
        attributes.push(RouteAttribute::Destination(address(dest.network())));
    }
    if let Some(gateway) = gateway {
        attributes.push(RouteAttribute::Gateway(address(ip(gateway))));
    }
    attributes.push(RouteAttribute::Priority(metric));
    attributes.push(RouteAttribute::Oif(NIC));
    message
}

fn route(dest: &str, gateway: Option<&str>, protocol: RouteProtocol) -> NicRoute {
    route_of(&message(dest, gateway, protocol, 0), NIC).unwrap()
}

/// eth0 as a node has it: 10.9.0.5/24 (and a secondary), a global and a link-local IPv6
/// address, its prefix routes, a static route, the default routes.
fn nic() -> ObservedNic {
    ObservedNic {
        mac: "02:00:0a:09:00:05".parse().unwrap(),
        mtu: 9000,
        addresses: vec![
            NicAddress::permanent(net("10.9.0.5/24")),
            NicAddress::permanent(net("10.9.0.6/24")),
            NicAddress::permanent(net("fd00:9::5/64")),
            NicAddress::permanent(net("fe80::aff:fe09:5/64")),
        ],
        routes: vec![
            route("0.0.0.0/0", Some("10.9.0.1"), RouteProtocol::Dhcp),
            route("10.9.0.0/24", None, RouteProtocol::Kernel),
            route("198.51.100.0/24", Some("10.9.0.1"), RouteProtocol::Static),
            route(
                "169.254.169.254/32",
                Some("10.9.0.1"),
                RouteProtocol::Static,
            ),
            route("fe80::/64", None, RouteProtocol::Kernel),
            route("::/0", Some("fe80::1"), RouteProtocol::Ra),
            route("fd00:9::/64", None, RouteProtocol::Kernel),
        ],
    }
}

fn fresh() -> ObservedBridge {
    ObservedBridge::default()
}

/// The bridge after the move: attached, up, with the NIC's addresses.
fn done() -> ObservedBridge {
    ObservedBridge {
        exists: true,
        nic_attached: true,
        netdev: true,
        up: true,
        addresses: vec![net("10.9.0.5/24"), net("10.9.0.6/24"), net("fd00:9::5/64")],
    }
}

/// Each step as a short text, to compare whole plans.
fn describe(ops: &[NicBridgeOp]) -> Vec<String> {
    ops.iter()
        .map(|op| match op {
            NicBridgeOp::EnsureBridge(bridge) => format!("ensure {}", bridge.bridge),
            NicBridgeOp::WaitNetdev(mac) => format!("wait {mac}"),
            NicBridgeOp::AddAddress(address) => format!("add {}", address.address),
            NicBridgeOp::BridgeUp => "up".to_owned(),
            NicBridgeOp::AttachNic(bridge) => format!("attach {}", bridge.nic),
            NicBridgeOp::AddRoute(route) => format!("route {}", route.dest),
            NicBridgeOp::RemoveRoute(route) => format!("unroute {}", route.dest),
            NicBridgeOp::RemoveAddress(address) => format!("remove {}", address.address),
        })
        .collect()
}

#[test]
fn a_plain_nic_moves_in_upstreams_order_with_the_nic_kept_until_the_bridge_has_copies() {
    assert_eq!(
        describe(&plan_nic_to_bridge(&spec(), &nic(), &fresh())),
        [
            "ensure breth0",
            "wait 02:00:0a:09:00:05",
            "add 10.9.0.5/24",
            "add 10.9.0.6/24",
            "add fd00:9::5/64",
            "up",
            "attach eth0",
            "route 198.51.100.0/24",
            "route 0.0.0.0/0",
            "route ::/0",
            "unroute 198.51.100.0/24",
            "unroute 0.0.0.0/0",
            "unroute ::/0",
            "remove fd00:9::5/64",
            "remove 10.9.0.6/24",
            "remove 10.9.0.5/24",
        ]
    );
}

#[test]
fn the_ovs_bridge_is_upstreams_with_the_nics_mac_and_the_tap_gets_its_mtu() {
    let ops = plan_nic_to_bridge(&spec(), &nic(), &fresh());
    let NicBridgeOp::EnsureBridge(bridge) = &ops[0] else {
        panic!("{ops:?}");
    };
    assert_eq!(bridge.bridge, "breth0");
    assert_eq!(bridge.nic, "eth0");
    assert_eq!(bridge.mac.to_string(), "02:00:0a:09:00:05");
    assert_eq!(bridge.datapath_type, "netdev");
    assert_eq!(bridge.mtu_request, Some(9000));
    // The kernel datapath's internal port follows the NIC itself, as upstream relies on.
    let system = desired_ovs_bridge(&NicToBridge::for_nic("eth0", "system"), &nic());
    assert_eq!(system.mtu_request, None);
}

#[test]
fn a_completed_move_plans_nothing() {
    let mut moved = nic();
    moved
        .addresses
        .retain(|a| !is_global_unicast(a.address.ip()));
    moved.routes.retain(|r| r.protocol == RouteProtocol::Kernel);
    assert_eq!(plan_nic_to_bridge(&spec(), &moved, &done()), []);
}

#[test]
fn a_nic_already_in_the_bridge_with_its_addresses_is_finished() {
    // A crash after upstream's transaction: the NIC is a port, the bridge down and empty.
    let bridge = ObservedBridge {
        exists: true,
        nic_attached: true,
        netdev: true,
        up: false,
        addresses: Vec::new(),
    };
    let plan = describe(&plan_nic_to_bridge(&spec(), &nic(), &bridge));
    assert_eq!(
        plan[..4],
        [
            "add 10.9.0.5/24",
            "add 10.9.0.6/24",
            "add fd00:9::5/64",
            "up"
        ]
    );
    assert_eq!(plan[4], "route 198.51.100.0/24");
    assert!(
        !plan
            .iter()
            .any(|step| step.starts_with("ensure") || step.starts_with("attach"))
    );
    // A crash after the copies: only the NIC's side is left.
    let plan = describe(&plan_nic_to_bridge(&spec(), &nic(), &done()));
    assert_eq!(plan[0], "route 198.51.100.0/24");
    assert_eq!(plan.last().map(String::as_str), Some("remove 10.9.0.5/24"));
    assert!(!plan.iter().any(|step| step.starts_with("add ")));
}

#[test]
fn a_bridge_without_its_netdev_or_nic_gets_them() {
    let bridge = ObservedBridge {
        exists: true,
        ..ObservedBridge::default()
    };
    let plan = describe(&plan_nic_to_bridge(&spec(), &nic(), &bridge));
    assert_eq!(plan[..2], ["ensure breth0", "wait 02:00:0a:09:00:05"]);
    assert!(plan.contains(&"attach eth0".to_owned()));
}

#[test]
fn what_moves_is_upstreams_global_unicast_and_main_table() {
    for (text, global) in [
        ("10.0.0.1", true),
        ("172.18.0.2", true),
        ("fd00::5", true),
        ("2001:db8::1", true),
        ("169.254.1.1", false),
        ("127.0.0.1", false),
        ("224.0.0.1", false),
        ("255.255.255.255", false),
        ("0.0.0.0", false),
        ("fe80::1", false),
        ("ff02::1", false),
        ("::1", false),
    ] {
        assert_eq!(is_global_unicast(ip(text)), global, "{text}");
    }
    let mut other_table = route("203.0.113.0/24", Some("10.9.0.1"), RouteProtocol::Static);
    other_table.table = 1005;
    let mut multipath = route("192.0.2.0/24", Some("10.9.0.1"), RouteProtocol::Static);
    multipath.multipath = true;
    let observed = ObservedNic {
        routes: vec![other_table, multipath],
        ..nic()
    };
    let plan = describe(&plan_nic_to_bridge(&spec(), &observed, &done()));
    assert!(
        !plan
            .iter()
            .any(|step| step.contains("203.0.113") || step.contains("192.0.2"))
    );
}

#[test]
fn route_dumps_parse_and_copies_keep_everything_but_the_link() {
    let mut dumped = message(
        "198.51.100.0/24",
        Some("10.9.0.1"),
        RouteProtocol::Static,
        50,
    );
    dumped.header.flags = RouteFlags::Onlink | RouteFlags::Linkdown;
    dumped
        .attributes
        .push(RouteAttribute::Metrics(vec![RouteMetric::Mtu(1400)]));
    dumped
        .attributes
        .push(RouteAttribute::PrefSource(RouteAddress::Inet(
            "10.9.0.5".parse().unwrap(),
        )));
    let parsed = route_of(&dumped, NIC).unwrap();
    assert_eq!(parsed.dest, net("198.51.100.0/24"));
    assert_eq!(parsed.gateway, Some(ip("10.9.0.1")));
    assert_eq!(parsed.table, 254);
    assert!(!parsed.multipath);
    assert!(route_of(&dumped, 9).is_none(), "another link's route");
    let copy = retargeted(&parsed, BRIDGE);
    assert_eq!(
        copy.header.flags,
        RouteFlags::Onlink,
        "a request may not carry linkdown"
    );
    assert_eq!(copy.header.protocol, RouteProtocol::Static);
    let mut expected = dumped.attributes.clone();
    for attribute in &mut expected {
        if let RouteAttribute::Oif(index) = attribute {
            *index = BRIDGE;
        }
    }
    assert_eq!(copy.attributes, expected);
    let default = route_of(
        &message("0.0.0.0/0", Some("10.9.0.1"), RouteProtocol::Boot, 0),
        NIC,
    )
    .unwrap();
    assert_eq!(default.dest, net("0.0.0.0/0"));
}

#[test]
fn address_dumps_parse_and_copies_are_relabelled_with_settable_flags() {
    let mut dumped = AddressMessage::default();
    dumped.header.family = AddressFamily::Inet;
    dumped.header.prefix_len = 24;
    dumped.header.index = NIC;
    dumped.attributes = vec![
        AddressAttribute::Address(ip("10.9.0.5")),
        AddressAttribute::Local(ip("10.9.0.5")),
        AddressAttribute::Broadcast("10.9.0.255".parse().unwrap()),
        AddressAttribute::Label("eth0".into()),
        AddressAttribute::Flags(AddressFlags::Permanent | AddressFlags::Noprefixroute),
    ];
    let parsed = address_of(&dumped).unwrap();
    assert_eq!(parsed.address, net("10.9.0.5/24"));
    assert_eq!(parsed.peer, None);
    assert_eq!(parsed.valid_lft, u32::MAX);
    let copy = address_message(BRIDGE, "breth0", &parsed);
    assert_eq!(copy.header.index, BRIDGE);
    assert_eq!(
        copy.attributes,
        [
            AddressAttribute::Local(ip("10.9.0.5")),
            AddressAttribute::Address(ip("10.9.0.5")),
            AddressAttribute::Broadcast("10.9.0.255".parse().unwrap()),
            AddressAttribute::Label("breth0".into()),
            AddressAttribute::Flags(AddressFlags::Noprefixroute),
        ]
    );
    // A point-to-point IPv6 address with lifetimes keeps its peer and lifetimes, and skips
    // duplicate address detection.
    let ptp = NicAddress {
        peer: Some(ip("fd00:9::1")),
        valid_lft: 3600,
        preferred_lft: 1800,
        ..NicAddress::permanent(net("fd00:9::5/128"))
    };
    let copy = address_message(BRIDGE, "breth0", &ptp);
    assert!(
        copy.attributes
            .contains(&AddressAttribute::Local(ip("fd00:9::5")))
    );
    assert!(
        copy.attributes
            .contains(&AddressAttribute::Address(ip("fd00:9::1")))
    );
    assert!(
        copy.attributes
            .contains(&AddressAttribute::Flags(AddressFlags::Nodad))
    );
    assert!(
        copy.attributes.iter().any(|a| matches!(a,
        AddressAttribute::CacheInfo(info) if info.ifa_valid == 3600 && info.ifa_preferred == 1800))
    );
    assert!(
        !copy
            .attributes
            .iter()
            .any(|a| matches!(a, AddressAttribute::Label(_)))
    );
}
