//! The real `ovn-k8s-cni-overlay` executed as kubelet executes it, against `udn-node` on
//! lab nodes with `udn-cluster-manager` and a `udn-controller` per zone running (all their
//! own processes): default-network pods on two nodes get `eth0` with their annotation's
//! address, MAC and routes, ping and TCP each other; DEL leaves no port or veth; CHECK,
//! VERSION, STATUS and GC do what the spec says; bad invocations get CNI errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support_e2e;

use serde_json::Value;
use support_e2e::*;

fn ovs_ports(stack: &Stack, node: &str) -> Vec<String> {
    let node = stack.lab.node(node).unwrap();
    node.vsctl(&["list-ports", "br-int"])
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn links(netns: &str) -> String {
    String::from_utf8(in_netns(netns, &["ip", "-o", "link"]).stdout).unwrap()
}

async fn annotation(stack: &Stack, ns: &str, name: &str) -> Value {
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(stack.client.clone(), ns);
    let pod = api.get(name).await.unwrap();
    let text = pod.metadata.annotations.unwrap()["k8s.ovn.org/pod-networks"].clone();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_network_pods_on_two_nodes() {
    let mut stack = Stack::start(2).await;
    create_namespace(&stack.client, "plain", false).await;
    let uid_a = create_pod(&stack.client, "plain", "a", "node1").await;
    let uid_b = create_pod(&stack.client, "plain", "b", "node2").await;
    let ns_a = stack.pod_netns("a");
    let ns_b = stack.pod_netns("b");
    let pod_a = CniPod {
        namespace: "plain",
        name: "a",
        uid: &uid_a,
        sandbox: "aaaaaaaaaaaaaaaaaaaa0001",
        netns: &ns_a,
        ifname: "eth0",
        extra_env: Vec::new(),
    };
    let pod_b = CniPod {
        namespace: "plain",
        name: "b",
        uid: &uid_b,
        sandbox: "bbbbbbbbbbbbbbbbbbbb0002",
        netns: &ns_b,
        ifname: "eth0",
        extra_env: Vec::new(),
    };

    let added_a = stack.cni("node1", "ADD", &pod_a, None);
    assert_eq!(added_a.code, 0, "{added_a:?}\n{}", stack.logs());
    let added_b = stack.cni("node2", "ADD", &pod_b, None);
    assert_eq!(added_b.code, 0, "{added_b:?}\n{}", stack.logs());

    // The result, in the config's version (1.1.0), as upstream's getCNIResult.
    let entry = annotation(&stack, "plain", "a").await["default"].clone();
    let result = added_a.json();
    assert_eq!(result["cniVersion"], "1.1.0");
    let interfaces = result["interfaces"].as_array().unwrap();
    assert_eq!(interfaces.len(), 2, "{result}");
    assert_eq!(interfaces[0]["name"], "aaaaaaaaaaaaaaa");
    assert_eq!(interfaces[1]["name"], "eth0");
    assert_eq!(interfaces[1]["mac"], entry["mac_address"]);
    assert_eq!(interfaces[1]["sandbox"], format!("/run/netns/{ns_a}"));
    assert_eq!(result["ips"][0]["address"], entry["ip_addresses"][0]);
    assert_eq!(result["ips"][0]["gateway"], entry["gateway_ips"][0]);
    assert_eq!(result["ips"][0]["interface"], 1);

    // eth0 in the pod: the annotation's MAC and address, the default route via the gateway.
    let eth0 =
        String::from_utf8(in_netns(&ns_a, &["ip", "-j", "addr", "show", "eth0"]).stdout).unwrap();
    let mac = entry["mac_address"].as_str().unwrap();
    assert!(eth0.contains(mac), "{eth0}");
    let ip_a = entry["ip_addresses"][0]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    assert!(eth0.contains(&ip_a), "{eth0}");
    let routes = String::from_utf8(in_netns(&ns_a, &["ip", "route"]).stdout).unwrap();
    let gateway = entry["gateway_ips"][0].as_str().unwrap();
    assert!(
        routes.contains(&format!("default via {gateway} dev eth0")),
        "{routes}"
    );

    // The LSP is up in node1's zone, the port carries upstream's external_ids.
    let node1 = stack.lab.node("node1").unwrap();
    let up = node1
        .nbctl(&["get", "Logical_Switch_Port", "plain_a", "up"])
        .unwrap();
    assert_eq!(up.trim(), "true");
    let ids = node1
        .vsctl(&["get", "Interface", "aaaaaaaaaaaaaaa", "external_ids"])
        .unwrap();
    for key in [
        "iface-id=plain_a",
        &format!("iface-id-ver=\"{uid_a}\""),
        "sandbox=aaaaaaaaaaaaaaaaaaaa0001",
        "pod-if-name=eth0",
        "ovn-installed=\"true\"",
    ] {
        assert!(ids.contains(key), "{key} not in {ids}");
    }
    assert!(!ids.contains("k8s.ovn.org/network"), "{ids}");

    // Across nodes: ping and TCP.
    let entry_b = annotation(&stack, "plain", "b").await["default"].clone();
    let ip_b = entry_b["ip_addresses"][0]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let ping = in_netns(&ns_a, &["ping", "-c", "3", "-i", "0.2", "-W", "2", &ip_b]);
    assert!(
        ping.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&ping.stdout),
        stack.logs()
    );
    let tcp = stack
        .lab
        .tcp_check(
            &ns_a,
            &ns_b,
            ip_b.parse().unwrap(),
            8080,
            std::time::Duration::from_secs(10),
        )
        .unwrap();
    let offload =
        String::from_utf8_lossy(&in_netns(&ns_a, &["ethtool", "-k", "eth0"]).stdout).into_owned();
    assert!(
        tcp,
        "256 KiB over TCP a -> b did not arrive intact; pod a: {offload}"
    );

    // CHECK holds; STATUS is ready; VERSION needs nobody.
    let check = stack.cni("node1", "CHECK", &pod_a, None);
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(check.stdout, "");
    let status = stack.cni("node1", "STATUS", &pod_a, None);
    assert_eq!(status.code, 0, "{status:?}");
    let version = stack.cni("node1", "VERSION", &pod_a, None);
    assert_eq!(version.json()["supportedVersions"][2], "1.1.0");

    // GC with a's attachment listed keeps a.
    let conf =
        std::fs::read_to_string(stack.agent("node1").conf_dir.join("10-ovn-kubernetes.conf"))
            .unwrap();
    let mut gc_conf: Value = serde_json::from_str(&conf).unwrap();
    gc_conf["cni.dev/valid-attachments"] =
        serde_json::json!([{"containerID": pod_a.sandbox, "ifname": "eth0"}]);
    let gc = stack.cni("node1", "GC", &pod_a, Some(&gc_conf.to_string()));
    assert_eq!(gc.code, 0, "{gc:?}");
    assert!(ovs_ports(&stack, "node1").contains(&"aaaaaaaaaaaaaaa".to_owned()));

    // DEL: no port, no veth; a second DEL succeeds too.
    let del = stack.cni("node1", "DEL", &pod_a, None);
    assert_eq!(del.code, 0, "{del:?}");
    assert_eq!(del.stdout, "");
    assert!(!ovs_ports(&stack, "node1").contains(&"aaaaaaaaaaaaaaa".to_owned()));
    assert!(!links(&ns_a).contains("eth0"), "{}", links(&ns_a));
    let node1_links =
        String::from_utf8(in_netns(node1.netns(), &["ip", "-o", "link"]).stdout).unwrap();
    assert!(!node1_links.contains("aaaaaaaaaaaaaaa"), "{node1_links}");
    let again = stack.cni("node1", "DEL", &pod_a, None);
    assert_eq!(again.code, 0, "{again:?}");

    // GC with an empty list removes b's attachment on node2.
    gc_conf["cni.dev/valid-attachments"] = serde_json::json!([]);
    let gc = stack.cni("node2", "GC", &pod_b, Some(&gc_conf.to_string()));
    assert_eq!(gc.code, 0, "{gc:?}");
    assert!(!ovs_ports(&stack, "node2").contains(&"bbbbbbbbbbbbbbb".to_owned()));
    stack.assert_running();
}
