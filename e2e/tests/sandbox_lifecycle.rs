//! `udnctl sandbox up`, `status` and `down` as a user runs them: a second `up` is a no-op,
//! `up` after a crash cleans up first, and `down` leaves no netns, process, cgroup or file.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;

use udn_e2e::{Sandbox, leftovers, run_suite};

fn setup(_: &Sandbox) -> Result<(), String> {
    Ok(())
}

fn stdout(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn status_shows_every_component_up(sandbox: &Sandbox) -> Result<(), String> {
    let out = sandbox.udnctl(&["status"]);
    let text = stdout(&out);
    for component in [
        "kube-sim",
        "udn-cluster-manager",
        "kubelet node1",
        "udn-node node2",
        "udn-controller node1",
        "ovn-northd node2",
        "ovs-vswitchd node1",
    ] {
        if !text
            .lines()
            .any(|l| l.starts_with(component) && l.ends_with(" up"))
        {
            return Err(format!("{component} is not shown up:\n{text}"));
        }
    }
    if !out.status.success() {
        return Err(format!("status exited with {}:\n{text}", out.status));
    }
    Ok(())
}

fn a_second_up_is_a_no_op(sandbox: &Sandbox) -> Result<(), String> {
    let before = sandbox.state();
    let again = Sandbox::up("lifecycle", 2);
    if again.state() != before {
        return Err(format!(
            "a second up changed the state:\n{before}\n{}",
            again.state()
        ));
    }
    Ok(())
}

fn up_after_a_crash_cleans_up_first(sandbox: &Sandbox) -> Result<(), String> {
    let before = sandbox.state();
    // A component dies: the sandbox is no longer whole.
    let agent = before["daemons"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["name"] == "udn-node node1")
        .and_then(|d| d["pid"].as_i64())
        .ok_or("no udn-node node1 in the state")?;
    let status = std::process::Command::new("kill")
        .args(["-9", &agent.to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("kill: {status}"));
    }
    let out = sandbox.udnctl(&["status"]);
    if out.status.success() || !stdout(&out).contains("DOWN") {
        return Err(format!(
            "status does not show the dead agent:\n{}",
            stdout(&out)
        ));
    }
    let again = Sandbox::up("lifecycle", 2);
    let after = again.state();
    if after["prefix"] == before["prefix"] {
        return Err("up after a crash reused the crashed sandbox".to_owned());
    }
    if leftovers::netns_exist(before["prefix"].as_str().unwrap_or("?")) {
        return Err("the crashed sandbox's netns are still there".to_owned());
    }
    let running = leftovers::running_daemons(&before);
    if !running.is_empty() {
        return Err(format!(
            "the crashed sandbox's processes still run: {running:?}"
        ));
    }
    status_shows_every_component_up(&again)
}

fn down_leaves_nothing_behind(sandbox: &Sandbox) -> Result<(), String> {
    let state = sandbox.state();
    sandbox.down();
    let prefix = state["prefix"].as_str().ok_or("no prefix")?;
    if leftovers::netns_exist(prefix) {
        return Err(format!("netns {prefix}-* left behind"));
    }
    let running = leftovers::running_daemons(&state);
    if !running.is_empty() {
        return Err(format!("still running after down: {running:?}"));
    }
    if let Some(cgroup) = state["cgroupRoot"].as_str()
        && Path::new(cgroup).exists()
    {
        return Err(format!("cgroup {cgroup} left behind"));
    }
    if sandbox.dir.exists() {
        return Err(format!("{} left behind", sandbox.dir.display()));
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    run_suite(
        "lifecycle",
        2,
        setup,
        &[
            (
                "status_shows_every_component_up",
                status_shows_every_component_up,
            ),
            ("a_second_up_is_a_no_op", a_second_up_is_a_no_op),
            (
                "up_after_a_crash_cleans_up_first",
                up_after_a_crash_cleans_up_first,
            ),
            ("down_leaves_nothing_behind", down_leaves_nothing_behind),
        ],
    )
}
