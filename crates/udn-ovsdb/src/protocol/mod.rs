//! OVSDB wire data: values (RFC 7047 §5.1) and transaction operations (§5.2).
//!
//! Every type has two codecs that agree: `to_json` / `from_json` over `serde_json::Value`
//! trees, and direct ones (serde `Serialize` / `Deserialize`, the `*_slice` decoders) over JSON
//! text, which the client uses: they skip the tree, the bulk of the work for large transactions
//! and updates.

mod decode_result;
mod decode_update;
mod decode_value;
mod encode;
pub mod operation;
pub mod update;
pub mod value;

pub use decode_result::decode_transact_result_slice;
pub use encode::TransactParams;
pub use operation::{
    Condition, ConditionFunction, Mutation, Mutator, Operation, OperationError, OperationResult,
    TransactError, WaitUntil, decode_transact_result,
};
pub use update::{MonitorSinceReply, MonitorUpdate, RowUpdate, TableUpdates, UpdateError};
pub use value::{Atom, Row, Uuid, Value, ValueError, row_from_json, row_to_json};
