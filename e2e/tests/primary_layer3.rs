//! The seed guide's blue and green tenants (docs/examples/blue-green.yaml, unchanged), each a
//! primary Layer3 UDN, with pods on both nodes, and a pod on the default network.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use udn_e2e::{PodSpec, Sandbox, run_suite};

const BLUE_GREEN: &str = include_str!("../../docs/examples/blue-green.yaml");

fn pods() -> [PodSpec<'static>; 4] {
    [
        PodSpec {
            namespace: "blue",
            name: "blue-a",
            node: "node1",
            networks: None,
        },
        PodSpec {
            namespace: "blue",
            name: "blue-b",
            node: "node2",
            networks: None,
        },
        PodSpec {
            namespace: "green",
            name: "green-a",
            node: "node1",
            networks: None,
        },
        PodSpec {
            namespace: "default",
            name: "default-a",
            node: "node2",
            networks: None,
        },
    ]
}

fn setup(sandbox: &Sandbox) -> Result<(), String> {
    sandbox.apply(BLUE_GREEN);
    sandbox.run_pods(&pods())
}

fn url(ip: &str) -> String {
    if ip.contains(':') {
        format!("http://[{ip}]:8080/hostname")
    } else {
        format!("http://{ip}:8080/hostname")
    }
}

/// A reaches B's IP on `interface` and B answers with its name.
fn reaches(
    sandbox: &Sandbox,
    from: (&str, &str),
    to: (&str, &str),
    interface: &str,
) -> Result<(), String> {
    let ip = sandbox.ip_on(to.0, to.1, interface)?;
    sandbox
        .eventually(
            &format!(
                "{}/{} reaches {}/{} at {ip} ({interface})",
                from.0, from.1, to.0, to.1
            ),
            || {
                sandbox
                    .http_get(from.0, from.1, &url(&ip), 2)
                    .filter(|body| body.trim() == to.1)
            },
        )
        .map(|_| ())
}

/// A does not reach B's IP on `interface` (a 3 s timeout, twice).
fn unreachable(
    sandbox: &Sandbox,
    from: (&str, &str),
    to: (&str, &str),
    interface: &str,
) -> Result<(), String> {
    let ip = sandbox.ip_on(to.0, to.1, interface)?;
    for _ in 0..2 {
        if let Some(body) = sandbox.http_get(from.0, from.1, &url(&ip), 3) {
            return Err(format!(
                "{}/{} reached {}/{} at {ip} ({interface}), answer {body:?}",
                from.0, from.1, to.0, to.1
            ));
        }
    }
    Ok(())
}

fn same_network_across_nodes(sandbox: &Sandbox) -> Result<(), String> {
    reaches(sandbox, ("blue", "blue-a"), ("blue", "blue-b"), "ovn-udn1")?;
    reaches(sandbox, ("blue", "blue-b"), ("blue", "blue-a"), "ovn-udn1")
}

fn different_networks_are_isolated(sandbox: &Sandbox) -> Result<(), String> {
    unreachable(
        sandbox,
        ("green", "green-a"),
        ("blue", "blue-b"),
        "ovn-udn1",
    )?;
    unreachable(
        sandbox,
        ("blue", "blue-a"),
        ("green", "green-a"),
        "ovn-udn1",
    )
}

fn default_network_and_udn_eth0_are_isolated(sandbox: &Sandbox) -> Result<(), String> {
    unreachable(
        sandbox,
        ("default", "default-a"),
        ("blue", "blue-a"),
        "eth0",
    )?;
    unreachable(
        sandbox,
        ("blue", "blue-a"),
        ("default", "default-a"),
        "eth0",
    )
}

fn network_status_as_the_guide_shows(sandbox: &Sandbox) -> Result<(), String> {
    let status = sandbox.network_status("blue", "blue-a")?;
    let entries = status.as_array().ok_or("network-status is a list")?;
    let shape: Vec<(String, String, bool)> = entries
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
        ("ovn-kubernetes".to_owned(), "eth0".to_owned(), false),
        ("ovn-kubernetes".to_owned(), "ovn-udn1".to_owned(), true),
    ];
    if shape != expected {
        return Err(format!(
            "network-status {status}: expected (name, interface, default) {expected:?}"
        ));
    }
    let udn_ip = sandbox.ip_on("blue", "blue-a", "ovn-udn1")?;
    if !udn_ip.starts_with("103.103.") {
        return Err(format!(
            "blue-a's ovn-udn1 IP {udn_ip} is not in blue's 103.103.0.0/16"
        ));
    }
    Ok(())
}

fn host_processes_cannot_reach_a_udn_pods_default_ip(sandbox: &Sandbox) -> Result<(), String> {
    let ip = sandbox.ip_on("blue", "blue-a", "eth0")?;
    let out = sandbox.node_exec("node1", &["curl", "-sS", "--max-time", "3", &url(&ip)]);
    if out.status.success() {
        return Err(format!(
            "a host process reached blue-a's default-network IP {ip}: {}",
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    // Meanwhile the kubelet's probes (from its cgroup) keep the pod Ready.
    let pod = sandbox.pod("blue", "blue-a").ok_or("blue-a is gone")?;
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let restarts: i32 = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |c| c.iter().map(|c| c.restart_count).sum());
    if !ready || restarts != 0 {
        return Err(format!("blue-a: ready {ready}, restarts {restarts}"));
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    run_suite(
        "primary-layer3",
        2,
        setup,
        &[
            ("same_network_across_nodes", same_network_across_nodes),
            (
                "different_networks_are_isolated",
                different_networks_are_isolated,
            ),
            (
                "default_network_and_udn_eth0_are_isolated",
                default_network_and_udn_eth0_are_isolated,
            ),
            (
                "network_status_as_the_guide_shows",
                network_status_as_the_guide_shows,
            ),
            (
                "host_processes_cannot_reach_a_udn_pods_default_ip",
                host_processes_cannot_reach_a_udn_pods_default_ip,
            ),
        ],
    )
}
