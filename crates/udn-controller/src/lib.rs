//! udn's NB controller (upstream: ovnkube-controller): for one zone (upstream runs one zone
//! per node, named after the node) it writes every network's OVN logical topology into the
//! zone's Northbound database, connects local pods, programs the default network's UDN
//! isolation, and makes remote nodes reachable through the transit switch and remote chassis
//! in the zone's Southbound database.
//!
//! The shape is the one of every udn controller (see `docs/controller.md`):
//! [`model`] (a plain snapshot of the inputs) -> [`topology`] (the desired rows, as
//! `udn-ovsdb` engine units; pure) -> plan (the engine's diff against the rows this
//! controller owns) -> apply (batched transactions).

pub mod config;
pub mod dynamic_udn;
pub use udn_runtime::events;
pub mod ipam;
pub mod metrics;
pub mod model;
pub mod networks;
pub mod nodes;
pub mod pods;
pub mod sb;
pub mod services;
pub mod snapshot;
pub mod topology;
pub mod watch;
pub mod zone;
