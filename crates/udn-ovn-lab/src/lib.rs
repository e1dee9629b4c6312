//! A real OVN lab in network namespaces for udn's dataplane tests.
//!
//! [`Lab::start`] brings up, on this machine and without the openvswitch kernel module:
//! - per node a netns that is the node's host network, with OVS `ovsdb-server` +
//!   `ovs-vswitchd` (userspace datapath), `ovn-controller`, `br-int`, and the gateway bridge
//!   `breth0` holding the node's uplink `eth0` and the node IP; Open_vSwitch `external_ids` as
//!   upstream's node sets them (chassis id = a random UUID, `ovn-is-interconn=true`, ...);
//! - per zone (one per node by default, as upstream's interconnect runs; or one for all) NB and
//!   SB `ovsdb-server` and `ovn-northd` on unix sockets, `NB_Global.name` = the zone name;
//! - an underlay (a Linux bridge in its own netns, MTU 9000) joining every node's uplink and
//!   an external host (the nodes' default gateway) for listeners and captures;
//! - on request, pods ([`Lab::add_pod`]: a netns each, veth to `br-int`, bound by
//!   `external_ids:iface-id`) and management ports ([`Node::add_mgmt_port`]).
//!
//! Every lab has a unique prefix for its netns names and its own run dir, so labs run side by
//! side. Dropping the lab (also while a test panics) kills its daemons, deletes its netns and
//! removes its run dir. Readiness waits on the daemons (`--detach`, `--wait=hv`,
//! `wait-until`, tcpdump's and nc's "listening" lines), never on time.
//!
//! ```no_run
//! use std::time::Duration;
//! use udn_ovn_lab::{InterfaceSpec, Lab, LabConfig, Ping, PodSpec};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let lab = Lab::start(LabConfig::with_nodes(2).single_zone())?;
//! let node1 = lab.node("node1")?;
//! node1.nbctl(&["ls-add", "net", "--", "lsp-add", "net", "a", "--",
//!     "lsp-set-addresses", "a", "0a:58:0a:00:00:0a 10.0.0.10", "--",
//!     "lsp-add", "net", "b", "--", "lsp-set-addresses", "b", "0a:58:0a:00:00:0b 10.0.0.11"])?;
//! for (name, node, mac, ip) in [
//!     ("a", "node1", "0a:58:0a:00:00:0a", "10.0.0.10/24"),
//!     ("b", "node2", "0a:58:0a:00:00:0b", "10.0.0.11/24"),
//! ] {
//!     let nic = InterfaceSpec::new("eth0", name, mac).ip(ip.parse()?);
//!     lab.add_pod(PodSpec::new(name, node).interface(nic))?;
//!     lab.wait_installed(name, Duration::from_secs(20))?;
//! }
//! let (a, b) = (lab.pod("a")?, lab.pod("b")?);
//! let b_ip = b.ip().ok_or("b has an address")?;
//! assert!(lab.ping(&a.netns, b_ip, Ping::default())?, "{}", lab.diagnostics());
//! assert!(lab.tcp_check(&a.netns, &b.netns, b_ip, 7000, Duration::from_secs(20))?);
//! # Ok(())
//! # }
//! ```
//!
//! Needs root and the Debian packages ovn-central, ovn-host, openvswitch-switch, iproute2,
//! ethtool, iputils-ping, netcat-openbsd and tcpdump. See `docs/lab.md`.

mod capture;
mod command;
mod config;
mod daemon;
mod error;
mod exec;
mod lab;
mod mgmt_port;
mod netns;
mod node;
mod node_start;
mod pod;
mod probe;
mod run_dir;
mod stale;
mod underlay;
mod zone;

pub use capture::{Capture, Packet};
pub use command::ExecOutput;
pub use config::{LabConfig, SINGLE_ZONE_NAME, ZoneMode};
pub use error::LabError;
pub use lab::Lab;
pub use mgmt_port::{MGMT_PORT_NAME, MgmtPortSpec};
pub use netns::netns_with_prefix;
pub use node::{DaemonKind, NbCfg, Node, NodeRss};
pub use pod::{InterfaceSpec, Pod, PodInterface, PodSpec, Route};
pub use probe::{Ping, Received, TcpListener};
pub use stale::{clean_stale_labs, tear_down};
pub use udn_ovsdb::testing::process_alive;
pub use underlay::ExternalHost;
