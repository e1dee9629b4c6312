//! An in-memory Kubernetes API server for udn's tests and local sandbox.
//!
//! Production code only ever sees a `kube::Client`; this crate gives it one that talks to
//! an in-memory server, either in-process (a `tower::Service`, no socket) or over HTTP on
//! loopback (`udn-kube-sim serve`), which `kubectl` can use too.

// ApiError mirrors metav1.Status (message, details, causes); errors are the rare path of
// a request, so its size does not matter and boxing it would only add noise.
#![allow(clippy::result_large_err)]

pub mod error;
pub mod http;
pub mod kubeconfig;
pub mod options;
pub(crate) mod patch;
pub mod resource;
pub mod sim;
pub(crate) mod store;

pub use error::{ApiError, StatusCause};
pub use options::{
    DeleteOptions, ListOptions, PatchKind, Propagation, Subresource, WatchOptions, WriteOptions,
};
pub use resource::{ResourceKey, ResourceType};
pub use sim::{Sim, SimConfig, WatchEvent, WatchEventType, WatchStream};
