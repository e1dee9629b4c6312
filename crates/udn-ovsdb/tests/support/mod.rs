//! What the typed-table round trips against a real server share: a client monitoring the
//! whole vendored database, a transaction of typed inserts referring to each other by named
//! UUID, and the typed read-back from the client's replica.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::protocol::{Atom, Operation, OperationResult, Uuid, Value};
use udn_ovsdb::schema::{DbSchema, Requirements};
use udn_ovsdb::table::Table;
use udn_ovsdb::testing::{OvsdbServer, Vendored};

/// A client of `server` (started with `database`) monitoring every table and column.
pub(crate) async fn connect(server: &OvsdbServer, database: Vendored) -> Client {
    let schema = DbSchema::from_text(database.schema_json()).unwrap();
    let mut config = ClientConfig::new(server.endpoint(), database.database());
    config.monitor = Requirements::everything_in(&schema);
    config.request_timeout = Duration::from_secs(10);
    Client::connect(config).await.unwrap()
}

/// One transaction under construction: typed rows with named-UUID references.
#[derive(Debug, Default)]
pub(crate) struct Txn {
    ops: Vec<Operation>,
    names: Vec<String>,
}

impl Txn {
    /// Inserts `value` as `name`; `refs` sets reference columns to rows inserted earlier.
    pub(crate) fn insert<T: Table>(&mut self, name: &str, value: &T, refs: &[(&str, &[&str])]) {
        let mut row = value.to_row();
        for (column, targets) in refs {
            let atoms: Vec<Atom> = targets
                .iter()
                .map(|t| Atom::NamedUuid((*t).to_owned()))
                .collect();
            row.insert((*column).to_owned(), Value::Set(atoms));
        }
        self.ops.push(Operation::Insert {
            table: T::TABLE.to_owned(),
            row,
            uuid_name: Some(name.to_owned()),
            uuid: None,
        });
        self.names.push(name.to_owned());
    }

    /// Adds an operation that is not an insert (e.g. a mutate of an existing row).
    #[allow(dead_code, reason = "not every round trip changes an existing row")]
    pub(crate) fn other(&mut self, op: Operation) {
        self.ops.push(op);
    }

    /// Commits the transaction; returns the UUID of every inserted row by name.
    pub(crate) async fn commit(self, client: &Client) -> BTreeMap<String, Uuid> {
        let results = client.transact(self.ops.clone()).await.unwrap();
        let inserted =
            self.ops.iter().zip(&results).filter_map(|(op, result)| {
                matches!(op, Operation::Insert { .. }).then_some(result)
            });
        self.names
            .iter()
            .zip(inserted)
            .map(|(name, result)| match result {
                OperationResult::Inserted(uuid) => (name.clone(), *uuid),
                other => panic!("insert {name}: {other:?}"),
            })
            .collect()
    }
}

/// The row `uuid` of `T`'s table in the client's replica, typed.
pub(crate) fn read<T: Table>(client: &Client, uuid: Uuid) -> T {
    let replica = client.replica();
    let row = replica
        .get(T::TABLE, &uuid)
        .unwrap_or_else(|| panic!("{} row {uuid} missing from the replica", T::TABLE));
    let read = T::from_row(Some(uuid), row).unwrap();
    assert_eq!(read.uuid(), Some(uuid));
    read
}

/// Checks that the row inserted as `name` reads back as `expected` once `fill` has set the
/// references (UUIDs by name) the server assigned, column for column.
pub(crate) fn check<T: Table + PartialEq + Debug>(
    client: &Client,
    uuids: &BTreeMap<String, Uuid>,
    name: &str,
    mut expected: T,
    fill: impl FnOnce(&mut T, &dyn Fn(&str) -> Uuid),
) {
    let lookup = |n: &str| uuids[n];
    fill(&mut expected, &lookup);
    let read: T = read(client, uuids[name]);
    assert_eq!(read.to_row(), expected.to_row(), "table {}", T::TABLE);
}
