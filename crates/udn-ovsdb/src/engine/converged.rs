//! What the engine remembers between plans, so that an unchanged desired state against an
//! unchanged database costs O(units) instead of a comparison of every row:
//!
//! - per desired unit found with nothing to do: the fingerprint of its desired rows and the
//!   view's version of its owner name ([`OwnedRowsView::version`]) at that comparison. A
//!   unit with the same fingerprint and version again is skipped: nothing it owns changed
//!   and it wants the same, so the comparison would again find nothing to do;
//! - per (owner type, owner name) present in the database but not desired, found to own no
//!   rows of this controller of that unit type (stamped with the type or a row owner type
//!   declared for it): the version of the name it was found at, so that a scope of owner
//!   types ([`Scope::OwnerType`](super::Scope::OwnerType),
//!   [`Scope::OwnerTypes`](super::Scope::OwnerTypes)) does not read those rows again.
//!
//! Versions never repeat (not across resyncs either), so an entry can only match while its
//! finding still holds; entries are facts, and a stale one merely fails to match.
//!
//! A comparison also reads rows that do not carry the unit's name: rows of other units it
//! refers to, and rows claiming one of its row ids under another name. A referred row goes
//! only with a change to the referring row (the server drops a weak reference; a strong one
//! holds it) or by a plan removing it, and a plan removing a row a skipped unit refers to
//! compares that unit too. A row claiming a unit's row id under another owner name (only
//! another writer makes one) is that name's: it goes when that unit is compared, or with a
//! scope of owner types when the unit is found gone.
//!
//! Versions are per owner name, shared by the units of every owner type with that name: a
//! change to one moves the version of all of them, which costs a comparison, never a wrong
//! skip.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::desired::{DesiredUnit, UnitKey};
use super::fingerprint::{FingerprintKeys, fingerprint};
use super::hasher::{FastMap, FastSet};
use super::parallel::{map_ranges, split, workers};
use super::stamps::OWNER_KEY;
use super::view::OwnedRowsView;

/// The converged-units memory of an engine (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct Converged {
    keys: FingerprintKeys,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Unit -> (fingerprint, version) of a comparison that found nothing to do.
    units: FastMap<UnitKey, (u128, u64)>,
    /// (owner type, name) -> version at which the name owned none of our rows of the type.
    foreign: FastMap<UnitKey, u64>,
}

/// What a plan knows of its desired units before comparing them.
#[derive(Debug)]
pub(crate) struct Known {
    pub(crate) fingerprints: Vec<u128>,
    /// The view's version of each unit's owner name.
    pub(crate) versions: Vec<Option<u64>>,
    /// Units not compared: converged at this fingerprint and version.
    pub(crate) skipped: Vec<bool>,
}

impl Known {
    /// Units skipped.
    pub(crate) fn skipped_count(&self) -> usize {
        self.skipped.iter().filter(|s| **s).count()
    }
}

/// What a successful plan found, to remember.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Units compared with nothing to do: (unit, fingerprint, version).
    pub(crate) converged: Vec<(UnitKey, u128, u64)>,
    /// With a scope of owner types: the types, the units desired, and the (type, name)
    /// present but owning none of our rows of that type, with their versions.
    pub(crate) scope: Option<ScopeFindings>,
}

/// What a plan covering whole owner types found.
#[derive(Debug)]
pub(crate) struct ScopeFindings {
    pub(crate) owner_types: Vec<String>,
    pub(crate) desired: FastSet<UnitKey>,
    pub(crate) foreign: Vec<(UnitKey, u64)>,
}

impl Converged {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fingerprints (unless `given`), versions and which units to skip.
    pub(crate) fn known<V: OwnedRowsView>(
        &self,
        view: &V,
        controller: &str,
        units: &[DesiredUnit],
        given: Option<Vec<u128>>,
    ) -> Known {
        let fingerprints = match given {
            Some(given) if given.len() == units.len() => given,
            _ => {
                let weights: Vec<usize> = units.iter().map(|u| u.rows.len()).collect();
                let ranges = split(&weights, workers(weights.iter().sum()));
                map_ranges(&ranges, |range| {
                    units
                        .get(range)
                        .unwrap_or_default()
                        .iter()
                        .map(|unit| fingerprint(&self.keys, controller, unit))
                        .collect::<Vec<_>>()
                })
                .into_iter()
                .flatten()
                .collect()
            }
        };
        let versions: Vec<Option<u64>> = units
            .iter()
            .map(|unit| view.version(OWNER_KEY, &unit.key.name))
            .collect();
        let state = self.state();
        let skipped = units
            .iter()
            .zip(&fingerprints)
            .zip(&versions)
            .map(|((unit, fp), version)| {
                version.is_some_and(|v| state.units.get(&unit.key) == Some(&(*fp, v)))
            })
            .collect();
        Known {
            fingerprints,
            versions,
            skipped,
        }
    }

    /// Whether `key` (owner type, name) was found to own none of our rows at `version`.
    pub(crate) fn is_foreign(&self, key: &UnitKey, version: Option<u64>) -> bool {
        version.is_some_and(|v| self.state().foreign.get(key) == Some(&v))
    }

    /// Remembers what a successful plan found.
    pub(crate) fn record(&self, findings: Findings) {
        let mut state = self.state();
        if let Some(scope) = findings.scope {
            // Forget units of the types that are no longer desired, and names gone.
            let covered = |key: &UnitKey| scope.owner_types.contains(&key.owner_type);
            state
                .units
                .retain(|key, _| !covered(key) || scope.desired.contains(key));
            state.foreign.retain(|key, _| !covered(key));
            state.foreign.extend(scope.foreign);
        }
        for (key, fingerprint, version) in findings.converged {
            state.units.insert(key, (fingerprint, version));
        }
    }

    /// Forgets everything: the next plan compares every unit.
    pub(crate) fn clear(&self) {
        let mut state = self.state();
        state.units.clear();
        state.foreign.clear();
    }
}
