//! The udn sandbox: everything a cluster runs, on one machine.
//!
//! - [`kubelet`]: the simulated kubelet (one per node): registers its Node, schedules and
//!   runs pods in network namespaces and cgroups, executes CNI plugins as kubelet's CRI
//!   runtime does (delegating `k8s.v1.cni.cncf.io/networks` as Multus does), runs probes
//!   from its own cgroup, and reports Pod status.
//! - [`images`]: the built-in test images the simulated kubelet runs without a container
//!   engine (e.g. agnhost's `netexec`).
//! - [`endpointslice`]: kube-controller-manager's EndpointSlice controller, as the sandbox
//!   plays it for Services with selectors.

pub mod endpointslice;
pub mod images;
pub mod kubelet;
