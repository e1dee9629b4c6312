//! Networks of every kind in one sandbox, with pods on both nodes:
//! - the seed guide's blue and green tenants (docs/examples/blue-green.yaml, unchanged):
//!   a primary Layer3 UserDefinedNetwork each;
//! - BERLIN and MUNICH (docs/examples/berlin-munich.yaml, without its `blue` and `green`
//!   namespaces, which blue-green.yaml owns here): primary Layer3
//!   ClusterUserDefinedNetworks spanning namespaces, on the same (overlapping) subnet;
//! - teal: a primary Layer2 UserDefinedNetwork, and `l2-tenants`: a primary Layer2
//!   ClusterUserDefinedNetwork over the namespaces lime and olive, both on 10.100.0.0/16;
//! - a pod on the default network;
//! - storage-vlan (docs/examples/localnet-vlan.yaml, unchanged): a secondary Localnet CUDN
//!   on VLAN 200 over two namespaces without a primary network, attached as `net1`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use udn_e2e::{PodRef, PodSpec, Sandbox, all, hostname_url, pod_ready, restarts, run_suite};

const BLUE_GREEN: &str = include_str!("../../docs/examples/blue-green.yaml");
const BERLIN_MUNICH: &str = include_str!("../../docs/examples/berlin-munich.yaml");

const LAYER2: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: teal
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata:
  name: teal-network
  namespace: teal
spec:
  topology: Layer2
  layer2:
    role: Primary
    subnets: [10.100.0.0/16]
---
apiVersion: v1
kind: Namespace
metadata:
  name: lime
  labels: {tenant: l2, k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: v1
kind: Namespace
metadata:
  name: olive
  labels: {tenant: l2, k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata:
  name: l2-tenants
spec:
  namespaceSelector:
    matchLabels: {tenant: l2}
  network:
    topology: Layer2
    layer2:
      role: Primary
      subnets: [10.100.0.0/16]
"#;

/// The primary UDN's interface in a pod.
const UDN: &str = "ovn-udn1";
/// The default network's interface.
const ETH0: &str = "eth0";

const BLUE_A: PodRef<'static> = ("blue", "blue-a");
const BLUE_B: PodRef<'static> = ("blue", "blue-b");
const GREEN_A: PodRef<'static> = ("green", "green-a");
const PURPLE_A: PodRef<'static> = ("purple", "purple-a");
const YELLOW_A: PodRef<'static> = ("yellow", "yellow-a");
const BROWN_A: PodRef<'static> = ("brown", "brown-a");
const CYAN_A: PodRef<'static> = ("cyan", "cyan-a");
const TEAL_A: PodRef<'static> = ("teal", "teal-a");
const TEAL_B: PodRef<'static> = ("teal", "teal-b");
const LIME_A: PodRef<'static> = ("lime", "lime-a");
const OLIVE_A: PodRef<'static> = ("olive", "olive-a");
const DEFAULT_A: PodRef<'static> = ("default", "default-a");
/// The pod whose probes must keep it Ready for a minute (liveness and readiness).
const PROBED: PodRef<'static> = ("blue", "blue-probed");

/// One pod of each primary network kind, the ones every per-kind scenario checks.
const ONE_OF_EACH_KIND: [(&str, PodRef<'static>); 4] = [
    ("Layer3 UDN", BLUE_A),
    ("Layer3 CUDN", PURPLE_A),
    ("Layer2 UDN", TEAL_A),
    ("Layer2 CUDN", LIME_A),
];

/// (pod, node) of every pod the setup starts.
const PODS: [(PodRef<'static>, &str); 13] = [
    (BLUE_A, "node1"),
    (BLUE_B, "node2"),
    (GREEN_A, "node1"),
    (PURPLE_A, "node1"),
    (YELLOW_A, "node2"),
    (BROWN_A, "node1"),
    (CYAN_A, "node2"),
    (TEAL_A, "node1"),
    (TEAL_B, "node2"),
    (LIME_A, "node1"),
    (OLIVE_A, "node2"),
    (DEFAULT_A, "node2"),
    (PROBED, "node1"),
];

/// berlin-munich.yaml without the namespaces blue-green.yaml already defines.
fn berlin_munich() -> String {
    BERLIN_MUNICH
        .split("\n---\n")
        .filter(|doc| !(doc.contains("name: green\n") || doc.contains("name: blue\n")))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

fn setup(sandbox: &Sandbox) -> Result<(), String> {
    sandbox.apply(BLUE_GREEN);
    sandbox.apply(&berlin_munich());
    sandbox.apply(LAYER2);
    let specs: Vec<PodSpec<'_>> = PODS
        .iter()
        .map(|((namespace, name), node)| PodSpec {
            namespace,
            name,
            node,
            liveness: (*namespace, *name) == PROBED,
            ..PodSpec::default()
        })
        .collect();
    sandbox.run_pods(&specs)
}

fn same_network_across_nodes(sandbox: &Sandbox) -> Result<(), String> {
    all(
        &[
            (BLUE_A, BLUE_B),
            (PURPLE_A, YELLOW_A),
            (BROWN_A, CYAN_A),
            (TEAL_A, TEAL_B),
            (LIME_A, OLIVE_A),
        ],
        |&(a, b)| {
            sandbox.reaches(a, b, UDN)?;
            sandbox.reaches(b, a, UDN)
        },
    )
}

fn different_networks_are_isolated(sandbox: &Sandbox) -> Result<(), String> {
    all(
        &[
            (GREEN_A, BLUE_B),
            (BLUE_A, GREEN_A),
            (PURPLE_A, BROWN_A),
            (CYAN_A, YELLOW_A),
            (TEAL_A, LIME_A),
            (OLIVE_A, TEAL_B),
            (BLUE_A, TEAL_A),
            (LIME_A, PURPLE_A),
        ],
        |&(a, b)| sandbox.unreachable(a, b, UDN),
    )
}

fn overlapping_subnets_both_work(sandbox: &Sandbox) -> Result<(), String> {
    for (pod, prefix) in [
        (PURPLE_A, "10.132."),
        (YELLOW_A, "10.132."),
        (BROWN_A, "10.132."),
        (CYAN_A, "10.132."),
        (TEAL_A, "10.100."),
        (LIME_A, "10.100."),
    ] {
        let ip = sandbox.ip_on(pod.0, pod.1, UDN)?;
        if !ip.starts_with(prefix) {
            return Err(format!(
                "{}/{}'s {UDN} IP {ip} is not in {prefix}*",
                pod.0, pod.1
            ));
        }
    }
    // Both networks of each overlapping pair carry traffic at the same time.
    all(
        &[
            (PURPLE_A, YELLOW_A),
            (BROWN_A, CYAN_A),
            (TEAL_A, TEAL_B),
            (LIME_A, OLIVE_A),
        ],
        |&(a, b)| sandbox.reaches(a, b, UDN),
    )
}

fn default_network_and_udn_eth0_are_isolated(sandbox: &Sandbox) -> Result<(), String> {
    let directions: Vec<(&str, PodRef<'_>, PodRef<'_>)> = ONE_OF_EACH_KIND
        .iter()
        .flat_map(|&(kind, pod)| [(kind, DEFAULT_A, pod), (kind, pod, DEFAULT_A)])
        .collect();
    all(&directions, |&(kind, from, to)| {
        sandbox
            .unreachable(from, to, ETH0)
            .map_err(|e| format!("{kind}: {e}"))
    })
}

fn network_status_and_pod_networks_as_the_guide_shows(sandbox: &Sandbox) -> Result<(), String> {
    for (kind, (namespace, name), nad, prefix) in [
        ("Layer3 UDN", BLUE_A, "blue/blue-network", "103.103."),
        ("Layer3 CUDN", PURPLE_A, "purple/berlin", "10.132."),
        ("Layer2 UDN", TEAL_A, "teal/teal-network", "10.100."),
        ("Layer2 CUDN", LIME_A, "lime/l2-tenants", "10.100."),
    ] {
        let status = sandbox.network_status(namespace, name)?;
        let shape: Vec<(String, String, bool)> = status
            .as_array()
            .ok_or("network-status is a list")?
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap_or_default().to_owned(),
                    e["interface"].as_str().unwrap_or_default().to_owned(),
                    e["default"].as_bool().unwrap_or(false),
                )
            })
            .collect();
        let expected = vec![
            ("ovn-kubernetes".to_owned(), ETH0.to_owned(), false),
            ("ovn-kubernetes".to_owned(), UDN.to_owned(), true),
        ];
        if shape != expected {
            return Err(format!(
                "{kind}: network-status {status}: expected (name, interface, default) {expected:?}"
            ));
        }
        let ip = sandbox.ip_on(namespace, name, UDN)?;
        if !ip.starts_with(prefix) {
            return Err(format!(
                "{kind}: {namespace}/{name}'s {UDN} IP {ip} is not in {prefix}*"
            ));
        }
        let pod = sandbox
            .pod(namespace, name)
            .ok_or_else(|| format!("{namespace}/{name} is gone"))?;
        let text = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("k8s.ovn.org/pod-networks"))
            .ok_or_else(|| format!("{kind}: {namespace}/{name} has no k8s.ovn.org/pod-networks"))?;
        let networks: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{kind}: pod-networks is not JSON: {e}: {text}"))?;
        // Keys in the annotation's order do not matter: compare them sorted.
        let roles: std::collections::BTreeSet<(String, String)> = networks
            .as_object()
            .ok_or_else(|| format!("{kind}: pod-networks is not an object: {text}"))?
            .iter()
            .map(|(key, value)| {
                (
                    key.clone(),
                    value["role"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let expected = std::collections::BTreeSet::from([
            ("default".to_owned(), "infrastructure-locked".to_owned()),
            (nad.to_owned(), "primary".to_owned()),
        ]);
        if roles != expected {
            return Err(format!(
                "{kind}: pod-networks {text}: expected (network, role) {expected:?}"
            ));
        }
        let udn = &networks[nad];
        let address = udn["ip_address"].as_str().unwrap_or_default();
        if !address.starts_with(&ip) || udn["mac_address"].as_str().is_none() {
            return Err(format!(
                "{kind}: pod-networks' {nad} entry {udn} does not carry the pod's IP {ip} and a MAC"
            ));
        }
    }
    Ok(())
}

/// `curl` from node `node`'s host netns (this test's cgroup, not the kubelet's) to `url`.
fn host_reaches(sandbox: &Sandbox, node: &str, url: &str) -> Option<String> {
    let out = sandbox.node_exec(node, &["curl", "-sS", "--max-time", "3", url]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check_ready_without_restarts(
    sandbox: &Sandbox,
    (namespace, name): PodRef<'_>,
) -> Result<(), String> {
    let pod = sandbox
        .pod(namespace, name)
        .ok_or_else(|| format!("{namespace}/{name} is gone"))?;
    let (ready, restarts) = (pod_ready(&pod), restarts(&pod));
    if !ready || restarts != 0 {
        return Err(format!(
            "{namespace}/{name}: ready {ready}, restarts {restarts}"
        ));
    }
    Ok(())
}

fn host_processes_cannot_reach_a_udn_pods_default_ip(sandbox: &Sandbox) -> Result<(), String> {
    for (kind, pod @ (namespace, name)) in [("Layer3 UDN", BLUE_A), ("Layer2 UDN", TEAL_A)] {
        let ip = sandbox.ip_on(namespace, name, ETH0)?;
        if let Some(body) = host_reaches(sandbox, "node1", &hostname_url(&ip)) {
            return Err(format!(
                "{kind}: a host process reached {namespace}/{name}'s default-network IP {ip}: {body}"
            ));
        }
        // Meanwhile the kubelet's probes (from its cgroup) keep the pod Ready.
        check_ready_without_restarts(sandbox, pod).map_err(|e| format!("{kind}: {e}"))?;
    }
    Ok(())
}

/// What a default-network pod reaches of `pod`'s default-network IP: (tcp 8080, udp 8081,
/// icmp).
fn opened(sandbox: &Sandbox, pod: PodRef<'_>) -> Result<(bool, bool, bool), String> {
    let ip = sandbox.ip_on(pod.0, pod.1, ETH0)?;
    let tcp = sandbox
        .http_get(DEFAULT_A.0, DEFAULT_A.1, &hostname_url(&ip), 3)
        .is_some_and(|body| body.trim() == pod.1);
    let udp = sandbox
        .udp_hostname(DEFAULT_A, &ip, 2)
        .is_some_and(|body| body == pod.1);
    let icmp = sandbox.pings(DEFAULT_A, &ip, 2);
    Ok((tcp, udp, icmp))
}

/// Whether what `opened` saw is `expected` (tcp, udp, icmp).
fn as_expected(seen: (bool, bool, bool), expected: (bool, bool, bool)) -> bool {
    seen == expected
}

/// Sets `pod`'s `k8s.ovn.org/open-default-ports` to `value` and waits until a default-network
/// pod reaches exactly `expected` (tcp, udp, icmp) of it.
fn open_ports(
    sandbox: &Sandbox,
    pod: PodRef<'_>,
    value: &str,
    expected: (bool, bool, bool),
) -> Result<(), String> {
    let annotation = format!("k8s.ovn.org/open-default-ports={value}");
    sandbox.kubectl(&[
        "annotate",
        "--overwrite",
        "-n",
        pod.0,
        "pod",
        pod.1,
        &annotation,
    ]);
    let mut seen = (false, false, false);
    sandbox
        .eventually(
            &format!("open-default-ports {value:?} opens exactly (tcp, udp, icmp) {expected:?}"),
            || {
                seen = opened(sandbox, pod).ok()?;
                as_expected(seen, expected).then_some(())
            },
        )
        .map_err(|e| format!("{e}\nlast seen (tcp, udp, icmp): {seen:?}"))?;
    // Twice in a row: a port that is closed stays closed, not merely slow.
    let again = opened(sandbox, pod)?;
    if !as_expected(again, expected) {
        return Err(format!(
            "open-default-ports {value:?}: (tcp, udp, icmp) {again:?} after {expected:?}"
        ));
    }
    Ok(())
}

fn open_default_ports_open_exactly_what_they_list(sandbox: &Sandbox) -> Result<(), String> {
    let pod = ("blue", "blue-open");
    sandbox.run_pods(&[PodSpec {
        namespace: pod.0,
        name: pod.1,
        node: "node1",
        ..PodSpec::default()
    }])?;
    // Closed until opened.
    if !as_expected(opened(sandbox, pod)?, (false, false, false)) {
        return Err(
            "a primary-UDN pod's default-network IP answers with no open-default-ports".into(),
        );
    }
    open_ports(
        sandbox,
        pod,
        "- protocol: tcp\n  port: 8080\n",
        (true, false, false),
    )?;
    open_ports(
        sandbox,
        pod,
        "- protocol: udp\n  port: 8081\n- protocol: icmp\n",
        (false, true, true),
    )?;
    // An invalid entry closes every port again and says why in a Warning Event.
    open_ports(
        sandbox,
        pod,
        "- protocol: tcp\n  port: 8080\n- protocol: ppp\n  port: 1\n",
        (false, false, false),
    )?;
    sandbox.eventually(
        "a Warning Event about the invalid open-default-ports",
        || {
            sandbox
                .warnings(pod.0, "Pod", pod.1)
                .into_iter()
                .find(|(_, message)| message.contains("invalid protocol ppp"))
        },
    )?;
    sandbox.delete(pod.0, &["pod", pod.1])
}

/// Serves `/clientip` on the lab's external host (172.18.0.1:8080) while alive.
struct ExternalServer(std::process::Child);

impl Drop for ExternalServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn a_udn_pod_reaches_an_external_host(sandbox: &Sandbox) -> Result<(), String> {
    let udnctl = sandbox.udnctl.to_string_lossy().into_owned();
    let _server = ExternalServer(
        sandbox
            .external_command(&[
                &udnctl,
                "sandbox",
                "image",
                "e2e-test-images/agnhost",
                "netexec",
                "--http-port=8080",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("starting a server on the external host: {e}"))?,
    );
    let node_ip = sandbox.state()["nodes"][0]["ip"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for (kind, (namespace, name)) in [("Layer3 UDN", BLUE_A), ("Layer2 CUDN", LIME_A)] {
        // The pod's traffic leaves through the node, masqueraded to the node's IP.
        let client = sandbox.eventually(
            &format!("{kind}: {namespace}/{name} reaches the external host"),
            || sandbox.http_get(namespace, name, "http://172.18.0.1:8080/clientip", 2),
        )?;
        // `[::ffff:172.18.0.2]:37842` from a dual-stack listener, `172.18.0.2:37842` else.
        let seen = client
            .rsplit_once(':')
            .map_or(client.as_str(), |(ip, _)| ip);
        let seen = seen.trim_matches(['[', ']']);
        let seen = seen.strip_prefix("::ffff:").unwrap_or(seen);
        if seen != node_ip {
            return Err(format!(
                "{kind}: the external host saw {namespace}/{name} as {seen}, not as node1 ({node_ip})"
            ));
        }
    }
    Ok(())
}

fn restarting_node_components_keeps_pods_connected(sandbox: &Sandbox) -> Result<(), String> {
    for component in ["udn-node node1", "udn-controller node1", "kubelet node1"] {
        sandbox.restart_component(component)?;
        same_network_across_nodes(sandbox)
            .map_err(|e| format!("after restarting {component}: {e}"))?;
        different_networks_are_isolated(sandbox)
            .map_err(|e| format!("after restarting {component}: {e}"))?;
        default_network_and_udn_eth0_are_isolated(sandbox)
            .map_err(|e| format!("after restarting {component}: {e}"))?;
    }
    // A pod started after the restarts gets its network too.
    sandbox.run_pods(&[PodSpec {
        namespace: "blue",
        name: "blue-late",
        node: "node1",
        ..PodSpec::default()
    }])?;
    sandbox.reaches(("blue", "blue-late"), BLUE_B, UDN)?;
    sandbox.delete("blue", &["pod", "blue-late"])
}

const RED: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: red
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata:
  name: red-network
  namespace: red
spec:
  topology: Layer3
  layer3:
    role: Primary
    subnets: [{cidr: "10.140.0.0/16"}]
"#;

/// The `red` network's logical switches in node `node`'s zone.
fn red_switches(sandbox: &Sandbox, node: &str) -> Result<Vec<String>, String> {
    let text = sandbox.nbctl(
        node,
        &["--bare", "--columns=name", "list", "Logical_Switch"],
    )?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("red_red.network_"))
        .map(str::to_owned)
        .collect())
}

fn a_network_in_use_is_kept_until_its_pods_are_gone(sandbox: &Sandbox) -> Result<(), String> {
    sandbox.apply(RED);
    let pods = [("red-a", "node1"), ("red-b", "node2")];
    let specs: Vec<PodSpec<'_>> = pods
        .iter()
        .map(|(name, node)| PodSpec {
            namespace: "red",
            name,
            node,
            ..PodSpec::default()
        })
        .collect();
    sandbox.run_pods(&specs)?;
    sandbox.reaches(("red", "red-a"), ("red", "red-b"), UDN)?;
    if red_switches(sandbox, "node1")?.is_empty() {
        return Err("red's network has no logical switch in node1's zone".into());
    }
    // Deleted while in use: the UDN waits (finalizer), says why, and the pods keep working.
    sandbox.delete("red", &["userdefinednetwork", "red-network"])?;
    sandbox.eventually("red-network says its NAD is in use", || {
        let text = sandbox.kubectl(&[
            "get",
            "-n",
            "red",
            "userdefinednetwork",
            "red-network",
            "-o",
            "json",
        ]);
        text.contains("network in use by the following pods")
            .then_some(())
    })?;
    sandbox.kubectl(&[
        "get",
        "-n",
        "red",
        "network-attachment-definitions",
        "red-network",
    ]);
    sandbox.reaches(("red", "red-a"), ("red", "red-b"), UDN)?;
    // Once the pods are gone the deletion completes, and the network leaves OVN.
    for (name, _) in pods {
        sandbox.delete("red", &["pod", name])?;
    }
    sandbox.eventually("red-network and its NAD gone", || {
        let out = sandbox.kubectl_output(&[
            "get",
            "-n",
            "red",
            "userdefinednetwork,network-attachment-definitions",
            "-o",
            "name",
        ]);
        (out.status.success() && out.stdout.is_empty()).then_some(())
    })?;
    sandbox.eventually("red's switches gone from both zones", || {
        let left = [
            red_switches(sandbox, "node1").ok()?,
            red_switches(sandbox, "node2").ok()?,
        ];
        left.iter().all(Vec::is_empty).then_some(())
    })?;
    Ok(())
}

const LOCALNET_VLAN: &str = include_str!("../../docs/examples/localnet-vlan.yaml");

/// A second namespace the storage-vlan CUDN selects (no primary-network label).
const DB2: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: db2
  labels:
    storage: "true"
"#;

/// Maps `physnet-tenant` (the localnet CUDN's physicalNetworkName) to `breth0` on `node`, as
/// an admin does on a real node for a localnet network, keeping the mappings already there.
fn map_tenant_physnet(sandbox: &Sandbox, node: &str) -> Result<(), String> {
    let current = sandbox.vsctl(
        node,
        &[
            "get",
            "Open_vSwitch",
            ".",
            "external_ids:ovn-bridge-mappings",
        ],
    )?;
    let current = current.trim().trim_matches('"');
    if current.split(',').any(|m| m.starts_with("physnet-tenant:")) {
        return Ok(());
    }
    let mappings = format!("{current},physnet-tenant:breth0");
    sandbox
        .vsctl(
            node,
            &[
                "set",
                "Open_vSwitch",
                ".",
                &format!("external_ids:ovn-bridge-mappings=\"{mappings}\""),
            ],
        )
        .map(|_| ())
}

fn a_localnet_vlan_network_connects_two_namespaces_over_net1(
    sandbox: &Sandbox,
) -> Result<(), String> {
    for node in ["node1", "node2"] {
        map_tenant_physnet(sandbox, node)?;
    }
    sandbox.apply(LOCALNET_VLAN);
    sandbox.apply(DB2);
    let a = ("db", "db-a");
    let b = ("db2", "db-b");
    sandbox.run_pods(&[
        PodSpec {
            namespace: a.0,
            name: a.1,
            node: "node1",
            networks: Some("storage-vlan"),
            ..PodSpec::default()
        },
        PodSpec {
            namespace: b.0,
            name: b.1,
            node: "node2",
            networks: Some("storage-vlan"),
            ..PodSpec::default()
        },
    ])?;
    // Multus' network-status names the NAD and the interface; the IP is outside the
    // excluded 192.0.2.0/29.
    for (namespace, name) in [a, b] {
        let status = sandbox.network_status(namespace, name)?;
        let entry = status
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["interface"] == "net1")
            .ok_or_else(|| format!("{namespace}/{name} has no net1 in {status}"))?;
        let expected_name = format!("{namespace}/storage-vlan");
        if entry["name"] != expected_name.as_str() {
            return Err(format!(
                "{namespace}/{name}'s net1 entry {entry}: expected name {expected_name}"
            ));
        }
        let ip = sandbox.ip_on(namespace, name, "net1")?;
        let last: u8 = ip
            .strip_prefix("192.0.2.")
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| format!("{namespace}/{name}'s net1 IP {ip} is not in 192.0.2.0/24"))?;
        if last < 8 {
            return Err(format!(
                "{namespace}/{name}'s net1 IP {ip} is in the excluded 192.0.2.0/29"
            ));
        }
    }
    sandbox.reaches(a, b, "net1")?;
    sandbox.reaches(b, a, "net1")?;
    // The localnet port carries VLAN 200 in both zones.
    for node in ["node1", "node2"] {
        let tags = sandbox.nbctl(
            node,
            &[
                "--bare",
                "--columns=tag",
                "find",
                "Logical_Switch_Port",
                "type=localnet",
            ],
        )?;
        if !tags.lines().any(|t| t.trim() == "200") {
            return Err(format!(
                "no localnet port with tag 200 in {node}'s zone: {tags:?}"
            ));
        }
    }
    Ok(())
}

/// The SecondaryPods port group's name in node `node`'s zone (the default network's
/// isolation of primary-UDN pods' eth0).
fn isolation_port_group(sandbox: &Sandbox, node: &str) -> Result<String, String> {
    let name = sandbox.nbctl(
        node,
        &[
            "--bare",
            "--columns=name",
            "find",
            "Port_Group",
            "external_ids:\"k8s.ovn.org/name\"=SecondaryPods",
        ],
    )?;
    let name = name.trim().to_owned();
    if name.is_empty() {
        return Err(format!("no SecondaryPods port group in {node}'s zone"));
    }
    Ok(name)
}

/// The harness checks what it claims: with the isolation ACLs removed by hand (and
/// udn-controller stopped, so it cannot put them back), the isolation scenario fails; once
/// udn-controller runs again, it restores them and the scenario passes.
fn the_isolation_scenario_fails_without_the_isolation_acls(
    sandbox: &Sandbox,
) -> Result<(), String> {
    let controller = "udn-controller node1";
    sandbox.kill_component(controller)?;
    let group = isolation_port_group(sandbox, "node1")?;
    sandbox.nbctl("node1", &["--type=port-group", "acl-del", &group])?;
    let broken = sandbox.eventually("default-a reaches blue-a's eth0 without the ACLs", || {
        sandbox
            .http_get(
                DEFAULT_A.0,
                DEFAULT_A.1,
                &hostname_url(&sandbox.ip_on(BLUE_A.0, BLUE_A.1, ETH0).ok()?),
                3,
            )
            .filter(|body| body.trim() == BLUE_A.1)
    });
    let verdict = default_network_and_udn_eth0_are_isolated(sandbox);
    sandbox.restart_component(controller)?;
    broken?;
    if verdict.is_ok() {
        return Err("the isolation scenario passed with the isolation ACLs removed".into());
    }
    sandbox.eventually(
        "the isolation scenario passes again after udn-controller restored the ACLs",
        || default_network_and_udn_eth0_are_isolated(sandbox).ok(),
    )
}

fn probes_keep_a_udn_pod_ready_for_a_minute(sandbox: &Sandbox) -> Result<(), String> {
    // The pod became Ready in the setup; the scenarios before this one took part of the
    // minute, which is waited out here while host processes keep being refused.
    let (namespace, name) = PROBED;
    let pod = sandbox
        .pod(namespace, name)
        .ok_or_else(|| format!("{namespace}/{name} is gone"))?;
    let ready_since = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready" && c.status == "True"))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
        .ok_or_else(|| format!("{namespace}/{name} is not Ready"))?;
    let ip = sandbox.ip_on(namespace, name, ETH0)?;
    let started = Instant::now();
    loop {
        if let Some(body) = host_reaches(sandbox, "node1", &hostname_url(&ip)) {
            return Err(format!(
                "a host process reached {namespace}/{name} at {ip}: {body}"
            ));
        }
        check_ready_without_restarts(sandbox, PROBED)?;
        let ready_for = seconds_since(ready_since);
        if ready_for >= 60 && started.elapsed() >= Duration::from_secs(5) {
            return Ok(());
        }
        std::thread::park_timeout(Duration::from_secs(1));
    }
}

/// Seconds from `since` to now (wall clock, as the API server stamped it).
fn seconds_since(since: k8s_openapi::jiff::Timestamp) -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second() - since.as_second()
}

fn main() -> std::process::ExitCode {
    run_suite(
        "networks",
        2,
        setup,
        &[
            ("same_network_across_nodes", same_network_across_nodes),
            (
                "different_networks_are_isolated",
                different_networks_are_isolated,
            ),
            (
                "overlapping_subnets_both_work",
                overlapping_subnets_both_work,
            ),
            (
                "default_network_and_udn_eth0_are_isolated",
                default_network_and_udn_eth0_are_isolated,
            ),
            (
                "network_status_and_pod_networks_as_the_guide_shows",
                network_status_and_pod_networks_as_the_guide_shows,
            ),
            (
                "host_processes_cannot_reach_a_udn_pods_default_ip",
                host_processes_cannot_reach_a_udn_pods_default_ip,
            ),
            (
                "open_default_ports_open_exactly_what_they_list",
                open_default_ports_open_exactly_what_they_list,
            ),
            (
                "a_udn_pod_reaches_an_external_host",
                a_udn_pod_reaches_an_external_host,
            ),
            (
                "restarting_node_components_keeps_pods_connected",
                restarting_node_components_keeps_pods_connected,
            ),
            (
                "a_network_in_use_is_kept_until_its_pods_are_gone",
                a_network_in_use_is_kept_until_its_pods_are_gone,
            ),
            (
                "a_localnet_vlan_network_connects_two_namespaces_over_net1",
                a_localnet_vlan_network_connects_two_namespaces_over_net1,
            ),
            (
                "the_isolation_scenario_fails_without_the_isolation_acls",
                the_isolation_scenario_fails_without_the_isolation_acls,
            ),
            (
                "probes_keep_a_udn_pod_ready_for_a_minute",
                probes_keep_a_udn_pod_ready_for_a_minute,
            ),
        ],
    )
}
