//! Dynamic UDN in a sandbox (`--enable-dynamic-udn-allocation`, a 10 s grace period): a
//! primary Layer3 UDN is rendered only on the nodes where its pods run, as a user sees it with
//! `kubectl` (the node's `k8s.ovn.org/node-subnets`, the UDN's `NodesSelected` condition),
//! `ovn-nbctl` in each node's zone and cluster-manager's `udn_nodes_rendered` metric: a pod on
//! a second node brings the network up there and becomes Ready, a cluster-manager restart
//! changes nothing while the pods run, and after the last pod leaves a node and the grace
//! period passes, that node's rows and allocation go.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::Value;
use udn_e2e::{PodSpec, Sandbox, run_suite_with};

/// The grace period given to every component.
const GRACE: Duration = Duration::from_secs(10);

const NAMESPACE: &str = "dyn";
/// The network of UDN `dyn/tenant` (upstream: `<namespace>_<name>`).
const NETWORK: &str = "dyn_tenant";
/// The UDN's NAD key in `k8s.ovn.org/node-subnets`.
const NODE_SUBNETS: &str = "k8s.ovn.org/node-subnets";

const TENANT: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: dyn
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: tenant, namespace: dyn}
spec:
  topology: Layer3
  layer3:
    role: Primary
    subnets: [{cidr: 10.150.0.0/16, hostSubnet: 24}]
"#;

fn pod<'a>(name: &'a str, node: &'a str) -> PodSpec<'a> {
    PodSpec {
        namespace: NAMESPACE,
        name,
        node,
        ..PodSpec::default()
    }
}

/// The network's routers and switches in `node`'s zone.
fn rows(sandbox: &Sandbox, node: &str) -> Result<Vec<String>, String> {
    let selector = format!("external_ids:k8s.ovn.org/network={NETWORK}");
    let mut names = Vec::new();
    for table in ["Logical_Router", "Logical_Switch"] {
        let out = sandbox.nbctl(
            node,
            &["--bare", "--columns=name", "find", table, selector.as_str()],
        )?;
        names.extend(out.split_whitespace().map(str::to_owned));
    }
    names.sort();
    Ok(names)
}

/// The nodes of the remote ports on the network's transit switch in `node`'s zone (their
/// `node` external ID); none when the zone has no transit switch of it.
fn remote_ports(sandbox: &Sandbox, node: &str) -> Result<Vec<String>, String> {
    let ts = format!("{NETWORK}_transit_switch");
    let Ok(ports) = sandbox.nbctl(
        node,
        &["--bare", "--columns=ports", "list", "Logical_Switch", &ts],
    ) else {
        return Ok(Vec::new());
    };
    let mut nodes = Vec::new();
    for uuid in ports.split_whitespace() {
        let kind = sandbox.nbctl(node, &["get", "Logical_Switch_Port", uuid, "type"])?;
        if kind.trim().trim_matches('"') != "remote" {
            continue;
        }
        let name = sandbox.nbctl(
            node,
            &["get", "Logical_Switch_Port", uuid, "external_ids:node"],
        )?;
        nodes.push(name.trim().trim_matches('"').to_owned());
    }
    nodes.sort();
    Ok(nodes)
}

/// `node`'s `k8s.ovn.org/node-subnets` entry of the network, if any.
fn host_subnet(sandbox: &Sandbox, node: &str) -> Option<Value> {
    let out = sandbox.kubectl(&["get", "node", node, "-o", "json"]);
    let node: Value = serde_json::from_str(&out).ok()?;
    let text = node["metadata"]["annotations"][NODE_SUBNETS].as_str()?;
    let subnets: Value = serde_json::from_str(text).ok()?;
    subnets.get(NETWORK).cloned()
}

/// The UDN's `NodesSelected` condition: (status, message).
fn nodes_selected(sandbox: &Sandbox) -> Option<(String, String)> {
    let out = sandbox.kubectl(&[
        "get",
        "userdefinednetwork",
        "tenant",
        "-n",
        NAMESPACE,
        "-o",
        "json",
    ]);
    let udn: Value = serde_json::from_str(&out).ok()?;
    udn["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "NodesSelected")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
}

/// cluster-manager's `ovnkube_clustermanager_udn_nodes_rendered{network_name=...}`, read from
/// its admin server (the address its log gives, last start).
fn metric_nodes_rendered(sandbox: &Sandbox) -> Option<f64> {
    let log = std::fs::read_to_string(sandbox.dir.join("logs/udn-cluster-manager.log")).ok()?;
    let addr = log
        .lines()
        .rev()
        .filter(|l| l.contains("admin server listening"))
        .filter_map(|l| {
            let rest = &l[l.find("addr=")? + 5..];
            Some(rest.split_whitespace().next()?.trim_matches('"').to_owned())
        })
        .next()?;
    let mut stream = std::net::TcpStream::connect(&addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    let wanted = format!("ovnkube_clustermanager_udn_nodes_rendered{{network_name=\"{NETWORK}\"}}");
    body.lines()
        .find_map(|l| l.strip_prefix(wanted.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

/// The network is on `on` and absent from `off`, as NB, the node annotations, the condition
/// and the metric say.
fn rendered_exactly(sandbox: &Sandbox, on: &[&str], off: &[&str]) -> Result<(), String> {
    sandbox.eventually(&format!("{NETWORK} rendered on {on:?} only"), || {
        for node in on {
            host_subnet(sandbox, node)?;
            if rows(sandbox, node).ok()?.is_empty() {
                return None;
            }
        }
        for node in off {
            if host_subnet(sandbox, node).is_some() || !rows(sandbox, node).ok()?.is_empty() {
                return None;
            }
        }
        // Each rendering node's transit switch has a remote port for every other one only.
        for node in on {
            let mut others: Vec<String> = on
                .iter()
                .filter(|n| *n != node)
                .map(|n| (*n).to_owned())
                .collect();
            others.sort();
            if remote_ports(sandbox, node).ok()? != others {
                return None;
            }
        }
        let expected = (
            "True".to_owned(),
            format!("{} node(s) rendered with network", on.len()),
        );
        (nodes_selected(sandbox)? == expected).then_some(())?;
        #[allow(clippy::cast_precision_loss)]
        (metric_nodes_rendered(sandbox)? == on.len() as f64).then_some(())
    })
}

/// `check` holds at every look (every 200 ms) for `period`.
fn holds_for(what: &str, period: Duration, mut check: impl FnMut() -> bool) -> Result<(), String> {
    let end = Instant::now() + period;
    while Instant::now() < end {
        if !check() {
            return Err(format!("{what}: no longer so"));
        }
        std::thread::park_timeout(Duration::from_millis(200));
    }
    Ok(())
}

fn setup(sandbox: &Sandbox) -> Result<(), String> {
    sandbox.apply(TENANT);
    sandbox.run_pods(&[pod("a", "node1")])
}

fn a_network_is_rendered_only_where_its_pods_run(sandbox: &Sandbox) -> Result<(), String> {
    rendered_exactly(sandbox, &["node1"], &["node2"])?;
    // And it stays so (nothing brings it to node2 by itself).
    holds_for(
        &format!("node2 renders no {NETWORK} without a pod of it"),
        Duration::from_secs(3),
        || {
            rows(sandbox, "node2").is_ok_and(|r| r.is_empty())
                && host_subnet(sandbox, "node2").is_none()
        },
    )
}

fn a_pod_on_another_node_brings_the_network_up_there(sandbox: &Sandbox) -> Result<(), String> {
    let started = Instant::now();
    sandbox.run_pods(&[pod("b", "node2")])?;
    eprintln!("pod b Ready {:?} after its creation", started.elapsed());
    rendered_exactly(sandbox, &["node1", "node2"], &[])?;
    sandbox.reaches((NAMESPACE, "a"), (NAMESPACE, "b"), "ovn-udn1")?;
    sandbox.reaches((NAMESPACE, "b"), (NAMESPACE, "a"), "ovn-udn1")
}

fn a_manager_restart_while_pods_run_changes_nothing(sandbox: &Sandbox) -> Result<(), String> {
    let before = (
        host_subnet(sandbox, "node1"),
        host_subnet(sandbox, "node2"),
        rows(sandbox, "node2")?,
    );
    sandbox.restart_component("udn-cluster-manager")?;
    // Over a whole grace period after the restart (seeded allocations would go by then
    // unless the pods keep them), nothing moves.
    holds_for(
        "the network's nodes unchanged after the restart",
        GRACE + Duration::from_secs(5),
        || {
            host_subnet(sandbox, "node1") == before.0
                && host_subnet(sandbox, "node2") == before.1
                && rows(sandbox, "node2").is_ok_and(|r| r == before.2)
        },
    )?;
    let after = (
        host_subnet(sandbox, "node1"),
        host_subnet(sandbox, "node2"),
        rows(sandbox, "node2")?,
    );
    if before != after {
        return Err(format!(
            "the restart changed the network's nodes: {before:?} -> {after:?}"
        ));
    }
    rendered_exactly(sandbox, &["node1", "node2"], &[])?;
    sandbox.reaches((NAMESPACE, "a"), (NAMESPACE, "b"), "ovn-udn1")
}

fn the_network_leaves_a_node_a_grace_period_after_its_last_pod(
    sandbox: &Sandbox,
) -> Result<(), String> {
    sandbox.delete(NAMESPACE, &["pod", "b"])?;
    let deleted = Instant::now();
    sandbox.eventually("pod b gone", || {
        sandbox.pod(NAMESPACE, "b").is_none().then_some(())
    })?;
    // Within the grace period everything stays.
    holds_for(
        &format!("node2 keeps {NETWORK} within the grace period after its last pod left"),
        (GRACE / 2).saturating_sub(deleted.elapsed()),
        || {
            host_subnet(sandbox, "node2").is_some()
                && rows(sandbox, "node2").is_ok_and(|r| !r.is_empty())
        },
    )?;
    rendered_exactly(sandbox, &["node1"], &["node2"])?;
    let gone = deleted.elapsed();
    eprintln!("node2's rows and host subnet gone {gone:?} after the pod's deletion");
    if gone < GRACE {
        return Err(format!(
            "node2 lost {NETWORK} after {gone:?}, before the grace period"
        ));
    }
    // node1's pod is untouched.
    let a = sandbox.pod(NAMESPACE, "a").ok_or("pod a is gone")?;
    if !udn_e2e::pod_ready(&a) {
        return Err("pod a is no longer Ready".to_owned());
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let grace = format!("{}s", GRACE.as_secs());
    run_suite_with(
        "dynamic-udn",
        2,
        &[
            "--enable-dynamic-udn-allocation",
            "--udn-deletion-grace-period",
            grace.as_str(),
        ],
        setup,
        &[
            (
                "a_network_is_rendered_only_where_its_pods_run",
                a_network_is_rendered_only_where_its_pods_run,
            ),
            (
                "a_pod_on_another_node_brings_the_network_up_there",
                a_pod_on_another_node_brings_the_network_up_there,
            ),
            (
                "a_manager_restart_while_pods_run_changes_nothing",
                a_manager_restart_while_pods_run_changes_nothing,
            ),
            (
                "the_network_leaves_a_node_a_grace_period_after_its_last_pod",
                the_network_leaves_a_node_a_grace_period_after_its_last_pod,
            ),
        ],
    )
}
