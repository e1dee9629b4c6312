//! UDN and CUDN -> NetworkAttachmentDefinitions, finalizers, network IDs and the
//! `NetworkCreated` condition (upstream `clustermanager/userdefinednetwork` and the
//! cluster-manager side of `networkmanager/nad_controller.go`).
//!
//! Three controllers share five reflector caches (UDNs, CUDNs, NADs, namespace and pod
//! metadata):
//! - UDN (`user-defined-network-controller`): finalizer, one NAD in the UDN's namespace,
//!   condition; waits for pods before deleting.
//! - CUDN (`cluster-user-defined-network-controller`): a NAD in every namespace the
//!   selector picks, removed when a namespace stops matching and no pod uses it.
//! - NAD network IDs (`clustermanager-nad-controller`): `k8s.ovn.org/network-id`,
//!   `network-name` and `tunnel-keys` on every OVN-Kubernetes NAD, rebuilt from the NADs
//!   at start, released with the last NAD of a network.
//!
//! Each reconcile is snapshot ([`stores`]) -> pure plan ([`udn_plan`], [`cudn_plan`],
//! [`nad_plan`]) -> writes ([`apply`]) -> condition, events, metrics.

mod apply;
mod condition;
mod controller;
mod cudn_plan;
mod cudn_reconcile;
mod error;
#[cfg(test)]
mod fixtures;
mod ids;
mod nad_identity;
mod nad_plan;
mod nad_reconcile;
mod pod_use;
mod shared;
mod stores;
mod sync_error;
mod triggers;
mod udn_plan;
mod udn_reconcile;
mod watch;

use std::time::Duration;

pub use controller::run;
pub use error::NetworkError;

/// Period of the full resync of converged objects.
const RESYNC: Duration = Duration::from_secs(30 * 60);
