//! CNI spec types and the wire format between `ovn-k8s-cni-overlay` and the node agent's
//! CNI server (upstream `go-controller/pkg/cni/types.go`). No I/O.
//!
//! The plugin (shim) side builds a [`Request`] from its environment and stdin, posts it,
//! reads the answer with [`ReplyError::from_reply`] and [`Response::from_json`], prints
//! [`CniResult::to_version`] and posts [`RequestMetrics`]. The server side parses the
//! [`Request`], makes a [`PodRequest`], answers with [`Response::to_json`] or an
//! [`ErrorResponse`], and merges a primary UDN's result with
//! [`CniResult::merge_primary_udn`]. Every byte written goes through Go's JSON rules
//! ([`go_json`]) so both sides stay byte-compatible with upstream's.

mod cidr;
mod cni_args;
mod command;
mod device_info;
mod errors;
pub mod go_json;
mod metrics;
mod pod_request;
mod request;
mod response;
mod result;
mod result_040;
mod versions;

pub use cidr::{IpCidr, IpCidrError};
pub use cni_args::{
    CniArgs, CniArgsError, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_NAME, K8S_POD_NAMESPACE, K8S_POD_UID,
};
pub use command::Command;
pub use device_info::{DeviceInfo, MemifDevice, PciDevice, VdpaDevice, VhostDevice};
pub use errors::{CniError, ErrorCode};
pub use metrics::RequestMetrics;
pub use pod_request::{DEFAULT_IF_NAME, PodRequest, PodRequestError};
pub use request::Request;
pub use response::{ERROR_STATUS, ErrorResponse, KubeAuth, ReplyError, Response};
pub use result::{CniResult, Dns, Interface, IpConfig, Route, VersionedResult};
pub use result_040::{Dns040, Interface040, IpConfig040, Result040, Route040};
pub use versions::{CniVersion, SUPPORTED_VERSIONS, SpecVersion, SpecVersionError, VersionInfo};

/// The socket upstream's plugin dials (its `ServerRunDir` + `/` + `ovn-cni-server.sock`).
pub const DEFAULT_SERVER_SOCKET: &str = "/var/run/ovn-kubernetes/cni/ovn-cni-server.sock";

/// The HTTP path of CNI requests (`http://dummy/`).
pub const REQUEST_PATH: &str = "/";

/// The HTTP path of the shim's metrics post (`http://dummy/metrics`).
pub const METRICS_PATH: &str = "/metrics";

/// The server's budget for one request (upstream `kubeletDefaultCRIOperationTimeout`).
pub const SERVER_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
