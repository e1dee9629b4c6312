//! State shared by the controllers of this module: caches, network IDs, owners waiting on
//! pods, per-key retry backoff, the upstream network gauges and the event recorder.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use kube::runtime::events::Recorder;
use udn_api::crd::{NetworkRole, NetworkTopology};
use udn_api::render::NetworkSpecRef;

use super::apply::lock;
use super::ids::NetworkIds;
use super::stores::Stores;
use super::triggers::Triggers;
use crate::context::Context;
use crate::metrics::{Metrics, NetworkKindLabels};

/// A UDN or a CUDN.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Owner {
    /// A UserDefinedNetwork.
    Udn {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// A ClusterUserDefinedNetwork.
    Cudn {
        /// Name.
        name: String,
    },
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Udn { namespace, name } => write!(f, "{namespace}/{name}"),
            Self::Cudn { name } => f.write_str(name),
        }
    }
}

/// Owners whose NAD removal waits for pods, with the namespaces of those NADs: a pod event
/// in one of them retriggers the owner.
#[derive(Debug, Default)]
pub(crate) struct InUseWaiters(BTreeMap<Owner, BTreeSet<String>>);

impl InUseWaiters {
    /// Record that `owner` waits on pods in `namespaces` (none: it waits no more).
    pub(crate) fn set(&mut self, owner: Owner, namespaces: BTreeSet<String>) {
        if namespaces.is_empty() {
            self.0.remove(&owner);
        } else {
            self.0.insert(owner, namespaces);
        }
    }

    /// Every waiting owner.
    pub(crate) fn all(&self) -> Vec<Owner> {
        self.0.keys().cloned().collect()
    }

    /// Owners waiting on pods in `namespace`.
    pub(crate) fn waiting_in(&self, namespace: &str) -> Vec<Owner> {
        self.0
            .iter()
            .filter(|(_, namespaces)| namespaces.contains(namespace))
            .map(|(owner, _)| owner.clone())
            .collect()
    }
}

/// Per-key exponential backoff: 5 ms doubling up to 1000 s (client-go's default per-item
/// rate limiter).
#[derive(Debug, Default)]
pub(crate) struct Backoff(BTreeMap<String, u32>);

impl Backoff {
    const BASE: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1000);

    /// The delay before the next retry of `key`, counting this failure.
    pub(crate) fn next(&mut self, key: &str) -> Duration {
        let failures = self.0.entry(key.to_owned()).or_default();
        let delay = Self::BASE
            .checked_mul(2u32.saturating_pow(*failures))
            .map_or(Self::MAX, |d| d.min(Self::MAX));
        *failures = failures.saturating_add(1);
        delay
    }

    /// `key` succeeded.
    pub(crate) fn reset(&mut self, key: &str) {
        self.0.remove(key);
    }
}

/// Upstream's `user_defined_networks` / `cluster_user_defined_networks` gauges: objects
/// holding our finalizer, by role and topology.
#[derive(Debug, Default)]
pub(crate) struct NetworkGauges {
    counted: BTreeMap<Owner, (&'static str, &'static str)>,
}

impl NetworkGauges {
    /// Count `owner` with `labels` (`None`: not counted any more) and refresh the gauges.
    pub(crate) fn set(
        &mut self,
        metrics: &Metrics,
        owner: Owner,
        labels: Option<(&'static str, &'static str)>,
    ) {
        let cluster = matches!(owner, Owner::Cudn { .. });
        let before = match labels {
            Some(labels) => self.counted.insert(owner, labels),
            None => self.counted.remove(&owner),
        };
        for (role, topology) in before.into_iter().chain(labels) {
            let count = self
                .counted
                .iter()
                .filter(|(o, l)| {
                    matches!(o, Owner::Cudn { .. }) == cluster && **l == (role, topology)
                })
                .count();
            let family = if cluster {
                &metrics.cluster_user_defined_networks
            } else {
                &metrics.user_defined_networks
            };
            family
                .get_or_create(&NetworkKindLabels { role, topology })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }
}

/// Upstream metric labels of a spec: the CRD spelling of role and topology.
pub(crate) fn kind_labels(spec: NetworkSpecRef<'_>) -> (&'static str, &'static str) {
    let role = match spec
        .layer2()
        .map(|c| c.role)
        .or_else(|| spec.layer3().map(|c| c.role))
        .or_else(|| spec.localnet().map(|c| c.role))
    {
        Some(NetworkRole::Primary) => "Primary",
        Some(NetworkRole::Secondary) => "Secondary",
        None => "",
    };
    let topology = match spec.topology() {
        NetworkTopology::Layer2 => "Layer2",
        NetworkTopology::Layer3 => "Layer3",
        NetworkTopology::Localnet => "Localnet",
    };
    (role, topology)
}

/// Everything the controllers of this module share.
pub(crate) struct Shared {
    /// Client, config, metrics, reporter.
    pub(crate) ctx: Context,
    /// Caches.
    pub(crate) stores: Stores,
    /// Network IDs and tunnel keys.
    pub(crate) ids: Mutex<NetworkIds>,
    /// Owners waiting on pods.
    pub(crate) waiters: Mutex<InUseWaiters>,
    /// Retry backoff per key.
    pub(crate) backoff: Mutex<Backoff>,
    /// Network gauges.
    pub(crate) gauges: Mutex<NetworkGauges>,
    /// Event recorder.
    pub(crate) recorder: Recorder,
    /// Serialises primary-NAD creation across the UDN and CUDN controllers (upstream
    /// `createNetworkLock`), per namespace.
    pub(crate) create_lock: CreateLock,
    /// The controllers' queues (to retry what waited for an exhausted pool).
    pub(crate) triggers: Triggers,
}

/// Serialises the syncs of primary networks that could create a NAD in the same namespace
/// (upstream `createNetworkLock`): a primary UDN holds its namespace, a primary CUDN (which
/// may create in any namespace) holds every namespace. Two primary UDNs of different
/// namespaces do not wait for each other.
#[derive(Debug, Default)]
pub(crate) struct CreateLock {
    /// Shared by namespace holders, exclusive for cluster holders.
    cluster: tokio::sync::RwLock<()>,
    /// The per-namespace locks currently in use.
    namespaces: Mutex<BTreeMap<String, Weak<tokio::sync::Mutex<()>>>>,
}

/// Held while a primary network is synced; releases on drop.
#[derive(Debug)]
pub(crate) struct CreateGuard<'a> {
    _shared: Option<tokio::sync::RwLockReadGuard<'a, ()>>,
    _exclusive: Option<tokio::sync::RwLockWriteGuard<'a, ()>>,
    _namespace: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl CreateLock {
    /// Hold `namespace` (a primary UDN's sync).
    pub(crate) async fn namespace(&self, namespace: &str) -> CreateGuard<'_> {
        let shared = self.cluster.read().await;
        let mutex = self.namespace_mutex(namespace);
        CreateGuard {
            _shared: Some(shared),
            _exclusive: None,
            _namespace: Some(mutex.lock_owned().await),
        }
    }

    /// Hold every namespace (a primary CUDN's sync).
    pub(crate) async fn cluster(&self) -> CreateGuard<'_> {
        CreateGuard {
            _shared: None,
            _exclusive: Some(self.cluster.write().await),
            _namespace: None,
        }
    }

    /// The lock of `namespace`, shared with its current holders and waiters; locks nobody
    /// holds any more are dropped from the map.
    fn namespace_mutex(&self, namespace: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut namespaces = lock(&self.namespaces);
        if let Some(mutex) = namespaces.get(namespace).and_then(Weak::upgrade) {
            return mutex;
        }
        namespaces.retain(|_, mutex| mutex.strong_count() > 0);
        let mutex = Arc::new(tokio::sync::Mutex::new(()));
        namespaces.insert(namespace.to_owned(), Arc::downgrade(&mutex));
        mutex
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("stores", &self.stores)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Backoff for `key` after a failure.
    pub(crate) fn retry_after(&self, key: &str) -> Duration {
        lock(&self.backoff).next(key)
    }

    /// `key` succeeded.
    pub(crate) fn succeeded(&self, key: &str) {
        lock(&self.backoff).reset(key);
    }

    /// A network was released: retry what waited for an exhausted pool.
    pub(crate) fn wake_pool_waiters(&self) {
        wake_pool_waiters(&self.ids, &self.stores, &self.triggers);
    }
}

/// Queue every NAD (and its owner) that waited for an exhausted pool; call after a release,
/// without holding the `ids` lock.
pub(crate) fn wake_pool_waiters(ids: &Mutex<NetworkIds>, stores: &Stores, triggers: &Triggers) {
    let waiting = lock(ids).take_waiters();
    if !waiting.is_empty() {
        tracing::info!(
            waiting = waiting.len(),
            "network released; retrying networks that waited for a pool"
        );
        triggers.pool_waiters(&waiting, stores);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let mut backoff = Backoff::default();
        assert_eq!(backoff.next("a"), Duration::from_millis(5));
        assert_eq!(backoff.next("a"), Duration::from_millis(10));
        assert_eq!(backoff.next("b"), Duration::from_millis(5));
        for _ in 0..40 {
            backoff.next("a");
        }
        assert_eq!(backoff.next("a"), Duration::from_secs(1000));
        backoff.reset("a");
        assert_eq!(backoff.next("a"), Duration::from_millis(5));
    }

    #[test]
    fn waiters_by_namespace() {
        let mut waiters = InUseWaiters::default();
        let owner = Owner::Cudn { name: "x".into() };
        waiters.set(owner.clone(), BTreeSet::from(["a".to_owned()]));
        assert_eq!(waiters.waiting_in("a"), vec![owner.clone()]);
        assert!(waiters.waiting_in("b").is_empty());
        waiters.set(owner, BTreeSet::new());
        assert!(waiters.waiting_in("a").is_empty());
    }

    #[tokio::test]
    async fn create_lock_serialises_a_namespace_and_cudns_against_everything() {
        use std::time::Duration;
        let lock = CreateLock::default();
        let blue = lock.namespace("blue").await;
        // Another namespace goes ahead; the same namespace and a CUDN wait.
        let red = tokio::time::timeout(Duration::from_millis(50), lock.namespace("red")).await;
        assert!(red.is_ok());
        drop(red);
        let again = tokio::time::timeout(Duration::from_millis(50), lock.namespace("blue")).await;
        assert!(again.is_err());
        let cudn = tokio::time::timeout(Duration::from_millis(50), lock.cluster()).await;
        assert!(cudn.is_err());
        drop(blue);
        let cudn = lock.cluster().await;
        let red = tokio::time::timeout(Duration::from_millis(50), lock.namespace("red")).await;
        assert!(red.is_err());
        drop(cudn);
        let _blue = lock.namespace("blue").await;
        // Only the lock in use is kept.
        assert_eq!(super::lock(&lock.namespaces).len(), 1);
    }

    #[test]
    fn gauges_count_by_labels() {
        let metrics = Metrics::unregistered();
        let mut gauges = NetworkGauges::default();
        let a = Owner::Udn {
            namespace: "n".into(),
            name: "a".into(),
        };
        let b = Owner::Udn {
            namespace: "n".into(),
            name: "b".into(),
        };
        gauges.set(&metrics, a.clone(), Some(("Primary", "Layer2")));
        gauges.set(&metrics, b, Some(("Primary", "Layer2")));
        gauges.set(
            &metrics,
            Owner::Cudn { name: "c".into() },
            Some(("Primary", "Layer2")),
        );
        let get = |family: &prometheus_client::metrics::family::Family<
            NetworkKindLabels,
            prometheus_client::metrics::gauge::Gauge,
        >| {
            family
                .get_or_create(&NetworkKindLabels {
                    role: "Primary",
                    topology: "Layer2",
                })
                .get()
        };
        assert_eq!(get(&metrics.user_defined_networks), 2);
        assert_eq!(get(&metrics.cluster_user_defined_networks), 1);
        gauges.set(&metrics, a, None);
        assert_eq!(get(&metrics.user_defined_networks), 1);
    }
}
