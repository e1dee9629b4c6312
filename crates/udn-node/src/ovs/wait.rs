//! Waiting for ovn-controller to install a port's flows: `external_ids:ovn-installed="true"`
//! on the Interface, watched through the replica's change notifications (no polling), with
//! upstream's failures: the `iface-id` changed meanwhile (a later ADD took the port over),
//! the deadline passed, or the caller canceled (e.g. the pod went away).

use std::future::Future;
use std::time::Duration;

use ipnetwork::IpNetwork;
use udn_api::annotations::MacAddress;
use udn_ovsdb::client::{Client, ClientError};
use udn_ovsdb::replica::Replica;
use udn_ovsdb::table::Table;
use udn_ovsdb::vswitch::{Interface, interface};

use super::error::OvsError;
use super::pod_port::{IFACE_ID, OVN_INSTALLED, go_ip_list};

/// The port to wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledWait {
    /// The interface (host veth) name.
    pub port: String,
    /// The `iface-id` it must still have.
    pub iface_id: String,
    /// The pod MAC (for the error texts).
    pub mac: MacAddress,
    /// The pod IPs (for the error texts).
    pub ips: Vec<IpNetwork>,
}

/// Where a port stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallStatus {
    /// `ovn-installed=true`.
    Installed,
    /// Not yet (or the interface does not exist yet).
    Pending,
    /// The interface is bound to another `iface-id` now.
    Replaced,
}

/// The status of `wait`'s port in `replica`.
pub fn install_status(replica: &Replica, wait: &InstalledWait) -> InstallStatus {
    let found = replica.rows(interface::TABLE).find_map(|(uuid, row)| {
        let named = matches!(
            row.get(interface::NAME),
            Some(udn_ovsdb::protocol::Value::Atom(udn_ovsdb::protocol::Atom::String(name)))
                if *name == wait.port
        );
        named.then(|| Interface::from_row(Some(*uuid), row).ok())?
    });
    let Some(found) = found else {
        return InstallStatus::Pending;
    };
    let ids = &found.external_ids;
    match ids.get(IFACE_ID) {
        Some(id) if !id.is_empty() && *id != wait.iface_id => InstallStatus::Replaced,
        _ if ids.get(OVN_INSTALLED).map(String::as_str) == Some("true") => InstallStatus::Installed,
        _ => InstallStatus::Pending,
    }
}

/// Waits until `wait`'s port is installed, up to `timeout`, or until `cancel` resolves with
/// a reason (pass `std::future::pending()` for none).
pub async fn wait_ovn_installed(
    client: &Client,
    wait: &InstalledWait,
    timeout: Duration,
    cancel: impl Future<Output = String>,
) -> Result<(), OvsError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut changes = client.changes();
    tokio::pin!(cancel);
    loop {
        // Marked seen before reading, so a change after the read wakes the select below.
        changes.borrow_and_update();
        let status = install_status(&client.replica(), wait);
        match status {
            InstallStatus::Installed => return Ok(()),
            InstallStatus::Replaced => {
                return Err(OvsError::NoLongerActive {
                    port: wait.port.clone(),
                });
            }
            InstallStatus::Pending => {}
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return Err(OvsError::client(
                        format!("wait for ovn-installed on {}", wait.port),
                        ClientError::Disconnected,
                    ));
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                return Err(OvsError::InstallTimeout {
                    mac: wait.mac.to_string(),
                    ips: go_ip_list(&wait.ips),
                });
            }
            reason = &mut cancel => {
                return Err(OvsError::InstallCanceled {
                    reason,
                    mac: wait.mac.to_string(),
                    ips: go_ip_list(&wait.ips),
                });
            }
        }
    }
}
