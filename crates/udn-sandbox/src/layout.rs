//! Where everything of a sandbox lives under its directory (`--dir`, default
//! [`DEFAULT_DIR`]): the state file, logs, kubeconfigs, per node the CNI dirs and the
//! kubelet's state, the OVN lab's run directory.

use std::path::{Path, PathBuf};

/// The default sandbox directory: on tmpfs, as the network namespaces and processes it
/// describes do not survive a reboot either.
pub const DEFAULT_DIR: &str = "/run/udn-sandbox";

/// Port the API server is reached on from inside each node's network namespace (the
/// node's forwarder listens there, on loopback).
pub const NODE_API_PORT: u16 = 6443;

/// The paths of one sandbox.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The sandbox in `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The sandbox directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What is running (written as the sandbox comes up).
    pub fn state_file(&self) -> PathBuf {
        self.root.join("state.json")
    }

    /// The users' kubeconfig (the API server on this host's loopback).
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }

    /// The API server's objects, written when it stops.
    pub fn api_state(&self) -> PathBuf {
        self.root.join("api-objects.json")
    }

    /// Every component's log.
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// The log of `component`.
    pub fn log(&self, component: &str) -> PathBuf {
        self.logs().join(format!("{component}.log"))
    }

    /// Where the OVN lab's run directory goes.
    pub fn lab_base(&self) -> PathBuf {
        self.root.join("lab")
    }

    /// Node `node`'s directory.
    pub fn node(&self, node: &str) -> NodeLayout {
        NodeLayout {
            root: self.root.join("nodes").join(node),
        }
    }
}

/// The paths of one node of a sandbox.
#[derive(Debug, Clone)]
pub struct NodeLayout {
    root: PathBuf,
}

impl NodeLayout {
    /// The node's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The node's kubeconfig (the API server through the node's forwarder).
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }

    /// The CNI config dir (`/etc/cni/net.d` of the node): the agent writes it, the kubelet
    /// reads it.
    pub fn cni_conf_dir(&self) -> PathBuf {
        self.root.join("net.d")
    }

    /// The CNI plugin dir (`/opt/cni/bin` of the node).
    pub fn cni_bin_dir(&self) -> PathBuf {
        self.root.join("cni-bin")
    }

    /// The agent's CNI server socket.
    pub fn cni_socket(&self) -> PathBuf {
        self.root.join("cni").join("ovn-cni-server.sock")
    }

    /// The kubelet's configuration.
    pub fn kubelet_config(&self) -> PathBuf {
        self.root.join("kubelet.json")
    }

    /// The kubelet's state (pods, container logs).
    pub fn kubelet_state(&self) -> PathBuf {
        self.root.join("kubelet")
    }
}
