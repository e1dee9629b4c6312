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

/// The address (no prefix) of a pod-networks entry's first IP.
fn first_ip(entry: &Value) -> String {
    let cidr = entry["ip_addresses"][0].as_str().unwrap();
    cidr.split('/').next().unwrap().to_owned()
}

/// Pings `ip` from `netns` three times; fails the test with the output and the logs.
fn assert_ping(stack: &Stack, netns: &str, ip: &str) {
    let ping = in_netns(netns, &["ping", "-c", "3", "-i", "0.2", "-W", "2", ip]);
    assert!(
        ping.status.success(),
        "ping {ip} from {netns}: {}\n{}",
        String::from_utf8_lossy(&ping.stdout),
        stack.logs()
    );
}

/// Waits until `node`'s breth0 flows (udn's cookie) satisfy `done`.
async fn wait_breth0_flows(stack: &mut Stack, node: &str, done: impl Fn(&str) -> bool) {
    stack
        .eventually("breth0 flows", |stack| {
            let flows = stack
                .lab
                .node(node)
                .unwrap()
                .ofctl(&["dump-flows", "breth0", "cookie=0xdeff105/-1"])
                .unwrap();
            let ok = done(&flows);
            async move { if ok { Ok(()) } else { Err(flows) } }
        })
        .await;
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
        uid: uid_a.clone(),
        sandbox: "aaaaaaaaaaaaaaaaaaaa0001",
        netns: ns_a.clone(),
        ifname: "eth0",
        extra_env: Vec::new(),
    };
    let pod_b = CniPod {
        namespace: "plain",
        name: "b",
        uid: uid_b.clone(),
        sandbox: "bbbbbbbbbbbbbbbbbbbb0002",
        netns: ns_b.clone(),
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
    let ip_a = first_ip(&entry);
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
    let ip_b = first_ip(&entry_b);
    assert_ping(&stack, &ns_a, &ip_b);
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

/// Waits until `check` returns `Some`, polling the API.
async fn eventually<T, F, Fut>(what: &str, stack: &mut Stack, mut check: F) -> T
where
    F: FnMut(kube::Client) -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    stack
        .eventually(what, |stack| {
            let found = check(stack.client.clone());
            async move { found.await.ok_or_else(|| "absent".to_owned()) }
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_udn_pods_get_eth0_and_ovn_udn1() {
    let mut stack = Stack::start(2).await;
    create_namespace(&stack.client, "blue", true).await;
    let udn: udn_api::crd::UserDefinedNetwork = serde_json::from_value(udn_test_support::l3_udn(
        "blue",
        "net",
        "Primary",
        &["10.128.0.0/16"],
    ))
    .unwrap();
    kube::Api::<udn_api::crd::UserDefinedNetwork>::namespaced(stack.client.clone(), "blue")
        .create(&kube::api::PostParams::default(), &udn)
        .await
        .unwrap();
    eventually("the NAD blue/net", &mut stack, |client| async move {
        kube::Api::<udn_api::nad::NetworkAttachmentDefinition>::namespaced(client, "blue")
            .get_opt("net")
            .await
            .ok()
            .flatten()
    })
    .await;
    let uid_a = create_pod(&stack.client, "blue", "a", "node1").await;
    let uid_b = create_pod(&stack.client, "blue", "b", "node2").await;
    let ns_a = stack.pod_netns("blue-a");
    let ns_b = stack.pod_netns("blue-b");
    let pod = |name: &'static str, uid: &str, sandbox: &'static str, netns: &str| CniPod {
        namespace: "blue",
        name,
        uid: uid.to_owned(),
        sandbox,
        netns: netns.to_owned(),
        ifname: "eth0",
        extra_env: Vec::new(),
    };
    let pod_a = pod("a", &uid_a, "cccccccccccccccccccc0003", &ns_a);
    let pod_b = pod("b", &uid_b, "dddddddddddddddddddd0004", &ns_b);
    let added = stack.cni("node1", "ADD", &pod_a, None);
    assert_eq!(added.code, 0, "{added:?}\n{}", stack.logs());
    let added_b = stack.cni("node2", "ADD", &pod_b, None);
    assert_eq!(added_b.code, 0, "{added_b:?}\n{}", stack.logs());

    let entries = annotation(&stack, "blue", "a").await;
    let default = &entries["default"];
    let udn = &entries["blue/net"];
    assert_eq!(default["role"], "infrastructure-locked");
    assert_eq!(udn["role"], "primary");
    // Upstream's merged result: eth0's pair, then ovn-udn1's; the default IP has no gateway.
    let result = added.json();
    let interfaces = result["interfaces"].as_array().unwrap();
    assert_eq!(interfaces.len(), 4, "{result}");
    assert_eq!(interfaces[0]["name"], "ccccccccccccccc");
    assert_eq!(interfaces[1]["name"], "eth0");
    let udn_host = interfaces[2]["name"].as_str().unwrap();
    assert!(udn_host.starts_with("ccccccccccccc_"), "{result}");
    assert_eq!(interfaces[3]["name"], "ovn-udn1");
    assert_eq!(interfaces[3]["mac"], udn["mac_address"]);
    let ips = result["ips"].as_array().unwrap();
    assert_eq!(ips[0]["interface"], 1);
    assert_eq!(ips[0]["address"], default["ip_addresses"][0]);
    assert!(ips[0].get("gateway").is_none(), "{result}");
    assert_eq!(ips[1]["interface"], 3);
    assert_eq!(ips[1]["address"], udn["ip_addresses"][0]);
    assert_eq!(ips[1]["gateway"], udn["gateway_ips"][0]);

    // The default route goes through ovn-udn1; the UDN port carries the network's ids.
    let routes = String::from_utf8(in_netns(&ns_a, &["ip", "route"]).stdout).unwrap();
    let gateway = udn["gateway_ips"][0].as_str().unwrap();
    assert!(
        routes.contains(&format!("default via {gateway} dev ovn-udn1")),
        "{routes}"
    );
    let ids = stack
        .lab
        .node("node1")
        .unwrap()
        .vsctl(&["get", "Interface", udn_host, "external_ids"])
        .unwrap();
    assert!(ids.contains("\"k8s.ovn.org/nad\"=\"blue/net\""), "{ids}");
    assert!(ids.contains("\"k8s.ovn.org/network\"=blue_net"), "{ids}");
    assert!(ids.contains("pod-if-name=ovn-udn1"), "{ids}");

    // The two pods reach each other on the UDN, across nodes.
    let udn_b = first_ip(&annotation(&stack, "blue", "b").await["blue/net"]);
    assert_ping(&stack, &ns_a, &udn_b);
    let check = stack.cni("node1", "CHECK", &pod_a, None);
    assert_eq!(check.code, 0, "{check:?}");

    // The agent programmed breth0: upstream's default flows and blue_net's masquerade.
    wait_breth0_flows(&mut stack, "node1", |flows| {
        flows.contains("priority=205") && flows.contains("nat(src=172.18.0.2)")
    })
    .await;
    let node1 = stack.lab.node("node1").unwrap();

    // The network's management port, table and rules on the host (no VRFs on this kernel:
    // plain tables, said once on the Node).
    let nad = kube::Api::<udn_api::nad::NetworkAttachmentDefinition>::namespaced(
        stack.client.clone(),
        "blue",
    )
    .get("net")
    .await
    .unwrap();
    let id: u32 = nad.metadata.annotations.unwrap()["k8s.ovn.org/network-id"]
        .parse()
        .unwrap();
    let mp = format!("ovn-k8s-mp{id}");
    let netns = node1.netns().to_owned();
    stack
        .eventually("the UDN's management port and rules", |_| {
            let addr =
                String::from_utf8(in_netns(&netns, &["ip", "-o", "addr", "show", &mp]).stdout)
                    .unwrap();
            let rules =
                String::from_utf8(in_netns(&netns, &["ip", "rule", "list"]).stdout).unwrap();
            let ok = addr.contains(".2/24")
                && rules.contains(&format!("2000:\tfrom all fwmark {:#x} lookup", 0x1000 + id));
            let seen = format!("{mp}: {addr}\nrules: {rules}");
            async move { if ok { Ok(()) } else { Err(seen) } }
        })
        .await;

    // One DEL (the default network's) removes both interfaces.
    let del = stack.cni("node1", "DEL", &pod_a, None);
    assert_eq!(del.code, 0, "{del:?}");
    let ports = stack
        .lab
        .node("node1")
        .unwrap()
        .vsctl(&["list-ports", "br-int"])
        .unwrap();
    assert!(!ports.contains("ccccccccccccc"), "{ports}");
    let links = String::from_utf8(in_netns(&ns_a, &["ip", "-o", "link"]).stdout).unwrap();
    assert!(
        !links.contains("ovn-udn1") && !links.contains("eth0"),
        "{links}"
    );
    stack.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_cni_errors_and_leave_nothing_behind() {
    let mut stack = Stack::start(1).await;
    create_namespace(&stack.client, "plain", false).await;
    let netns = stack.pod_netns("bad");
    let base = CniPod {
        namespace: "plain",
        name: "ghost",
        uid: String::new(),
        sandbox: "eeeeeeeeeeeeeeeeeeee0005",
        netns: netns.clone(),
        ifname: "eth0",
        extra_env: Vec::new(),
    };
    let nothing_left = |stack: &Stack| {
        let ports = stack
            .lab
            .node("node1")
            .unwrap()
            .vsctl(&["list-ports", "br-int"])
            .unwrap();
        assert!(!ports.contains("eeeeeeeeeeeeeee"), "{ports}");
        let links = String::from_utf8(in_netns(&netns, &["ip", "-o", "link"]).stdout).unwrap();
        assert!(!links.contains("eth0"), "{links}");
    };

    // A pod the API does not have: the server's error, named, through the plugin.
    let run = stack.cni("node1", "ADD", &base, None);
    assert_eq!(run.code, 1, "{run:?}");
    let error = run.json();
    assert_eq!(error["code"], 999, "{error}");
    let msg = error["msg"].as_str().unwrap();
    assert!(
        msg.contains("[plain/ghost eeeeeeeeeeeeeeeeeeee0005 network default"),
        "{msg}"
    );
    assert!(msg.contains("timed out waiting for pod after 1s"), "{msg}");
    nothing_left(&stack);

    // Caught by the plugin before the server: no K8S_POD_NAME, no CNI_ARGS, an unknown
    // command, broken or truncated stdin, an unsupported version.
    let no_name = CniPod {
        extra_env: vec![("CNI_ARGS", Some("K8S_POD_NAMESPACE=plain"))],
        ..base.clone()
    };
    let run = stack.cni("node1", "ADD", &no_name, None);
    assert_eq!(run.json()["code"], 4, "{run:?}");
    assert!(
        run.json()["msg"].as_str().unwrap().contains("K8S_POD_NAME"),
        "{run:?}"
    );
    let no_args = CniPod {
        extra_env: vec![("CNI_ARGS", None)],
        ..base.clone()
    };
    let run = stack.cni("node1", "ADD", &no_args, None);
    assert_eq!(run.json()["code"], 4, "{run:?}");
    let run = stack.cni("node1", "FROB", &base, None);
    assert_eq!(run.json()["code"], 4, "{run:?}");
    let conf =
        std::fs::read_to_string(stack.agent("node1").conf_dir.join("10-ovn-kubernetes.conf"))
            .unwrap();
    let run = stack.cni("node1", "ADD", &base, Some(&conf[..conf.len() / 2]));
    assert_eq!(run.json()["code"], 6, "{run:?}");
    let run = stack.cni("node1", "ADD", &base, Some("not json"));
    assert_eq!(run.json()["code"], 6, "{run:?}");
    let old = conf.replace("\"1.1.0\"", "\"0.3.1\"");
    let run = stack.cni("node1", "ADD", &base, Some(&old));
    assert_eq!(run.json()["code"], 1, "{run:?}");
    assert!(
        run.json()["msg"]
            .as_str()
            .unwrap()
            .contains("incompatible CNI versions"),
        "{run:?}"
    );

    // A pod that never gets its annotation (its zone's controller is gone): ADD waits,
    // then fails naming the wait; nothing is wired.
    stack.controllers[0].kill();
    let uid = create_pod(&stack.client, "plain", "late", "node1").await;
    let late = CniPod {
        name: "late",
        uid,
        ..base.clone()
    };
    let run = stack.cni("node1", "ADD", &late, None);
    let error = run.json();
    assert_eq!(error["code"], 999, "{error}");
    assert!(
        error["msg"]
            .as_str()
            .unwrap()
            .contains("timed out waiting for annotations"),
        "{error}"
    );
    nothing_left(&stack);
    stack.agents[0].process.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_udns_leave_with_the_node_ip_at_the_same_time() {
    let mut stack = Stack::start(1).await;
    let node1 = stack.lab.node("node1").unwrap();
    // On the userspace datapath the node's kernel also sees every frame arriving on eth0
    // and would answer replies for the node IP that OVS takes into OVN with a RST (a
    // kernel datapath takes the frames away from the stack); packet sockets see frames
    // before this hook.
    for command in [
        "add table netdev lab_uplink",
        "add chain netdev lab_uplink ingress { type filter hook ingress device eth0 priority 0; policy drop; }",
    ] {
        let out = node1.exec(&["nft", command]).unwrap();
        assert!(out.success(), "nft {command}: {}", out.stderr);
    }
    let mut pods = Vec::new();
    for (ns, sandbox) in [
        ("red", "f1f1f1f1f1f1f1f1f1f1f1f1"),
        ("yellow", "f2f2f2f2f2f2f2f2f2f2f2f2"),
    ] {
        create_namespace(&stack.client, ns, true).await;
        let udn: udn_api::crd::UserDefinedNetwork = serde_json::from_value(
            udn_test_support::l3_udn(ns, "net", "Primary", &["10.200.0.0/16"]),
        )
        .unwrap();
        kube::Api::<udn_api::crd::UserDefinedNetwork>::namespaced(stack.client.clone(), ns)
            .create(&kube::api::PostParams::default(), &udn)
            .await
            .unwrap();
        let ns_owned = ns.to_owned();
        eventually("the UDN's NAD", &mut stack, move |client| {
            let ns = ns_owned.clone();
            async move {
                kube::Api::<udn_api::nad::NetworkAttachmentDefinition>::namespaced(client, &ns)
                    .get_opt("net")
                    .await
                    .ok()
                    .flatten()
            }
        })
        .await;
        let uid = create_pod(&stack.client, ns, "a", "node1").await;
        let netns = stack.pod_netns(&format!("{ns}-a"));
        let pod = CniPod {
            namespace: ns,
            name: "a",
            uid,
            sandbox,
            netns,
            ifname: "eth0",
            extra_env: Vec::new(),
        };
        let added = stack.cni("node1", "ADD", &pod, None);
        assert_eq!(added.code, 0, "{added:?}\n{}", stack.logs());
        pods.push(pod);
    }
    let red = annotation(&stack, "red", "a").await["red/net"]["ip_addresses"][0].clone();
    let yellow = annotation(&stack, "yellow", "a").await["yellow/net"]["ip_addresses"][0].clone();
    assert_eq!(red, yellow, "both pods hold the same UDN address");

    // Both networks' masquerade SNAT is on breth0.
    wait_breth0_flows(&mut stack, "node1", |flows| {
        flows.matches("nat(src=172.18.0.2)").count() >= 2
    })
    .await;

    // Both reach the external host at the same time; it sees the node IP for both.
    let external = stack.lab.external().ip().to_string();
    let capture = stack
        .lab
        .capture_external("icmp[icmptype] == icmp-echo")
        .unwrap();
    let pings: Vec<_> = pods
        .iter()
        .map(|pod| {
            std::process::Command::new("nsenter")
                .arg(format!("--net=/run/netns/{}", pod.netns))
                .args(["--", "ping", "-c", "5", "-i", "0.2", "-W", "2", &external])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (pod, ping) in pods.iter().zip(pings) {
        let ping = ping.wait_with_output().unwrap();
        assert!(
            ping.status.success(),
            "{} -> external: {}\n{}",
            pod.namespace,
            String::from_utf8_lossy(&ping.stdout),
            stack.logs()
        );
    }
    let node_ip: std::net::IpAddr = "172.18.0.2".parse().unwrap();
    assert!(capture.wait_for(WAIT, |p| p.src == Some(node_ip)).is_some());
    let sources: std::collections::BTreeSet<_> =
        capture.packets().iter().filter_map(|p| p.src).collect();
    assert_eq!(
        sources,
        std::collections::BTreeSet::from([node_ip]),
        "{:?}",
        capture.packets()
    );
    drop(capture);
    stack.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_restart_keeps_pods_flowing_and_duplicates_nothing() {
    let mut stack = Stack::start(1).await;
    create_namespace(&stack.client, "plain", false).await;
    let mut pods = Vec::new();
    for (name, sandbox) in [
        ("r1", "a1a1a1a1a1a1a1a1a1a1a1a1"),
        ("r2", "a2a2a2a2a2a2a2a2a2a2a2a2"),
    ] {
        let uid = create_pod(&stack.client, "plain", name, "node1").await;
        let netns = stack.pod_netns(name);
        let pod = CniPod {
            namespace: "plain",
            name,
            uid,
            sandbox,
            netns,
            ifname: "eth0",
            extra_env: Vec::new(),
        };
        let added = stack.cni("node1", "ADD", &pod, None);
        assert_eq!(added.code, 0, "{added:?}\n{}", stack.logs());
        pods.push(pod);
    }
    let ip2 = annotation(&stack, "plain", "r2").await["default"]["ip_addresses"][0]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    // Let the gateway flows settle before counting.
    wait_breth0_flows(&mut stack, "node1", |flows| {
        flows.lines().any(|l| l.contains("cookie="))
    })
    .await;
    let node1 = stack.lab.node("node1").unwrap();
    let flows_before = |node: &udn_ovn_lab::Node| {
        let text = node
            .ofctl(&["dump-flows", "breth0", "cookie=0xdeff105/-1"])
            .unwrap();
        text.lines().filter(|l| l.contains("cookie=")).count()
    };
    let ports_before = node1.vsctl(&["list-ports", "br-int"]).unwrap();
    let flows_count = flows_before(node1);
    let nft_before = String::from_utf8(
        in_netns(
            node1.netns(),
            &["nft", "list", "table", "inet", "ovn-kubernetes"],
        )
        .stdout,
    )
    .unwrap();

    // Killed: the pods keep talking.
    stack.agents[0].process.kill();
    let ping = in_netns(
        &pods[0].netns,
        &["ping", "-c", "2", "-i", "0.2", "-W", "2", &ip2],
    );
    assert!(
        ping.status.success(),
        "with the agent down: {}",
        String::from_utf8_lossy(&ping.stdout)
    );

    // Restarted: state rebuilt from OVS and the API, nothing duplicated.
    stack.restart_agent("node1");
    let node1 = stack.lab.node("node1").unwrap();
    let ping = in_netns(
        &pods[0].netns,
        &["ping", "-c", "2", "-i", "0.2", "-W", "2", &ip2],
    );
    assert!(
        ping.status.success(),
        "after the restart: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    assert_eq!(
        node1.vsctl(&["list-ports", "br-int"]).unwrap(),
        ports_before
    );
    assert_eq!(flows_before(node1), flows_count);
    let nft_after = String::from_utf8(
        in_netns(
            node1.netns(),
            &["nft", "list", "table", "inet", "ovn-kubernetes"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(nft_after, nft_before);
    // The restarted agent serves CHECK and DEL of pods wired before it.
    let check = stack.cni("node1", "CHECK", &pods[1], None);
    assert_eq!(check.code, 0, "{check:?}");
    let del = stack.cni("node1", "DEL", &pods[0], None);
    assert_eq!(del.code, 0, "{del:?}");
    assert!(
        !node1
            .vsctl(&["list-ports", "br-int"])
            .unwrap()
            .contains("a1a1a1a1a1a1a1a")
    );
    stack.assert_running();
}
