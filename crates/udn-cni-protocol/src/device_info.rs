//! The device-info-spec object (`nadapi.DeviceInfo`) an SR-IOV device plugin writes to the
//! file named by `runtimeConfig.CNIDeviceInfoFile`; the shim embeds its fields in the
//! request. Every field is `omitempty` in Go, and so here.

use serde::{Deserialize, Serialize};

fn is_empty(text: &str) -> bool {
    text.is_empty()
}

/// `nadapi.DeviceInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// `pci`, `vhost-user`, `memif` or `vdpa`.
    #[serde(rename = "type", default, skip_serializing_if = "is_empty")]
    pub kind: String,
    /// The device-info-spec version (`1.1.0`).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub version: String,
    /// PCI device details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<PciDevice>,
    /// vDPA device details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdpa: Option<VdpaDevice>,
    /// vhost-user socket details.
    #[serde(
        rename = "vhost-user",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub vhost_user: Option<VhostDevice>,
    /// memif socket details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memif: Option<MemifDevice>,
}

impl DeviceInfo {
    /// True when every field is empty (nothing is written on the wire).
    pub fn is_empty(&self) -> bool {
        self == &DeviceInfo::default()
    }
}

/// `nadapi.PciDevice`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciDevice {
    /// The VF's PCI address.
    #[serde(rename = "pci-address", default, skip_serializing_if = "is_empty")]
    pub pci_address: String,
    /// vhost-net device path.
    #[serde(rename = "vhost-net", default, skip_serializing_if = "is_empty")]
    pub vhost_net: String,
    /// RDMA device name.
    #[serde(rename = "rdma-device", default, skip_serializing_if = "is_empty")]
    pub rdma_device: String,
    /// The PF's PCI address.
    #[serde(rename = "pf-pci-address", default, skip_serializing_if = "is_empty")]
    pub pf_pci_address: String,
    /// The VF representor netdev.
    #[serde(
        rename = "representor-device",
        default,
        skip_serializing_if = "is_empty"
    )]
    pub representor_device: String,
}

/// `nadapi.VdpaDevice`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VdpaDevice {
    /// Parent vDPA device.
    #[serde(rename = "parent-device", default, skip_serializing_if = "is_empty")]
    pub parent_device: String,
    /// Bus driver (`vhost` or `virtio`).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub driver: String,
    /// Device path.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub path: String,
    /// The VF's PCI address.
    #[serde(rename = "pci-address", default, skip_serializing_if = "is_empty")]
    pub pci_address: String,
    /// The PF's PCI address.
    #[serde(rename = "pf-pci-address", default, skip_serializing_if = "is_empty")]
    pub pf_pci_address: String,
    /// The VF representor netdev.
    #[serde(
        rename = "representor-device",
        default,
        skip_serializing_if = "is_empty"
    )]
    pub representor_device: String,
}

/// `nadapi.VhostDevice`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VhostDevice {
    /// `client` or `server`.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub mode: String,
    /// Socket path.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub path: String,
}

/// `nadapi.MemifDevice`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemifDevice {
    /// `master` or `slave`.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub role: String,
    /// Socket path.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub path: String,
    /// `ethernet`, `ip` or `punt`.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub mode: String,
}
