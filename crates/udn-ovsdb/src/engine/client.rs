//! The engine over the OVSDB client: the replica is the view plans are made against, the
//! client runs the transactions.

use std::sync::Arc;

use super::Engine;
use super::apply::{ApplyPolicy, ApplyReport, TransactFailure, Transactor};
use super::desired::{DesiredUnit, Scope};
use super::error::PlanError;
use super::view::OwnedRowsView;
use crate::client::{Client, ClientError};
use crate::protocol::{Operation, OperationResult, Row, TransactError, Uuid};
use crate::replica::Replica;
use crate::schema::DbSchema;

impl OwnedRowsView for Replica {
    fn schema(&self) -> &DbSchema {
        Replica::schema(self)
    }

    fn row(&self, table: &str, uuid: &Uuid) -> Option<&Row> {
        self.get(table, uuid)
    }

    fn find(&self, table: &str, key: &str, value: &str) -> Vec<Uuid> {
        Replica::find(self, table, key, value)
    }

    fn referrers(&self, target: &Uuid) -> Vec<(String, Uuid, String)> {
        Replica::referrers(self, target)
    }

    fn version(&self, key: &str, value: &str) -> Option<u64> {
        Replica::version(self, key, value)
    }

    fn values(&self, table: &str, key: &str) -> Option<Vec<&str>> {
        Some(self.indexed_values(table, key)?.collect())
    }

    fn controller_rows(&self, table: &str, controller: &str) -> Option<Vec<Uuid>> {
        self.find_indexed(table, super::OWNER_CONTROLLER_KEY, controller)
    }
}

impl Transactor for Client {
    async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, TransactFailure> {
        Client::transact(self, ops)
            .await
            .map_err(|error| match error {
                ClientError::Transact(
                    rejected @ (TransactError::Operation { .. } | TransactError::Commit { .. }),
                ) => TransactFailure::Rejected(rejected),
                other => TransactFailure::Unavailable(Arc::new(other)),
            })
    }
}

impl Engine {
    /// One reconcile pass against the client's replica: plan, apply, verify the units
    /// applied (see [`Engine::reconcile_with`]). Call after [`Client::wait_synced`] so the
    /// replica is current. Use the same engine (or clones) for every pass: it remembers the
    /// units it verified, and a pass with an unchanged desired state and database then
    /// costs O(units).
    pub async fn reconcile(
        &self,
        client: &Client,
        units: Vec<DesiredUnit>,
        scope: &Scope,
        policy: &ApplyPolicy,
    ) -> Result<ApplyReport, PlanError> {
        self.reconcile_with(client, || client.replica(), units, scope, policy)
            .await
    }
}
