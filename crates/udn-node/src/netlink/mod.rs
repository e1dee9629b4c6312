//! Netlink: links, addresses, routes, rules and neighbors, in the host or a pod network
//! namespace, through rtnetlink (never the `ip` command).
//!
//! - [`netns`]: running work inside a netns on a dedicated thread ([`in_netns`],
//!   [`in_netns_pair`]), and [`Netlink`], a handle bound to one netns.
//! - [`pod_interface`]: the pod's veth as upstream's CNI plumbs it
//!   ([`setup_pod_interface`]); [`pod_check`]: reading it back (CHECK, DEL).
//! - [`link`], [`address`], [`route`], [`rule`], [`neighbor`]: each as desired (plain data)
//!   -> `diff_*` (the plan against what the kernel has) -> `apply_*`, plus `reconcile_*`
//!   doing all three.
//! - [`sysctl`], [`offload`]: `/proc/sys/net` and ethtool's feature switches (over ethtool netlink), which act in the calling
//!   thread's netns.

pub mod address;
pub mod error;
pub mod link;
pub mod neighbor;
pub mod netns;
pub mod offload;
pub mod pod_check;
pub mod pod_interface;
pub mod route;
pub mod rule;
pub mod sysctl;
pub mod vrf;

pub use error::NetlinkError;
pub use link::{LinkInfo, delete_link, link_by_name};
pub use netns::{Netlink, NetnsPair, NetnsPath, in_netns, in_netns_pair};
pub use pod_check::{
    ObservedPodInterface, check_pod_interface, container_ifindex, inspect_pod_interface,
};
pub use pod_interface::{
    PodInterface, PodInterfaceSpec, TxChecksumOffload, VethEnd, host_veth_name, setup_pod_interface,
};
