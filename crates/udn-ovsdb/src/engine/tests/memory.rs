//! A small in-memory OVSDB for the engine's pure tests: enough of RFC 7047 transaction
//! semantics (named UUIDs defined before use, update/mutate/delete by `_uuid`, strong and
//! weak references, garbage collection of unreferenced non-root rows, unique indexes,
//! atomic commit) to check that plans do what they claim.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use crate::engine::{OwnedRowsView, TransactFailure, Transactor};
use crate::protocol::{
    Atom, Condition, Mutator, Operation, OperationError, OperationResult, Row, TransactError, Uuid,
    Value,
};
use crate::schema::{DbSchema, RefType};

#[derive(Debug, Clone)]
pub(crate) struct MemoryDb {
    pub(crate) schema: DbSchema,
    pub(crate) tables: BTreeMap<String, BTreeMap<Uuid, Row>>,
    next: u128,
}

fn fail(error: &str, details: String) -> OperationError {
    OperationError {
        error: error.to_owned(),
        details: Some(details),
    }
}

impl MemoryDb {
    pub(crate) fn nb() -> Self {
        Self {
            schema: DbSchema::from_text(crate::nb::SCHEMA_JSON).unwrap(),
            tables: BTreeMap::new(),
            next: 0x1000,
        }
    }

    /// Inserts a row directly (as another client would), returning its UUID.
    pub(crate) fn put(&mut self, table: &str, row: Row) -> Uuid {
        self.next += 1;
        let uuid = Uuid::from_u128(self.next);
        let row = self.normalize(table, row).unwrap();
        self.tables
            .entry(table.to_owned())
            .or_default()
            .insert(uuid, row);
        uuid
    }

    pub(crate) fn rows_of(&self, table: &str) -> Vec<(&Uuid, &Row)> {
        self.tables
            .get(table)
            .map(|t| t.iter().collect())
            .unwrap_or_default()
    }

    pub(crate) fn row_exists(&self, table: &str, uuid: Uuid) -> bool {
        self.tables
            .get(table)
            .is_some_and(|t| t.contains_key(&uuid))
    }

    pub(crate) fn count(&self, table: &str) -> usize {
        self.tables.get(table).map_or(0, BTreeMap::len)
    }

    pub(crate) fn total(&self) -> usize {
        self.tables.values().map(BTreeMap::len).sum()
    }

    fn normalize(&self, table: &str, row: Row) -> Result<Row, OperationError> {
        let t = self
            .schema
            .table(table)
            .ok_or_else(|| fail("unknown table", table.to_owned()))?;
        row.into_iter()
            .map(|(c, v)| {
                let col = t
                    .columns
                    .get(&c)
                    .ok_or_else(|| fail("unknown column", format!("{table}.{c}")))?;
                let v = col
                    .ty
                    .normalize(v)
                    .map_err(|e| fail("constraint violation", e.to_string()))?;
                Ok((c, v))
            })
            .collect()
    }

    fn target(where_: &[Condition]) -> Result<Uuid, OperationError> {
        match where_ {
            [
                Condition {
                    column,
                    value: Value::Atom(Atom::Uuid(u)),
                    ..
                },
            ] if column == "_uuid" => Ok(*u),
            _ => Err(fail("syntax error", "only where _uuid == uuid".to_owned())),
        }
    }

    fn resolve(value: Value, names: &HashMap<String, Uuid>) -> Result<Value, OperationError> {
        let atom = |a: Atom| match a {
            Atom::NamedUuid(n) => names.get(&n).map(|u| Atom::Uuid(*u)).ok_or_else(|| {
                fail(
                    "referential integrity violation",
                    format!("named-uuid {n} used before it was defined"),
                )
            }),
            other => Ok(other),
        };
        Ok(match value {
            Value::Atom(a) => Value::Atom(atom(a)?),
            Value::Set(s) => Value::Set(s.into_iter().map(atom).collect::<Result<_, _>>()?),
            Value::Map(m) => Value::Map(
                m.into_iter()
                    .map(|(k, v)| Ok((atom(k)?, atom(v)?)))
                    .collect::<Result<_, OperationError>>()?,
            ),
        })
    }

    fn execute(
        &mut self,
        op: Operation,
        names: &mut HashMap<String, Uuid>,
    ) -> Result<OperationResult, OperationError> {
        match op {
            Operation::Insert {
                table,
                row,
                uuid_name,
                uuid: requested,
            } => {
                let row = row
                    .into_iter()
                    .map(|(c, v)| Ok((c, Self::resolve(v, names)?)))
                    .collect::<Result<Row, OperationError>>()?;
                let row = self.normalize(&table, row)?;
                self.next += 1;
                let uuid = requested.unwrap_or(Uuid::from_u128(self.next));
                if self.tables.values().any(|rows| rows.contains_key(&uuid)) {
                    return Err(fail("duplicate uuid", uuid.to_string()));
                }
                if let Some(name) = uuid_name
                    && names.insert(name.clone(), uuid).is_some()
                {
                    return Err(fail("duplicate uuid-name", name));
                }
                self.tables.entry(table).or_default().insert(uuid, row);
                Ok(OperationResult::Inserted(uuid))
            }
            Operation::Update { table, where_, row } => {
                let uuid = Self::target(&where_)?;
                let row = row
                    .into_iter()
                    .map(|(c, v)| Ok((c, Self::resolve(v, names)?)))
                    .collect::<Result<Row, OperationError>>()?;
                let row = self.normalize(&table, row)?;
                let Some(existing) = self.tables.get_mut(&table).and_then(|t| t.get_mut(&uuid))
                else {
                    return Ok(OperationResult::Count(0));
                };
                existing.extend(row);
                Ok(OperationResult::Count(1))
            }
            Operation::Mutate {
                table,
                where_,
                mutations,
            } => {
                let uuid = Self::target(&where_)?;
                let schema = self.schema.clone();
                let Some(existing) = self.tables.get_mut(&table).and_then(|t| t.get_mut(&uuid))
                else {
                    return Ok(OperationResult::Count(0));
                };
                for m in mutations {
                    let ty = &schema.column(&table, &m.column).unwrap().ty;
                    let operand = Self::resolve(m.value, names)?;
                    let current = existing
                        .get(&m.column)
                        .cloned()
                        .unwrap_or_else(|| ty.default_value());
                    let next = match (current, operand, m.mutator) {
                        (Value::Set(mut have), operand, Mutator::Insert) => {
                            have.extend(operand.into_set().unwrap());
                            Value::Set(have)
                        }
                        (Value::Set(mut have), operand, Mutator::Delete) => {
                            let gone = operand.into_set().unwrap();
                            have.retain(|a| !gone.contains(a));
                            Value::Set(have)
                        }
                        (Value::Map(mut have), Value::Map(pairs), Mutator::Delete) => {
                            have.retain(|p| !pairs.contains(p));
                            Value::Map(have)
                        }
                        (Value::Map(mut have), Value::Map(pairs), Mutator::Insert) => {
                            for p in pairs {
                                if !have.iter().any(|(k, _)| *k == p.0) {
                                    have.push(p);
                                }
                            }
                            Value::Map(have)
                        }
                        other => return Err(fail("not supported", format!("{other:?}"))),
                    };
                    let next = ty
                        .normalize(next)
                        .map_err(|e| fail("constraint violation", e.to_string()))?;
                    existing.insert(m.column, next);
                }
                Ok(OperationResult::Count(1))
            }
            Operation::Delete { table, where_ } => {
                let uuid = Self::target(&where_)?;
                let gone = self.tables.get_mut(&table).and_then(|t| t.remove(&uuid));
                Ok(OperationResult::Count(u64::from(gone.is_some())))
            }
            other => Err(fail("not supported", format!("{other:?}"))),
        }
    }

    /// Reference columns of the schema: (table, column, target table, strength).
    fn reference_columns(&self) -> Vec<(String, String, String, RefType)> {
        let mut out = Vec::new();
        for (t, ts) in &self.schema.tables {
            for (c, cs) in &ts.columns {
                if let Some((target, strength)) = cs.ty.reference() {
                    out.push((t.clone(), c.clone(), target.to_owned(), strength));
                }
            }
        }
        out
    }

    /// Commit-time checks: weak references to missing rows dropped, garbage collection,
    /// strong references to missing rows and index collisions rejected.
    fn commit(&mut self) -> Result<(), OperationError> {
        let refs = self.reference_columns();
        loop {
            let exists: BTreeSet<Uuid> = self
                .tables
                .values()
                .flat_map(|t| t.keys().copied())
                .collect();
            let mut held: BTreeSet<Uuid> = BTreeSet::new();
            for (t, c, target, strength) in &refs {
                let Some(rows) = self.tables.get_mut(t) else {
                    continue;
                };
                for (uuid, row) in rows.iter_mut() {
                    let Some(Value::Set(atoms)) = row.get_mut(c) else {
                        continue;
                    };
                    if *strength == RefType::Weak {
                        atoms.retain(|a| matches!(a, Atom::Uuid(u) if exists.contains(u)));
                        continue;
                    }
                    for a in atoms.iter() {
                        if let Atom::Uuid(u) = a {
                            if !exists.contains(u) {
                                return Err(fail(
                                    "referential integrity violation",
                                    format!(
                                        "{t} row {uuid} column {c} refers to missing {target} row {u}"
                                    ),
                                ));
                            }
                            held.insert(*u);
                        }
                    }
                }
            }
            let mut collected = false;
            for (t, ts) in &self.schema.tables {
                if ts.is_root {
                    continue;
                }
                if let Some(rows) = self.tables.get_mut(t) {
                    let before = rows.len();
                    rows.retain(|u, _| held.contains(u));
                    collected |= rows.len() != before;
                }
            }
            if !collected {
                break;
            }
        }
        for (t, ts) in &self.schema.tables {
            for index in &ts.indexes {
                let mut seen = BTreeSet::new();
                for row in self.tables.get(t).map(|r| r.values()).into_iter().flatten() {
                    let key = format!("{:?}", index.iter().map(|c| row.get(c)).collect::<Vec<_>>());
                    if !seen.insert(key.clone()) {
                        return Err(fail(
                            "constraint violation",
                            format!(
                                "Transaction causes multiple rows in \"{t}\" table to have identical values {key} for index on columns {index:?}"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs a transaction atomically.
    pub(crate) fn transact(
        &mut self,
        ops: Vec<Operation>,
    ) -> Result<Vec<OperationResult>, TransactError> {
        let mut work = self.clone();
        let mut names = HashMap::new();
        let mut results = Vec::new();
        for (index, op) in ops.into_iter().enumerate() {
            match work.execute(op, &mut names) {
                Ok(r) => results.push(r),
                Err(error) => return Err(TransactError::Operation { index, error }),
            }
        }
        work.commit()
            .map_err(|error| TransactError::Commit { error })?;
        *self = work;
        Ok(results)
    }
}

impl OwnedRowsView for MemoryDb {
    fn schema(&self) -> &DbSchema {
        &self.schema
    }

    fn row(&self, table: &str, uuid: &Uuid) -> Option<&Row> {
        self.tables.get(table)?.get(uuid)
    }

    fn find(&self, table: &str, key: &str, value: &str) -> Vec<Uuid> {
        let want = (Atom::String(key.to_owned()), Atom::String(value.to_owned()));
        self.tables
            .get(table)
            .into_iter()
            .flatten()
            .filter(|(_, row)| matches!(row.get("external_ids"), Some(Value::Map(m)) if m.contains(&want)))
            .map(|(u, _)| *u)
            .collect()
    }

    /// Distinct values of `key`, read from every row (version: the default, so nothing is
    /// ever skipped against this view).
    fn values(&self, table: &str, key: &str) -> Option<Vec<&str>> {
        let mut out: Vec<&str> = Vec::new();
        for row in self
            .tables
            .get(table)
            .into_iter()
            .flat_map(BTreeMap::values)
        {
            if let Some(Value::Map(pairs)) = row.get("external_ids") {
                for (k, v) in pairs {
                    if let (Atom::String(k), Atom::String(v)) = (k, v)
                        && k == key
                        && !out.contains(&v.as_str())
                    {
                        out.push(v);
                    }
                }
            }
        }
        Some(out)
    }

    fn referrers(&self, target: &Uuid) -> Vec<(String, Uuid, String)> {
        let mut out = Vec::new();
        for (t, c, _, _) in self.reference_columns() {
            for (uuid, row) in self.tables.get(&t).into_iter().flatten() {
                let holds = match row.get(&c) {
                    Some(Value::Set(atoms)) => atoms.contains(&Atom::Uuid(*target)),
                    Some(Value::Atom(a)) => *a == Atom::Uuid(*target),
                    Some(Value::Map(pairs)) => pairs
                        .iter()
                        .any(|(k, v)| *k == Atom::Uuid(*target) || *v == Atom::Uuid(*target)),
                    None => false,
                };
                if holds {
                    out.push((t.clone(), *uuid, c.clone()));
                }
            }
        }
        out
    }
}

/// A shared memory DB that records every transaction and can be made unavailable.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) db: Arc<Mutex<MemoryDb>>,
    pub(crate) sent: Arc<Mutex<Vec<usize>>>,
    pub(crate) unavailable: Arc<Mutex<bool>>,
}

impl Shared {
    pub(crate) fn new(db: MemoryDb) -> Self {
        Self {
            db: Arc::new(Mutex::new(db)),
            sent: Arc::new(Mutex::new(Vec::new())),
            unavailable: Arc::new(Mutex::new(false)),
        }
    }

    /// Transaction sizes sent so far.
    pub(crate) fn sent(&self) -> Vec<usize> {
        self.sent.lock().unwrap().clone()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("connection closed")]
struct Closed;

impl Transactor for Shared {
    async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, TransactFailure> {
        self.sent.lock().unwrap().push(ops.len());
        if *self.unavailable.lock().unwrap() {
            return Err(TransactFailure::Unavailable(Arc::new(Closed)));
        }
        self.db
            .lock()
            .unwrap()
            .transact(ops)
            .map_err(TransactFailure::Rejected)
    }
}
