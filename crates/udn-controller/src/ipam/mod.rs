//! Pod addresses the zone allocates itself (upstream: the zone's ovnkube-controller, for the
//! default network and Layer3 networks, from the node's host subnet; and a MAC only for
//! Localnet networks without subnets). Layer2 and Localnet-with-subnets addresses come from
//! cluster-manager. Pure: allocators and the `k8s.ovn.org/pod-networks` entry.

mod allocators;
mod entry;

pub use allocators::{IpamError, ZoneIpam};
pub use entry::{EntryInputs, pod_entry, zone_allocates};
