//! The Northbound reconcile engine: desired rows as plain data, diffed against the rows this
//! controller owns, applied atomically per unit of ownership in as few transactions as the
//! server handles fastest.
//!
//! Ownership lives in `external_ids` (upstream's markers): every row the engine writes
//! carries [`OWNER_CONTROLLER_KEY`], [`OWNER_TYPE_KEY`], [`OWNER_KEY`] and [`ID_KEY`] on top
//! of the caller's keys. Rows of other owners are never updated or deleted; only references
//! to our rows that are going away are removed from them.
//!
//! [`Engine::plan`] is pure (a view of the database in, a [`Plan`] out; `Display` prints it
//! for dry runs); [`Engine::apply`] sends it; [`Engine::reconcile`] does both and verifies.
//! An engine remembers the units it found converged, so that planning an unchanged desired
//! state against an unchanged database costs O(units), not a comparison of every row.

mod apply;
mod client;
mod compare;
mod converged;
mod cursor;
mod desired;
mod diff;
mod display;
mod error;
mod fingerprint;
mod hasher;
mod order;
mod owned;
mod parallel;
mod plan;
mod reconcile;
mod skip;
mod stale;
mod stamps;
mod validate;
mod view;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use converged::Converged;

pub use apply::{ApplyPolicy, ApplyReport, TransactFailure, Transactor, UnitOutcome};
pub use desired::{DesiredRow, DesiredUnit, RowRef, Scope, UnitKey};
pub use error::{PlanError, RowAt, UnitError};
pub use plan::Plan;
pub use stamps::{ID_KEY, INDEXED_KEYS, OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY};
pub use view::OwnedRowsView;

/// The reconcile engine of one controller (the `k8s.ovn.org/owner-controller` it stamps
/// and recognises), with its memory of converged units. Clones share that memory; use one
/// engine (or clones of it) per controller for the memory to help.
#[derive(Debug, Clone)]
pub struct Engine {
    controller: String,
    converged: Arc<Converged>,
}

impl PartialEq for Engine {
    /// Engines are equal when they are for the same controller (their memories only save
    /// work).
    fn eq(&self, other: &Self) -> bool {
        self.controller == other.controller
    }
}

impl Eq for Engine {}

impl Engine {
    /// An engine for `controller`, remembering nothing yet.
    pub fn new(controller: &str) -> Self {
        Self {
            controller: controller.to_owned(),
            converged: Arc::new(Converged::default()),
        }
    }

    /// The controller name.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// Forgets which units were found converged: the next plan compares every unit with the
    /// database (e.g. a periodic full resync, or after changing the view's versioning).
    pub fn forget_converged(&self) {
        self.converged.clear();
    }
}
