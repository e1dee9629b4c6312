//! What the reader task maintains for the client: the replica, the sync generation and the
//! last transaction id seen (for `monitor_cond_since` after a reconnect).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tracing::{debug, info};

use super::error::ProtocolError;
use super::monitor::MonitorMethod;
use crate::protocol::{MonitorSinceReply, MonitorUpdate, TableUpdates, Uuid};
use crate::replica::{Replica, ReplicaError};

/// How the replica was last synced with the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// Replaced by the server's whole contents.
    Full,
    /// Caught up with the changes since the last transaction it had seen
    /// (`monitor_cond_since` found that transaction).
    Incremental,
}

/// The replica and its bookkeeping, shared by the client handle and the reader task.
#[derive(Debug)]
pub(crate) struct SyncState {
    replica: RwLock<Replica>,
    generation: AtomicU64,
    last_txn_id: Mutex<Option<Uuid>>,
    last_sync: Mutex<Option<SyncKind>>,
    /// Counts the changes applied to the replica (updates and syncs), for waiters.
    changes: tokio::sync::watch::Sender<u64>,
}

impl SyncState {
    pub(crate) fn new(replica: Replica) -> Self {
        Self {
            replica: RwLock::new(replica),
            generation: AtomicU64::new(0),
            last_txn_id: Mutex::new(None),
            last_sync: Mutex::new(None),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// A receiver that sees the replica change (after the change is applied).
    pub(crate) fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Replica> {
        self.replica.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Replica> {
        self.replica.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The last transaction id the replica reflects, when the server gave one.
    pub(crate) fn last_txn_id(&self) -> Option<Uuid> {
        *self
            .last_txn_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How the replica was last synced.
    pub(crate) fn last_sync(&self) -> Option<SyncKind> {
        *self
            .last_sync
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn set_last_txn_id(&self, id: Option<Uuid>) {
        *self
            .last_txn_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = id;
    }

    /// Applies an update notification. On error the replica is no longer trustworthy: the next
    /// sync is a full one.
    pub(crate) fn apply_update(&self, update: MonitorUpdate) -> Result<(), ReplicaError> {
        let applied = self.write().apply_owned(update.updates);
        match applied {
            Ok(()) => {
                if update.last_txn_id.is_some() {
                    self.set_last_txn_id(update.last_txn_id);
                }
                self.changed();
                Ok(())
            }
            Err(error) => {
                self.set_last_txn_id(None);
                Err(error)
            }
        }
    }

    /// Loads the reply to a monitor request: the whole contents into `fresh`, which replaces the
    /// replica, or (when `monitor_cond_since` found our last transaction) the changes since
    /// then into the current replica. Bumps the generation.
    pub(crate) fn load_monitor_reply(
        &self,
        method: MonitorMethod,
        result: &[u8],
        fresh: Replica,
    ) -> Result<(), ProtocolError> {
        let (found, last_txn_id, updates) = match method {
            MonitorMethod::CondSince => {
                let reply = MonitorSinceReply::from_slice(result).map_err(ProtocolError::Update)?;
                (reply.found, Some(reply.last_txn_id), reply.updates)
            }
            MonitorMethod::Cond => (
                false,
                None,
                TableUpdates::from_v2_slice(result).map_err(ProtocolError::Update)?,
            ),
            MonitorMethod::Plain => (
                false,
                None,
                TableUpdates::from_v1_slice(result).map_err(ProtocolError::Update)?,
            ),
        };
        let changes = updates.len();
        let applied = {
            let mut replica = self.write();
            if !found {
                *replica = fresh;
            }
            replica.apply_owned(updates)
        };
        if let Err(error) = applied {
            self.set_last_txn_id(None);
            return Err(ProtocolError::Replica(error));
        }
        self.set_last_txn_id(last_txn_id);
        self.changed();
        *self
            .last_sync
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(if found {
            SyncKind::Incremental
        } else {
            SyncKind::Full
        });
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        if found {
            info!(
                method = method.as_str(),
                changes, generation, "ovsdb replica caught up incrementally"
            );
        } else {
            info!(
                method = method.as_str(),
                rows = changes,
                generation,
                "ovsdb replica loaded"
            );
        }
        debug!(last_txn_id = ?last_txn_id, "ovsdb monitor established");
        Ok(())
    }
}
