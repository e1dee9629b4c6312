//! The UDN guide's example objects (blue/green Primary Layer3 networks and the append-only
//! subnet expansion) validate cleanly against the generated CRD and read into the Rust
//! types.

mod crd_support;

use crd_support::Crd;
use serde_json::Value;
use udn_api::crd::{NetworkRole, NetworkTopology, UserDefinedNetwork};

const BLUE_GREEN: &str = "\
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata:
  name: blue-network
  namespace: blue
  labels:
    name: blue
    purpose: kubecon-eu-2025-demo
spec:
  topology: Layer3
  layer3:
    role: Primary
    subnets:
    - cidr: 103.103.0.0/16
      hostSubnet: 24
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata:
  name: green-network
  namespace: green
  labels:
    name: green
    purpose: kubecon-eu-2025-demo
spec:
  topology: Layer3
  layer3:
    role: Primary
    subnets:
    - cidr: 203.203.0.0/16
      hostSubnet: 24
";

const BLUE_EXPANDED: &str = "\
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata:
  name: blue-network
  namespace: blue
spec:
  topology: Layer3
  layer3:
    role: Primary
    subnets:
    - cidr: 103.103.0.0/16
      hostSubnet: 24
    - cidr: 103.104.0.0/16
      hostSubnet: 24
";

fn documents(yaml: &str) -> Vec<Value> {
    match serde_saphyr::from_str_multiple::<Value, Vec<Value>>(yaml) {
        Ok(documents) => documents,
        Err(error) => panic!("example YAML does not parse: {error}"),
    }
}

#[test]
fn blue_and_green_networks_are_valid_and_unchanged_by_admission() {
    let networks = documents(BLUE_GREEN);
    assert_eq!(networks.len(), 2);
    for network in &networks {
        match Crd::Udn.validator().validate(network, None) {
            Ok(stored) => assert_eq!(&stored, network, "nothing is pruned or defaulted"),
            Err(errors) => panic!("{errors}"),
        }
        let typed: UserDefinedNetwork = match serde_json::from_value(network.clone()) {
            Ok(typed) => typed,
            Err(error) => panic!("example does not read into UserDefinedNetwork: {error}"),
        };
        assert_eq!(typed.spec.topology, NetworkTopology::Layer3);
        let Some(layer3) = &typed.spec.layer3 else {
            panic!("layer3 missing");
        };
        assert_eq!(layer3.role, NetworkRole::Primary);
        assert_eq!(layer3.subnets[0].host_subnet, Some(24));
    }
}

#[test]
fn appending_a_subnet_is_an_allowed_update() {
    let old = documents(BLUE_GREEN).remove(0);
    let new = documents(BLUE_EXPANDED).remove(0);
    if let Err(errors) = Crd::Udn.validator().validate(&new, Some(&old)) {
        panic!("{errors}");
    }
    let Err(errors) = Crd::Udn.validator().validate(&old, Some(&new)) else {
        panic!("removing the appended subnet must be rejected");
    };
    assert_eq!(
        errors.to_string(),
        "[spec.layer3: Invalid value: Removing existing subnets is not allowed, \
         spec.layer3: Invalid value: hostSubnet is immutable]"
    );
}
