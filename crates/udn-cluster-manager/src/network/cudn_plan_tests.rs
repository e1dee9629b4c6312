use serde_json::json;
use udn_test_support::cudn as cudn_builder;

use super::*;
use crate::network::fixtures::{cudn, deleted_at, nad, pod_using};
use crate::network::pod_use::pod_use;

fn l2_secondary() -> serde_json::Value {
    json!({"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.20.0.0/16"]}})
}

fn namespace(labels: &[(&str, &str)], terminating: bool) -> NamespaceInfo {
    NamespaceInfo {
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        terminating,
    }
}

fn inputs(selector: serde_json::Value, network: serde_json::Value) -> CudnInputs {
    CudnInputs {
        cudn: Arc::new(cudn(cudn_builder("tenant", selector, network), "c1")),
        namespaces: BTreeMap::from([
            ("a".to_owned(), namespace(&[("tenant", "x")], false)),
            ("b".to_owned(), namespace(&[("tenant", "x")], false)),
            ("c".to_owned(), namespace(&[("tenant", "y")], false)),
            ("d".to_owned(), namespace(&[("tenant", "x")], true)),
        ]),
        owned: BTreeMap::new(),
        targets: BTreeMap::new(),
        pods: BTreeMap::new(),
    }
}

fn summary(plan: &CudnPlan) -> Vec<String> {
    plan.steps
        .iter()
        .map(|step| match step {
            Step::Remove { namespace, result } => match result {
                Ok(Some(NadOp::Delete { .. })) => format!("delete {namespace}"),
                Ok(other) => format!("remove {namespace} {other:?}"),
                Err(err) => format!("remove {namespace} error {err}"),
            },
            Step::Ensure { namespace, result } => match result {
                Ok((Some(NadOp::Create { .. }), _)) => format!("create {namespace}"),
                Ok((None, _)) => format!("keep {namespace}"),
                Ok((Some(op), _)) => format!("ensure {namespace} {op:?}"),
                Err(err) => format!("ensure {namespace} error {err}"),
            },
        })
        .collect()
}

#[test]
fn selected_namespaces_skip_terminating_ones() {
    let inputs = inputs(json!({"matchLabels": {"tenant": "x"}}), l2_secondary());
    assert_eq!(
        selected_namespaces(&inputs.cudn, &inputs.namespaces).unwrap(),
        BTreeSet::from(["a".to_owned(), "b".to_owned()])
    );
    let plan = plan_cudn(&inputs, &ClusterConfig::default());
    assert!(plan.add_finalizer);
    assert_eq!(summary(&plan), ["create a", "create b"]);
}

#[test]
fn unselected_namespaces_lose_their_nad_when_unused() {
    let mut inputs = inputs(json!({"matchLabels": {"tenant": "y"}}), l2_secondary());
    inputs
        .owned
        .insert("a".into(), nad("a", "tenant", "{}", Some("c1")));
    inputs
        .owned
        .insert("b".into(), nad("b", "tenant", "{}", Some("c1")));
    inputs.pods.insert(
        "b".into(),
        pod_use("b", "tenant", &[pod_using("b", "p", &["b/tenant"])]),
    );
    let plan = plan_cudn(&inputs, &ClusterConfig::default());
    assert_eq!(
        summary(&plan),
        [
            "create c".to_owned(),
            "delete a".to_owned(),
            "remove b error failed to delete NetworkAttachmentDefinition [b/tenant]: network \
             in use by the following pods: [b/p]"
                .to_owned(),
        ]
    );
}

#[test]
fn deletion_removes_every_owned_nad_then_the_finalizer() {
    let mut inputs = inputs(json!({}), l2_secondary());
    let mut cudn = (*inputs.cudn).clone();
    cudn.metadata.deletion_timestamp = Some(deleted_at());
    cudn.metadata.finalizers = Some(vec![
        "k8s.ovn.org/user-defined-network-protection".to_owned(),
    ]);
    inputs.cudn = Arc::new(cudn.clone());
    inputs
        .owned
        .insert("c".into(), nad("c", "tenant", "{}", Some("c1")));
    let plan = plan_cudn(&inputs, &ClusterConfig::default());
    assert_eq!(summary(&plan), ["delete c"]);
    assert!(plan.remove_finalizer && plan.active && !plan.add_finalizer);
    cudn.metadata.finalizers = None;
    inputs.cudn = Arc::new(cudn);
    let plan = plan_cudn(&inputs, &ClusterConfig::default());
    assert!(!plan.active && plan.steps.is_empty());
}

#[test]
fn invalid_selector_is_fatal() {
    let inputs = inputs(
        json!({"matchExpressions": [{"key": "tenant", "operator": "In", "values": []}]}),
        l2_secondary(),
    );
    let plan = plan_cudn(&inputs, &ClusterConfig::default());
    assert!(plan.steps.is_empty());
    assert_eq!(
        plan.fatal.unwrap().to_string(),
        "failed to get selected namespaces: failed to create label-selector: values: Invalid \
         value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
}

#[test]
fn localnet_renders_per_namespace() {
    let network = json!({"topology": "Localnet", "localnet": {
        "role": "Secondary", "physicalNetworkName": "physnet", "subnets": ["192.168.0.0/24"],
        "vlan": {"mode": "Access", "access": {"id": 200}},
    }});
    let inputs = inputs(json!({"matchLabels": {"tenant": "y"}}), network);
    let plan = plan_cudn(&inputs, &ClusterConfig::default());
    let [
        Step::Ensure {
            result:
                Ok((
                    Some(NadOp::Create {
                        nad,
                        network,
                        tunnel_keys,
                    }),
                    _,
                )),
            ..
        },
    ] = plan.steps.as_slice()
    else {
        panic!("expected one create, got {plan:?}");
    };
    assert_eq!(network, "cluster_udn_tenant");
    assert_eq!(*tunnel_keys, 0);
    assert_eq!(
        nad.spec.config.as_deref(),
        Some(
            r#"{"cniVersion":"1.1.0","mtu":1500,"name":"cluster_udn_tenant","netAttachDefName":"c/tenant","physicalNetworkName":"physnet","role":"secondary","subnets":"192.168.0.0/24","topology":"localnet","type":"ovn-k8s-cni-overlay","vlanID":200}"#
        )
    );
}
