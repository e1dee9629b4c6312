//! The zone's Southbound writes (upstream: the zone interconnect chassis handler): every
//! remote node as a `Chassis` with `other_config:is-remote=true` and its geneve `Encap`s, so
//! that ovn-controller builds tunnels to it; and, where the zone's ovn-northd does not bind
//! `type=remote` ports to their `requested-chassis` itself (OVN 23.03 does not; newer OVN
//! does), the binding. Both are pure plans over the SB replica, applied in one transaction.

mod binding;
mod chassis;
mod rows;

pub use binding::remote_binding_ops;
pub use chassis::{RemoteChassis, RemoteEncap, remote_chassis, remote_chassis_ops};
pub use rows::TableRows;
