//! What host isolation reports to the node's operator: the reasons and messages of the
//! Warning Events the agent posts on its Node. Data only; the agent posts them.

use std::fmt;
use std::path::PathBuf;

/// The reason of a Warning Event on the Node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WarningReason {
    /// `UDNKubeletProbesNotSupported`: the kubelet rule is not installed, so kubelet's
    /// httpGet, tcpSocket and grpc probes to primary-UDN pods are dropped.
    KubeletProbesNotSupported,
    /// `UDNKubeletRestartTrackingUnavailable`: systemd does not tell us when kubelet
    /// restarts, so a recreated kubelet cgroup is noticed only by the periodic check.
    KubeletRestartTrackingUnavailable,
}

impl WarningReason {
    /// The Event reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KubeletProbesNotSupported => "UDNKubeletProbesNotSupported",
            Self::KubeletRestartTrackingUnavailable => "UDNKubeletRestartTrackingUnavailable",
        }
    }
}

impl fmt::Display for WarningReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Warning Event to post on the Node: its reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsolationWarning {
    /// The Event reason.
    pub reason: WarningReason,
    /// The Event message.
    pub message: String,
}

/// Why the kubelet rule cannot be installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbesNotSupported {
    /// The host has no cgroup v2 tree.
    CgroupV1,
    /// No `kubelet.service` cgroup was found and `kubelet-cgroup-path` is not set.
    NotFound {
        /// Where discovery looked.
        searched: PathBuf,
    },
    /// `kubelet-cgroup-path` names no cgroup.
    ConfiguredNotFound {
        /// The setting's value.
        configured: String,
        /// The directory it means.
        dir: PathBuf,
    },
    /// nft cannot resolve the cgroup found (it vanished since).
    Unresolvable {
        /// The path as the rule names it.
        path: String,
        /// nft's message.
        nft_message: String,
    },
    /// nft refused the `socket cgroupv2` match (a kernel without `CONFIG_NFT_SOCKET`, or an
    /// nft without `cgroupv2`).
    SocketUnsupported {
        /// nft's message.
        nft_message: String,
    },
}

impl ProbesNotSupported {
    /// The Event message. The cgroup v1 one is upstream's.
    pub fn message(&self, node: &str) -> String {
        let start = format!("Kubelet probes for UDN are not supported on the node {node}");
        match self {
            Self::CgroupV1 => format!("{start} as it uses cgroup v1."),
            Self::NotFound { searched } => format!(
                "{start} as no kubelet.service cgroup was found under {} and \
                 kubelet-cgroup-path is not set.",
                searched.display()
            ),
            Self::ConfiguredNotFound { configured, dir } => format!(
                "{start} as the kubelet-cgroup-path {configured} does not exist ({}).",
                dir.display()
            ),
            Self::Unresolvable { path, nft_message } => {
                format!("{start} as nft cannot resolve the kubelet cgroup {path}: {nft_message}.")
            }
            Self::SocketUnsupported { nft_message } => format!(
                "{start} as nft cannot load the socket cgroupv2 match (no socket expression: \
                 is the kernel built without CONFIG_NFT_SOCKET?): {nft_message}."
            ),
        }
    }

    /// The warning for `node`.
    pub fn warning(&self, node: &str) -> IsolationWarning {
        IsolationWarning {
            reason: WarningReason::KubeletProbesNotSupported,
            message: self.message(node),
        }
    }
}

/// Why kubelet restarts are not tracked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestartTrackingUnavailable {
    /// The cgroup path's last component is not a unit name.
    NoUnit {
        /// The cgroup path as the rule names it.
        path: String,
        /// Its last component.
        component: String,
    },
    /// systemd's private socket could not be used (no systemd, or not mounted).
    NoSystemd {
        /// The socket.
        socket: PathBuf,
        /// What failed.
        error: String,
    },
    /// systemd does not know the unit.
    UnknownUnit {
        /// The unit.
        unit: String,
        /// systemd's answer.
        error: String,
    },
}

/// How the message ends: what tracking would have given, and what remains.
const UNTRACKED: &str = "a kubelet cgroup recreated by a restart is only noticed by the \
                         periodic check of the kubelet rule";

impl RestartTrackingUnavailable {
    /// The Event message.
    pub fn message(&self, node: &str) -> String {
        let start = format!("Kubelet restarts are not tracked on the node {node}");
        match self {
            Self::NoUnit { path, component } => format!(
                "{start} as the kubelet cgroup {path} does not name a systemd unit \
                 ({component} is not a .service, .scope or .slice); {UNTRACKED}."
            ),
            Self::NoSystemd { socket, error } => format!(
                "{start} as systemd's private socket {} cannot be used ({error}); {UNTRACKED}.",
                socket.display()
            ),
            Self::UnknownUnit { unit, error } => {
                format!("{start} as systemd has no unit {unit} ({error}); {UNTRACKED}.")
            }
        }
    }

    /// The warning for `node`.
    pub fn warning(&self, node: &str) -> IsolationWarning {
        IsolationWarning {
            reason: WarningReason::KubeletRestartTrackingUnavailable,
            message: self.message(node),
        }
    }
}
