//! The connectivity matrix: who reaches whom over which interface, expected vs seen. Each
//! check is an HTTP GET of agnhost's `/hostname` on port 8080 from a pod's netns, or from a
//! node's host network outside the kubelet's cgroup, to another pod's IP on one interface
//! (read from its `k8s.v1.cni.cncf.io/network-status`); "reach" means the right pod answered.

use std::process::Command;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::error::SandboxError;
use crate::layout::Layout;
use crate::state::SandboxState;

/// Where a check starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum From {
    /// A pod (`namespace`, `name`).
    Pod(String, String),
    /// A process on a node's host network that is not the kubelet.
    Host(String),
}

/// One row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Source.
    pub from: From,
    /// Target pod (`namespace`, `name`).
    pub to: (String, String),
    /// The target's interface whose IP is used.
    pub interface: String,
    /// Whether it should answer.
    pub expect: bool,
}

/// A row with what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The check.
    pub check: Check,
    /// The target IP (empty when it has none).
    pub ip: String,
    /// Whether it answered.
    pub seen: bool,
}

/// The seed guide's promises for the demo pods (docs/examples/sandbox-pods.yaml).
pub fn demo_checks() -> Vec<Check> {
    let pod = |ns: &str, name: &str| From::Pod(ns.to_owned(), name.to_owned());
    let to = |ns: &str, name: &str| (ns.to_owned(), name.to_owned());
    let check = |from: From, target: (String, String), interface: &str, expect: bool| Check {
        from,
        to: target,
        interface: interface.to_owned(),
        expect,
    };
    vec![
        check(
            pod("blue", "blue-a"),
            to("blue", "blue-b"),
            "ovn-udn1",
            true,
        ),
        check(
            pod("blue", "blue-b"),
            to("blue", "blue-a"),
            "ovn-udn1",
            true,
        ),
        check(
            pod("green", "green-a"),
            to("green", "green-b"),
            "ovn-udn1",
            true,
        ),
        check(
            pod("blue", "blue-a"),
            to("green", "green-b"),
            "ovn-udn1",
            false,
        ),
        check(
            pod("green", "green-a"),
            to("blue", "blue-b"),
            "ovn-udn1",
            false,
        ),
        check(
            pod("default", "default-a"),
            to("blue", "blue-a"),
            "eth0",
            false,
        ),
        check(
            pod("blue", "blue-a"),
            to("default", "default-a"),
            "eth0",
            false,
        ),
        check(
            From::Host("node1".to_owned()),
            to("blue", "blue-a"),
            "eth0",
            false,
        ),
        check(
            From::Host("node2".to_owned()),
            to("default", "default-a"),
            "eth0",
            true,
        ),
    ]
}

/// Runs every check (each waits up to 3 s for an answer).
pub fn run(
    state: &SandboxState,
    layout: &Layout,
    checks: &[Check],
) -> Result<Vec<Row>, SandboxError> {
    let runtime = crate::client::runtime()?;
    let client = runtime.block_on(crate::client::client(&layout.kubeconfig()))?;
    let mut rows = Vec::new();
    for check in checks {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &check.to.0);
        let target =
            runtime
                .block_on(pods.get(&check.to.1))
                .map_err(|source| SandboxError::Api {
                    what: format!("getting pod {}/{}", check.to.0, check.to.1),
                    source,
                })?;
        let ip = interface_ips(&target, &check.interface)
            .into_iter()
            .next()
            .unwrap_or_default();
        let seen = !ip.is_empty() && answers(state, layout, &check.from, &ip, &check.to.1)?;
        rows.push(Row {
            check: check.clone(),
            ip,
            seen,
        });
    }
    Ok(rows)
}

/// The IPs of `interface` in the pod's `network-status`.
pub fn interface_ips(pod: &Pod, interface: &str) -> Vec<String> {
    let Some(text) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("k8s.v1.cni.cncf.io/network-status"))
    else {
        return Vec::new();
    };
    let entries: Vec<serde_json::Value> = serde_json::from_str(text).unwrap_or_default();
    entries
        .iter()
        .filter(|e| e["interface"] == interface)
        .flat_map(|e| e["ips"].as_array().cloned().unwrap_or_default())
        .filter_map(|ip| ip.as_str().map(str::to_owned))
        .collect()
}

fn answers(
    state: &SandboxState,
    layout: &Layout,
    from: &From,
    ip: &str,
    name: &str,
) -> Result<bool, SandboxError> {
    let url = if ip.contains(':') {
        format!("http://[{ip}]:8080/hostname")
    } else {
        format!("http://{ip}:8080/hostname")
    };
    let curl: Vec<String> = ["curl", "-s", "--max-time", "3", &url]
        .map(str::to_owned)
        .to_vec();
    let mut command: Command = match from {
        From::Pod(namespace, pod) => {
            crate::pods::exec_command(state, layout, namespace, pod, &curl)?
        }
        From::Host(node) => {
            let mut command = crate::components::in_netns(&state.node(node)?.netns);
            command.args(&curl);
            command
        }
    };
    let out = command.output().map_err(|source| SandboxError::Spawn {
        program: "curl".to_owned(),
        source,
    })?;
    Ok(out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == name)
}

/// The matrix as a table, and the count of rows as expected.
pub fn render(rows: &[Row]) -> (String, usize) {
    let mut out = format!(
        "{:<20} {:<18} {:<9} {:<16} {:<9} {:<9}\n",
        "FROM", "TO", "VIA", "IP", "EXPECTED", "SEEN"
    );
    let mut good = 0;
    for row in rows {
        let from = match &row.check.from {
            From::Pod(ns, name) => format!("{ns}/{name}"),
            From::Host(node) => format!("host of {node}"),
        };
        let word = |reach: bool| if reach { "reach" } else { "blocked" };
        let ok = row.seen == row.check.expect;
        good += usize::from(ok);
        out.push_str(&format!(
            "{:<20} {:<18} {:<9} {:<16} {:<9} {:<9} {}\n",
            from,
            format!("{}/{}", row.check.to.0, row.check.to.1),
            row.check.interface,
            if row.ip.is_empty() { "-" } else { &row.ip },
            word(row.check.expect),
            word(row.seen),
            if ok { "ok" } else { "UNEXPECTED" }
        ));
    }
    out.push_str(&format!("{good} of {} as expected\n", rows.len()));
    (out, good)
}
