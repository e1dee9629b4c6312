//! What a sandbox may leave behind, looked up on the host.

/// Whether any network namespace named `<prefix>-*` exists.
pub fn netns_exist(prefix: &str) -> bool {
    !udn_ovn_lab::netns_with_prefix(&format!("{prefix}-")).is_empty()
}

/// Whether process `pid` started at `start_time` (clock ticks since boot) still runs (a
/// zombie does not: nothing reaps orphans on some hosts).
pub fn process_running(pid: u64, start_time: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((_, after)) = stat.rsplit_once(')') else {
        return false;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    let state = fields.first().copied().unwrap_or("?");
    let started = fields.get(19).and_then(|f| f.parse::<u64>().ok());
    started == Some(start_time) && state != "Z" && state != "X"
}

/// The recorded processes of a state file that still run, by name.
pub fn running_daemons(state: &serde_json::Value) -> Vec<String> {
    state["daemons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| {
            process_running(
                d["pid"].as_u64().unwrap_or(0),
                d["startTime"].as_u64().unwrap_or(0),
            )
        })
        .map(|d| d["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}
