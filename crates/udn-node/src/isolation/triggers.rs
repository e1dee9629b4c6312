//! When the kubelet rule should be looked at again: kubelet restarted (systemd said so),
//! tracking resumed after the connection to systemd was lost (a restart may have been
//! missed), or the periodic check is due.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::systemd::UnitWatch;

/// Why the kubelet rule should be looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReloadTrigger {
    /// systemd reported the kubelet unit active: reload the rule.
    KubeletRestarted,
    /// The connection to systemd was lost and is back: reload (a restart may be missed).
    TrackingResumed,
    /// Time for the periodic check: reload only if the rule is stale.
    PeriodicCheck,
}

/// The stream of [`ReloadTrigger`]s of a started host isolation. Dropping it stops the
/// restart tracking.
#[derive(Debug)]
pub struct ReloadTriggers {
    restarts: Option<mpsc::Receiver<ReloadTrigger>>,
    task: Option<JoinHandle<()>>,
    interval: Interval,
}

/// Backoff bounds for reconnecting to systemd.
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(30);

impl ReloadTriggers {
    pub(crate) fn new(watch: Option<(UnitWatch, PathBuf)>, check_every: Duration) -> Self {
        let check_every = check_every.max(Duration::from_millis(10));
        let mut interval = tokio::time::interval_at(Instant::now() + check_every, check_every);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let (restarts, task) = match watch {
            Some((watch, socket)) => {
                let (sender, receiver) = mpsc::channel(8);
                let task = tokio::spawn(track(watch, socket, sender));
                (Some(receiver), Some(task))
            }
            None => (None, None),
        };
        Self {
            restarts,
            task,
            interval,
        }
    }

    /// Triggers only from the periodic check.
    pub fn periodic_only(check_every: Duration) -> Self {
        Self::new(None, check_every)
    }

    /// Whether kubelet restarts are tracked through systemd.
    pub fn tracks_restarts(&self) -> bool {
        self.restarts.is_some()
    }

    /// The next trigger. Cancel safe (use it in `select!`).
    pub async fn next(&mut self) -> ReloadTrigger {
        loop {
            let restart = async {
                match self.restarts.as_mut() {
                    Some(receiver) => receiver.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                trigger = restart => match trigger {
                    Some(trigger) => return trigger,
                    None => self.restarts = None,
                },
                _ = self.interval.tick() => return ReloadTrigger::PeriodicCheck,
            }
        }
    }
}

impl Drop for ReloadTriggers {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn track(mut watch: UnitWatch, socket: PathBuf, sender: mpsc::Sender<ReloadTrigger>) {
    loop {
        if watch.next_activation().await {
            tracing::info!(unit = %watch.unit(), "kubelet unit became active");
            if sender.send(ReloadTrigger::KubeletRestarted).await.is_err() {
                return;
            }
            continue;
        }
        tracing::warn!(unit = %watch.unit(), socket = %socket.display(), "connection to systemd lost, reconnecting");
        let unit = watch.unit().to_owned();
        let mut backoff = RECONNECT_FIRST;
        watch = loop {
            tokio::time::sleep(backoff).await;
            match UnitWatch::connect(&socket, &unit).await {
                Ok(watch) => break watch,
                Err(reason) => {
                    tracing::warn!(%unit, reason = ?reason, "cannot reconnect to systemd");
                    backoff = (backoff * 2).min(RECONNECT_MAX);
                }
            }
        };
        if sender.send(ReloadTrigger::TrackingResumed).await.is_err() {
            return;
        }
    }
}
