//! The desired OVN Northbound rows of every network for one zone, as `udn-ovsdb` engine
//! units: pure functions of the [`crate::model`] snapshot.
//!
//! [`network_desired`] renders one network: for an engine whose controller is
//! [`NetworkDesired::controller`] (`<network>-network-controller`), planned with the scope of
//! [`NETWORK_OWNER_TYPES`]. Units (see `docs/controller-topology.md`):
//!
//! | owner type | name | rows |
//! |---|---|---|
//! | [`CLUSTER_UNIT`] | network | cluster router, join switch, cluster port groups, transit switch; the Layer2/localnet switch; the default network's COPP and meters |
//! | [`NODE_UNIT`] | local node | node switch, router port pair, management port and ACLs, masquerade SNAT, gateway router, external switch, routes, NATs, policies, transit pair |
//! | [`REMOTE_NODE_UNIT`] | remote node | transit `remote` port and routes (Layer2: the remote gateway router port) |
//! | [`POD_UNIT`] | port name | the pod's logical switch port |
//! | [`UDN_ISOLATION_UNIT`] | `default` | `SecondaryPods` and the UDN isolation and open-ports ACLs |
//! | [`SERVICE_UNIT`] | `<ns>/<service>` | the Service's load balancers (one per protocol), members of `clusterLBGroup` |
//!
//! Rows that reference rows of other units of the same network use desired references;
//! rows of other controllers (the COPP of the default network, the load balancer groups)
//! are referenced by UUID from [`ZoneInputs`]. Load balancer groups and static MAC bindings
//! have no `external_ids` and are planned by [`keyed`].

mod acl;
mod addressing;
mod cluster;
mod columns;
mod context;
mod copp;
mod dbids;
mod desired;
mod gateway;
mod gateway_routing;
mod interconnect;
mod isolation;
pub mod keyed;
mod layer2;
mod localnet;
mod names;
mod node_switch;
mod pods;
mod problem;
mod routing;
mod services;
mod shared_uuid;
mod udn_enabled_services;
mod zone;

#[cfg(test)]
mod tests;

pub use copp::DEFAULT_COPP;
pub use dbids::hash_for_ovn;
pub use desired::{
    CLUSTER_UNIT, DirectLoadBalancers, NETWORK_OWNER_TYPES, NODE_UNIT, NetworkDesired, POD_UNIT,
    REMOTE_NODE_UNIT, ROW_OWNER_TYPES, StaticMacBinding, UDN_ISOLATION_UNIT, load_balancer_groups,
    network_desired, network_engine, network_scope,
};
pub use problem::{Missing, Part, Problem};
pub use services::SERVICE_UNIT;
pub use shared_uuid::shared_row_uuid;
pub use udn_enabled_services::{UDN_ENABLED_SERVICE_KEY, UdnEnabledService};
pub use zone::{DEFAULT_ACL_LOGGING_RATE_LIMIT, SchemaFeatures, ZoneInputs};
