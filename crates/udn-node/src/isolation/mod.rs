//! Host isolation of primary-UDN pods (upstream `pkg/node/udn_isolation.go`): host processes
//! other than kubelet must not reach the default-network IPs of pods whose primary network
//! is a UDN, except the ports (and ICMP) the pod opens with `k8s.ovn.org/open-default-ports`.
//!
//! The base chain `udn-isolation` of table `inet ovn-kubernetes` (output hook) accepts open
//! ports and ICMP, accepts kubelet's sockets (`socket cgroupv2` on kubelet's cgroup) and drops
//! the rest towards the addresses in six sets. The shape is inputs ([`PodIsolationInput`])
//! -> desired ([`desired_pod_elements`], [`ElementIndex`]) -> plan ([`PodPlan`], one
//! [`Transaction`](crate::nft::Transaction)) -> apply ([`HostIsolation`]).
//!
//! The agent drives it:
//! ```ignore
//! let Started { mut isolation, warnings, mut triggers } =
//!     HostIsolation::start(&config, NftCli::new()).await?;
//! // post each warning as a Warning Event on the Node (reason, message)
//! isolation.sync(&pods).await?;
//! loop {
//!     tokio::select! {
//!         trigger = triggers.next() => { isolation.handle(trigger).await?; }
//!         // pod added/changed: isolation.update_pod(&input); deleted: remove_pod(&key)
//!     }
//! }
//! ```
//! See `docs/host-isolation.md`.

mod cgroup;
mod config;
mod elements;
mod error;
mod manager;
mod names;
mod pod;
mod rules;
mod systemd;
mod triggers;
mod warning;

pub use cgroup::{
    CGROUP_FS, CgroupFs, CgroupLayout, CgroupSource, HYBRID_V2_DIR, KUBELET_UNIT_DIR,
    KubeletCgroup, KubeletCgroupOutcome, SETTING, find_kubelet_cgroup,
};
pub use config::{DEFAULT_RULE_CHECK_INTERVAL, DEFAULT_SYSTEMD_SOCKET, IsolationConfig};
pub use elements::{ElementIndex, PodPlan, pod_transaction, sync_transaction};
pub use error::IsolationError;
pub use manager::{HostIsolation, ReloadReason, RuleCheck, Started, cleanup};
pub use names::{CHAIN, CHAIN_COMMENT, IpFamily, SetId, SetKind, TABLE, table_id};
pub use pod::{
    ElementKey, IsolationElement, PodInputs, PodIsolationInput, PodKey, desired_pod_elements,
};
pub use rules::{ChainSpec, KubeletRule, chain_transaction, cleanup_transaction, isolation_chain};
pub use systemd::{UnitWatch, unit_object_path, unit_of_cgroup};
pub use triggers::{ReloadTrigger, ReloadTriggers};
pub use warning::{
    IsolationWarning, ProbesNotSupported, RestartTrackingUnavailable, WarningReason,
};

#[cfg(test)]
mod tests;
