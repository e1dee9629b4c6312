//! The one error type of the netlink boundary: every variant names the network namespace
//! and the object it was working on.

use std::path::PathBuf;

/// Why a netlink (or netns, sysctl, ethtool) step failed.
#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    /// The network namespace file could not be opened.
    #[error("cannot open network namespace {path}")]
    OpenNetns {
        /// The netns path (`/var/run/netns/X`, `/proc/PID/ns/net`).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `setns` into the namespace failed.
    #[error("cannot enter network namespace {path}")]
    EnterNetns {
        /// The netns path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The worker thread or its runtime could not be started, or it died.
    #[error("netns worker for {netns}: {reason}")]
    Worker {
        /// The netns the worker was for.
        netns: String,
        /// What went wrong.
        reason: String,
    },
    /// The netlink socket could not be opened.
    #[error("cannot open a netlink socket in network namespace {netns}")]
    Connection {
        /// The netns.
        netns: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A netlink request failed.
    #[error("netlink {op} of {object} in network namespace {netns} failed")]
    Request {
        /// The netns.
        netns: String,
        /// The operation, e.g. `add address`.
        op: &'static str,
        /// The object, e.g. `10.0.0.2/24 on eth0`.
        object: String,
        /// The kernel's (or rtnetlink's) error (boxed: it can hold a whole message).
        #[source]
        source: Box<rtnetlink::Error>,
    },
    /// A link that must exist does not.
    #[error("link {name} not found in network namespace {netns}")]
    LinkNotFound {
        /// The netns.
        netns: String,
        /// The link name.
        name: String,
    },
    /// A sysctl could not be written or read.
    #[error("sysctl {path} (value {value:?}) in network namespace {netns}")]
    Sysctl {
        /// The netns.
        netns: String,
        /// The `/proc/sys/...` path.
        path: String,
        /// The value written (empty for a read).
        value: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The ethtool netlink request (what `ethtool -K` does) failed.
    #[error("ethtool -K {ifname} {features} in network namespace {netns} failed: {detail}")]
    Ethtool {
        /// The netns.
        netns: String,
        /// The interface.
        ifname: String,
        /// The feature arguments, e.g. `tx off`.
        features: String,
        /// The kernel's answer.
        detail: String,
    },
    /// A request is malformed (caught before the kernel would refuse it less helpfully).
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
}

impl NetlinkError {
    /// The kernel's errno of a failed request (positive, e.g. `EEXIST` = 17), if any.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::Request { source, .. } => errno(source),
            _ => None,
        }
    }
}

/// The positive errno of a netlink error message, if it is one.
pub(crate) fn errno(error: &rtnetlink::Error) -> Option<i32> {
    match error {
        rtnetlink::Error::NetlinkError(message) => Some(message.raw_code().abs()),
        _ => None,
    }
}

/// `EEXIST`.
pub(crate) const EEXIST: i32 = 17;
/// `ENODEV`.
pub(crate) const ENODEV: i32 = 19;
/// `ESRCH` (route or neighbor not found).
pub(crate) const ESRCH: i32 = 3;
/// `ENOENT` (rule not found).
pub(crate) const ENOENT: i32 = 2;
/// `EADDRNOTAVAIL` (address not found).
pub(crate) const EADDRNOTAVAIL: i32 = 99;
