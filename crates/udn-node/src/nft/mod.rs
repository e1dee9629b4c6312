//! nftables as text transactions (knftables-style): build operations on one table as data
//! ([`Transaction`] of [`Object`]s), render them as `nft -f -` text, run them atomically
//! through an [`NftExecutor`] ([`NftCli`] runs the `nft` program and turns its standard error
//! into a typed [`NftError`]; [`RecordingNft`] records them for tests), and read back
//! `nft list` text ([`listing`]).
//!
//! Text, not JSON: nft 1.0.6 cannot parse its own JSON for `socket cgroupv2` and drops the
//! level when printing it, while the text syntax round-trips (see `docs/host-isolation.md`).

mod error;
mod exec;
pub mod listing;
mod object;
mod recording;
mod socket;
mod transaction;

pub use error::{FailedLine, NftError, NftFailure};
pub use exec::{ListTarget, NftCli, NftExecutor};
pub use object::{
    BaseChain, Chain, ChainType, Element, Family, Hook, KeyType, Map, Object, Policy, Priority,
    Rule, RulePosition, Set, SetFlag, Table, TableId,
};
pub use recording::{FailOn, RecordingNft};
pub use socket::{
    PROBE_TABLE, is_unresolved_cgroup_path, probe_socket_cgroupv2, socket_cgroupv2,
    socket_cgroupv2_probe,
};
pub use transaction::{Operation, Transaction, Verb};

#[cfg(test)]
mod tests;
