//! The shape of the generated CRD manifests: names, scope, subresources, printer columns,
//! list types, and a clean structural schema.

mod crd_support;

use crd_support::{Crd, MANIFESTS};
use serde_json::{Value, json};
use udn_api::crd::{
    Cidr, ClusterUserDefinedNetwork, ClusterUserDefinedNetworkSpec, Layer3Config, Layer3Subnet,
    NetworkRole, NetworkSpec, NetworkTopology, UserDefinedNetwork, UserDefinedNetworkSpec,
};

fn schema(crd: Crd) -> &'static Value {
    match crd
        .manifest()
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
    {
        Some(schema) => schema,
        None => panic!("no schema"),
    }
}

#[test]
fn names_scopes_and_subresources() {
    let summary: Vec<Value> = MANIFESTS
        .iter()
        .map(|crd| {
            json!([
                crd["metadata"]["name"],
                crd["spec"]["scope"],
                crd["spec"]["names"]["shortNames"],
                crd["spec"]["versions"][0]["subresources"],
            ])
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!(["userdefinednetworks.k8s.ovn.org", "Namespaced", ["udn"], {"status": {}}]),
            json!(["clusteruserdefinednetworks.k8s.ovn.org", "Cluster", ["cudn"], {"status": {}}]),
            json!([
                "network-attachment-definitions.k8s.cni.cncf.io",
                "Namespaced",
                ["nad", "net-attach-def"],
                null
            ]),
            json!(["ipamclaims.k8s.cni.cncf.io", "Namespaced", null, {"status": {}}]),
        ]
    );
}

#[test]
fn printer_columns() {
    let columns = |crd: Crd| -> Vec<(String, String)> {
        crd.manifest()["spec"]["versions"][0]["additionalPrinterColumns"]
            .as_array()
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or("").to_owned(),
                            c["jsonPath"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let created = ".status.conditions[?(@.type==\"NetworkCreated\")].status".to_owned();
    assert_eq!(
        columns(Crd::Udn),
        [
            ("Topology".to_owned(), ".spec.topology".to_owned()),
            ("Role".to_owned(), ".spec..role".to_owned()),
            ("Created".to_owned(), created.clone()),
            ("Age".to_owned(), ".metadata.creationTimestamp".to_owned()),
        ]
    );
    assert_eq!(
        columns(Crd::Cudn),
        [
            ("Topology".to_owned(), ".spec.network.topology".to_owned()),
            ("Role".to_owned(), ".spec.network..role".to_owned()),
            ("Created".to_owned(), created),
            ("Age".to_owned(), ".metadata.creationTimestamp".to_owned()),
        ]
    );
}

#[test]
fn list_types() {
    let udn = schema(Crd::Udn);
    let conditions = &udn["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    assert_eq!(
        conditions["items"]["required"],
        json!(["lastTransitionTime", "message", "reason", "status", "type"])
    );
    let layer3 = &udn["properties"]["spec"]["properties"]["layer3"]["properties"];
    assert_eq!(layer3["subnets"]["x-kubernetes-list-type"], "atomic");
    assert_eq!(layer3["subnets"]["maxItems"], 400);
    let selector = &schema(Crd::Cudn)["properties"]["spec"]["properties"]["namespaceSelector"];
    assert_eq!(selector["x-kubernetes-map-type"], "atomic");
}

/// Every key anywhere in `value`.
fn keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                out.push(key.clone());
                keys(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| keys(item, out)),
        _ => {}
    }
}

#[test]
fn schemas_are_clean_and_bounds_integral() {
    for manifest in MANIFESTS.iter() {
        let mut all = Vec::new();
        keys(manifest, &mut all);
        for noise in ["nullable", "title", "$schema", "oneOf", "anyOf", "allOf"] {
            assert!(
                !all.iter().any(|key| key == noise),
                "{noise} in {}",
                manifest["metadata"]["name"]
            );
        }
    }
    let mtu = &schema(Crd::Udn)["properties"]["spec"]["properties"]["layer3"]["properties"]["mtu"];
    assert_eq!(
        mtu,
        &json!({
            "description": mtu["description"],
            "format": "int32",
            "maximum": 65536,
            "minimum": 576,
            "type": "integer",
            "x-kubernetes-validations": [{"message": "mtu is immutable", "rule": "self == oldSelf"}],
        })
    );
    assert!(mtu["minimum"].is_i64());
}

#[test]
fn objects_built_from_the_rust_types_validate_unchanged() {
    let layer3 = Layer3Config {
        role: NetworkRole::Primary,
        mtu: Some(1400),
        subnets: vec![Layer3Subnet {
            cidr: Cidr("10.10.0.0/16".to_owned()),
            host_subnet: Some(24),
        }],
        join_subnets: None,
    };
    let udn = UserDefinedNetwork::new(
        "net",
        UserDefinedNetworkSpec {
            topology: NetworkTopology::Layer3,
            layer3: Some(layer3.clone()),
            layer2: None,
        },
    );
    let cudn = ClusterUserDefinedNetwork::new(
        "net",
        ClusterUserDefinedNetworkSpec {
            namespace_selector: Default::default(),
            uplinks: None,
            network: NetworkSpec {
                topology: NetworkTopology::Layer3,
                layer3: Some(layer3),
                layer2: None,
                localnet: None,
                transport: None,
                no_overlay: None,
                evpn: None,
            },
        },
    );
    for (crd, object) in [
        (Crd::Udn, serde_json::to_value(&udn)),
        (Crd::Cudn, serde_json::to_value(&cudn)),
    ] {
        let Ok(mut object) = object else {
            panic!("serialize");
        };
        if crd == Crd::Udn {
            object["metadata"]["namespace"] = json!("tenant");
        }
        match crd.validator().validate(&object, None) {
            Ok(stored) => assert_eq!(stored, object, "the schema knows every serialized field"),
            Err(errors) => panic!("{crd:?}: {errors}"),
        }
    }
}
