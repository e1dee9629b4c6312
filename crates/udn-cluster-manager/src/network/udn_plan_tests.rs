use udn_test_support::l3_udn;

use super::*;
use crate::network::fixtures::{deleted_at, nad, ns_labels, pod_using, udn};
use crate::network::pod_use::pod_use;

const CONFIG: &str = r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"blue_net","netAttachDefName":"blue/net","role":"primary","subnets":"10.10.0.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#;

fn inputs(protected: bool, deleting: bool) -> UdnInputs {
    let mut udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    if protected {
        udn.metadata.finalizers = Some(vec![
            "k8s.ovn.org/user-defined-network-protection".to_owned(),
        ]);
    }
    if deleting {
        udn.metadata.deletion_timestamp = Some(deleted_at());
    }
    UdnInputs {
        udn: Arc::new(udn),
        target: NadTarget {
            namespace_labels: Some(ns_labels(true)),
            ..NadTarget::default()
        },
        pods: PodUse::default(),
    }
}

fn kinds(plan: &UdnPlan) -> Vec<&'static str> {
    plan.ops
        .iter()
        .map(|op| match op {
            UdnOp::Finalizer(FinalizerOp::Add) => "add-finalizer",
            UdnOp::Finalizer(FinalizerOp::Remove) => "remove-finalizer",
            UdnOp::Nad(NadOp::Create { .. }) => "create",
            UdnOp::Nad(NadOp::Update { .. }) => "update",
            UdnOp::Nad(NadOp::Delete { .. }) => "delete",
            UdnOp::Nad(NadOp::ConfirmAbsent { .. }) => "confirm-absent",
        })
        .collect()
}

#[test]
fn new_udn_gets_finalizer_then_nad() {
    let plan = plan_udn(&inputs(false, false), &ClusterConfig::default());
    assert_eq!(kinds(&plan), ["add-finalizer", "create"]);
    assert!(plan.report_status);
    assert_eq!(
        plan.outcome,
        Ok(Some(NadState {
            namespace: "blue".into(),
            name: "net".into(),
            deleting: false
        }))
    );
}

#[test]
fn invalid_state_still_adds_finalizer_and_changes_nothing_else() {
    let mut inputs = inputs(false, false);
    inputs.target.namespace_labels = Some(ns_labels(false));
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert_eq!(kinds(&plan), ["add-finalizer"]);
    assert!(matches!(
        plan.outcome,
        Err(SyncError::InvalidPrimaryNetwork { .. })
    ));
    inputs.target.namespace_labels = Some(ns_labels(true));
    inputs.target.existing = Some(nad("blue", "net", CONFIG, Some("other-uid")));
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert_eq!(kinds(&plan), ["add-finalizer"]);
    assert!(matches!(plan.outcome, Err(SyncError::Foreign { .. })));
}

#[test]
fn converged_udn_plans_nothing() {
    let mut inputs = inputs(true, false);
    let mut existing = (*nad("blue", "net", CONFIG, Some("u1"))).clone();
    existing.metadata.labels =
        Some([("k8s.ovn.org/user-defined-network".to_owned(), String::new())].into());
    inputs.target.existing = Some(Arc::new(existing));
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert!(plan.ops.is_empty(), "{plan:?}");
    assert!(plan.outcome.is_ok());
}

#[test]
fn deletion_removes_nad_then_finalizer() {
    let mut inputs = inputs(true, true);
    inputs.target.existing = Some(nad("blue", "net", CONFIG, Some("u1")));
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert_eq!(kinds(&plan), ["delete", "remove-finalizer"]);
    assert!(!plan.report_status);
    inputs.target.existing = None;
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert_eq!(kinds(&plan), ["confirm-absent", "remove-finalizer"]);
    inputs.target.existing = Some(nad("blue", "net", CONFIG, Some("foreign")));
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert_eq!(kinds(&plan), ["remove-finalizer"]);
}

#[test]
fn deletion_waits_for_pods() {
    let mut inputs = inputs(true, true);
    inputs.target.existing = Some(nad("blue", "net", CONFIG, Some("u1")));
    inputs.pods = pod_use("blue", "net", &[pod_using("blue", "p1", &["blue/net"])]);
    let plan = plan_udn(&inputs, &ClusterConfig::default());
    assert!(plan.ops.is_empty());
    assert!(plan.report_status);
    assert_eq!(
        plan.outcome.unwrap_err().to_string(),
        "failed to delete NetworkAttachmentDefinition [blue/net]: network in use by the \
         following pods: [blue/p1]"
    );
}

#[test]
fn deleted_udn_without_finalizer_is_left_alone() {
    let plan = plan_udn(&inputs(false, true), &ClusterConfig::default());
    assert!(plan.ops.is_empty());
    assert!(!plan.report_status);
}
