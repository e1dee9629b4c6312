//! Rules only the `ClusterUserDefinedNetwork` has: uplinks, transports, EVPN, Localnet.

use serde_json::{Value, json};

use super::{Case, Crd};

const CUDN: Crd = Crd::Cudn;
const EVPN_REQUIRED: &str = "spec.evpn field is required when transport is 'EVPN'";
const IP_VRF_REQUIRED: &str =
    "spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'";
const MAC_VRF_REQUIRED: &str =
    "spec.evpn.macVRF field is required for Layer2 topology when transport is 'EVPN'";
const ONE_VRF: &str = "at least one of macVRF or ipVRF must be specified";

fn l3(role: &str) -> Value {
    json!({"topology": "Layer3", "layer3": {"role": role, "subnets": [{"cidr": "10.10.0.0/16"}]}})
}

fn l2(role: &str) -> Value {
    json!({"topology": "Layer2", "layer2": {"role": role, "subnets": ["10.100.0.0/16"]}})
}

/// `spec` from `network` plus top-level `extra` fields.
fn spec(network: Value, extra: Value) -> Value {
    let mut out =
        json!({"namespaceSelector": {"matchLabels": {"tenant": "a"}}, "network": network});
    if let (Value::Object(out), Value::Object(extra)) = (&mut out, extra) {
        out.extend(extra);
    }
    out
}

/// `network` with `extra` fields merged in.
fn net(network: Value, extra: Value) -> Value {
    let mut out = network;
    if let (Value::Object(out), Value::Object(extra)) = (&mut out, extra) {
        out.extend(extra);
    }
    out
}

fn localnet(config: Value) -> Value {
    spec(
        json!({"topology": "Localnet", "localnet": config}),
        json!({}),
    )
}

/// Every CUDN-only rule.
pub fn cases() -> Vec<Case> {
    let mut cases = top_level();
    cases.extend(transports());
    cases.extend(evpn());
    cases.extend(route_targets("macVRF", l2("Primary")));
    cases.extend(route_targets("ipVRF", l3("Primary")));
    cases.extend(localnet_cases());
    cases
}

fn top_level() -> Vec<Case> {
    let evpn_l3 = net(
        l3("Primary"),
        json!({"transport": "EVPN", "evpn": {"vtep": "vtep1", "ipVRF": {"vni": 100}}}),
    );
    vec![
        Case::new(CUDN, "spec", "spec.uplinks is supported only for primary Layer2 and Layer3 networks")
            .accept(spec(l3("Primary"), json!({"uplinks": ["br-ex"]})))
            .reject(spec(l3("Secondary"), json!({"uplinks": ["br-ex"]}))),
        Case::new(CUDN, "spec", "spec.uplinks is not supported with EVPN transport")
            .accept(spec(evpn_l3.clone(), json!({})))
            .reject(spec(evpn_l3, json!({"uplinks": ["br-ex"]}))),
        Case::new(CUDN, "spec.uplinks", "uplinks is immutable")
            .old(spec(l3("Primary"), json!({"uplinks": ["br-ex"]})))
            .accept(spec(l3("Primary"), json!({"uplinks": ["br-ex"]})))
            .reject(spec(l3("Primary"), json!({"uplinks": ["br-ex2"]}))),
        Case::new(CUDN, "spec.network", "spec.layer3 is required when topology is Layer3 and forbidden otherwise")
            .accept(spec(l3("Primary"), json!({})))
            .reject(spec(json!({"topology": "Layer3"}), json!({}))),
        Case::new(CUDN, "spec.network", "spec.layer2 is required when topology is Layer2 and forbidden otherwise")
            .accept(spec(l2("Primary"), json!({})))
            .reject(spec(json!({"topology": "Layer2"}), json!({}))),
        Case::new(CUDN, "spec.network", "spec.localnet is required when topology is Localnet and forbidden otherwise")
            .accept(localnet(json!({"role": "Secondary", "physicalNetworkName": "physnet", "subnets": ["192.168.100.0/24"]})))
            .reject(spec(json!({"topology": "Localnet"}), json!({}))),
        Case::new(CUDN, "spec.network.topology", "Topology is immutable")
            .old(spec(l3("Primary"), json!({})))
            .accept(spec(l3("Primary"), json!({})))
            .reject(spec(l2("Primary"), json!({}))),
    ]
}

fn transports() -> Vec<Case> {
    let no_overlay = json!({"transport": "NoOverlay", "noOverlay": {"outboundSNAT": "Enabled", "routing": "Managed"}});
    vec![
        Case::new(CUDN, "spec.network", "transport 'NoOverlay' is only supported for Layer3 primary networks")
            .accept(spec(net(l3("Primary"), no_overlay.clone()), json!({})))
            .reject(spec(net(l3("Secondary"), no_overlay.clone()), json!({}))),
        Case::new(CUDN, "spec.network", "spec.noOverlay is required when type transport is 'NoOverlay'")
            .accept(spec(net(l3("Primary"), no_overlay.clone()), json!({})))
            .reject(spec(net(l3("Primary"), json!({"transport": "NoOverlay"})), json!({}))),
        Case::new(CUDN, "spec.network", "spec.noOverlay is forbidden when transport type is not 'NoOverlay'")
            .accept(spec(l3("Primary"), json!({})))
            .reject(spec(
                net(l3("Primary"), json!({"noOverlay": {"outboundSNAT": "Enabled", "routing": "Managed"}})),
                json!({}),
            )),
        Case::new(CUDN, "spec.network.transport", "Transport is immutable")
            .old(spec(net(l3("Primary"), no_overlay.clone()), json!({})))
            .accept(spec(net(l3("Primary"), no_overlay.clone()), json!({})))
            .reject(spec(
                net(l3("Primary"), json!({"transport": "EVPN", "evpn": {"vtep": "vtep1", "ipVRF": {"vni": 100}}})),
                json!({}),
            )),
        Case::new(CUDN, "spec.network.noOverlay", "NoOverlay is immutable")
            .old(spec(net(l3("Primary"), no_overlay.clone()), json!({})))
            .accept(spec(net(l3("Primary"), no_overlay), json!({})))
            .reject(spec(
                net(
                    l3("Primary"),
                    json!({"transport": "NoOverlay", "noOverlay": {"outboundSNAT": "Disabled", "routing": "Managed"}}),
                ),
                json!({}),
            )),
    ]
}

fn evpn() -> Vec<Case> {
    let evpn = |network: Value, config: Value| {
        spec(
            net(network, json!({"transport": "EVPN", "evpn": config})),
            json!({}),
        )
    };
    let l3_ip = json!({"vtep": "vtep1", "ipVRF": {"vni": 100}});
    let l2_mac = json!({"vtep": "vtep1", "macVRF": {"vni": 100}});
    vec![
        Case::new(
            CUDN,
            "spec.network",
            "transport 'EVPN' is only supported for Layer2 or Layer3 primary networks",
        )
        .accept(evpn(l3("Primary"), l3_ip.clone()))
        .reject(evpn(l3("Secondary"), l3_ip.clone())),
        Case::new(CUDN, "spec.network", EVPN_REQUIRED)
            .accept(evpn(l3("Primary"), l3_ip.clone()))
            .reject(spec(
                net(l3("Primary"), json!({"transport": "EVPN"})),
                json!({}),
            ))
            .also("spec.network", IP_VRF_REQUIRED),
        Case::new(
            CUDN,
            "spec.network",
            "spec.evpn field is forbidden when transport is not 'EVPN'",
        )
        .accept(spec(l3("Primary"), json!({})))
        .reject(spec(net(l3("Primary"), json!({"evpn": l3_ip})), json!({}))),
        Case::new(CUDN, "spec.network", MAC_VRF_REQUIRED)
            .accept(evpn(l2("Primary"), l2_mac.clone()))
            .reject(evpn(
                l2("Primary"),
                json!({"vtep": "vtep1", "ipVRF": {"vni": 100}}),
            )),
        Case::new(CUDN, "spec.network", IP_VRF_REQUIRED)
            .accept(evpn(l3("Primary"), l3_ip.clone()))
            .reject(evpn(l3("Primary"), json!({"vtep": "vtep1"})))
            .also("spec.network.evpn", ONE_VRF),
        Case::new(
            CUDN,
            "spec.network",
            "spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'",
        )
        .accept(evpn(l3("Primary"), l3_ip))
        .reject(evpn(
            l3("Primary"),
            json!({"vtep": "vtep1", "ipVRF": {"vni": 100}, "macVRF": {"vni": 200}}),
        )),
        Case::new(CUDN, "spec.network.evpn", ONE_VRF)
            .accept(evpn(l2("Primary"), l2_mac))
            .reject(evpn(l2("Primary"), json!({"vtep": "vtep1"})))
            .also("spec.network", MAC_VRF_REQUIRED),
        Case::new(
            CUDN,
            "spec.network.evpn",
            "macVRF and ipVRF must use different VNIs",
        )
        .accept(evpn(
            l2("Primary"),
            json!({"vtep": "vtep1", "macVRF": {"vni": 100}, "ipVRF": {"vni": 200}}),
        ))
        .reject(evpn(
            l2("Primary"),
            json!({"vtep": "vtep1", "macVRF": {"vni": 100}, "ipVRF": {"vni": 100}}),
        )),
    ]
}

/// The seven route-target rules on `evpn.<vrf>.routeTarget` of a `network`.
fn route_targets(vrf: &str, network: Value) -> Vec<Case> {
    let node = format!("spec.network.evpn.{vrf}.routeTarget");
    let with_rt = |target: &str| {
        let mut config = json!({"vtep": "vtep1"});
        config[vrf] = json!({"vni": 100, "routeTarget": target});
        spec(
            net(
                network.clone(),
                json!({"transport": "EVPN", "evpn": config}),
            ),
            json!({}),
        )
    };
    let rule = |message: &str, accepted: &str, rejected: &str| {
        Case::new(CUDN, &node, message)
            .accept(with_rt(accepted))
            .reject(with_rt(rejected))
    };
    vec![
        rule(
            "RT must contain exactly one colon",
            "65000:100",
            "65000:100:1",
        ),
        rule(
            "RT global administrator must be either '*', an IPv4 address, or a number",
            "192.0.2.1:100",
            "as65000:100",
        ),
        rule(
            "RT local administrator must be a number",
            "*:100",
            "65000:x100",
        ),
        rule(
            "RT with wildcard global administrator must have format *:OPQR where OPQR <= 4294967295",
            "*:4294967295",
            "*:4294967296",
        ),
        rule(
            "RT with IPv4 global administrator must have format A.B.C.D:MN where MN <= 65535",
            "192.0.2.1:65535",
            "192.0.2.1:65536",
        ),
        rule(
            "RT with 4-byte ASN global administrator must have format GHJK:MN where GHJK <= 4294967295 and MN <= 65535",
            "65536:65535",
            "65536:65536",
        ),
        rule(
            "RT with 2-byte ASN global administrator must have format EF:OPQR where EF <= 65535 and OPQR <= 4294967295",
            "65000:4294967295",
            "65000:4294967296",
        ),
    ]
}

fn localnet_cases() -> Vec<Case> {
    let base = json!({"role": "Secondary", "physicalNetworkName": "physnet", "subnets": ["192.168.100.0/24"]});
    let with = |extra: Value| localnet(net(base.clone(), extra));
    let bare = |extra: Value| {
        localnet(net(
            json!({"role": "Secondary", "physicalNetworkName": "physnet"}),
            extra,
        ))
    };
    vec![
        Case::new(CUDN, "spec.network.localnet", "Localnet is immutable")
            .old(with(json!({})))
            .accept(with(json!({})))
            .reject(with(json!({"mtu": 1500}))),
        Case::new(
            CUDN,
            "spec.network.localnet",
            "Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise",
        )
        .accept(bare(json!({"ipam": {"mode": "Disabled"}})))
        .reject(bare(json!({}))),
        Case::new(
            CUDN,
            "spec.network.localnet",
            "excludeSubnets must be unset when subnets is unset",
        )
        .accept(with(json!({"excludeSubnets": ["192.168.100.0/30"]})))
        .reject(bare(
            json!({"ipam": {"mode": "Disabled"}, "excludeSubnets": ["192.168.100.0/30"]}),
        )),
        Case::new(
            CUDN,
            "spec.network.localnet",
            "MTU should be greater than or equal to 1280 when an IPv6 subnet is used",
        )
        .accept(bare(json!({"subnets": ["fd00:200::/64"], "mtu": 1280})))
        .reject(bare(json!({"subnets": ["fd00:200::/64"], "mtu": 1000}))),
        Case::new(
            CUDN,
            "spec.network.localnet.physicalNetworkName",
            "physicalNetworkName cannot contain `,` or `:` characters",
        )
        .accept(with(json!({"physicalNetworkName": "phys-net"})))
        .reject(with(json!({"physicalNetworkName": "phys:net"}))),
        Case::new(
            CUDN,
            "spec.network.localnet.excludeSubnets[*]",
            "CIDR is invalid",
        )
        .accept(with(json!({"excludeSubnets": ["192.168.100.0/30"]})))
        .reject(with(json!({"excludeSubnets": ["192.168.100.0"]}))),
        Case::new(
            CUDN,
            "spec.network.localnet.ipam",
            "lifecycle Persistent is only supported when ipam.mode is Enabled",
        )
        .accept(with(
            json!({"ipam": {"mode": "Enabled", "lifecycle": "Persistent"}}),
        ))
        .reject(bare(
            json!({"ipam": {"mode": "Disabled", "lifecycle": "Persistent"}}),
        )),
        Case::new(
            CUDN,
            "spec.network.localnet.subnets",
            "When 2 CIDRs are set, they must be from different IP families",
        )
        .accept(with(
            json!({"subnets": ["192.168.100.0/24", "fd00:200::/64"]}),
        ))
        .reject(with(
            json!({"subnets": ["192.168.100.0/24", "192.168.200.0/24"]}),
        )),
        Case::new(CUDN, "spec.network.localnet.subnets[*]", "CIDR is invalid")
            .accept(with(json!({})))
            .reject(with(json!({"subnets": ["192.168.100.0"]}))),
        Case::new(
            CUDN,
            "spec.network.localnet.vlan",
            "vlan access config is required when vlan mode is 'Access', and forbidden otherwise",
        )
        .accept(with(
            json!({"vlan": {"mode": "Access", "access": {"id": 100}}}),
        ))
        .reject(with(json!({"vlan": {"mode": "Access"}}))),
    ]
}
