//! One reconcile pass: plan against a view, apply, then verify the units the apply changed
//! (a full comparison of those units only), so that the next pass with the same desired
//! state skips them.

use std::ops::Deref;

use tracing::{debug, warn};

use super::Engine;
use super::apply::{ApplyPolicy, ApplyReport, Transactor, UnitOutcome};
use super::desired::{DesiredUnit, Scope};
use super::error::PlanError;
use super::parallel::drop_aside;
use super::plan::Pass;
use super::view::OwnedRowsView;

/// A reconcile pass planned but not applied yet ([`Engine::plan_pass`]): the plan, and the
/// units it was made from with their fingerprints, for the verification after the apply.
#[derive(Debug)]
pub struct PlannedPass {
    plan: super::plan::Plan,
    kept: Vec<(DesiredUnit, u128)>,
}

impl PlannedPass {
    /// The plan.
    pub fn plan(&self) -> &super::plan::Plan {
        &self.plan
    }

    /// Operations in the plan.
    pub fn op_count(&self) -> usize {
        self.plan.op_count()
    }
}

impl Engine {
    /// One reconcile pass: plans `units` against the view `view()` returns (held for the
    /// whole plan, so the plan sees one consistent state), applies the plan through
    /// `transactor`, then plans once more, against a fresh view, the units whose
    /// operations were committed ([`Scope::Units`], a full comparison of those units only).
    /// That verification finds nothing to do when the view shows the commits (the client's
    /// replica does once `transact` returns), and the units are remembered as converged:
    /// the next pass with the same desired state and no change in the database skips them.
    /// When it does find something (another writer changed the rows meanwhile) it is logged
    /// and left to the next pass: a pass never loops. The report is the apply's.
    ///
    /// The same as [`Engine::plan_pass`], [`Engine::apply_pass`] and
    /// [`Engine::verify_pass`] in a row; callers writing many engines' plans at once call
    /// those three themselves (plan all, send all, verify once everything is answered).
    pub async fn reconcile_with<T, G, V>(
        &self,
        transactor: &T,
        view: impl Fn() -> G,
        units: Vec<DesiredUnit>,
        scope: &Scope,
        policy: &ApplyPolicy,
    ) -> Result<ApplyReport, PlanError>
    where
        T: Transactor,
        G: Deref<Target = V>,
        V: OwnedRowsView,
    {
        let planned = {
            let view = view();
            self.plan_pass(&*view, units, scope)?
        };
        let report = self.apply_pass(transactor, &planned, policy).await;
        self.verify_pass(view, planned, &report);
        Ok(report)
    }

    /// Plans `units` against `view` (pure): the first step of [`Engine::reconcile_with`].
    pub fn plan_pass<V: OwnedRowsView>(
        &self,
        view: &V,
        units: Vec<DesiredUnit>,
        scope: &Scope,
    ) -> Result<PlannedPass, PlanError> {
        let (plan, kept) = self.plan_units(view, units, scope, None, Pass::Reconcile)?;
        Ok(PlannedPass { plan, kept })
    }

    /// Sends `planned`'s plan ([`Engine::apply`]): the second step.
    pub async fn apply_pass<T: Transactor>(
        &self,
        transactor: &T,
        planned: &PlannedPass,
        policy: &ApplyPolicy,
    ) -> ApplyReport {
        self.apply(transactor, &planned.plan, policy).await
    }

    /// Verifies the units of `planned` that `report` says were applied against the view
    /// `view()` returns, remembering them as converged when it shows their commits (see
    /// [`Engine::reconcile_with`]): the last step. Nothing else is sent.
    pub fn verify_pass<G, V>(
        &self,
        view: impl Fn() -> G,
        planned: PlannedPass,
        report: &ApplyReport,
    ) where
        G: Deref<Target = V>,
        V: OwnedRowsView,
    {
        let PlannedPass { plan, kept } = planned;
        let ops = plan.op_count();
        drop_aside(plan, ops);
        let (applied, fingerprints): (Vec<DesiredUnit>, Vec<u128>) = kept
            .into_iter()
            .filter(|(unit, _)| {
                matches!(
                    report.units.get(&unit.key),
                    Some(UnitOutcome::Applied { .. })
                )
            })
            .unzip();
        if applied.is_empty() {
            return;
        }
        let units = applied.len();
        let verified = {
            let view = view();
            self.plan_units(
                &*view,
                applied,
                &Scope::Units,
                Some(fingerprints),
                Pass::Verify,
            )
        };
        let controller = self.controller.as_str();
        match verified {
            Ok((plan, _)) if plan.is_empty() => {
                debug!(controller, units, "ovsdb units verified after apply");
            }
            Ok((plan, _)) => {
                let changed = plan
                    .operations()
                    .map(|(key, _)| key)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                warn!(
                    controller,
                    units,
                    changed,
                    ops = plan.op_count(),
                    "ovsdb units differ from the desired state right after apply, left to the next reconcile"
                );
            }
            Err(error) => {
                warn!(controller, units, error = %error, "ovsdb units applied could not be verified, left to the next reconcile");
            }
        }
    }
}
