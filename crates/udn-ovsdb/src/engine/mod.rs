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
//!
//! A row belongs to the unit its stamps name: `k8s.ovn.org/owner` is the unit name and
//! `k8s.ovn.org/owner-type` the unit's owner type, or a row owner type declared for that type
//! with [`Engine::with_row_owner_type`] (rows of non-root tables only, see
//! [`DesiredRow::owner_type`](DesiredRow#structfield.owner_type)). Such a row is found,
//! compared, fingerprinted and removed as any row of its unit.

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
pub(crate) mod hasher;
mod order;
mod owned;
mod owner_types;
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
use owner_types::RowOwnerTypes;

pub use apply::{ApplyPolicy, ApplyReport, TransactFailure, Transactor, UnitOutcome};
pub use desired::{DesiredRow, DesiredUnit, RowRef, Scope, UnitKey};
pub use error::{PlanError, RowAt, UnitError};
pub use plan::Plan;
pub use reconcile::PlannedPass;
pub use stamps::{ID_KEY, INDEXED_KEYS, OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY};
pub use view::OwnedRowsView;

/// The reconcile engine of one controller (the `k8s.ovn.org/owner-controller` it stamps
/// and recognises), with its memory of converged units. Clones share that memory; use one
/// engine (or clones of it) per controller for the memory to help.
#[derive(Debug, Clone)]
pub struct Engine {
    controller: String,
    row_owner_types: Arc<RowOwnerTypes>,
    converged: Arc<Converged>,
}

impl PartialEq for Engine {
    /// Engines are equal when they are for the same controller with the same row owner
    /// types (their memories only save work).
    fn eq(&self, other: &Self) -> bool {
        self.controller == other.controller && self.row_owner_types == other.row_owner_types
    }
}

impl Eq for Engine {}

impl Engine {
    /// An engine for `controller`, remembering nothing yet.
    pub fn new(controller: &str) -> Self {
        Self {
            controller: controller.to_owned(),
            row_owner_types: Arc::new(RowOwnerTypes::default()),
            converged: Arc::new(Converged::default()),
        }
    }

    /// This engine with rows stamped with owner type `row_owner_type` belonging to units of
    /// owner type `unit_owner_type` (replacing an earlier declaration of `row_owner_type`):
    /// desired rows of those units may carry it ([`DesiredRow::owner_type`](
    /// DesiredRow#structfield.owner_type)), and rows stamped with it are found as rows of the
    /// unit their `k8s.ovn.org/owner` names. `row_owner_type` cannot be a unit's owner type
    /// nor in a [`Scope`]; rows stamped with a type no longer declared belong to no unit.
    /// The engine returned remembers no converged units (declarations change which rows a
    /// unit owns), and shares no memory with the engine it was made from.
    #[must_use]
    pub fn with_row_owner_type(mut self, row_owner_type: &str, unit_owner_type: &str) -> Self {
        Arc::make_mut(&mut self.row_owner_types).declare(row_owner_type, unit_owner_type);
        self.converged = Arc::new(Converged::default());
        self
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
