//! Secondary networks through the real `ovn-k8s-cni-overlay`, called as Multus calls it:
//! with the NAD's own config on stdin and the interface name Multus picked (`net1`). A
//! Layer2 secondary UDN's pods on two nodes talk over `net1`; a Localnet network without a
//! bridge mapping fails with upstream's error and wires nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support_e2e;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use support_e2e::*;

async fn pod_networks(client: &kube::Client, ns: &str, name: &str, key: &str) -> Option<Value> {
    let pod = Api::<Pod>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .ok()?;
    let text = pod
        .metadata
        .annotations?
        .get("k8s.ovn.org/pod-networks")?
        .clone();
    let value: Value = serde_json::from_str(&text).ok()?;
    value.get(key).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer2_secondary_network_is_wired_as_multus_calls_it() {
    let mut stack = Stack::start(2).await;
    create_namespace(&stack.client, "green", false).await;
    let udn: udn_api::crd::UserDefinedNetwork = serde_json::from_value(udn_test_support::l2_udn(
        "green",
        "sec",
        "Secondary",
        &["10.100.0.0/24"],
    ))
    .unwrap();
    Api::<udn_api::crd::UserDefinedNetwork>::namespaced(stack.client.clone(), "green")
        .create(&PostParams::default(), &udn)
        .await
        .unwrap();
    let nad = stack
        .eventually("the NAD green/sec", |stack| {
            let nads = Api::<udn_api::nad::NetworkAttachmentDefinition>::namespaced(
                stack.client.clone(),
                "green",
            );
            async move {
                match nads.get_opt("sec").await {
                    Ok(Some(nad)) => Ok(nad),
                    other => Err(format!("{other:?}")),
                }
            }
        })
        .await;
    let nad_config = nad.spec.config.clone().unwrap();
    let mut pods = Vec::new();
    for (name, node, sandbox) in [
        ("m1", "node1", "9a9a9a9a9a9a9a9a9a9a0001"),
        ("m2", "node2", "9b9b9b9b9b9b9b9b9b9b0002"),
    ] {
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "green",
                "annotations": {"k8s.v1.cni.cncf.io/networks": "sec"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        }))
        .unwrap();
        let pod = Api::<Pod>::namespaced(stack.client.clone(), "green")
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
        let netns = stack.pod_netns(name);
        let default = CniPod {
            namespace: "green",
            name,
            uid: pod.metadata.uid.clone().unwrap(),
            sandbox,
            netns,
            ifname: "eth0",
            extra_env: Vec::new(),
        };
        // Multus: the cluster default network first, then each selected network.
        let added = stack.cni(node, "ADD", &default, None);
        assert_eq!(added.code, 0, "{added:?}\n{}", stack.logs());
        let net1 = CniPod {
            ifname: "net1",
            ..default.clone()
        };
        let added = stack.cni(node, "ADD", &net1, Some(&nad_config));
        assert_eq!(added.code, 0, "{added:?}\n{}", stack.logs());
        let result = added.json();
        let entry = pod_networks(&stack.client, "green", name, "green/sec")
            .await
            .unwrap();
        assert_eq!(result["interfaces"][1]["name"], "net1", "{result}");
        assert_eq!(result["interfaces"][1]["mac"], entry["mac_address"]);
        assert_eq!(result["ips"][0]["address"], entry["ip_addresses"][0]);
        let host = result["interfaces"][0]["name"].as_str().unwrap().to_owned();
        let ids = stack
            .lab
            .node(node)
            .unwrap()
            .vsctl(&["get", "Interface", &host, "external_ids"])
            .unwrap();
        assert!(ids.contains("\"k8s.ovn.org/nad\"=\"green/sec\""), "{ids}");
        assert!(ids.contains("pod-if-name=net1"), "{ids}");
        pods.push((default, net1, entry));
    }
    let ip2 = pods[1].2["ip_addresses"][0]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let ping = in_netns(
        &pods[0].0.netns,
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", &ip2],
    );
    assert!(
        ping.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&ping.stdout),
        stack.logs()
    );

    // Multus deletes each attachment: net1's DEL takes only net1.
    let del = stack.cni("node1", "DEL", &pods[0].1, Some(&nad_config));
    assert_eq!(del.code, 0, "{del:?}");
    let links =
        String::from_utf8(in_netns(&pods[0].0.netns, &["ip", "-o", "link"]).stdout).unwrap();
    assert!(!links.contains("net1") && links.contains("eth0"), "{links}");
    stack.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_localnet_network_without_a_bridge_mapping_fails_clearly() {
    let mut stack = Stack::start(1).await;
    create_namespace(&stack.client, "green", false).await;
    let uid = create_pod(&stack.client, "green", "l", "node1").await;
    let netns = stack.pod_netns("l");
    let pod = CniPod {
        namespace: "green",
        name: "l",
        uid,
        sandbox: "7c7c7c7c7c7c7c7c7c7c0007",
        netns: netns.clone(),
        ifname: "net1",
        extra_env: Vec::new(),
    };
    let config = json!({"cniVersion": "1.0.0", "name": "cluster_udn_phys", "type": "ovn-k8s-cni-overlay",
        "netAttachDefName": "green/phys", "topology": "localnet", "role": "secondary",
        "subnets": "192.168.50.0/24", "physicalNetworkName": "physnet-x"});
    let run = stack.cni("node1", "ADD", &pod, Some(&config.to_string()));
    let error = run.json();
    assert_eq!(error["code"], 999, "{error}");
    let msg = error["msg"].as_str().unwrap();
    assert!(
        msg.contains("failed to find OVN bridge-mapping for network: \"physnet-x\""),
        "{msg}"
    );
    let links = String::from_utf8(in_netns(&netns, &["ip", "-o", "link"]).stdout).unwrap();
    assert!(!links.contains("net1"), "{links}");
    stack.assert_running();
}
