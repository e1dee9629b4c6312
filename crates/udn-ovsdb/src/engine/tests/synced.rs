//! A memory database with a real [`Replica`] kept in step with it, as the client keeps its
//! replica: every committed transaction and every change made behind the engine's back is
//! sent to the replica as row updates before the next read. The engine plans against the
//! replica (so it skips converged units); the database is the truth the tests check.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use super::block_on;
use super::memory::{MemoryDb, Shared};
use crate::engine::{
    ApplyPolicy, ApplyReport, DesiredUnit, Engine, INDEXED_KEYS, Plan, Scope, TransactFailure,
    Transactor,
};
use crate::protocol::{Operation, OperationResult, Row, RowUpdate, TableUpdates, Uuid};
use crate::replica::Replica;

type Tables = BTreeMap<String, BTreeMap<Uuid, Row>>;

#[derive(Debug)]
pub(crate) struct Synced {
    pub(crate) db: Shared,
    replica: RwLock<Replica>,
    /// What the replica was last given.
    shown: Mutex<Tables>,
}

impl Synced {
    pub(crate) fn new(db: MemoryDb) -> Self {
        let replica = Replica::new(Arc::new(db.schema.clone()), &INDEXED_KEYS);
        let synced = Self {
            db: Shared::new(db),
            replica: RwLock::new(replica),
            shown: Mutex::new(Tables::new()),
        };
        synced.sync();
        synced
    }

    pub(crate) fn replica(&self) -> RwLockReadGuard<'_, Replica> {
        self.replica.read().unwrap()
    }

    /// Sends the replica what changed in the database since the last sync: changed and new
    /// rows whole, deleted rows as deletes (one update, as one notification).
    pub(crate) fn sync(&self) {
        let db = self.db.db.lock().unwrap();
        let mut shown = self.shown.lock().unwrap();
        let mut updates = TableUpdates::default();
        for (table, rows) in &db.tables {
            let before = shown.get(table);
            for (uuid, row) in rows {
                if before.and_then(|b| b.get(uuid)) != Some(row) {
                    updates
                        .tables
                        .entry(table.clone())
                        .or_default()
                        .insert(*uuid, RowUpdate::Insert(row.clone()));
                }
            }
        }
        for (table, rows) in shown.iter() {
            for uuid in rows.keys() {
                if !db.tables.get(table).is_some_and(|t| t.contains_key(uuid)) {
                    updates
                        .tables
                        .entry(table.clone())
                        .or_default()
                        .insert(*uuid, RowUpdate::Delete);
                }
            }
        }
        self.replica.write().unwrap().apply_owned(updates).unwrap();
        *shown = db.tables.clone();
    }

    /// A change made by another writer (a transaction of its own), then synced.
    pub(crate) fn drift(&self, ops: Vec<Operation>) {
        self.db.db.lock().unwrap().transact(ops).unwrap();
        self.sync();
    }

    /// A full resync: the replica cleared and reloaded (a reconnect to a standalone server).
    pub(crate) fn resync(&self) {
        self.replica.write().unwrap().clear();
        self.shown.lock().unwrap().clear();
        self.sync();
    }

    /// A full resync into a new replica (what the client does).
    pub(crate) fn replace_replica(&self) {
        let schema = Arc::new(self.db.db.lock().unwrap().schema.clone());
        *self.replica.write().unwrap() = Replica::new(schema, &INDEXED_KEYS);
        self.shown.lock().unwrap().clear();
        self.sync();
    }

    pub(crate) fn plan(&self, engine: &Engine, units: Vec<DesiredUnit>, scope: &Scope) -> Plan {
        engine.plan(&*self.replica(), units, scope).unwrap()
    }

    pub(crate) fn reconcile(
        &self,
        engine: &Engine,
        units: Vec<DesiredUnit>,
        scope: &Scope,
    ) -> ApplyReport {
        let report = block_on(engine.reconcile_with(
            self,
            || self.replica(),
            units,
            scope,
            &ApplyPolicy::default(),
        ))
        .unwrap();
        assert!(report.is_success(), "{report:?}");
        report
    }

    /// Whether the database holds exactly `units` (and, with `scope`, nothing else of its
    /// type): a plan by an engine that remembers nothing, against the database itself.
    pub(crate) fn holds(&self, units: Vec<DesiredUnit>, scope: &Scope) -> Result<(), String> {
        self.holds_with(&super::engine(), units, scope)
    }

    /// [`Synced::holds`] planned by `fresh`, an engine that remembers nothing (e.g. one with
    /// row owner types).
    pub(crate) fn holds_with(
        &self,
        fresh: &Engine,
        units: Vec<DesiredUnit>,
        scope: &Scope,
    ) -> Result<(), String> {
        let db = self.db.db.lock().unwrap();
        let plan = fresh.plan(&*db, units, scope).unwrap();
        assert_eq!(plan.skipped_units(), 0);
        if plan.is_empty() {
            Ok(())
        } else {
            Err(plan.to_string())
        }
    }
}

impl Transactor for Synced {
    async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, TransactFailure> {
        let result = self.db.transact(ops).await;
        self.sync();
        result
    }
}

/// The replica's version of the owner name `owner`.
pub(crate) fn version(synced: &Synced, owner: &str) -> Option<u64> {
    synced.replica().version(crate::engine::OWNER_KEY, owner)
}
