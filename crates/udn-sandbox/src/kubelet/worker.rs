//! One task per pod, as kubelet's pod workers: a pod's set-up (a CNI ADD can wait seconds
//! for its port to come up), probes and tear-down never hold up another pod's.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::watch;
use tokio::time::Instant;

use super::pod::{self, PodRecord};
use super::{KubeletConfig, TICK};

/// After a failed set-up the next try waits this long, doubling up to [`MAX_BACKOFF`]
/// (kubelet backs off failed pod syncs too, and each failure is an Event).
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The handle the kubelet's loop keeps for a pod's worker.
#[derive(Debug)]
pub(super) struct Worker {
    /// The uid of the pod the worker serves.
    pub(super) uid: String,
    /// The pod as last listed; `None` once it is gone from the API.
    updates: watch::Sender<Option<Pod>>,
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    /// Starts a worker for `pod` (uid `uid`), adopting `record` when the pod was set up
    /// before a kubelet restart.
    pub(super) fn start(
        client: &kube::Client,
        config: &KubeletConfig,
        uid: String,
        pod: Option<Pod>,
        record: Option<PodRecord>,
        stop: watch::Receiver<bool>,
    ) -> Self {
        let (updates, rx) = watch::channel(pod);
        let task = tokio::spawn(run(client.clone(), config.clone(), rx, record, stop));
        Self { uid, updates, task }
    }

    /// Hands the worker the pod's latest state (`None`: gone from the API).
    /// Wakes the worker only when something changed (a new resourceVersion, or gone).
    pub(super) fn update(&self, pod: Option<Pod>) {
        self.updates.send_if_modified(|current| {
            let changed = match (current.as_ref(), pod.as_ref()) {
                (Some(old), Some(new)) => {
                    old.metadata.resource_version != new.metadata.resource_version
                }
                (None, None) => false,
                _ => true,
            };
            if changed {
                *current = pod;
            }
            changed
        });
    }

    /// Whether the worker is done (its pod torn down, or the kubelet stopping).
    pub(super) fn finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the worker to end.
    pub(super) async fn join(self) {
        let _ = self.task.await;
    }
}

/// Whether `pod` is still to be run: present and not being deleted.
fn wanted(pod: Option<&Pod>) -> bool {
    pod.is_some_and(|p| p.metadata.deletion_timestamp.is_none())
}

async fn run(
    client: kube::Client,
    config: KubeletConfig,
    mut updates: watch::Receiver<Option<Pod>>,
    mut record: Option<PodRecord>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut retry_at = Instant::now();
    loop {
        let current = updates.borrow_and_update().clone();
        let Some(pod) = current.filter(|p| wanted(Some(p))) else {
            break;
        };
        match record.as_mut() {
            Some(record) => pod::tick(&client, &config, &pod, record).await,
            None if Instant::now() >= retry_at => match pod::set_up(&client, &config, &pod).await {
                Ok(Some(set_up)) => {
                    record = Some(set_up);
                    // The first probes as soon as the containers had a tick to start.
                    backoff = FIRST_BACKOFF;
                }
                // The node's network is not ready yet: the next tick tries again.
                Ok(None) => {}
                Err(error) => {
                    pod::report_failure(&client, &config, &pod, &error).await;
                    retry_at = Instant::now() + backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            },
            None => {}
        }
        tokio::select! {
            // The kubelet stops: the pod keeps running, as it does when kubelet stops.
            _ = stop.wait_for(|stopping| *stopping) => return,
            changed = updates.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(TICK) => {}
        }
    }
    // Gone or terminating: the containers get the grace period of the deletion (or the
    // pod's own when it vanished), then a terminating pod is deleted for good.
    let terminating = updates.borrow().clone();
    if let Some(record) = record {
        let grace = terminating.as_ref().map_or_else(
            || Duration::from_secs(u64::try_from(record.termination_grace_seconds).unwrap_or(0)),
            pod::grace_period,
        );
        let (config, record) = (config.clone(), record);
        let torn_down =
            tokio::task::spawn_blocking(move || pod::tear_down(&config, &record, grace)).await;
        if let Err(error) = torn_down {
            tracing::warn!(%error, "pod tear-down failed");
        }
    }
    if let Some(pod) = terminating {
        pod::delete_for_good(&client, &pod).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_is_wanted_until_it_is_deleted() {
        let pod: Pod =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}})).unwrap();
        assert!(wanted(Some(&pod)));
        let mut deleting = pod;
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ));
        assert!(!wanted(Some(&deleting)));
        assert!(!wanted(None));
    }
}
