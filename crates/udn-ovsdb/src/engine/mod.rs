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
//! for dry runs); [`Engine::apply`] sends it.

mod apply;
mod client;
mod cursor;
mod desired;
mod diff;
mod display;
mod error;
mod hasher;
mod order;
mod owned;
mod parallel;
mod plan;
mod stale;
mod stamps;
mod validate;
mod view;

#[cfg(test)]
mod tests;

pub use apply::{ApplyPolicy, ApplyReport, TransactFailure, Transactor, UnitOutcome};
pub use desired::{DesiredRow, DesiredUnit, RowRef, Scope, UnitKey};
pub use error::{PlanError, RowAt, UnitError};
pub use plan::Plan;
pub use stamps::{ID_KEY, INDEXED_KEYS, OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY};
pub use view::OwnedRowsView;

/// The reconcile engine of one controller (the `k8s.ovn.org/owner-controller` it stamps
/// and recognises).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    controller: String,
}

impl Engine {
    /// An engine for `controller`.
    pub fn new(controller: &str) -> Self {
        Self {
            controller: controller.to_owned(),
        }
    }

    /// The controller name.
    pub fn controller(&self) -> &str {
        &self.controller
    }
}
