use std::collections::BTreeMap;

use serde_json::json;
use udn_api::cluster::ClusterConfig;
use udn_api::render::NetworkSource;
use udn_test_support::{l2_udn, l3_udn};

use super::*;
use crate::network::fixtures::{deleted_at, nad, ns_labels, pod_using, udn};
use crate::network::pod_use::pod_use;

const L3_PRIMARY: &str = r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"blue_net","netAttachDefName":"blue/net","role":"primary","subnets":"10.10.0.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#;

fn target(primary_label: bool) -> NadTarget {
    NadTarget {
        namespace_labels: Some(ns_labels(primary_label)),
        ..NadTarget::default()
    }
}

#[test]
fn creates_the_rendered_nad_with_identity_request() {
    let udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let (op, state) = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target(true),
        &ClusterConfig::default(),
    )
    .unwrap();
    let Some(NadOp::Create {
        nad,
        network,
        tunnel_keys,
    }) = op
    else {
        panic!("expected a create, got {op:?}");
    };
    assert_eq!(network, "blue_net");
    assert_eq!(tunnel_keys, 0);
    assert_eq!(
        serde_json::to_value(&*nad).unwrap(),
        json!({
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {
                "name": "net", "namespace": "blue",
                "labels": {"k8s.ovn.org/user-defined-network": ""},
                "finalizers": ["k8s.ovn.org/user-defined-network-protection"],
                "ownerReferences": [{
                    "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork", "name": "net",
                    "uid": "u1", "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": {"config": L3_PRIMARY},
        })
    );
    assert_eq!(
        state,
        NadState {
            namespace: "blue".into(),
            name: "net".into(),
            deleting: false
        }
    );
}

#[test]
fn primary_layer2_needs_two_tunnel_keys() {
    let udn = udn(l2_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let (op, _) = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target(true),
        &ClusterConfig::default(),
    )
    .unwrap();
    assert!(matches!(op, Some(NadOp::Create { tunnel_keys: 2, .. })));
    let secondary =
        crate::network::fixtures::udn(l2_udn("blue", "net", "Secondary", &["10.10.0.0/16"]), "u1");
    let (op, _) = ensure_nad(
        &NetworkSource::Udn(&secondary),
        &target(false),
        &ClusterConfig::default(),
    )
    .unwrap();
    assert!(matches!(op, Some(NadOp::Create { tunnel_keys: 0, .. })));
}

#[test]
fn primary_needs_the_namespace_label() {
    let udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let source = NetworkSource::Udn(&udn);
    let cluster = ClusterConfig::default();
    assert_eq!(
        ensure_nad(&source, &target(false), &cluster).unwrap_err(),
        SyncError::InvalidPrimaryNetwork {
            namespace: "blue".into()
        }
    );
    assert_eq!(
        ensure_nad(&source, &NadTarget::default(), &cluster)
            .unwrap_err()
            .to_string(),
        "failed to get namespace \"blue\": namespace \"blue\" not found"
    );
}

#[test]
fn second_primary_network_is_refused() {
    let udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let mut target = target(true);
    target.namespace_nads = vec![
        nad("blue", "plain", r#"{"type":"bridge"}"#, None),
        nad(
            "blue",
            "other",
            r#"{"type":"ovn-k8s-cni-overlay","role":"primary"}"#,
            None,
        ),
    ];
    let err = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target,
        &ClusterConfig::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "primary network already exist in namespace \"blue\": \"other\""
    );
    target.namespace_nads = vec![nad("blue", "broken", "not json", None)];
    let err = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target,
        &ClusterConfig::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "failed to validate no primary network exist: unmarshal failed [blue/broken]: "
        ),
        "{err}"
    );
}

#[test]
fn foreign_nad_is_an_error_and_left_alone() {
    let udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let mut target = target(true);
    target.existing = Some(nad("blue", "net", L3_PRIMARY, Some("someone-else")));
    assert_eq!(
        ensure_nad(
            &NetworkSource::Udn(&udn),
            &target,
            &ClusterConfig::default()
        )
        .unwrap_err(),
        SyncError::Foreign {
            namespace: "blue".into(),
            name: "net".into()
        }
    );
    target.existing = Some(nad("blue", "net", L3_PRIMARY, None));
    assert!(matches!(
        ensure_nad(
            &NetworkSource::Udn(&udn),
            &target,
            &ClusterConfig::default()
        ),
        Err(SyncError::Foreign { .. })
    ));
}

fn owned_with_ids(config: &str) -> Arc<NetworkAttachmentDefinition> {
    let mut nad = (*nad("blue", "net", config, Some("u1"))).clone();
    nad.metadata.labels = Some(BTreeMap::from([(
        "k8s.ovn.org/user-defined-network".to_owned(),
        String::new(),
    )]));
    nad.metadata.annotations = Some(BTreeMap::from([
        ("k8s.ovn.org/network-id".to_owned(), "3".to_owned()),
        ("k8s.ovn.org/network-name".to_owned(), "blue_net".to_owned()),
        ("k8s.ovn.org/tunnel-keys".to_owned(), "[]".to_owned()),
    ]));
    Arc::new(nad)
}

#[test]
fn converged_nad_needs_no_write() {
    let udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let mut target = target(true);
    target.existing = Some(owned_with_ids(L3_PRIMARY));
    let (op, state) = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target,
        &ClusterConfig::default(),
    )
    .unwrap();
    assert_eq!(op, None);
    assert!(!state.deleting);
}

#[test]
fn edited_config_is_reverted_keeping_identity_annotations() {
    let mut udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    udn.metadata.annotations = Some(BTreeMap::from([
        ("team".to_owned(), "a".to_owned()),
        ("k8s.ovn.org/ignored".to_owned(), "x".to_owned()),
    ]));
    let mut target = target(true);
    target.existing = Some(owned_with_ids(r#"{"edited":true}"#));
    let (op, _) = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target,
        &ClusterConfig::default(),
    )
    .unwrap();
    let Some(NadOp::Update { nad }) = op else {
        panic!("expected an update, got {op:?}");
    };
    assert_eq!(nad.spec.config.as_deref(), Some(L3_PRIMARY));
    assert_eq!(nad.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(
        nad.metadata.annotations,
        Some(BTreeMap::from([
            ("k8s.ovn.org/network-id".to_owned(), "3".to_owned()),
            ("k8s.ovn.org/network-name".to_owned(), "blue_net".to_owned()),
            ("k8s.ovn.org/tunnel-keys".to_owned(), "[]".to_owned()),
            ("team".to_owned(), "a".to_owned()),
        ]))
    );
}

#[test]
fn terminating_nad_is_reported_as_deleting() {
    let udn = udn(l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]), "u1");
    let mut existing = (*owned_with_ids(L3_PRIMARY)).clone();
    existing.metadata.deletion_timestamp = Some(deleted_at());
    let mut target = target(true);
    target.existing = Some(Arc::new(existing));
    let (op, state) = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target,
        &ClusterConfig::default(),
    )
    .unwrap();
    assert_eq!(op, None);
    assert!(state.deleting);
}

#[test]
fn render_errors_are_wrapped() {
    let udn = udn(l2_udn("blue", "net", "Secondary", &[]), "u1");
    let err = ensure_nad(
        &NetworkSource::Udn(&udn),
        &target(false),
        &ClusterConfig::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to generate NetworkAttachmentDefinition: failed to render CNI network config: \
         subnets is required with ipam.mode is Enabled or unset"
    );
}

#[test]
fn removal_rules() {
    let owned = nad("blue", "net", L3_PRIMARY, Some("u1"));
    let free = PodUse::default();
    assert_eq!(
        remove_nad("u1", "blue", "net", None, &free).unwrap(),
        Some(NadOp::ConfirmAbsent {
            namespace: "blue".into(),
            name: "net".into(),
            owner_uid: "u1".into(),
        })
    );
    let foreign = nad("blue", "net", L3_PRIMARY, Some("u2"));
    assert_eq!(
        remove_nad("u1", "blue", "net", Some(&foreign), &free).unwrap(),
        None
    );
    let mut unprotected = (*owned).clone();
    unprotected.metadata.finalizers = None;
    assert_eq!(
        remove_nad("u1", "blue", "net", Some(&Arc::new(unprotected)), &free).unwrap(),
        None
    );
    assert!(matches!(
        remove_nad("u1", "blue", "net", Some(&owned), &free).unwrap(),
        Some(NadOp::Delete { .. })
    ));
    let pods = [
        pod_using("blue", "p2", &["blue/net"]),
        pod_using("blue", "p1", &["blue/net", "default"]),
        pod_using("blue", "p3", &["blue/other"]),
    ];
    let used = pod_use("blue", "net", &pods);
    assert_eq!(
        remove_nad("u1", "blue", "net", Some(&owned), &used)
            .unwrap_err()
            .to_string(),
        "failed to delete NetworkAttachmentDefinition [blue/net]: network in use by the \
         following pods: [blue/p1 blue/p2]"
    );
}
