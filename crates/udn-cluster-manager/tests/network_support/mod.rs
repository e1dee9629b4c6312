//! Shared by the `network_*` tests: the in-memory cluster, the controllers of
//! `udn_cluster_manager::network` running in a task, and deadline-bounded polling.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_cluster_manager::network::{self, NetworkError};
use udn_kube_sim::{DeleteOptions, ListOptions, PatchKind, ResourceKey, Subresource, WriteOptions};
use udn_test_support::TestCluster;

/// How long a test waits for the controllers to converge.
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);

/// The finalizer on UDNs, CUDNs and NADs.
pub(crate) const FINALIZER: &str = "k8s.ovn.org/user-defined-network-protection";

/// A kind of object the tests touch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Namespace,
    Pod,
    Udn,
    Cudn,
    Nad,
    Event,
    Service,
    EndpointSlice,
}

impl Kind {
    fn key(self) -> ResourceKey {
        let (group, plural) = match self {
            Self::Namespace => ("", "namespaces"),
            Self::Pod => ("", "pods"),
            Self::Udn => ("k8s.ovn.org", "userdefinednetworks"),
            Self::Cudn => ("k8s.ovn.org", "clusteruserdefinednetworks"),
            Self::Nad => ("k8s.cni.cncf.io", "network-attachment-definitions"),
            Self::Event => ("events.k8s.io", "events"),
            Self::Service => ("", "services"),
            Self::EndpointSlice => ("discovery.k8s.io", "endpointslices"),
        };
        ResourceKey {
            group: group.to_owned(),
            plural: plural.to_owned(),
        }
    }
}

/// The cluster plus shortcuts.
#[derive(Clone, Debug)]
pub(crate) struct Cluster(pub TestCluster);

impl Cluster {
    pub(crate) fn new() -> Self {
        Self(TestCluster::new())
    }

    pub(crate) fn create(&self, kind: Kind, namespace: Option<&str>, object: Value) -> Value {
        self.0
            .sim
            .create(&kind.key(), namespace, object, &WriteOptions::default())
            .unwrap_or_else(|err| panic!("create {kind:?}: {err:?}"))
    }

    /// Create, `None` when the server refuses (schema, CEL).
    pub(crate) fn try_create(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        object: Value,
    ) -> Option<Value> {
        self.0
            .sim
            .create(&kind.key(), namespace, object, &WriteOptions::default())
            .ok()
    }

    pub(crate) fn get(&self, kind: Kind, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.0.sim.get(&kind.key(), namespace, name).ok()
    }

    pub(crate) fn list(&self, kind: Kind, namespace: Option<&str>) -> Vec<Value> {
        let list = self
            .0
            .sim
            .list(&kind.key(), namespace, &ListOptions::default())
            .expect("list");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    pub(crate) fn delete(&self, kind: Kind, namespace: Option<&str>, name: &str) {
        self.0
            .sim
            .delete(
                &kind.key(),
                namespace,
                name,
                // Bound pods would wait for a kubelet; other kinds ignore the grace period.
                &DeleteOptions {
                    grace_period_seconds: Some(0),
                    ..DeleteOptions::default()
                },
            )
            .unwrap_or_else(|err| panic!("delete {kind:?} {name}: {err:?}"));
    }

    pub(crate) fn merge_patch(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        patch: Value,
    ) -> Value {
        self.0
            .sim
            .patch(
                &kind.key(),
                namespace,
                name,
                PatchKind::Merge,
                patch.to_string().as_bytes(),
                Subresource::Main,
                &WriteOptions::default(),
            )
            .unwrap_or_else(|err| panic!("patch {kind:?} {name}: {err:?}"))
    }

    /// The `NetworkCreated` condition of a UDN (`namespace` set) or CUDN.
    pub(crate) fn condition(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let object = self.get(kind, namespace, name)?;
        object["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "NetworkCreated")
            .cloned()
    }

    /// Events regarding `name` (any namespace).
    pub(crate) fn events_for(&self, name: &str) -> Vec<Value> {
        self.list(Kind::Event, None)
            .into_iter()
            .filter(|e| e["regarding"]["name"] == name)
            .collect()
    }
}

/// `(status, reason, message)` of a condition.
pub(crate) fn summary(condition: &Value) -> (String, String, String) {
    let text = |key: &str| condition[key].as_str().unwrap_or_default().to_owned();
    (text("status"), text("reason"), text("message"))
}

/// The controllers of `udn_cluster_manager::network`, running in a task.
pub(crate) struct Manager {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), NetworkError>>,
    pub(crate) metrics: Metrics,
}

impl Manager {
    pub(crate) fn start(cluster: &Cluster) -> Self {
        Self::start_with(cluster, Config::for_tests())
    }

    /// Start with `config` (e.g. a small masquerade subnet).
    pub(crate) fn start_with(cluster: &Cluster, config: Config) -> Self {
        let metrics = Metrics::unregistered();
        let ctx = Context::new(
            cluster.0.client(),
            config,
            metrics.clone(),
            Some("test".to_owned()),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(network::run(ctx, async move {
            let _ = stopped.await;
        }));
        Self {
            stop: Some(stop),
            task,
            metrics,
        }
    }

    /// Shut down and wait for the controllers to return.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = tokio::time::timeout(DEADLINE, &mut self.task)
            .await
            .expect("controllers stop before the deadline")
            .expect("controller task did not panic");
        result.expect("run returns Ok");
    }
}

/// Poll `check` until it returns `Some`, failing the test after [`DEADLINE`].
pub(crate) async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait for the `NetworkCreated` condition to be `(status, reason, message)`.
pub(crate) async fn wait_condition(
    cluster: &Cluster,
    kind: Kind,
    namespace: Option<&str>,
    name: &str,
    expected: (&str, &str, &str),
) -> Value {
    let mut last = None;
    let found = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Some(condition) = cluster.condition(kind, namespace, name) {
                let (status, reason, message) = summary(&condition);
                if (status.as_str(), reason.as_str(), message.as_str()) == expected {
                    return condition;
                }
                last = Some(condition);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    match found {
        Ok(condition) => condition,
        Err(_) => panic!("condition of {name} never became {expected:?}; last: {last:?}"),
    }
}

/// A namespace with `labels` (and nothing else).
pub(crate) fn namespace_with_labels(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// Object metadata without the server-managed fields (for exact comparisons).
pub(crate) fn stable_metadata(object: &Value) -> Value {
    let mut meta = object["metadata"].clone();
    if let Some(map) = meta.as_object_mut() {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            map.remove(key);
        }
    }
    meta
}
