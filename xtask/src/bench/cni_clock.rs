//! The CNI bench's view of OVS: a connection to the node's `ovsdb-server` monitoring the
//! `Interface` table's `name` and `external_ids`, on its own thread, timing when each
//! interface's row appeared (the node agent's port transaction) and when ovn-controller set
//! `external_ids:ovn-installed="true"` on it. Both times come from the same connection, so
//! the delivery delay of the server's updates falls on both ends of the bind time.
//! ovn-controller also stamps `ovn-installed-ts` (its wall clock, ms) next to the flag: the
//! difference to when the bench saw the flag checks the bench's own timing.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, anyhow, ensure};
use serde_json::{Value as Json, json};

/// `external_ids` key ovn-controller sets when a port's flows are installed.
const OVN_INSTALLED: &str = "ovn-installed";
/// Its wall-clock stamp (ms since the epoch) next to it.
const OVN_INSTALLED_TS: &str = "ovn-installed-ts";

/// What the bench saw of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortTimes {
    /// When its row's insert arrived.
    pub added: Option<Instant>,
    /// When `ovn-installed=true` arrived.
    pub installed: Option<Instant>,
    /// ovn-controller's `ovn-installed-ts`, ms since the epoch.
    pub installed_ts_ms: Option<u64>,
    /// The insert and the flag arrived in one update (so no bind time can be read).
    pub coalesced: bool,
}

/// A monitoring connection timing interface rows.
#[derive(Debug)]
pub struct InterfaceClock {
    shared: Arc<Shared>,
    /// The instant of `wall_ms`, to place ovn-controller's stamps on the bench's clock.
    origin: (Instant, u64),
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    ports: BTreeMap<String, PortTimes>,
    closed: bool,
}

impl Shared {
    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_all();
    }
}

/// Wall-clock ms since the epoch.
fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl InterfaceClock {
    /// Connects to the `Open_vSwitch` database at `socket` and monitors its interfaces;
    /// the rows there already are not timed.
    pub fn start(socket: &Path) -> anyhow::Result<Self> {
        let mut stream = UnixStream::connect(socket)
            .with_context(|| format!("connecting to {}", socket.display()))?;
        let request = json!({
            "id": "monitor",
            "method": "monitor",
            "params": ["Open_vSwitch", "cni-bench", {"Interface": {"columns": ["name", "external_ids"]}}],
        });
        stream
            .write_all(request.to_string().as_bytes())
            .context("sending monitor")?;
        let reader = stream.try_clone().context("cloning the socket")?;
        let mut messages =
            serde_json::Deserializer::from_reader(BufReader::new(reader)).into_iter::<Json>();
        let reply = messages
            .next()
            .ok_or_else(|| anyhow!("the server closed the connection after monitor"))?
            .context("reading the monitor reply")?;
        ensure!(
            reply["id"] == "monitor" && reply["error"].is_null(),
            "unexpected answer to monitor: {reply}"
        );
        let shared = Arc::new(Shared::default());
        let writer = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("cni-bench-clock".to_owned())
            .spawn(move || {
                for message in messages {
                    let Ok(message) = message else { break };
                    match message["method"].as_str() {
                        Some("update") => {
                            let now = Instant::now();
                            let changes = interface_changes(&message["params"][1]);
                            writer.update(|state| {
                                for change in changes {
                                    apply(&mut state.ports, &change, now);
                                }
                            });
                        }
                        Some("echo") => {
                            let reply =
                                json!({"id": message["id"], "result": message["params"], "error": null});
                            if stream.write_all(reply.to_string().as_bytes()).is_err() {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                writer.update(|state| state.closed = true);
            })
            .context("starting the interface clock's thread")?;
        Ok(Self {
            shared,
            origin: (Instant::now(), wall_ms()),
        })
    }

    /// Waits until every one of `names` has its `ovn-installed` seen, for at most
    /// `timeout`; returns what was seen of them.
    pub fn wait_installed(
        &self,
        names: &[String],
        timeout: Duration,
    ) -> anyhow::Result<BTreeMap<String, PortTimes>> {
        let guard = self
            .shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let done = |state: &State| {
            state.closed
                || names
                    .iter()
                    .all(|n| state.ports.get(n).is_some_and(|p| p.installed.is_some()))
        };
        let (state, _) = self
            .shared
            .changed
            .wait_timeout_while(guard, timeout, |state| !done(state))
            .unwrap_or_else(PoisonError::into_inner);
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| state.ports.get(*n).is_none_or(|p| p.installed.is_none()))
            .collect();
        ensure!(
            missing.is_empty(),
            "ovn-installed not seen for {} interfaces (e.g. {:?}){}",
            missing.len(),
            missing.first(),
            if state.closed {
                "; the OVS connection closed"
            } else {
                ""
            }
        );
        Ok(names
            .iter()
            .filter_map(|n| state.ports.get(n).map(|p| (n.clone(), *p)))
            .collect())
    }

    /// How long after ovn-controller's stamp the bench saw `ovn-installed`, ms (its
    /// stamps have ms resolution: this can be slightly negative).
    pub fn lag_ms(&self, times: &PortTimes) -> Option<f64> {
        let seen = times.installed?.checked_duration_since(self.origin.0)?;
        let seen_wall_ms = self.origin.1 as f64 + seen.as_secs_f64() * 1000.0;
        Some(seen_wall_ms - times.installed_ts_ms? as f64)
    }
}

/// One interface row of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    name: String,
    /// A new row (no old values).
    inserted: bool,
    /// `ovn-installed` is `true` in the new row and was not in the old values.
    installed_now: bool,
    installed_ts_ms: Option<u64>,
}

/// The interface rows of an RFC 7047 `<table-updates>` (`{"Interface": {uuid: {"old":
/// ..., "new": ...}}}`); deletions are left out.
fn interface_changes(updates: &Json) -> Vec<Change> {
    let Some(rows) = updates["Interface"].as_object() else {
        return Vec::new();
    };
    rows.values()
        .filter_map(|row| {
            let new = row.get("new")?;
            let name = new["name"].as_str()?.to_owned();
            let ids = ovsdb_map(&new["external_ids"]);
            let installed = ids.get(OVN_INSTALLED).map(String::as_str) == Some("true");
            let old = row.get("old");
            // A modification's "old" holds the changed columns' old values only.
            let was_installed = old.is_some_and(|old| {
                old.get("external_ids").map_or(installed, |ids| {
                    ovsdb_map(ids).get(OVN_INSTALLED).map(String::as_str) == Some("true")
                })
            });
            Some(Change {
                name,
                inserted: old.is_none(),
                installed_now: installed && !was_installed,
                installed_ts_ms: ids.get(OVN_INSTALLED_TS).and_then(|t| t.parse().ok()),
            })
        })
        .collect()
}

/// An OVSDB `["map", [[k, v], ...]]` of strings.
fn ovsdb_map(value: &Json) -> BTreeMap<String, String> {
    value[1]
        .as_array()
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|pair| {
                    Some((pair[0].as_str()?.to_owned(), pair[1].as_str()?.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn apply(ports: &mut BTreeMap<String, PortTimes>, change: &Change, now: Instant) {
    let port = ports.entry(change.name.clone()).or_default();
    if change.inserted && port.added.is_none() {
        port.added = Some(now);
    }
    if change.installed_now && port.installed.is_none() {
        port.installed = Some(now);
        port.installed_ts_ms = change.installed_ts_ms;
        port.coalesced = change.inserted;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn map(pairs: &[(&str, &str)]) -> Json {
        json!([
            "map",
            pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
        ])
    }

    #[test]
    fn inserts_and_the_installed_flag_are_timed_once() {
        let insert = json!({"Interface": {"u1": {"new": {"name": "abc", "external_ids": map(&[("iface-id", "ns_p")])}}}});
        let other = json!({"Interface": {"u1": {
            "old": {"external_ids": map(&[("iface-id", "ns_p")])},
            "new": {"name": "abc", "external_ids": map(&[("iface-id", "ns_p"), ("attached", "x")])}}}});
        let installed = json!({"Interface": {"u1": {
            "old": {"external_ids": map(&[("iface-id", "ns_p")])},
            "new": {"name": "abc", "external_ids": map(&[("iface-id", "ns_p"), ("ovn-installed", "true"), ("ovn-installed-ts", "1700000000123")])}}}});
        // A later change of another column: the flag was there already.
        let later = json!({"Interface": {"u1": {
            "old": {"name": "abc"},
            "new": {"name": "abc", "external_ids": map(&[("ovn-installed", "true")])}}}});
        let deleted = json!({"Interface": {"u1": {"old": {"name": "abc"}}}});
        let start = Instant::now();
        let mut ports = BTreeMap::new();
        for (k, update) in [insert, other, installed, later, deleted]
            .iter()
            .enumerate()
        {
            for change in interface_changes(update) {
                apply(&mut ports, &change, start + Duration::from_millis(k as u64));
            }
        }
        let port = ports["abc"];
        assert_eq!(port.added, Some(start));
        assert_eq!(port.installed, Some(start + Duration::from_millis(2)));
        assert_eq!(port.installed_ts_ms, Some(1_700_000_000_123));
        assert!(!port.coalesced);
    }

    #[test]
    fn an_insert_already_installed_is_marked_coalesced() {
        let both = json!({"Interface": {"u2": {"new": {"name": "x", "external_ids": map(&[("ovn-installed", "true")])}}}});
        let mut ports = BTreeMap::new();
        let now = Instant::now();
        for change in interface_changes(&both) {
            apply(&mut ports, &change, now);
        }
        assert_eq!(ports["x"].added, Some(now));
        assert_eq!(ports["x"].installed, Some(now));
        assert!(ports["x"].coalesced);
        assert!(interface_changes(&json!({"Bridge": {}})).is_empty());
    }
}
