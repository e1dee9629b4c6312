//! Rules of `layer3` (shared by UDN and CUDN).

use serde_json::{Value, json};

use super::{Case, Crd};

fn primary(subnets: Value) -> Value {
    json!({"role": "Primary", "subnets": subnets})
}

fn secondary(subnets: Value) -> Value {
    json!({"role": "Secondary", "subnets": subnets})
}

/// Every `layer3` rule for `crd`.
pub fn cases(crd: Crd) -> Vec<Case> {
    let l3 = |config: Value| crd.layer3(config);
    let v4 = json!([{"cidr": "10.10.0.0/16"}]);
    let v4_v6 = json!([{"cidr": "10.10.0.0/16"}, {"cidr": "fd00:10::/48"}]);
    let two_v4 = json!([{"cidr": "10.10.0.0/16"}, {"cidr": "10.20.0.0/16"}]);
    vec![
        Case::new(crd, "~.layer3", "Subnets is immutable for Secondary role")
            .old(l3(secondary(v4.clone())))
            .accept(l3(secondary(v4.clone())))
            .reject(l3(secondary(v4_v6.clone()))),
        Case::new(crd, "~.layer3", "Secondary networks may define at most 2 subnets")
            .accept(l3(secondary(v4_v6.clone())))
            .reject(l3(secondary(json!([
                {"cidr": "10.10.0.0/16"}, {"cidr": "10.20.0.0/16"}, {"cidr": "fd00:10::/48"}
            ])))),
        Case::new(
            crd,
            "~.layer3",
            "When 2 CIDRs are set for Secondary networks, they must be from different IP families",
        )
        .accept(l3(secondary(v4_v6)))
        .reject(l3(secondary(two_v4.clone()))),
        Case::new(crd, "~.layer3", "JoinSubnets is only supported for Primary network")
            .accept(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.66.0.0/16"]})))
            .reject(l3(json!({"role": "Secondary", "subnets": v4, "joinSubnets": ["100.66.0.0/16"]}))),
        Case::new(crd, "~.layer3", "MTU should be greater than or equal to 1280 when IPv6 subnet is used")
            .accept(l3(json!({"role": "Primary", "subnets": [{"cidr": "fd00:10::/48"}], "mtu": 1280})))
            .reject(l3(json!({"role": "Primary", "subnets": [{"cidr": "fd00:10::/48"}], "mtu": 1000}))),
        Case::new(crd, "~.layer3", "Removing existing subnets is not allowed")
            .old(l3(primary(two_v4.clone())))
            .accept(l3(primary(json!([
                {"cidr": "10.10.0.0/16"}, {"cidr": "10.20.0.0/16"}, {"cidr": "10.30.0.0/16"}
            ]))))
            .reject(l3(primary(v4.clone())))
            .also("~.layer3", "hostSubnet is immutable"),
        Case::new(crd, "~.layer3", "Subnets must not overlap or contain each other")
            .accept(l3(primary(two_v4.clone())))
            .reject(l3(primary(json!([{"cidr": "10.10.0.0/16"}, {"cidr": "10.10.1.0/24"}])))),
        Case::new(crd, "~.layer3", "Subnets with same CIDR are not allowed")
            .accept(l3(primary(two_v4.clone())))
            .reject(l3(primary(json!([{"cidr": "10.10.0.0/16"}, {"cidr": "10.10.0.0/16"}])))),
        Case::new(crd, "~.layer3", "hostSubnet is immutable")
            .old(l3(primary(json!([{"cidr": "10.10.0.0/16", "hostSubnet": 24}]))))
            .accept(l3(primary(json!([
                {"cidr": "10.10.0.0/16", "hostSubnet": 24}, {"cidr": "10.20.0.0/16", "hostSubnet": 24}
            ]))))
            .reject(l3(primary(json!([{"cidr": "10.10.0.0/16", "hostSubnet": 25}])))),
        Case::new(crd, "~.layer3", "Subnets from the same IP family must use the same hostSubnet value")
            .accept(l3(primary(json!([
                {"cidr": "10.10.0.0/16", "hostSubnet": 24}, {"cidr": "fd00:10::/48", "hostSubnet": 64}
            ]))))
            .reject(l3(primary(json!([
                {"cidr": "10.10.0.0/16", "hostSubnet": 24}, {"cidr": "10.20.0.0/16", "hostSubnet": 25}
            ])))),
        Case::new(crd, "~.layer3.role", "role is immutable")
            .old(l3(primary(v4.clone())))
            .accept(l3(primary(two_v4.clone())))
            .reject(l3(secondary(v4.clone()))),
        Case::new(crd, "~.layer3.mtu", "mtu is immutable")
            .old(l3(json!({"role": "Primary", "subnets": v4, "mtu": 1400})))
            .accept(l3(json!({"role": "Primary", "subnets": two_v4, "mtu": 1400})))
            .reject(l3(json!({"role": "Primary", "subnets": v4, "mtu": 1500}))),
        Case::new(crd, "~.layer3.joinSubnets", "joinSubnets is immutable")
            .old(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.66.0.0/16"]})))
            .accept(l3(json!({"role": "Primary", "subnets": two_v4, "joinSubnets": ["100.66.0.0/16"]})))
            .reject(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.67.0.0/16"]}))),
        Case::new(crd, "~.layer3.joinSubnets", "When 2 CIDRs are set, they must be from different IP families")
            .accept(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.66.0.0/16", "fd99::/64"]})))
            .reject(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.66.0.0/16", "100.67.0.0/16"]}))),
        Case::new(crd, "~.layer3.joinSubnets[*]", "CIDR is invalid")
            .accept(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.66.0.0/16"]})))
            .reject(l3(json!({"role": "Primary", "subnets": v4, "joinSubnets": ["100.66.0.0"]}))),
        Case::new(crd, "~.layer3.subnets[*]", "HostSubnet must be smaller than CIDR subnet")
            .accept(l3(primary(json!([{"cidr": "10.10.0.0/16", "hostSubnet": 17}]))))
            .reject(l3(primary(json!([{"cidr": "10.10.0.0/16", "hostSubnet": 16}])))),
        Case::new(crd, "~.layer3.subnets[*]", "HostSubnet must < 32 for ipv4 CIDR")
            .accept(l3(primary(json!([{"cidr": "10.10.0.0/16", "hostSubnet": 31}]))))
            .reject(l3(primary(json!([{"cidr": "10.10.0.0/16", "hostSubnet": 32}])))),
        Case::new(crd, "~.layer3.subnets[*].cidr", "CIDR is invalid")
            .accept(l3(primary(json!([{"cidr": "10.10.0.0/16"}]))))
            .reject(l3(primary(json!([{"cidr": "10.10.0.0"}])))),
    ]
}
