//! Prometheus metrics of the node agent (`udn_node_*`). Labels are bounded: the CNI command
//! (the spec's six, or `other`), the result (`success`, `error`), and a fixed error kind.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `command` and `result` of a CNI request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CniLabels {
    /// `ADD`, `DEL`, `CHECK`, `GC`, `STATUS`, `VERSION` or `other`.
    pub command: &'static str,
    /// `success` or `error`.
    pub result: &'static str,
}

impl CniLabels {
    /// The labels of `command` (any text: unknown commands count as `other`).
    pub fn new(command: &str, ok: bool) -> Self {
        let command = match command {
            "ADD" => "ADD",
            "DEL" => "DEL",
            "CHECK" => "CHECK",
            "GC" => "GC",
            "STATUS" => "STATUS",
            "VERSION" => "VERSION",
            _ => "other",
        };
        Self {
            command,
            result: if ok { "success" } else { "error" },
        }
    }
}

/// Error `kind` (a fixed word per failing step).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// `ovs`, `nft`, `netlink`, `annotation`.
    pub kind: &'static str,
}

/// Every metric of the node agent.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// CNI request latency on the server, by command and result.
    pub cni_request_duration: Family<CniLabels, Histogram>,
    /// CNI request latency as the shim measured it (its `/metrics` reports).
    pub cni_shim_duration: Family<CniLabels, Histogram>,
    /// Pod interfaces wired by CNI ADD (an ADD of a primary-UDN pod wires two).
    pub pods_wired: Counter,
    /// Pod interfaces this agent has on `br-int` now.
    pub pod_interfaces: Gauge,
    /// Errors by step.
    pub errors: Family<ErrorLabels, Counter>,
}

fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 18))
}

impl Metrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            cni_request_duration: Family::new_with_constructor(latency),
            cni_shim_duration: Family::new_with_constructor(latency),
            pods_wired: Counter::default(),
            pod_interfaces: Gauge::default(),
            errors: Family::default(),
        };
        let registry = registry.sub_registry_with_prefix("udn_node");
        registry.register(
            "cni_request_duration_seconds",
            "CNI request latency on the server, by command and result",
            metrics.cni_request_duration.clone(),
        );
        registry.register(
            "cni_shim_request_duration_seconds",
            "CNI request latency as ovn-k8s-cni-overlay measured it, by command and result",
            metrics.cni_shim_duration.clone(),
        );
        registry.register(
            "pods_wired",
            "Pod interfaces wired by CNI ADD",
            metrics.pods_wired.clone(),
        );
        registry.register(
            "pod_interfaces",
            "OVS interfaces carrying a CNI sandbox id (the pod interfaces on br-int)",
            metrics.pod_interfaces.clone(),
        );
        registry.register("errors", "Errors by step", metrics.errors.clone());
        metrics
    }

    /// Records a CNI request the server answered.
    pub fn record_request(&self, command: &str, ok: bool, took: Duration) {
        self.cni_request_duration
            .get_or_create(&CniLabels::new(command, ok))
            .observe(took.as_secs_f64());
    }

    /// Counts an error of `kind`.
    pub fn error(&self, kind: &'static str) {
        self.errors.get_or_create(&ErrorLabels { kind }).inc();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn labels_stay_bounded() {
        assert_eq!(CniLabels::new("ADD", true).command, "ADD");
        assert_eq!(CniLabels::new("$(rm -rf)", false).command, "other");
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        metrics.record_request("ADD", true, Duration::from_millis(3));
        metrics.error("ovs");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(
                r#"udn_node_cni_request_duration_seconds_count{command="ADD",result="success"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"udn_node_errors_total{kind="ovs"} 1"#),
            "{text}"
        );
    }
}
