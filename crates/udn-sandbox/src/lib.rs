//! The udn sandbox: everything a cluster runs, on one machine (`udnctl sandbox ...`).
//!
//! - [`up`], [`down`], [`status`], [`restart`], [`tools`]: the sandbox's life cycle and tools. Its
//!   directory ([`layout`]) holds the [`state`] file naming every process it started.
//! - [`kubelet`]: the simulated kubelet (one per node): registers its Node, schedules and
//!   runs pods in network namespaces and cgroups, executes CNI plugins as kubelet's CRI
//!   runtime does (delegating `k8s.v1.cni.cncf.io/networks` as Multus does), runs probes
//!   from its own cgroup, and reports Pod status.
//! - [`images`]: the built-in test images the simulated kubelet runs without a container
//!   engine (e.g. agnhost's `netexec`).
//! - [`components`]: udn's components' command lines (shared with the test stack);
//!   [`forward`]: the nodes' way to the API server.

pub mod apply;
pub mod binaries;
pub mod cgroup;
pub mod client;
pub mod command;
pub mod components;
pub mod daemon;
pub mod demo;
pub mod down;
pub mod endpointslice;
pub mod error;
pub mod forward;
pub mod images;
pub mod kubelet;
pub mod layout;
pub mod matrix;
pub mod packages;
pub mod pods;
pub mod restart;
pub mod state;
pub mod status;
pub mod tools;
pub mod up;

pub use error::SandboxError;
