//! Prometheus metrics of the NB controller (`udn_controller_*`), plus upstream's
//! `ovnkube_controller_udn_nbdb_programmed_duration_seconds{topology}`. Labels are bounded:
//! result, error kind, database, topology.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `result` of a pass (`ok`, `error`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// Outcome.
    pub result: &'static str,
}

/// Error `kind` (a fixed word per failing step).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// Which step failed: `nb`, `sb`, `plan`, `pod_annotation`.
    pub kind: &'static str,
}

/// `database` (`nb`, `sb`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DatabaseLabels {
    /// Database.
    pub database: &'static str,
}

/// `topology` (upstream values: `layer3`, `layer2`, `localnet`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TopologyLabels {
    /// Topology.
    pub topology: &'static str,
}

/// Every metric of the NB controller.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Reconcile passes by result.
    pub passes: Family<ResultLabels, Counter>,
    /// Errors by step.
    pub errors: Family<ErrorLabels, Counter>,
    /// Duration of a reconcile pass.
    pub pass_duration: Histogram,
    /// Duration of the database writes of a pass, by database (all its transactions).
    pub transaction_duration: Family<DatabaseLabels, Histogram>,
    /// Operations committed, by database.
    pub operations: Family<DatabaseLabels, Counter>,
    /// Networks rendered in the zone.
    pub networks: Gauge,
    /// Upstream: time from a network's first sight to its rows being in the NB database.
    pub udn_nbdb_programmed: Family<TopologyLabels, Histogram>,
}

impl Metrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            passes: Family::default(),
            errors: Family::default(),
            pass_duration: Histogram::new(exponential_buckets(0.0005, 2.0, 18)),
            transaction_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 18))
            }),
            operations: Family::default(),
            networks: Gauge::default(),
            udn_nbdb_programmed: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 18))
            }),
        };
        let udn = registry.sub_registry_with_prefix("udn_controller");
        udn.register(
            "reconcile_passes",
            "Reconcile passes, by result",
            metrics.passes.clone(),
        );
        udn.register("errors", "Errors, by failing step", metrics.errors.clone());
        udn.register(
            "pass_duration_seconds",
            "Duration of a reconcile pass",
            metrics.pass_duration.clone(),
        );
        udn.register(
            "transaction_duration_seconds",
            "Duration of a pass's database writes, by database",
            metrics.transaction_duration.clone(),
        );
        udn.register(
            "operations",
            "OVSDB operations committed, by database",
            metrics.operations.clone(),
        );
        udn.register(
            "networks",
            "Networks rendered in the zone",
            metrics.networks.clone(),
        );
        registry
            .sub_registry_with_prefix("ovnkube_controller")
            .register(
                "udn_nbdb_programmed_duration_seconds",
                "NBDB programming duration for UDN network initialization, aggregated by topology",
                metrics.udn_nbdb_programmed.clone(),
            );
        metrics
    }

    /// Records a write of `ops` operations to `database` that took `took`.
    pub fn record_write(&self, database: &'static str, ops: usize, took: Duration) {
        let labels = DatabaseLabels { database };
        self.transaction_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        self.operations
            .get_or_create(&labels)
            .inc_by(u64::try_from(ops).unwrap_or(u64::MAX));
    }
}
