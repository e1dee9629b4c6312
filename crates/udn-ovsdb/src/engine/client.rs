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
    /// Plans `units` against the client's replica and applies the plan: one reconcile pass.
    /// Call after [`Client::wait_synced`] so the replica is current.
    pub async fn reconcile(
        &self,
        client: &Client,
        units: Vec<DesiredUnit>,
        scope: &Scope,
        policy: &ApplyPolicy,
    ) -> Result<ApplyReport, PlanError> {
        let plan = {
            let replica = client.replica();
            self.plan(&*replica, units, scope)?
        };
        Ok(self.apply(client, &plan, policy).await)
    }
}
