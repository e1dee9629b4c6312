//! udn allocators: network IDs and tunnel keys ([`NetworkPools`], sized by
//! [`NetworkIdLimit`]), host subnets, pod IPs, pod tunnel IDs, node IDs,
//! MACs, masquerade and gateway IPs, and the addresses derived from a node's ID.
//!
//! Everything here is pure and synchronous, and reproduces upstream OVN-Kubernetes allocation
//! results bit for bit. Every allocator can be rebuilt from existing assignments (what the
//! annotations say after a restart) and then never hands out an ID, subnet or address twice.

mod family;
mod gateway;
mod id_pool;
mod mac;
mod masquerade;
mod network_id;
mod network_id_limit;
mod network_pools;
mod node_address;
mod node_id;
mod pod_ip;
mod pod_tunnel_id;
mod range_set;
mod subnet;
mod tunnel_key;

pub use family::IpFamily;
pub use gateway::{
    GatewayError, InfrastructureIps, gateway_ip, layer2_infrastructure_ips, management_ip,
};
pub use id_pool::IdError;
pub use mac::{MacAddress, ip_to_mac};
pub use masquerade::{
    GlobalMasqueradeIps, MasqueradeError, MasqueradeIps, UDN_MASQUERADE_IP_BASE, udn_masquerade_ips,
};
pub use network_id::{
    DEFAULT_NETWORK_ID, DEFAULT_NETWORK_NAME, MAX_NETWORKS, NetworkId, NetworkIdAllocator,
};
pub use network_id_limit::{
    MAX_NETWORK_ID, NETWORK_ID_POOL_SIZE, NetworkIdBound, NetworkIdLimit, Pool,
    masquerade_max_network_id,
};
pub use network_pools::{NetworkPoolError, NetworkPools};
pub use node_address::{
    NodeAddressError, gateway_router_join_ips, node_ip, transit_switch_port_ips,
};
pub use node_id::{FIRST_NODE_ID, MAX_NODE_ID, NODE_ID_POOL_SIZE, NodeId, NodeIdAllocator};
pub use pod_ip::{PodIpAllocator, PodIpConfig, PodIpError, SubnetUsage};
pub use pod_tunnel_id::{
    FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER, MAX_LOGICAL_PORT_TUNNEL_KEY, PodTunnelIdAllocator,
};
pub use subnet::{HostSubnetAllocator, RangeUsage, SubnetError};
pub use tunnel_key::{
    BASE_TRANSIT_SWITCH_TUNNEL_KEY, FIRST_ALLOCATABLE_TUNNEL_KEY, FIRST_FREE_TUNNEL_KEY,
    MAX_DATAPATH_TUNNEL_KEY, TunnelKeyAllocator, TunnelKeyError, required_tunnel_keys,
};
