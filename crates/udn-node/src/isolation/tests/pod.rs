//! Reading host isolation's inputs from Pod objects.

use std::collections::BTreeMap;
use std::num::NonZeroU16;

use k8s_openapi::api::core::v1::{Pod, PodIP, PodSpec, PodStatus};
use udn_api::annotations::OpenPort;

use crate::isolation::*;

const POD_NETWORKS: &str = r#"{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","routes":[{"dest":"10.96.0.0/16","nextHop":"10.244.1.1"}],"ip_address":"10.244.1.5/24","role":"infrastructure-locked"},"blue/blue-network":{"ip_addresses":["103.103.1.5/24"],"mac_address":"0a:58:67:67:01:05","gateway_ips":["103.103.1.1"],"ip_address":"103.103.1.5/24","gateway_ip":"103.103.1.1","role":"primary"}}"#;

fn pod(annotations: &[(&str, &str)], status_ips: &[&str]) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("blue".to_owned());
    pod.metadata.name = Some("web".to_owned());
    pod.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    );
    pod.spec = Some(PodSpec::default());
    pod.status = Some(PodStatus {
        pod_ips: Some(
            status_ips
                .iter()
                .map(|ip| PodIP {
                    ip: (*ip).to_owned(),
                })
                .collect(),
        ),
        ..PodStatus::default()
    });
    pod
}

#[test]
fn primary_udn_pod_with_open_ports() {
    let read = PodIsolationInput::from_pod(&pod(
        &[
            ("k8s.ovn.org/pod-networks", POD_NETWORKS),
            (
                "k8s.ovn.org/open-default-ports",
                "- protocol: tcp\n  port: 80\n- protocol: icmp\n",
            ),
        ],
        &["10.244.1.5"],
    ));
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    assert_eq!(
        read.input,
        PodIsolationInput {
            key: PodKey::new("blue", "web"),
            host_network: false,
            infrastructure_locked: true,
            default_network_ips: vec!["10.244.1.5".parse().unwrap()],
            open_ports: vec![OpenPort::Tcp(NonZeroU16::new(80).unwrap()), OpenPort::Icmp],
        }
    );
}

#[test]
fn ips_fall_back_to_the_annotation_then_pod_ip() {
    let read =
        PodIsolationInput::from_pod(&pod(&[("k8s.ovn.org/pod-networks", POD_NETWORKS)], &[]));
    assert_eq!(
        read.input.default_network_ips,
        vec!["10.244.1.5".parse::<std::net::IpAddr>().unwrap()]
    );
    let mut only_pod_ip = pod(&[], &[]);
    only_pod_ip.status.as_mut().unwrap().pod_ip = Some("10.244.1.9".to_owned());
    let read = PodIsolationInput::from_pod(&only_pod_ip);
    assert_eq!(
        read.input.default_network_ips,
        vec!["10.244.1.9".parse::<std::net::IpAddr>().unwrap()]
    );
    assert!(
        !read.input.infrastructure_locked,
        "no pod-networks: not a primary-UDN pod"
    );
}

#[test]
fn unparsable_annotations_are_reported() {
    let read = PodIsolationInput::from_pod(&pod(
        &[
            ("k8s.ovn.org/pod-networks", POD_NETWORKS),
            (
                "k8s.ovn.org/open-default-ports",
                "- protocol: quic\n  port: 443\n",
            ),
        ],
        &["10.244.1.5"],
    ));
    assert_eq!(read.problems.len(), 1);
    assert!(read.input.open_ports.is_empty());
    assert!(
        read.input.infrastructure_locked,
        "the pod is still isolated"
    );
    let read =
        PodIsolationInput::from_pod(&pod(&[("k8s.ovn.org/pod-networks", "{")], &["10.244.1.5"]));
    assert_eq!(read.problems.len(), 1);
    assert!(!read.input.infrastructure_locked);
}

#[test]
fn host_network_and_default_network_pods() {
    let mut host = pod(
        &[("k8s.ovn.org/pod-networks", POD_NETWORKS)],
        &["192.168.1.10"],
    );
    host.spec.as_mut().unwrap().host_network = Some(true);
    let read = PodIsolationInput::from_pod(&host);
    assert!(read.input.host_network);
    assert_eq!(desired_pod_elements(&read.input), None);
    let default_only = POD_NETWORKS.replace("infrastructure-locked", "primary");
    let read = PodIsolationInput::from_pod(&pod(
        &[("k8s.ovn.org/pod-networks", &default_only)],
        &["10.244.1.5"],
    ));
    assert!(!read.input.infrastructure_locked);
}
