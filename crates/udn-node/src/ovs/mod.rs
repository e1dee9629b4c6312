//! Open vSwitch's own database (`Open_vSwitch`, bridges, ports, interfaces) through
//! udn-ovsdb: never by parsing `ovs-vsctl` output.
//!
//! Every step is a pure plan from a typed snapshot ([`OvsState`]) to the operations of one
//! transaction (empty when converged), and [`Ovs`] runs it against the live database:
//!
//! - [`open_vswitch`]: the chassis configuration ovn-controller reads (spec §5.1) and the
//!   bridge mappings, merged with keys we do not own;
//! - [`bridge`]: a bridge with its ports (`br-int` as ovn-controller makes it);
//! - [`nic_bridge`]: the gateway bridge a NIC is moved into (upstream's `NicToBridge`);
//! - [`pod_port`]: a pod's port as upstream's `ConfigureOVS`; [`wait`]: `ovn-installed`;
//! - [`sandbox`]: CNI DEL by `external_ids:sandbox`, and the pod ports for a restart;
//! - [`mgmt_port`]: `ovn-k8s-mp0` / `ovn-k8s-mp<id>`.

pub mod bridge;
pub mod client;
pub mod error;
pub mod mgmt_port;
pub mod nic_bridge;
pub mod open_vswitch;
mod ops;
pub mod pod_port;
mod port;
pub mod sandbox;
pub mod state;
pub mod wait;

#[cfg(test)]
mod tests;

pub use bridge::{BridgePort, DesiredBridge};
pub use client::{DEFAULT_OVS_ENDPOINT, Ovs, OvsConfig};
pub use error::OvsError;
pub use mgmt_port::{MgmtPort, legacy_mgmt_port_name, mgmt_iface_id, mgmt_port_name};
pub use nic_bridge::{Attachment, NicBridge, nic_bridge_name};
pub use open_vswitch::{ChassisConfig, merge_bridge_mappings};
pub use pod_port::{BR_INT, PodPort, PodPortNetwork, PodPortPlan, go_ip_list, pod_iface_id};
pub use sandbox::{NadFilter, PodPortRecord};
pub use state::{Focus, OvsState};
pub use wait::{InstallStatus, InstalledWait};
