//! Structural (OpenAPI) rejections of the generated CRDs, with the apiserver's text.

mod crd_support;

use crd_support::Crd;
use serde_json::{Value, json};
use udn_schema::CEL_SKIPPED_MESSAGE;

fn skipped() -> String {
    format!("<nil>: Invalid value: null: {CEL_SKIPPED_MESSAGE}")
}

fn l3(config: Value) -> Value {
    json!({"topology": "Layer3", "layer3": config})
}

fn cudn(network: Value, extra: Value) -> Value {
    let mut spec = json!({"namespaceSelector": {}, "network": network});
    if let (Value::Object(spec), Value::Object(extra)) = (&mut spec, extra) {
        spec.extend(extra);
    }
    spec
}

fn primary_l3() -> Value {
    json!({"role": "Primary", "subnets": [{"cidr": "10.10.0.0/16"}]})
}

#[test]
fn topology_enum_differs_between_udn_and_cudn() {
    assert_eq!(
        Crd::Udn.errors(&json!({"topology": "Layer4", "layer3": primary_l3()}), None),
        [
            r#"spec.topology: Unsupported value: "Layer4": supported values: "Layer2", "Layer3""#
                .to_owned(),
            skipped(),
        ]
    );
    assert_eq!(
        Crd::Udn.errors(&json!({"topology": "Localnet"}), None)[0],
        r#"spec.topology: Unsupported value: "Localnet": supported values: "Layer2", "Layer3""#
    );
    let localnet = json!({"topology": "Localnet", "localnet": {
        "role": "Primary", "physicalNetworkName": "physnet", "subnets": ["192.168.0.0/24"]}});
    assert_eq!(
        Crd::Cudn.errors(&cudn(localnet, json!({})), None),
        [
            r#"spec.network.localnet.role: Unsupported value: "Primary": supported values: "Secondary""#
                .to_owned(),
            skipped(),
        ]
    );
}

#[test]
fn numeric_bounds() {
    assert_eq!(
        Crd::Udn.errors(
            &l3(json!({"role": "Primary", "mtu": 575, "subnets": [{"cidr": "10.10.0.0/16"}]})),
            None
        ),
        [
            "spec.layer3.mtu: Invalid value: 575: spec.layer3.mtu in body should be greater than or equal to 576"
        ]
    );
    assert_eq!(
        Crd::Udn.errors(
            &l3(json!({"role": "Primary", "mtu": 65537, "subnets": [{"cidr": "10.10.0.0/16"}]})),
            None
        ),
        [
            "spec.layer3.mtu: Invalid value: 65537: spec.layer3.mtu in body should be less than or equal to 65536"
        ]
    );
    assert_eq!(
        Crd::Udn.errors(
            &l3(json!({"role": "Primary", "subnets": [{"cidr": "fd00::/48", "hostSubnet": 128}]})),
            None
        ),
        [
            "spec.layer3.subnets[0].hostSubnet: Invalid value: 128: spec.layer3.subnets[0].hostSubnet in body should be less than or equal to 127"
        ]
    );
    let evpn = json!({"topology": "Layer3", "layer3": primary_l3(), "transport": "EVPN",
        "evpn": {"vtep": "v", "ipVRF": {"vni": 0}}});
    assert_eq!(
        Crd::Cudn.errors(&cudn(evpn, json!({})), None),
        [
            "spec.network.evpn.ipVRF.vni: Invalid value: 0: spec.network.evpn.ipVRF.vni in body should be greater than or equal to 1"
        ]
    );
    let vlan = json!({"topology": "Localnet", "localnet": {"role": "Secondary", "physicalNetworkName": "p",
        "subnets": ["192.168.0.0/24"], "vlan": {"mode": "Access", "access": {"id": 4095}}}});
    assert_eq!(
        Crd::Cudn.errors(&cudn(vlan, json!({})), None),
        [
            "spec.network.localnet.vlan.access.id: Invalid value: 4095: spec.network.localnet.vlan.access.id in body should be less than or equal to 4094"
        ]
    );
}

#[test]
fn required_fields_and_counts() {
    assert_eq!(
        Crd::Udn.errors(&l3(json!({"subnets": [{"cidr": "10.10.0.0/16"}]})), None),
        ["spec.layer3.role: Required value".to_owned(), skipped()]
    );
    assert_eq!(
        Crd::Udn.errors(&l3(json!({"role": "Primary", "subnets": []})), None),
        [
            "spec.layer3.subnets: Invalid value: 0: spec.layer3.subnets in body should have at least 1 items"
        ]
    );
    let reserved: Vec<String> = (0..26).map(|i| format!("10.100.{i}.0/24")).collect();
    let layer2 = json!({"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.100.0.0/16"],
        "reservedSubnets": reserved}});
    assert_eq!(
        Crd::Udn.errors(&layer2, None),
        [
            "spec.layer2.reservedSubnets: Too many: 26: must have at most 25 items".to_owned(),
            skipped()
        ]
    );
    let ipam = json!({"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.100.0.0/16"], "ipam": {}}});
    assert_eq!(
        Crd::Udn.errors(&ipam, None),
        [
            "spec.layer2.ipam: Invalid value: 0: spec.layer2.ipam in body should have at least 1 properties"
        ]
    );
    assert_eq!(
        Crd::Cudn.errors(
            &json!({"network": {"topology": "Layer3", "layer3": primary_l3()}}),
            None
        ),
        [
            "spec.namespaceSelector: Required value".to_owned(),
            skipped()
        ]
    );
}

#[test]
fn string_lengths_and_patterns() {
    let long_cidr = format!("{}/64", "f".repeat(41));
    assert_eq!(
        Crd::Udn.errors(
            &l3(json!({"role": "Primary", "subnets": [{"cidr": long_cidr}]})),
            None
        ),
        [
            "spec.layer3.subnets[0].cidr: Too long: may not be more than 43 bytes".to_owned(),
            skipped()
        ]
    );
    assert_eq!(
        Crd::Cudn.errors(&cudn(l3(primary_l3()), json!({"uplinks": ["Br_Ex"]})), None),
        [
            r#"spec.uplinks[0]: Invalid value: "Br_Ex": spec.uplinks[0] in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"#
        ]
    );
    assert_eq!(
        Crd::Cudn.errors(
            &cudn(l3(primary_l3()), json!({"uplinks": ["a", "b"]})),
            None
        ),
        [
            "spec.uplinks: Too many: 2: must have at most 1 item".to_owned(),
            skipped()
        ]
    );
    let evpn = json!({"topology": "Layer3", "layer3": primary_l3(), "transport": "EVPN",
        "evpn": {"vtep": "v", "ipVRF": {"vni": 1, "routeTarget": "4294967295:42949672950"}}});
    assert_eq!(
        Crd::Cudn.errors(&cudn(evpn, json!({})), None),
        [
            "spec.network.evpn.ipVRF.routeTarget: Too long: may not be more than 21 bytes"
                .to_owned(),
            skipped()
        ]
    );
}

#[test]
fn status_conditions_are_a_map_keyed_by_type() {
    let mut object = Crd::Udn.object(l3(primary_l3()));
    let condition = |status: &str| {
        json!({"type": "NetworkCreated", "status": status, "reason": "NetworkAttachmentDefinitionCreated",
               "message": "NetworkAttachmentDefinition has been created",
               "lastTransitionTime": "2025-01-02T03:04:05Z"})
    };
    object["status"] = json!({"conditions": [condition("True"), condition("False")]});
    let Err(errors) = Crd::Udn.validator().validate(&object, None) else {
        panic!("duplicate condition types must be rejected");
    };
    assert_eq!(
        errors.to_string(),
        r#"status.conditions[1]: Duplicate value: {"type":"NetworkCreated"}"#
    );
    object["status"] = json!({"conditions": [condition("Maybe")]});
    let Err(errors) = Crd::Udn.validator().validate(&object, None) else {
        panic!("an unknown condition status must be rejected");
    };
    assert_eq!(
        errors.as_slice()[0].to_string(),
        r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
    );
    object["status"] = json!({"conditions": [condition("True")]});
    assert!(Crd::Udn.validator().validate(&object, None).is_ok());
}

#[test]
fn unknown_fields_are_pruned() {
    let mut spec = l3(primary_l3());
    spec["layer3"]["colour"] = json!("blue");
    spec["extra"] = json!(1);
    let Ok(stored) = Crd::Udn.validate(&spec, None) else {
        panic!("unknown fields are dropped, not rejected");
    };
    assert_eq!(stored["spec"], l3(primary_l3()));
}

#[test]
fn the_422_message_names_the_object() {
    let spec = l3(
        json!({"role": "Primary", "subnets": [{"cidr": "10.10.0.0/16"}, {"cidr": "10.10.1.0/24"}]}),
    );
    let Err(errors) = Crd::Udn.validate(&spec, None) else {
        panic!("overlapping subnets must be rejected");
    };
    assert_eq!(
        Crd::Udn.validator().invalid_message("net", &errors),
        r#"UserDefinedNetwork.k8s.ovn.org "net" is invalid: spec.layer3: Invalid value: Subnets must not overlap or contain each other"#
    );
}
