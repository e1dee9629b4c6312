//! What every controller gets: the client, the configuration, metrics and the event
//! reporter identity. No global state: one `Context` is built in `run` and shared.

use std::sync::Arc;

use kube::Client;
use kube::runtime::events::Reporter;

use crate::config::Config;
use crate::metrics::Metrics;

/// Field manager / event reporter of the UDN controller (upstream name).
pub const UDN_CONTROLLER: &str = "user-defined-network-controller";
/// Field manager / event reporter of the CUDN controller (upstream name).
pub const CUDN_CONTROLLER: &str = "cluster-user-defined-network-controller";
/// Field manager of node and pod allocations.
pub const CLUSTER_MANAGER: &str = "udn-cluster-manager";

/// Shared by every controller.
#[derive(Clone)]
pub struct Context {
    /// API client.
    pub client: Client,
    /// Configuration.
    pub config: Arc<Config>,
    /// Metrics.
    pub metrics: Metrics,
    /// Event reporter (controller name + instance).
    pub reporter: Reporter,
}

impl Context {
    /// A context for `client`.
    pub fn new(client: Client, config: Config, metrics: Metrics, instance: Option<String>) -> Self {
        Self {
            client,
            config: Arc::new(config),
            metrics,
            reporter: Reporter {
                controller: CLUSTER_MANAGER.to_owned(),
                instance,
            },
        }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("config", &self.config)
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}
