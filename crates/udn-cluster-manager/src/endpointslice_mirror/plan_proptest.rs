//! Arbitrary default slices, mirrors and pods (annotations that may not parse, missing pods,
//! any address family, FQDN slices, VM pods mid-migration): the planner never panics, and
//! its answer depends on nothing but its input (the same input twice, and the pods in any
//! order, give the same plan).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodIP, PodSpec, PodStatus};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use proptest::prelude::*;
use udn_api::names::ANNOTATION_POD_NETWORKS;

use super::plan::{Inputs, plan};
use super::primary::PrimaryNetwork;
use super::{ANNOTATION_SOURCE, LABEL_MANAGED_BY, MIRROR_CONTROLLER};

const POD_NAMES: &[&str] = &["a", "b", "c", "vm-src", "vm-dst"];

fn annotation() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("not json".to_owned())),
        Just(Some("null".to_owned())),
        Just(Some(r#"{"blue/net":{"ip_addresses":["103.103.1.5/24"],"mac_address":"0a:58:67:67:01:05"}}"#.to_owned())),
        Just(Some(r#"{"blue/net":{"ip_addresses":["fd00::5/64","103.103.1.6/24"],"mac_address":"0a:58:67:67:01:06"}}"#.to_owned())),
        Just(Some(r#"{"other/net":{"ip_addresses":["10.0.0.5/24"],"mac_address":"0a:58:0a:00:00:05"}}"#.to_owned())),
        ".{0,40}".prop_map(Some),
    ]
}

fn pod() -> impl Strategy<Value = Pod> {
    (
        prop::sample::select(POD_NAMES),
        annotation(),
        any::<bool>(),
        prop::sample::select(&["Running", "Failed", "Succeeded", "Pending"][..]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(name, annotation, host, phase, vm, target)| {
            let mut pod = Pod::default();
            pod.metadata.name = Some(name.to_owned());
            pod.metadata.namespace = Some("blue".to_owned());
            pod.metadata.annotations =
                annotation.map(|a| BTreeMap::from([(ANNOTATION_POD_NETWORKS.to_owned(), a)]));
            if vm {
                let mut labels =
                    BTreeMap::from([("kubevirt.io".to_owned(), "virt-launcher".to_owned())]);
                if target {
                    labels.insert("kubevirt.io/migrationJobUID".to_owned(), "m".to_owned());
                }
                pod.metadata.labels = Some(labels);
                pod.metadata.owner_references = Some(vec![OwnerReference {
                    api_version: "kubevirt.io/v1".to_owned(),
                    kind: "VirtualMachineInstance".to_owned(),
                    name: "vm".to_owned(),
                    uid: "vm-1".to_owned(),
                    ..OwnerReference::default()
                }]);
            }
            pod.spec = Some(PodSpec {
                host_network: Some(host),
                ..PodSpec::default()
            });
            pod.status = Some(PodStatus {
                phase: Some(phase.to_owned()),
                pod_ips: Some(vec![
                    PodIP {
                        ip: "10.244.0.5".to_owned(),
                    },
                    PodIP {
                        ip: "fd00:10:244::5".to_owned(),
                    },
                ]),
                ..PodStatus::default()
            });
            pod
        })
}

fn endpoint() -> impl Strategy<Value = Endpoint> {
    (
        prop::sample::select(POD_NAMES),
        prop::sample::select(&["Pod", "Node", ""][..]),
        any::<Option<bool>>(),
        any::<Option<bool>>(),
        any::<Option<bool>>(),
    )
        .prop_map(|(name, kind, ready, serving, terminating)| Endpoint {
            addresses: vec!["10.244.0.5".to_owned()],
            conditions: Some(EndpointConditions {
                ready,
                serving,
                terminating,
            }),
            target_ref: Some(ObjectReference {
                kind: (!kind.is_empty()).then(|| kind.to_owned()),
                name: Some(name.to_owned()),
                ..ObjectReference::default()
            }),
            ..Endpoint::default()
        })
}

fn slice(mirror: bool) -> impl Strategy<Value = EndpointSlice> {
    (
        prop::sample::select(&["IPv4", "IPv6", "FQDN"][..]),
        prop::collection::vec(endpoint(), 0..4),
        "[a-z0-9]{0,3}",
    )
        .prop_map(move |(family, endpoints, version)| {
            let mut slice = EndpointSlice {
                address_type: family.to_owned(),
                endpoints,
                ..EndpointSlice::default()
            };
            slice.metadata.namespace = Some("blue".to_owned());
            slice.metadata.resource_version = Some(version);
            if mirror {
                slice.metadata.name = Some(format!("svc-m{}", slice.endpoints.len()));
                slice.metadata.labels = Some(BTreeMap::from([(
                    LABEL_MANAGED_BY.to_owned(),
                    MIRROR_CONTROLLER.to_owned(),
                )]));
                slice.metadata.annotations = Some(BTreeMap::from([(
                    ANNOTATION_SOURCE.to_owned(),
                    "svc-abc".to_owned(),
                )]));
            } else {
                slice.metadata.name = Some("svc-abc".to_owned());
            }
            slice
        })
}

fn decide(source: Option<&EndpointSlice>, mirrors: &[EndpointSlice], pods: &[Pod]) -> String {
    let by_name: BTreeMap<String, &Pod> = pods
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect();
    let network = PrimaryNetwork {
        nad_key: "blue/net".to_owned(),
        network: "blue_net".to_owned(),
    };
    let result = plan(&Inputs {
        namespace: "blue",
        name: "svc-abc",
        source,
        mirrors: mirrors.iter().collect(),
        network: &network,
        pods: &by_name,
    });
    format!("{result:?}")
}

proptest! {
    #[test]
    fn the_planner_is_total_and_pure(
        source in prop::option::of(slice(false)),
        mirrors in prop::collection::vec(slice(true), 0..3),
        pods in prop::collection::vec(pod(), 0..6),
    ) {
        // Pods are keyed by name: the last of a name wins in both orders only if names are
        // unique, so the order check uses the deduplicated set.
        let mut unique: BTreeMap<String, Pod> = BTreeMap::new();
        for p in pods {
            unique.insert(p.metadata.name.clone().unwrap_or_default(), p);
        }
        let forward: Vec<Pod> = unique.values().cloned().collect();
        let backward: Vec<Pod> = forward.iter().rev().cloned().collect();
        let first = decide(source.as_ref(), &mirrors, &forward);
        prop_assert_eq!(&first, &decide(source.as_ref(), &mirrors, &forward));
        prop_assert_eq!(&first, &decide(source.as_ref(), &mirrors, &backward));
    }
}
