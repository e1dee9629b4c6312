//! OVSDB wire data: values (RFC 7047 §5.1) and transaction operations (§5.2).

pub mod operation;
pub mod update;
pub mod value;

pub use operation::{
    Condition, ConditionFunction, Mutation, Mutator, Operation, OperationError, OperationResult,
    TransactError, WaitUntil, decode_transact_result,
};
pub use update::{MonitorSinceReply, MonitorUpdate, RowUpdate, TableUpdates, UpdateError};
pub use value::{Atom, Row, Uuid, Value, ValueError, row_from_json, row_to_json};
