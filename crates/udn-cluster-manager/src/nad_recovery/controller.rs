//! The imperative shell of NAD recovery: the NAD watch (with the last copy of every NAD,
//! and deletions missed while the watch was down found at the relist), the pod cache, and
//! the apply step (GET, CREATE, Event).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use tracing::{debug, info, warn};
use udn_api::nad::NetworkAttachmentDefinition;

use super::plan::{self, Decision, Reason};
use crate::context::{CLUSTER_MANAGER, Context};
use crate::events::{Note, publish};

/// A NAD recovered this often within [`LOOP_WINDOW`] is deleted by something that will
/// delete it again (its owner is gone, so the garbage collector does): it stays deleted.
const LOOP_LIMIT: usize = 3;
/// See [`LOOP_LIMIT`].
const LOOP_WINDOW: Duration = Duration::from_secs(600);
/// Tries of the CREATE against transient API errors.
const CREATE_TRIES: u32 = 5;

/// Shared by the watch loop and the recovery tasks.
struct Shared {
    ctx: Context,
    pods: Store<PartialObjectMeta<Pod>>,
    recorder: Recorder,
    /// When each NAD (`ns/name`) was recovered lately.
    recoveries: Mutex<HashMap<String, Vec<Instant>>>,
}

/// Runs until `stop` resolves.
pub(super) async fn run(ctx: Context, stop: impl Future<Output = ()> + Send + Clone + 'static) {
    let (pods, pod_writer) = reflector::store();
    let pod_watch = tokio::spawn({
        let api: Api<PartialObjectMeta<Pod>> = Api::all(ctx.client.clone());
        let stop = stop.clone();
        async move {
            tokio::select! {
                () = udn_runtime::watch::reflect("Pod", api, pod_writer, |_| true) => {}
                () = stop => {}
            }
        }
    });
    let shared = Arc::new(Shared {
        recorder: Recorder::new(ctx.client.clone(), ctx.reporter.clone()),
        ctx,
        pods,
        recoveries: Mutex::new(HashMap::new()),
    });
    let nads: Api<NetworkAttachmentDefinition> = Api::all(shared.ctx.client.clone());
    let events = watcher(nads, watcher::Config::default())
        .default_backoff()
        .take_until(stop);
    let mut events = pin!(events);
    let mut copies = Copies::default();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                for deleted in copies.observe(event) {
                    tokio::spawn(recover(Arc::clone(&shared), deleted));
                }
            }
            Err(error) => warn!(watch = "NetworkAttachmentDefinition", %error, "watch error"),
        }
    }
    pod_watch.abort();
}

/// The last copy of every NAD, and which ones a relist no longer has.
#[derive(Default)]
struct Copies {
    last: BTreeMap<String, NetworkAttachmentDefinition>,
    /// During a relist: the NADs it listed so far.
    relisted: Option<BTreeSet<String>>,
}

impl Copies {
    /// Applies `event`; returns the NADs deleted (their last copies).
    fn observe(
        &mut self,
        event: watcher::Event<NetworkAttachmentDefinition>,
    ) -> Vec<NetworkAttachmentDefinition> {
        match event {
            watcher::Event::Apply(nad) => {
                self.last.insert(key(&nad), nad);
                Vec::new()
            }
            watcher::Event::Delete(nad) => {
                self.last.remove(&key(&nad));
                vec![nad]
            }
            watcher::Event::Init => {
                self.relisted = Some(BTreeSet::new());
                Vec::new()
            }
            watcher::Event::InitApply(nad) => {
                let key = key(&nad);
                if let Some(relisted) = &mut self.relisted {
                    relisted.insert(key.clone());
                }
                self.last.insert(key, nad);
                Vec::new()
            }
            // Deleted while the watch was down: the relist just lacks them.
            watcher::Event::InitDone => {
                let relisted = self.relisted.take().unwrap_or_default();
                let gone: Vec<String> = self
                    .last
                    .keys()
                    .filter(|k| !relisted.contains(*k))
                    .cloned()
                    .collect();
                gone.iter().filter_map(|k| self.last.remove(k)).collect()
            }
        }
    }
}

fn key(nad: &NetworkAttachmentDefinition) -> String {
    udn_api::names::nad_key(
        nad.metadata.namespace.as_deref().unwrap_or_default(),
        nad.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Decides about one deleted NAD and recreates it when pods still use it.
async fn recover(shared: Arc<Shared>, deleted: NetworkAttachmentDefinition) {
    let nad = key(&deleted);
    info!(%nad, "handling deletion of net-attach-def");
    if shared.pods.wait_until_ready().await.is_err() {
        return;
    }
    let namespace = deleted.namespace().unwrap_or_default();
    let name = deleted.name_any();
    let pods = shared.pods.state();
    let (users, unparsable) = plan::users(&namespace, &name, pods.iter().map(|p| &p.metadata));
    for skipped in unparsable {
        debug!(pod = %skipped.pod, reason = %skipped.reason, "pod network selection does not parse; not counted");
    }
    let (object, users) = match plan::decide(&deleted, users) {
        Decision::Stands(Reason::Unused) => {
            info!(%nad, "net-attach-def deleted; no pod uses it");
            return;
        }
        Decision::Stands(Reason::OwnedByNetwork) => {
            debug!(%nad, "net-attach-def of a UDN/CUDN deleted; the network controller owns it");
            return;
        }
        Decision::Recreate { object, users } => (object, users),
    };
    let first_user = users.iter().next().cloned().unwrap_or_default();
    info!(%nad, pod = %first_user, pods = users.len(), "net-attach-def still in use; recreating it");
    if looping(&shared, &nad) {
        warn!(%nad, "net-attach-def deleted again after repeated recoveries; left deleted");
        let text = format!(
            "NetworkAttachmentDefinition {nad} was deleted again after {LOOP_LIMIT} recoveries within {} s; \
             it is left deleted (something, e.g. the garbage collector after its owner went, keeps deleting it)",
            LOOP_WINDOW.as_secs()
        );
        if let Some(pod) = pods.iter().find(|p| {
            format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()) == first_user
        }) {
            let note = Note {
                warning: true,
                reason: "NetworkAttachmentDefinitionRecoveryStopped",
                action: "Recover",
                text,
            };
            publish(&shared.recorder, &pod.object_ref(&()), vec![note]).await;
        }
        return;
    }
    let api: Api<NetworkAttachmentDefinition> =
        Api::namespaced(shared.ctx.client.clone(), &namespace);
    match create(&api, &object).await {
        Ok(Some(created)) => {
            info!(%nad, pods = users.len(), "net-attach-def recovered");
            let more = users.len() - 1;
            let text = if more == 0 {
                format!("Recreated from the last copy seen: pod {first_user} still uses it")
            } else {
                format!(
                    "Recreated from the last copy seen: pod {first_user} and {more} more still use it"
                )
            };
            let note = Note {
                warning: false,
                reason: "NetworkAttachmentDefinitionRecovered",
                action: "Recover",
                text,
            };
            let regarding: ObjectReference = created.object_ref(&());
            publish(&shared.recorder, &regarding, vec![note]).await;
        }
        Ok(None) => debug!(%nad, "net-attach-def already back"),
        Err(error) => warn!(%nad, %error, "error recreating net-attach-def"),
    }
}

/// Records a recovery of `nad`; whether it was recovered [`LOOP_LIMIT`] times already within
/// [`LOOP_WINDOW`] (then it is not counted).
fn looping(shared: &Shared, nad: &str) -> bool {
    let mut recoveries = shared
        .recoveries
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let now = Instant::now();
    recoveries.retain(|_, times| {
        times.retain(|at| now.duration_since(*at) < LOOP_WINDOW);
        !times.is_empty()
    });
    let times = recoveries.entry(nad.to_owned()).or_default();
    if times.len() >= LOOP_LIMIT {
        return true;
    }
    times.push(now);
    false
}

/// Creates `object` unless it exists again (`None`); retries transient errors.
async fn create(
    api: &Api<NetworkAttachmentDefinition>,
    object: &NetworkAttachmentDefinition,
) -> Result<Option<NetworkAttachmentDefinition>, kube::Error> {
    let name = object.name_any();
    let params = PostParams {
        field_manager: Some(CLUSTER_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let mut delay = Duration::from_millis(200);
    let mut tries = 0;
    loop {
        tries += 1;
        let result = match api.get_opt(&name).await {
            Ok(Some(_)) => return Ok(None),
            Ok(None) => api.create(&params, object).await.map(Some),
            Err(error) => Err(error),
        };
        match result {
            Ok(created) => return Ok(created),
            Err(kube::Error::Api(status)) if status.is_already_exists() => return Ok(None),
            // A terminating or missing namespace, a refused object: trying again won't help.
            Err(kube::Error::Api(status))
                if status.is_forbidden() || status.is_not_found() || status.code == 422 =>
            {
                return Err(kube::Error::Api(status));
            }
            Err(error) if tries >= CREATE_TRIES => return Err(error),
            Err(error) => {
                debug!(error = %error, "recreating net-attach-def failed; retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nad(name: &str) -> NetworkAttachmentDefinition {
        let mut nad = NetworkAttachmentDefinition::new(name, Default::default());
        nad.metadata.namespace = Some("default".to_owned());
        nad
    }

    #[test]
    fn deletions_during_a_watch_gap_are_found_at_the_relist() {
        let mut copies = Copies::default();
        assert!(copies.observe(watcher::Event::Init).is_empty());
        for name in ["a", "b", "c"] {
            assert!(
                copies
                    .observe(watcher::Event::InitApply(nad(name)))
                    .is_empty()
            );
        }
        assert!(copies.observe(watcher::Event::InitDone).is_empty());
        let deleted = copies.observe(watcher::Event::Delete(nad("a")));
        assert_eq!(deleted.len(), 1);
        // The watch restarts; "b" went meanwhile.
        copies.observe(watcher::Event::Init);
        copies.observe(watcher::Event::InitApply(nad("c")));
        let gone: Vec<String> = copies
            .observe(watcher::Event::InitDone)
            .iter()
            .map(key)
            .collect();
        assert_eq!(gone, ["default/b"]);
        assert_eq!(copies.last.keys().collect::<Vec<_>>(), ["default/c"]);
    }
}
