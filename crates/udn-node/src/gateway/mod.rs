//! The gateway bridge `breth0` in shared gateway mode (upstream `pkg/node/bridgeconfig`,
//! `openflow_manager.go`, the bridge parts of `gateway_udn.go`): its whole OpenFlow table —
//! the default network's flows and, per primary UDN, the SNAT of its gateway router's
//! masquerade IP to the node IP in conntrack zone 64000 with a per-network conntrack mark,
//! the reply steering by that mark, the cross-network service drop and the packet-mark
//! dispatch; per Service, its NodePorts, external and ingress IPs to its network's patch
//! port and the `--udn-allowed-default-services` cluster IPs to the default network — plus
//! the no-flood bit of UDN patch ports and permanent neighbour entries for the masquerade IPs.
//!
//! The shape is inputs ([`BridgeInputs`]) -> desired ([`desired_flows`],
//! [`desired_neighbors`]) -> plan ([`plan_flows`]: `ovs-ofctl diff-flows`;
//! [`plan_neighbors`]) -> apply (one `ovs-ofctl --bundle replace-flows`, only when the plan is
//! not empty; rtnetlink). [`GatewaySync`] does all of it, once or as a loop with upstream's
//! 15 s resync. See `docs/gateway.md`.
//!
//! ```ignore
//! let (tx, rx) = tokio::sync::watch::channel(None);
//! tokio::spawn(GatewaySync::new(Ofctl::new(), Some(Netlink::connect_current("host")?)).run(rx, RESYNC_PERIOD));
//! // whenever ofports, node addresses or the node's primary UDNs change:
//! tx.send_replace(Some(BridgeInputs { .. }));
//! ```

mod desired;
mod exec;
mod fdb;
mod flow;
mod flows_common;
mod flows_default;
mod flows_services;
mod inputs;
mod neighbors;
mod ofctl;
mod render;
mod sync;

#[cfg(test)]
mod service_tests;
#[cfg(test)]
mod tests;

pub use desired::{NORMAL_FLOW, desired_flows};
pub use exec::OfctlError;
pub use fdb::VswitchdCtl;
pub use flow::{
    CT_MARK_HOST, CT_MARK_OVN, CT_MARK_UDN_BASE, DEFAULT_OPENFLOW_COOKIE, Flow, NODE_SNAT_PKT_MARK,
    PKT_MARK_BASE, RESYNC_PERIOD, flows_file,
};
pub use flows_services::service_cookie;
pub use inputs::{
    BridgeInputs, DEFAULT_CONNTRACK_ZONE, DEFAULT_ENCAP_PORT, GatewayCluster, OfPort, UdnPatch,
    patch_port_name,
};
pub use neighbors::{
    MasqueradeNeighbor, NeighborPlan, NeighborSyncError, apply_neighbors, desired_neighbors,
    masquerade_subnets, plan_neighbors, sync_neighbors,
};
pub use ofctl::{DEFAULT_OVS_RUNDIR, FlowDiff, Ofctl, mgmt_socket};
pub use render::DesiredError;
pub use sync::{FlowSync, GatewayError, GatewaySync, GatewaySyncReport, plan_flows, sync_flows};
