//! The isolated run's NB watcher: a connection monitoring every column of the tables the
//! controller writes, exactly as the raw baseline's connection does
//! ([`nb_raw::send`](super::nb_raw::send)), whose updates are only timed as they arrive (skipped
//! without building values, on their own thread). Keeping a full replica in the bench, as
//! the live zone's [`ZoneView`](super::controller_zone::ZoneView) does, would put a second
//! replica's parsing on the two cores beside the controller's, which the raw baseline does
//! not pay; it would also time changes only to the poll interval.

use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, ensure};
use serde::Deserialize;
use serde_json::{Value as Json, json};

/// When updates arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seen {
    /// The first update.
    pub first: Option<Instant>,
    /// The latest update.
    pub last: Option<Instant>,
    /// Updates in all.
    pub updates: usize,
    /// Whether the connection is gone (the server closed it, or it failed).
    pub closed: bool,
}

/// A monitoring connection timing the updates it receives.
#[derive(Debug)]
pub struct UpdateClock {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    seen: Mutex<Seen>,
    changed: Condvar,
}

impl Shared {
    fn update(&self, change: impl FnOnce(&mut Seen)) {
        change(&mut self.seen.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_all();
    }
}

#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Json,
    #[serde(default)]
    method: Option<String>,
    /// Skipped without building values (monitor updates are big).
    #[serde(default)]
    params: Option<serde::de::IgnoredAny>,
}

impl UpdateClock {
    /// Connects to the NB server at `socket` and monitors every column of `tables`
    /// (`monitor_cond`); the initial (empty or not) contents are not counted as updates.
    pub fn start(socket: &Path, database: &str, tables: &[&str]) -> anyhow::Result<Self> {
        let mut stream = UnixStream::connect(socket)
            .with_context(|| format!("connecting to {}", socket.display()))?;
        let requests: serde_json::Map<String, Json> = tables
            .iter()
            .map(|t| ((*t).to_owned(), json!({})))
            .collect();
        let request = json!({
            "id": "monitor",
            "method": "monitor_cond",
            "params": [database, "bench-clock", requests],
        });
        stream
            .write_all(request.to_string().as_bytes())
            .context("sending monitor_cond")?;
        let reader = stream.try_clone().context("cloning the socket")?;
        let mut messages =
            serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, reader))
                .into_iter::<Incoming>();
        let reply = messages
            .next()
            .ok_or_else(|| anyhow!("the server closed the connection after monitor_cond"))?
            .context("reading the monitor_cond reply")?;
        ensure!(
            reply.id == "monitor",
            "unexpected first message from the server: {:?}",
            reply.method
        );
        let shared = Arc::new(Shared::default());
        let writer = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("bench-clock".to_owned())
            .spawn(move || {
                for message in messages {
                    let Ok(message) = message else { break };
                    match message.method.as_deref() {
                        Some("update" | "update2" | "update3") if message.params.is_some() => {
                            let now = Instant::now();
                            writer.update(|seen| {
                                seen.first.get_or_insert(now);
                                seen.last = Some(now);
                                seen.updates += 1;
                            });
                        }
                        // ovsdb-server's probes carry no parameters: the reply echoes none.
                        Some("echo") => {
                            let reply = json!({"id": message.id, "result": [], "error": null});
                            if stream.write_all(reply.to_string().as_bytes()).is_err() {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                writer.update(|seen| seen.closed = true);
            })
            .context("starting the update clock's thread")?;
        Ok(Self { shared })
    }

    /// What arrived so far.
    pub fn seen(&self) -> Seen {
        *self
            .shared
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `done` holds of what arrived, for at most `timeout`; returns what
    /// arrived by then.
    pub fn wait(&self, timeout: Duration, done: impl Fn(&Seen) -> bool) -> Seen {
        let guard = self
            .shared
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = self
            .shared
            .changed
            .wait_timeout_while(guard, timeout, |seen| !done(seen))
            .unwrap_or_else(PoisonError::into_inner);
        *guard
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use udn_ovsdb::testing::OvsdbServer;

    #[test]
    fn times_updates_of_monitored_tables_only() {
        let nb = OvsdbServer::start_nb().unwrap();
        nb.nbctl(&["init"]).unwrap();
        let clock = UpdateClock::start(nb.socket(), "OVN_Northbound", &["Logical_Switch"]).unwrap();
        nb.nbctl(&["lr-add", "r1"]).unwrap();
        let before = Instant::now();
        nb.nbctl(&["ls-add", "s1"]).unwrap();
        nb.nbctl(&["ls-add", "s2"]).unwrap();
        let seen = clock.wait(Duration::from_secs(5), |seen| seen.updates >= 2);
        assert_eq!(seen.updates, 2, "{seen:?}");
        assert!(seen.first.unwrap() >= before);
        assert!(seen.last.unwrap() >= seen.first.unwrap());
        drop(nb);
        assert!(
            clock
                .wait(Duration::from_secs(5), |seen| seen.closed)
                .closed
        );
    }
}
