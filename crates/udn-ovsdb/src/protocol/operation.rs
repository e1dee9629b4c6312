//! Transaction operations (RFC 7047 §5.2), their JSON encoding, and decoding of `transact` results.

use serde_json::{Map, Value as Json};

use super::value::{Row, Uuid, Value, ValueError, row_from_json, row_to_json};

/// A condition function (RFC 7047 §5.1 `<function>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionFunction {
    /// `==`.
    Equal,
    /// `!=`.
    NotEqual,
    /// `<`.
    LessThan,
    /// `<=`.
    LessThanOrEqual,
    /// `>`.
    GreaterThan,
    /// `>=`.
    GreaterThanOrEqual,
    /// `includes`.
    Includes,
    /// `excludes`.
    Excludes,
}

impl ConditionFunction {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equal => "==",
            Self::NotEqual => "!=",
            Self::LessThan => "<",
            Self::LessThanOrEqual => "<=",
            Self::GreaterThan => ">",
            Self::GreaterThanOrEqual => ">=",
            Self::Includes => "includes",
            Self::Excludes => "excludes",
        }
    }
}

/// A `where` clause element: `[column, function, value]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// Column name.
    pub column: String,
    /// Comparison function.
    pub function: ConditionFunction,
    /// Value compared against.
    pub value: Value,
}

impl Condition {
    /// Encodes as `[column, function, value]`.
    pub fn to_json(&self) -> Json {
        Json::Array(vec![
            Json::from(self.column.as_str()),
            Json::from(self.function.as_str()),
            self.value.to_json(),
        ])
    }
}

/// A mutator (RFC 7047 §5.1 `<mutator>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutator {
    /// `+=`.
    Add,
    /// `-=`.
    Subtract,
    /// `*=`.
    Multiply,
    /// `/=`.
    Divide,
    /// `%=`.
    Modulo,
    /// `insert`.
    Insert,
    /// `delete`.
    Delete,
}

impl Mutator {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Add => "+=",
            Self::Subtract => "-=",
            Self::Multiply => "*=",
            Self::Divide => "/=",
            Self::Modulo => "%=",
            Self::Insert => "insert",
            Self::Delete => "delete",
        }
    }
}

/// A mutation: `[column, mutator, value]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutation {
    /// Column name.
    pub column: String,
    /// Mutator.
    pub mutator: Mutator,
    /// Operand.
    pub value: Value,
}

impl Mutation {
    /// Encodes as `[column, mutator, value]`.
    pub fn to_json(&self) -> Json {
        Json::Array(vec![
            Json::from(self.column.as_str()),
            Json::from(self.mutator.as_str()),
            self.value.to_json(),
        ])
    }
}

/// The `until` of a `wait` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitUntil {
    /// `==`: wait until the selected rows equal `rows`.
    Equal,
    /// `!=`: wait until they differ.
    NotEqual,
}

impl WaitUntil {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equal => "==",
            Self::NotEqual => "!=",
        }
    }
}

/// One database operation of a `transact` request (RFC 7047 §5.2).
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// §5.2.1 insert.
    Insert {
        /// Table name.
        table: String,
        /// Column values.
        row: Row,
        /// `uuid-name` so later operations can refer to the new row.
        uuid_name: Option<String>,
        /// The new row's UUID, chosen by the client (ovsdb-server's `uuid` member of
        /// `insert`, an extension of RFC 7047 since OVS 2.13), so that a later transaction
        /// can refer to it before this one was answered. `None`: the server picks it.
        uuid: Option<Uuid>,
    },
    /// §5.2.2 select.
    Select {
        /// Table name.
        table: String,
        /// Conditions.
        where_: Vec<Condition>,
        /// Columns to return (all when `None`).
        columns: Option<Vec<String>>,
    },
    /// §5.2.3 update.
    Update {
        /// Table name.
        table: String,
        /// Conditions.
        where_: Vec<Condition>,
        /// Columns to set.
        row: Row,
    },
    /// §5.2.4 mutate.
    Mutate {
        /// Table name.
        table: String,
        /// Conditions.
        where_: Vec<Condition>,
        /// Mutations.
        mutations: Vec<Mutation>,
    },
    /// §5.2.5 delete.
    Delete {
        /// Table name.
        table: String,
        /// Conditions.
        where_: Vec<Condition>,
    },
    /// §5.2.6 wait.
    Wait {
        /// Table name.
        table: String,
        /// Conditions.
        where_: Vec<Condition>,
        /// Columns compared.
        columns: Vec<String>,
        /// Comparison.
        until: WaitUntil,
        /// Expected rows.
        rows: Vec<Row>,
        /// Timeout in milliseconds (wait forever when `None`).
        timeout_ms: Option<u64>,
    },
    /// §5.2.10 assert.
    Assert {
        /// Lock name that must be held.
        lock: String,
    },
    /// §5.2.9 comment.
    Comment {
        /// Comment text.
        comment: String,
    },
}

fn conditions_json(where_: &[Condition]) -> Json {
    Json::Array(where_.iter().map(Condition::to_json).collect())
}

fn strings_json(items: &[String]) -> Json {
    Json::Array(items.iter().map(|s| Json::from(s.as_str())).collect())
}

impl Operation {
    /// Encodes as the RFC 7047 §5.2 operation object.
    pub fn to_json(&self) -> Json {
        let mut o = Map::new();
        let mut put = |k: &str, v: Json| {
            o.insert(k.to_owned(), v);
        };
        match self {
            Self::Insert {
                table,
                row,
                uuid_name,
                uuid,
            } => {
                put("op", "insert".into());
                put("table", table.as_str().into());
                put("row", row_to_json(row));
                if let Some(name) = uuid_name {
                    put("uuid-name", name.as_str().into());
                }
                if let Some(uuid) = uuid {
                    put("uuid", uuid.to_string().into());
                }
            }
            Self::Select {
                table,
                where_,
                columns,
            } => {
                put("op", "select".into());
                put("table", table.as_str().into());
                put("where", conditions_json(where_));
                if let Some(cols) = columns {
                    put("columns", strings_json(cols));
                }
            }
            Self::Update { table, where_, row } => {
                put("op", "update".into());
                put("table", table.as_str().into());
                put("where", conditions_json(where_));
                put("row", row_to_json(row));
            }
            Self::Mutate {
                table,
                where_,
                mutations,
            } => {
                put("op", "mutate".into());
                put("table", table.as_str().into());
                put("where", conditions_json(where_));
                put(
                    "mutations",
                    Json::Array(mutations.iter().map(Mutation::to_json).collect()),
                );
            }
            Self::Delete { table, where_ } => {
                put("op", "delete".into());
                put("table", table.as_str().into());
                put("where", conditions_json(where_));
            }
            Self::Wait {
                table,
                where_,
                columns,
                until,
                rows,
                timeout_ms,
            } => {
                put("op", "wait".into());
                if let Some(t) = timeout_ms {
                    put("timeout", (*t).into());
                }
                put("table", table.as_str().into());
                put("where", conditions_json(where_));
                put("columns", strings_json(columns));
                put("until", until.as_str().into());
                put("rows", Json::Array(rows.iter().map(row_to_json).collect()));
            }
            Self::Assert { lock } => {
                put("op", "assert".into());
                put("lock", lock.as_str().into());
            }
            Self::Comment { comment } => {
                put("op", "comment".into());
                put("comment", comment.as_str().into());
            }
        }
        Json::Object(o)
    }
}

/// The result of one successful operation (RFC 7047 §5.2).
#[derive(Debug, Clone, PartialEq)]
pub enum OperationResult {
    /// insert: `{"uuid": ["uuid", ...]}`.
    Inserted(Uuid),
    /// select: `{"rows": [...]}`.
    Rows(Vec<Row>),
    /// update, mutate, delete: `{"count": N}`.
    Count(u64),
    /// wait, assert, comment: `{}`.
    Empty,
}

/// An error object from a `transact` result: `{"error": ..., "details": ...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationError {
    /// Short error tag, e.g. `constraint violation`.
    pub error: String,
    /// Human-readable details, when present.
    pub details: Option<String>,
}

/// Why a `transact` did not succeed, or its result could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransactError {
    /// Operation `index` failed; later operations were not executed.
    #[error("operation {index} failed: {} ({})", error.error, error.details.as_deref().unwrap_or("no details"))]
    Operation {
        /// Index into the request's operations.
        index: usize,
        /// The server's error.
        error: OperationError,
    },
    /// Every operation succeeded but the commit failed (the extra trailing result element).
    #[error("transaction commit failed: {} ({})", error.error, error.details.as_deref().unwrap_or("no details"))]
    Commit {
        /// The server's error.
        error: OperationError,
    },
    /// The result is not an array of result objects.
    #[error("malformed transact result {json}: {reason}")]
    Malformed {
        /// The offending JSON, rendered.
        json: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The result text is not valid JSON.
    #[error("transact result is not valid JSON: {reason}")]
    Json {
        /// The parser's explanation.
        reason: String,
    },
    /// A returned row or UUID could not be decoded.
    #[error("operation {index}: undecodable result: {source}")]
    Value {
        /// Index of the result element.
        index: usize,
        /// The underlying error.
        #[source]
        source: ValueError,
    },
    /// Fewer results than operations and no error explaining why.
    #[error("transact returned {got} results for {expected} operations without an error")]
    MissingResults {
        /// Number of operations sent.
        expected: usize,
        /// Number of results received.
        got: usize,
    },
}

fn decode_error(obj: &Map<String, Json>) -> Option<OperationError> {
    let error = obj.get("error")?;
    Some(OperationError {
        error: error
            .as_str()
            .map_or_else(|| error.to_string(), str::to_owned),
        details: obj
            .get("details")
            .and_then(|d| d.as_str().map(str::to_owned)),
    })
}

fn decode_success(
    index: usize,
    json: &Json,
    obj: &Map<String, Json>,
) -> Result<OperationResult, TransactError> {
    let malformed = |reason| TransactError::Malformed {
        json: json.to_string(),
        reason,
    };
    if let Some(uuid) = obj.get("uuid") {
        let v = Value::from_json(uuid).map_err(|source| TransactError::Value { index, source })?;
        return match v {
            Value::Atom(super::value::Atom::Uuid(u)) => Ok(OperationResult::Inserted(u)),
            _ => Err(malformed("\"uuid\" must be [\"uuid\", <uuid>]")),
        };
    }
    if let Some(rows) = obj.get("rows") {
        let Json::Array(rows) = rows else {
            return Err(malformed("\"rows\" must be an array"));
        };
        return rows
            .iter()
            .map(row_from_json)
            .collect::<Result<_, _>>()
            .map(OperationResult::Rows)
            .map_err(|source| TransactError::Value { index, source });
    }
    if let Some(count) = obj.get("count") {
        return count
            .as_u64()
            .map(OperationResult::Count)
            .ok_or_else(|| malformed("\"count\" must be a non-negative integer"));
    }
    Ok(OperationResult::Empty)
}

/// Decodes the `result` of a `transact` carrying `operations` operations. Returns one result per
/// operation, or the first per-operation error (later elements are `null`), or the commit error
/// the server appends as an extra element after the operations' results.
pub fn decode_transact_result(
    operations: usize,
    result: &Json,
) -> Result<Vec<OperationResult>, TransactError> {
    let Json::Array(items) = result else {
        return Err(TransactError::Malformed {
            json: result.to_string(),
            reason: "expected an array",
        });
    };
    let mut out = Vec::with_capacity(operations);
    for (index, item) in items.iter().enumerate() {
        match item {
            Json::Null => {}
            Json::Object(obj) => {
                if let Some(error) = decode_error(obj) {
                    return Err(if index < operations {
                        TransactError::Operation { index, error }
                    } else {
                        TransactError::Commit { error }
                    });
                }
                if index < operations {
                    out.push(decode_success(index, item, obj)?);
                }
            }
            _ => {
                return Err(TransactError::Malformed {
                    json: item.to_string(),
                    reason: "result elements must be objects or null",
                });
            }
        }
    }
    if out.len() < operations {
        return Err(TransactError::MissingResults {
            expected: operations,
            got: out.len(),
        });
    }
    Ok(out)
}
