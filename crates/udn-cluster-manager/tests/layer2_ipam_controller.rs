//! The Layer2 IPAM controller against the in-memory API server: primary and secondary
//! attachments in the upstream `k8s.ovn.org/pod-networks` format, skipped pods, release on
//! deletion and completion, and persistent IPs through IPAMClaims.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::*;
use udn_api::ipamclaim::IPAMClaim;
use udn_api::names::ANNOTATION_POD_NETWORKS;
use udn_cluster_manager::metrics::NetworkLabels;
use udn_test_support::TestCluster;

async fn create_pod(client: &kube::Client, pod: Value) {
    let pod: Pod = serde_json::from_value(pod).unwrap();
    let namespace = pod.metadata.namespace.clone().unwrap();
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    api.create(&PostParams::default(), &pod).await.unwrap();
}

async fn delete_pod(client: &kube::Client, namespace: &str, name: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    api.delete(name, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
}

async fn wait_pod_networks(client: &kube::Client, namespace: &str, name: &str) -> String {
    eventually(
        &format!("pod-networks of {namespace}/{name}"),
        WAIT,
        || async {
            pod_annotations(client, namespace, name)
                .await?
                .get(ANNOTATION_POD_NETWORKS)
                .cloned()
        },
    )
    .await
}

fn l2(namespace: &str, name: &str, role: &str, subnets: &[&str], persistent: bool) -> Value {
    let mut layer2 = json!({"role": role, "subnets": subnets});
    if persistent {
        layer2["ipam"] = json!({"lifecycle": "Persistent"});
    }
    json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"topology": "Layer2", "layer2": layer2},
    })
}

#[tokio::test]
async fn primary_and_secondary_attachments_in_upstream_format() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let mut config = config();
    config.cluster.service_cidrs = vec![
        "10.96.0.0/16".parse().unwrap(),
        "fd00:10:96::/112".parse().unwrap(),
    ];
    create_namespace(&client, "green", true).await;
    udn_with_nad(
        &client,
        l2(
            "green",
            "prim",
            "Primary",
            &["10.100.0.0/24", "fd10::/64"],
            false,
        ),
        &config,
    )
    .await;
    udn_with_nad(
        &client,
        l2("green", "sec", "Secondary", &["10.200.0.0/24"], false),
        &config,
    )
    .await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config.clone());

    create_pod(
        &client,
        udn_test_support::pod_with_annotations(
            "green",
            "p1",
            Some("n1"),
            json!({"k8s.v1.cni.cncf.io/networks": "sec", ANNOTATION_POD_NETWORKS: r#"{"default":{"ip_addresses":["10.244.0.6/24"],"mac_address":"0a:58:0a:f4:00:06","role":"infrastructure-locked"}}"#}),
        ),
    )
    .await;
    let value = eventually("both entries", WAIT, || async {
        let value = pod_annotations(&client, "green", "p1")
            .await?
            .get(ANNOTATION_POD_NETWORKS)
            .cloned()?;
        value.contains("green/sec").then_some(value)
    })
    .await;
    assert_eq!(
        value,
        concat!(
            r#"{"default":{"ip_addresses":["10.244.0.6/24"],"mac_address":"0a:58:0a:f4:00:06","ip_address":"10.244.0.6/24","role":"infrastructure-locked"},"#,
            r#""green/prim":{"ip_addresses":["10.100.0.3/24","fd10::3/64"],"mac_address":"0a:58:0a:64:00:03","gateway_ips":["10.100.0.1","fd10::1"],"#,
            r#""routes":[{"dest":"10.96.0.0/16","nextHop":"10.100.0.1"},{"dest":"100.65.0.0/16","nextHop":"10.100.0.1"},"#,
            r#"{"dest":"fd00:10:96::/112","nextHop":"fd10::1"},{"dest":"fd99::/64","nextHop":"fd10::1"}],"#,
            r#""ipv6_lla_gateway_ip":"fe80::858:aff:fe64:1","tunnel_id":1,"role":"primary"},"#,
            r#""green/sec":{"ip_addresses":["10.200.0.1/24"],"mac_address":"0a:58:0a:c8:00:01","ip_address":"10.200.0.1/24","tunnel_id":1,"role":"secondary"}}"#,
        )
    );

    // Unscheduled and host-network pods are skipped.
    create_pod(&client, udn_test_support::pod("green", "pending", None)).await;
    let mut host = udn_test_support::pod("green", "host", Some("n1"));
    host["spec"]["hostNetwork"] = json!(true);
    create_pod(&client, host).await;

    // Deleting a pod frees its IP and tunnel ID for the next pod.
    create_pod(&client, udn_test_support::pod("green", "p2", Some("n1"))).await;
    let p2 = wait_pod_networks(&client, "green", "p2").await;
    assert!(
        p2.contains(r#""ip_addresses":["10.100.0.4/24","fd10::4/64"]"#),
        "{p2}"
    );
    assert!(p2.contains(r#""tunnel_id":2"#), "{p2}");
    let labels = NetworkLabels {
        network: "green_prim".into(),
    };
    let before = running.metrics.free_addresses.get_or_create(&labels).get();
    delete_pod(&client, "green", "p2").await;
    eventually("IP released", WAIT, || async {
        (running.metrics.free_addresses.get_or_create(&labels).get() == before + 1).then_some(())
    })
    .await;
    for name in ["pending", "host"] {
        let annotations = pod_annotations(&client, "green", name).await.unwrap();
        assert!(!annotations.contains_key(ANNOTATION_POD_NETWORKS), "{name}");
    }
    running.stop().await;
}

#[tokio::test]
async fn completed_pods_release_and_keep_their_annotation() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "job", true).await;
    udn_with_nad(
        &client,
        l2("job", "net", "Primary", &["10.5.0.0/29"], false),
        &config,
    )
    .await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config.clone());
    // 10.5.0.0/29: .3 .. .6 for pods (.1/.2 gateway and management, .7 broadcast).
    for name in ["a", "b", "c", "d"] {
        create_pod(&client, udn_test_support::pod("job", name, Some("n1"))).await;
        wait_pod_networks(&client, "job", name).await;
    }
    create_pod(&client, udn_test_support::pod("job", "e", Some("n1"))).await;
    let note = eventually("exhaustion event", WAIT, || async {
        event_notes(&client, "job", "ErrorAllocatingPod")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        note,
        "failed to assign pod addresses for job/net/job/e: failed to allocate new IPs for job_net: subnet address pool exhausted in 10.5.0.0/29"
    );
    let annotated_a = wait_pod_networks(&client, "job", "a").await;
    let api: Api<Pod> = Api::namespaced(client.clone(), "job");
    api.patch_status(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    let e = wait_pod_networks(&client, "job", "e").await;
    assert!(e.contains(r#""ip_addresses":["10.5.0.3/29"]"#), "{e}");
    assert_eq!(wait_pod_networks(&client, "job", "a").await, annotated_a);
    running.stop().await;
}

async fn create_claim(client: &kube::Client, namespace: &str, name: &str, network: &str) {
    let claim: IPAMClaim = serde_json::from_value(json!({
        "apiVersion": "k8s.cni.cncf.io/v1alpha1", "kind": "IPAMClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"network": network, "interface": "pod16367aacb67"},
    }))
    .unwrap();
    let api: Api<IPAMClaim> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &claim).await.unwrap();
}

async fn claim_status(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Option<udn_api::ipamclaim::IPAMClaimStatus> {
    let api: Api<IPAMClaim> = Api::namespaced(client.clone(), namespace);
    api.get(name).await.unwrap().status
}

fn vm_pod(name: &str, claim: &str) -> Value {
    udn_test_support::pod_with_annotations(
        "vms",
        name,
        Some("n1"),
        json!({"v1.multus-cni.io/default-network": format!(r#"[{{"name":"default","namespace":"ovn-kubernetes","ipam-claim-reference":"{claim}"}}]"#)}),
    )
}

#[tokio::test]
async fn persistent_ips_survive_the_pod_while_the_claim_exists() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "vms", true).await;
    udn_with_nad(
        &client,
        l2("vms", "net", "Primary", &["10.30.0.0/24"], true),
        &config,
    )
    .await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config.clone());

    // The pod waits for its claim.
    create_pod(&client, vm_pod("launcher-1", "vm-a.pod")).await;
    let note = eventually("missing claim event", WAIT, || async {
        event_notes(&client, "vms", "ErrorAllocatingPod")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        note,
        r#"error retrieving IPAMClaim for pod vms/launcher-1: failed to get IPAMClaim "vm-a.pod": not found"#
    );
    create_claim(&client, "vms", "vm-a.pod", "vms_net").await;
    let first = wait_pod_networks(&client, "vms", "launcher-1").await;
    assert!(
        first.contains(r#""ip_addresses":["10.30.0.3/24"]"#),
        "{first}"
    );
    let status = eventually("claim status", WAIT, || async {
        claim_status(&client, "vms", "vm-a.pod")
            .await
            .filter(|s| !s.ips.is_empty())
    })
    .await;
    assert_eq!(status.ips, ["10.30.0.3/24"]);
    assert_eq!(
        status.owner_pod.map(|o| o.name),
        Some("launcher-1".to_owned())
    );
    let condition = &status.conditions[0];
    assert_eq!(
        (
            condition.type_.as_str(),
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        (
            "IPsAllocated",
            "True",
            "SuccessfulAllocation",
            "IP addresses successfully allocated"
        )
    );

    // The pod goes (VM restart / migration source); the IP is not handed to anyone else.
    delete_pod(&client, "vms", "launcher-1").await;
    create_pod(&client, udn_test_support::pod("vms", "other", Some("n1"))).await;
    let other = wait_pod_networks(&client, "vms", "other").await;
    assert!(
        other.contains(r#""ip_addresses":["10.30.0.4/24"]"#),
        "{other}"
    );
    // The next pod of the VM gets the claim's IP (and so the same MAC).
    create_pod(&client, vm_pod("launcher-2", "vm-a.pod")).await;
    let second = wait_pod_networks(&client, "vms", "launcher-2").await;
    assert!(
        second.contains(r#""ip_addresses":["10.30.0.3/24"]"#),
        "{second}"
    );
    assert!(
        second.contains(r#""mac_address":"0a:58:0a:1e:00:03""#),
        "{second}"
    );

    // Without the claim, the IP is free once its last pod is gone.
    let labels = NetworkLabels {
        network: "vms_net".into(),
    };
    delete_pod(&client, "vms", "launcher-2").await;
    let api: Api<IPAMClaim> = Api::namespaced(client.clone(), "vms");
    let before = eventually("settled gauge", WAIT, || async {
        Some(running.metrics.free_addresses.get_or_create(&labels).get())
    })
    .await;
    api.delete("vm-a.pod", &DeleteParams::default())
        .await
        .unwrap();
    eventually("claim IP released", WAIT, || async {
        (running.metrics.free_addresses.get_or_create(&labels).get() == before + 1).then_some(())
    })
    .await;
    create_pod(&client, udn_test_support::pod("vms", "late", Some("n1"))).await;
    let late = wait_pod_networks(&client, "vms", "late").await;
    assert!(
        late.contains(r#""ip_addresses":["10.30.0.5/24"]"#),
        "{late}"
    );
    running.stop().await;
}

#[tokio::test]
async fn restart_keeps_claims_and_annotated_pods() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "vms", true).await;
    udn_with_nad(
        &client,
        l2("vms", "net", "Primary", &["10.30.0.0/24"], true),
        &config,
    )
    .await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config.clone());
    create_claim(&client, "vms", "vm-a", "vms_net").await;
    create_pod(&client, vm_pod("launcher-1", "vm-a")).await;
    wait_pod_networks(&client, "vms", "launcher-1").await;
    create_pod(&client, udn_test_support::pod("vms", "plain", Some("n1"))).await;
    wait_pod_networks(&client, "vms", "plain").await;
    delete_pod(&client, "vms", "launcher-1").await;
    running.kill().await;

    // Restarted: .3 (claim) and .4 (plain pod) stay taken.
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config.clone());
    create_pod(&client, udn_test_support::pod("vms", "fresh", Some("n1"))).await;
    let fresh = wait_pod_networks(&client, "vms", "fresh").await;
    assert!(
        fresh.contains(r#""ip_addresses":["10.30.0.5/24"]"#),
        "{fresh}"
    );
    // launcher-1's tunnel ID went with it; the plain pod's 2 stays taken (legacy topology:
    // pods start at 1).
    assert!(fresh.contains(r#""tunnel_id":1"#), "{fresh}");
    running.stop().await;
}
