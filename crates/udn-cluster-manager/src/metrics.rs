//! Prometheus metrics of the cluster-manager (`udn_cluster_manager_*`), plus upstream's
//! `ovnkube_clustermanager_user_defined_networks` gauges under their upstream names.
//! Labels are bounded (controller, result, error kind, role, topology) except the
//! per-network address gauge, whose `network` label is bounded by the network count.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `controller` + `result` (`ok`, `error`, `requeue`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// Controller name (`udn`, `cudn`, `network-ids`, `node-allocation`, `node-subnets`,
    /// `node-subnets-status`, `layer2-ipam`).
    pub controller: &'static str,
    /// Outcome.
    pub result: &'static str,
}

/// `controller` + error `kind` (a fixed word per error variant).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// Controller name.
    pub controller: &'static str,
    /// Error kind.
    pub kind: &'static str,
}

/// `controller`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// Controller name.
    pub controller: &'static str,
}

/// `network` (network name).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NetworkLabels {
    /// Network name (`ns_name`, `cluster_udn_name`).
    pub network: String,
}

/// `network_name` (upstream's label of `udn_nodes_rendered`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NetworkNameLabels {
    /// Network name.
    pub network_name: String,
}

/// `role` + `topology` (upstream label values: `primary`/`secondary`, `layer2`/...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NetworkKindLabels {
    /// Role.
    pub role: &'static str,
    /// Topology.
    pub topology: &'static str,
}

/// Every metric of the cluster-manager.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Reconciles by controller and result.
    pub reconciles: Family<ReconcileLabels, Counter>,
    /// Reconcile errors by controller and kind.
    pub errors: Family<ErrorLabels, Counter>,
    /// Reconcile duration by controller.
    pub duration: Family<ControllerLabels, Histogram>,
    /// Free pod addresses (Layer2) or host subnets (Layer3 and the default network) per
    /// network.
    pub free_addresses: Family<NetworkLabels, Gauge>,
    /// Node IDs still free (of 2..=5000).
    pub free_node_ids: Gauge,
    /// Upstream `ovnkube_clustermanager_user_defined_networks{role,topology}`.
    pub user_defined_networks: Family<NetworkKindLabels, Gauge>,
    /// Upstream `ovnkube_clustermanager_cluster_user_defined_networks{role,topology}`.
    pub cluster_user_defined_networks: Family<NetworkKindLabels, Gauge>,
    /// Upstream `ovnkube_clustermanager_udn_nodes_rendered{network_name}` (Dynamic UDN).
    pub udn_nodes_rendered: Family<NetworkNameLabels, Gauge>,
}

impl Metrics {
    /// Create the metrics and register them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            reconciles: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 16))
            }),
            free_addresses: Family::default(),
            free_node_ids: Gauge::default(),
            user_defined_networks: Family::default(),
            cluster_user_defined_networks: Family::default(),
            udn_nodes_rendered: Family::default(),
        };
        let udn = registry.sub_registry_with_prefix("udn_cluster_manager");
        udn.register(
            "reconciles",
            "Reconciles by controller and result",
            metrics.reconciles.clone(),
        );
        udn.register(
            "reconcile_errors",
            "Reconcile errors by controller and kind",
            metrics.errors.clone(),
        );
        udn.register(
            "reconcile_duration_seconds",
            "Reconcile duration by controller",
            metrics.duration.clone(),
        );
        udn.register(
            "free_addresses",
            "Free pod IPs (Layer2) or node host subnets (Layer3, default network) per network",
            metrics.free_addresses.clone(),
        );
        udn.register(
            "free_node_ids",
            "Node IDs not held by any node",
            metrics.free_node_ids.clone(),
        );
        let upstream = registry.sub_registry_with_prefix("ovnkube_clustermanager");
        upstream.register(
            "user_defined_networks",
            "The total number of UserDefinedNetworks in the cluster",
            metrics.user_defined_networks.clone(),
        );
        upstream.register(
            "cluster_user_defined_networks",
            "The total number of ClusterUserDefinedNetworks in the cluster",
            metrics.cluster_user_defined_networks.clone(),
        );
        upstream.register(
            "udn_nodes_rendered",
            "The number of nodes a user-defined network is rendered on (Dynamic UDN)",
            metrics.udn_nodes_rendered.clone(),
        );
        metrics
    }

    /// Record one reconcile.
    pub fn observe(&self, controller: &'static str, result: &'static str, elapsed: Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels { controller, result })
            .inc();
        self.duration
            .get_or_create(&ControllerLabels { controller })
            .observe(elapsed.as_secs_f64());
    }

    /// Record one reconcile error of `kind`.
    pub fn error(&self, controller: &'static str, kind: &'static str) {
        self.errors
            .get_or_create(&ErrorLabels { controller, kind })
            .inc();
    }

    /// Metrics registered nowhere (tests).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }
}
