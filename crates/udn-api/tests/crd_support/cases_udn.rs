//! Rules only the `UserDefinedNetwork` spec has.

use serde_json::json;

use super::{Case, Crd};

/// The UDN spec-level rules.
pub fn cases() -> Vec<Case> {
    let layer3 = json!({"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [{"cidr": "10.10.0.0/16"}]}});
    let layer2 =
        json!({"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.100.0.0/16"]}});
    vec![
        Case::new(
            Crd::Udn,
            "spec",
            "spec.layer3 is required when topology is Layer3 and forbidden otherwise",
        )
        .accept(layer3.clone())
        .reject(json!({"topology": "Layer3"})),
        Case::new(
            Crd::Udn,
            "spec",
            "spec.layer2 is required when topology is Layer2 and forbidden otherwise",
        )
        .accept(layer2.clone())
        .reject(json!({"topology": "Layer2"})),
        Case::new(Crd::Udn, "spec.topology", "Topology is immutable")
            .old(layer3.clone())
            .accept(layer3)
            .reject(layer2),
    ]
}
