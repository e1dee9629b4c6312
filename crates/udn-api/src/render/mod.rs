//! UDN/CUDN -> NetworkAttachmentDefinition render, byte for byte as upstream
//! (`RenderNetAttachDefManifest`), plus the network-config validation it runs and that
//! NAD consumers reuse: [`validate_netconf`] (`ValidateNetConf`),
//! [`subnet_overlap_check`] (`SubnetOverlapCheck`) and [`set_transit_subnets`]
//! (`SetTransitSubnets`).
//!
//! Order of the render-time checks: empty namespace; topology/config mismatch; Layer2 IPAM
//! rules; primary Layer2 transit subnet; EVPN feature; persistent-IPs feature;
//! `ValidateNetConf`; `NewNetInfo` (localnet excluded subnets, cluster IP families).

mod config;
mod config_json;
mod error;
mod nad;
mod overlap;
mod source;
mod transit;
mod validate;

pub use config::render_netconf;
pub use config_json::cni_config_json;
pub use error::RenderError;
pub use nad::{nad_annotations, nad_labels, owner_reference, render_nad};
pub use overlap::{ConfigSubnet, OverlapCheckError, SubnetKind, subnet_overlap_check};
pub use source::{NetworkSource, NetworkSpecRef, is_primary, nad_name, network_name};
pub use transit::{TransitError, set_transit_subnets};
pub use validate::{ValidateError, validate_netconf};
