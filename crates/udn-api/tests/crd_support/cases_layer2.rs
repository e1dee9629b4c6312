//! Rules of `layer2` (shared by UDN and CUDN).

use serde_json::{Value, json};

use super::{Case, Crd};

const SUBNETS_REQUIRED: &str = "Subnets is required with ipam.mode is Enabled or unset";
const RESERVED_UNSET: &str = "reservedSubnets must be unset when subnets is unset";
const RESERVED_PRIMARY: &str = "reservedSubnets is only supported for Primary network";
const RESERVED_INSIDE: &str =
    "reservedSubnets must be subnetworks of the networks specified in the subnets field";
const RESERVED_MASKED: &str = "reservedSubnets must be a masked network address (no host bits set)";
const INFRA_UNSET: &str = "infrastructureSubnets must be unset when subnets is unset";
const INFRA_PRIMARY: &str = "infrastructureSubnets is only supported for Primary network";
const INFRA_INSIDE: &str =
    "infrastructureSubnets must be subnetworks of the networks specified in the subnets field";
const INFRA_MASKED: &str =
    "infrastructureSubnets must be a masked network address (no host bits set)";
const GATEWAYS_INSIDE: &str =
    "defaultGatewayIPs must belong to one of the subnets specified in the subnets field";

/// `config` with `extra` fields merged in.
fn with(config: &Value, extra: Value) -> Value {
    let mut out = config.clone();
    if let (Value::Object(out), Value::Object(extra)) = (&mut out, extra) {
        out.extend(extra);
    }
    out
}

/// Every `layer2` rule for `crd`.
pub fn cases(crd: Crd) -> Vec<Case> {
    let l2 = |config: Value| crd.layer2(config);
    let primary = json!({"role": "Primary", "subnets": ["10.100.0.0/16"]});
    let secondary = json!({"role": "Secondary", "subnets": ["10.100.0.0/16"]});
    let dual = json!({"role": "Primary", "subnets": ["10.100.0.0/16", "fd00:100::/64"]});
    let no_ipam = json!({"role": "Secondary", "ipam": {"mode": "Disabled"}});
    vec![
        Case::new(crd, "~.layer2", "Layer2 is immutable")
            .old(l2(primary.clone()))
            .accept(l2(primary.clone()))
            .reject(l2(with(&primary, json!({"mtu": 1400})))),
        Case::new(crd, "~.layer2", SUBNETS_REQUIRED)
            .accept(l2(no_ipam.clone()))
            .reject(l2(json!({"role": "Secondary"}))),
        Case::new(
            crd,
            "~.layer2",
            "Subnets must be unset when ipam.mode is Disabled",
        )
        .accept(l2(no_ipam.clone()))
        .reject(l2(with(&no_ipam, json!({"subnets": ["10.100.0.0/16"]})))),
        Case::new(
            crd,
            "~.layer2",
            "Disabled ipam.mode is only supported for Secondary network",
        )
        .accept(l2(no_ipam.clone()))
        .reject(l2(json!({"role": "Primary", "ipam": {"mode": "Disabled"}}))),
        Case::new(
            crd,
            "~.layer2",
            "JoinSubnets is only supported for Primary network",
        )
        .accept(l2(with(
            &primary,
            json!({"joinSubnets": ["100.66.0.0/16"]}),
        )))
        .reject(l2(with(
            &secondary,
            json!({"joinSubnets": ["100.66.0.0/16"]}),
        ))),
        Case::new(
            crd,
            "~.layer2",
            "MTU should be greater than or equal to 1280 when IPv6 subnet is used",
        )
        .accept(l2(
            json!({"role": "Primary", "subnets": ["fd00:100::/64"], "mtu": 1280}),
        ))
        .reject(l2(
            json!({"role": "Primary", "subnets": ["fd00:100::/64"], "mtu": 1000}),
        )),
        Case::new(
            crd,
            "~.layer2",
            "defaultGatewayIPs is only supported for Primary network",
        )
        .accept(l2(with(
            &primary,
            json!({"defaultGatewayIPs": ["10.100.0.1"]}),
        )))
        .reject(l2(with(
            &secondary,
            json!({"defaultGatewayIPs": ["10.100.0.1"]}),
        ))),
        Case::new(crd, "~.layer2", GATEWAYS_INSIDE)
            .accept(l2(with(
                &primary,
                json!({"defaultGatewayIPs": ["10.100.0.1"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"defaultGatewayIPs": ["10.200.0.1"]}),
            ))),
        Case::new(
            crd,
            "~.layer2",
            "defaultGatewayIPs must be specified for all IP families",
        )
        .accept(l2(with(
            &dual,
            json!({"defaultGatewayIPs": ["10.100.0.1", "fd00:100::1"]}),
        )))
        .reject(l2(with(
            &dual,
            json!({"defaultGatewayIPs": ["10.100.0.1"]}),
        ))),
        Case::new(crd, "~.layer2", RESERVED_UNSET)
            .accept(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            )))
            .reject(l2(with(
                &no_ipam,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            )))
            .also("~.layer2", RESERVED_PRIMARY)
            .also_eval(RESERVED_INSIDE),
        Case::new(crd, "~.layer2", RESERVED_PRIMARY)
            .accept(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            )))
            .reject(l2(with(
                &secondary,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            ))),
        Case::new(crd, "~.layer2", INFRA_UNSET)
            .accept(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            )))
            .reject(l2(with(
                &no_ipam,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            )))
            .also("~.layer2", INFRA_PRIMARY)
            .also_eval(INFRA_INSIDE),
        Case::new(crd, "~.layer2", INFRA_PRIMARY)
            .accept(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            )))
            .reject(l2(with(
                &secondary,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            ))),
        Case::new(
            crd,
            "~.layer2",
            "defaultGatewayIPs have to belong to infrastructureSubnets",
        )
        .accept(l2(with(
            &primary,
            json!({
                "infrastructureSubnets": ["10.100.0.0/30"], "defaultGatewayIPs": ["10.100.0.1"]
            }),
        )))
        .reject(l2(with(
            &primary,
            json!({
                "infrastructureSubnets": ["10.100.0.0/30"], "defaultGatewayIPs": ["10.100.5.1"]
            }),
        ))),
        Case::new(crd, "~.layer2", RESERVED_INSIDE)
            .at("~.layer2.reservedSubnets")
            .accept(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.200.1.0/24"]}),
            ))),
        Case::new(crd, "~.layer2", INFRA_INSIDE)
            .at("~.layer2.infrastructureSubnets")
            .accept(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.200.0.0/30"]}),
            ))),
        Case::new(
            crd,
            "~.layer2",
            "infrastructureSubnets and reservedSubnets must not overlap",
        )
        .accept(l2(with(
            &primary,
            json!({
                "infrastructureSubnets": ["10.100.0.0/30"], "reservedSubnets": ["10.100.1.0/24"]
            }),
        )))
        .reject(l2(with(
            &primary,
            json!({
                "infrastructureSubnets": ["10.100.0.0/30"], "reservedSubnets": ["10.100.0.0/24"]
            }),
        ))),
        Case::new(crd, "~.layer2", INFRA_MASKED)
            .accept(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.1/30"]}),
            ))),
        Case::new(crd, "~.layer2", RESERVED_MASKED)
            .accept(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.1/24"]}),
            ))),
        Case::new(
            crd,
            "~.layer2.defaultGatewayIPs",
            "When 2 IPs are set, they must be from different IP families",
        )
        .accept(l2(with(
            &dual,
            json!({"defaultGatewayIPs": ["10.100.0.1", "fd00:100::1"]}),
        )))
        .reject(l2(with(
            &dual,
            json!({"defaultGatewayIPs": ["10.100.0.1", "10.100.0.2"]}),
        ))),
        Case::new(crd, "~.layer2.defaultGatewayIPs[*]", "IP is invalid")
            .accept(l2(with(
                &primary,
                json!({"defaultGatewayIPs": ["10.100.0.1"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"defaultGatewayIPs": ["10.100.0.300"]}),
            )))
            .also_eval(GATEWAYS_INSIDE),
        Case::new(crd, "~.layer2.infrastructureSubnets[*]", "CIDR is invalid")
            .accept(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.0/30"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"infrastructureSubnets": ["10.100.0.0"]}),
            )))
            .also("~.layer2", INFRA_MASKED)
            .also_eval(INFRA_INSIDE),
        Case::new(
            crd,
            "~.layer2.ipam",
            "lifecycle Persistent is only supported when ipam.mode is Enabled",
        )
        .accept(l2(with(
            &secondary,
            json!({"ipam": {"lifecycle": "Persistent"}}),
        )))
        .reject(l2(json!({
            "role": "Secondary", "ipam": {"mode": "Disabled", "lifecycle": "Persistent"}
        }))),
        Case::new(
            crd,
            "~.layer2.joinSubnets",
            "When 2 CIDRs are set, they must be from different IP families",
        )
        .accept(l2(with(
            &primary,
            json!({"joinSubnets": ["100.66.0.0/16", "fd99::/64"]}),
        )))
        .reject(l2(with(
            &primary,
            json!({"joinSubnets": ["100.66.0.0/16", "100.67.0.0/16"]}),
        ))),
        Case::new(crd, "~.layer2.joinSubnets[*]", "CIDR is invalid")
            .accept(l2(with(
                &primary,
                json!({"joinSubnets": ["100.66.0.0/16"]}),
            )))
            .reject(l2(with(&primary, json!({"joinSubnets": ["100.66.0.0"]})))),
        Case::new(crd, "~.layer2.reservedSubnets[*]", "CIDR is invalid")
            .accept(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.0/24"]}),
            )))
            .reject(l2(with(
                &primary,
                json!({"reservedSubnets": ["10.100.1.0"]}),
            )))
            .also("~.layer2", RESERVED_MASKED)
            .also_eval(RESERVED_INSIDE),
        Case::new(
            crd,
            "~.layer2.subnets",
            "When 2 CIDRs are set, they must be from different IP families",
        )
        .accept(l2(dual.clone()))
        .reject(l2(
            json!({"role": "Primary", "subnets": ["10.100.0.0/16", "10.200.0.0/16"]}),
        )),
        Case::new(crd, "~.layer2.subnets[*]", "CIDR is invalid")
            .accept(l2(primary.clone()))
            .reject(l2(json!({"role": "Primary", "subnets": ["10.100.0.0"]}))),
    ]
}
