//! Networks that are gone or changed incompatibly are torn down: every row their
//! controller owns is deleted (upstream `Cleanup()` of the network controller, and at start
//! `CleanupStaleNetworks` for controllers of networks that no longer exist), then an
//! incompatible network is built again by a fresh engine.

use std::collections::BTreeSet;

use udn_ovsdb::engine::{ApplyReport, OWNER_CONTROLLER_KEY, PlanError};
use udn_ovsdb::replica::Replica;

use super::Zone;
use super::clients::NB_TABLES;
use crate::topology::{network_engine, network_scope};

/// Suffix of every network controller's name.
const CONTROLLER_SUFFIX: &str = "-network-controller";

/// The network controllers owning rows in the Northbound database.
pub(crate) fn controllers_in(replica: &Replica) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for table in NB_TABLES {
        if let Some(values) = replica.indexed_values(table, OWNER_CONTROLLER_KEY) {
            out.extend(
                values
                    .filter(|v| v.ends_with(CONTROLLER_SUFFIX))
                    .map(str::to_owned),
            );
        }
    }
    out
}

impl Zone {
    /// Deletes every row `controller` owns.
    pub(crate) async fn teardown(&mut self, controller: &str) -> Result<ApplyReport, PlanError> {
        let engine = self
            .engines
            .remove(controller)
            .unwrap_or_else(|| network_engine(controller));
        engine.forget_converged();
        self.unit_keys.remove(controller);
        engine
            .reconcile(&self.nb, Vec::new(), &network_scope(), &self.policy)
            .await
    }
}
