//! The one error type of the OVS database boundary. The texts a CNI result carries are
//! upstream's (`pkg/cni/helper_linux.go`, `pkg/cni/ovs.go`), so a failing pod reads the same.

use udn_ovsdb::client::ClientError;

/// Why an OVS database step failed.
#[derive(Debug, thiserror::Error)]
pub enum OvsError {
    /// The endpoint text is not `unix:<path>` or `tcp:<host>:<port>`.
    #[error("invalid OVS database endpoint")]
    Endpoint(#[source] udn_ovsdb::client::EndpointError),
    /// Connecting, monitoring or a transaction failed.
    #[error("OVS database {step} failed")]
    Client {
        /// What was being done, e.g. `add pod port 3f1b2c4d5e6f7a8`.
        step: String,
        /// The client's error (boxed: it is large).
        #[source]
        source: Box<ClientError>,
    },
    /// A row of the replica does not fit its typed table.
    #[error("OVS database row of {table} cannot be read")]
    Row {
        /// The table.
        table: &'static str,
        /// The underlying error.
        #[source]
        source: udn_ovsdb::table::RowError,
    },
    /// The database has no `Open_vSwitch` row (`ovs-vsctl init` never ran).
    #[error("the OVS database has no Open_vSwitch row")]
    NoOpenVswitchRow,
    /// A bridge that must exist does not.
    #[error("OVS bridge {bridge} does not exist")]
    BridgeNotFound {
        /// The bridge.
        bridge: String,
    },
    /// The port is on another bridge (upstream's `CreateOrUpdatePodPortOps` check).
    #[error("port {port:?} is already attached to bridge {bridge:?}")]
    PortOnOtherBridge {
        /// The port.
        port: String,
        /// The bridge holding it.
        bridge: String,
    },
    /// The host veth's interface was added for another pod.
    #[error("OVS port {port} was added for iface-id ({existing}), now readding it for ({wanted})")]
    IfaceIdMismatch {
        /// The port.
        port: String,
        /// Its current `iface-id`.
        existing: String,
        /// The one asked for.
        wanted: String,
    },
    /// The host veth's interface was added for another NAD.
    #[error("OVS port {port} was added for NAD ({existing}), expect ({wanted})")]
    NadMismatch {
        /// The port.
        port: String,
        /// Its current NAD key (`default` when it has none).
        existing: String,
        /// The one asked for.
        wanted: String,
    },
    /// While waiting for `ovn-installed`, the interface's `iface-id` changed.
    #[error("OVS sandbox port {port} is no longer active (probably due to a subsequent CNI ADD)")]
    NoLongerActive {
        /// The port.
        port: String,
    },
    /// `ovn-installed` did not appear in time.
    #[error("timed out waiting for OVS port binding (ovn-installed) for {mac} {ips}")]
    InstallTimeout {
        /// The pod MAC.
        mac: String,
        /// The pod IPs as Go prints a slice of them (`[10.244.1.5/24]`).
        ips: String,
    },
    /// The caller canceled the wait (e.g. the pod was deleted or got a new UID).
    #[error("{reason} waiting for OVS port binding for {mac} {ips}")]
    InstallCanceled {
        /// Why, e.g. `pod deleted`.
        reason: String,
        /// The pod MAC.
        mac: String,
        /// The pod IPs as Go prints them.
        ips: String,
    },
}

impl OvsError {
    pub(crate) fn client(step: impl Into<String>, source: ClientError) -> Self {
        Self::Client {
            step: step.into(),
            source: Box::new(source),
        }
    }

    /// Whether retrying after the client reconnects may help.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Client { source, .. } if source.is_retryable())
    }
}
