//! The node agent's own flags (upstream ovnkube's names where upstream has the setting).

use std::path::PathBuf;

use clap::{ArgAction, Args};

/// Upstream's CNI server socket (`ServerRunDir` + `ovn-cni-server.sock`).
pub const DEFAULT_CNI_SERVER_SOCKET: &str = "/var/run/ovn-kubernetes/cni/ovn-cni-server.sock";
/// Upstream's `--cni-conf-dir` default.
pub const DEFAULT_CNI_CONF_DIR: &str = "/etc/cni/net.d";
/// OVS's database socket on a host.
pub const DEFAULT_OVS_ADDRESS: &str = "unix:/var/run/openvswitch/db.sock";
/// The zone's Southbound database, as ovn-controller reaches it (`ovn-remote`).
pub const DEFAULT_SB_ADDRESS: &str = "unix:/var/run/ovn/ovnsb_db.sock";
/// systemd's private D-Bus socket (kubelet restart tracking).
pub const DEFAULT_SYSTEMD_SOCKET: &str = "/run/systemd/private";

/// Flags specific to the node agent.
#[derive(Clone, Debug, Args, PartialEq, Eq)]
pub struct NodeArgs {
    /// This node's name (the Node object and, by default, its zone).
    #[arg(long, value_name = "NAME")]
    pub node_name: String,
    /// ovnkube's ini config file (`[default]`, `[kubernetes]`, `[gateway]`,
    /// `[ovnkubenode]`, ... sections); flags given on the command line win over it.
    #[arg(long, value_name = "PATH")]
    pub config_file: Option<PathBuf>,
    /// The zone this node belongs to (upstream: one zone per node, named after it); written
    /// to `k8s.ovn.org/zone-name`.
    #[arg(long, value_name = "NAME")]
    pub zone: Option<String>,
    /// The interface the gateway bridge holds (default: the default route's interface).
    #[arg(long, value_name = "IFACE")]
    pub gateway_interface: Option<String>,
    /// The gateway's next hop (default: the default route's gateway).
    #[arg(long, value_name = "IP")]
    pub gateway_nexthop: Option<String>,
    /// The tunnel endpoint IP (`ovn-encap-ip`; default: the node's primary address).
    #[arg(long, value_name = "IP")]
    pub encap_ip: Option<String>,
    /// Tunnel type (`ovn-encap-type`).
    #[arg(long, value_name = "TYPE", default_value = "geneve")]
    pub encap_type: String,
    /// NAD-based secondary networks (required for UDNs).
    #[arg(long)]
    pub enable_multi_network: bool,
    /// UserDefinedNetwork support (requires --enable-multi-network).
    #[arg(long)]
    pub enable_network_segmentation: bool,
    /// Where the CNI config file `10-ovn-kubernetes.conf` is written.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CNI_CONF_DIR)]
    pub cni_conf_dir: PathBuf,
    /// The CNI server's socket (upstream's path by default; `ovn-k8s-cni-overlay` reads
    /// `UDN_CNI_SERVER_SOCKET` for another one).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_CNI_SERVER_SOCKET)]
    pub cni_server_socket: PathBuf,
    /// The CNI server's budget per request, seconds (upstream's is fixed at 120, the CRI
    /// operation timeout of kubelet).
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub cni_request_timeout: u64,
    /// `logLevel` written into the CNI config file (upstream's `--loglevel`).
    #[arg(long, value_name = "LEVEL", default_value_t = 4)]
    pub loglevel: u32,
    /// `logFile` written into the CNI config file (upstream's `--cnilogfile`).
    #[arg(long, value_name = "PATH")]
    pub cnilogfile: Option<String>,
    /// OVS's database: `unix:PATH` or `tcp:IP:PORT`.
    #[arg(long, value_name = "ADDRESS", default_value = DEFAULT_OVS_ADDRESS)]
    pub ovs_address: String,
    /// The zone's Southbound database as ovn-controller reaches it (`ovn-remote`).
    #[arg(long, value_name = "ADDRESS", default_value = DEFAULT_SB_ADDRESS)]
    pub sb_address: String,
    /// `datapath_type` of the bridges this agent creates (`system`, or `netdev` for OVS's
    /// userspace datapath).
    #[arg(long, value_name = "TYPE", default_value = "system")]
    pub ovs_datapath_type: String,
    /// The kubelet's cgroup, relative to /sys/fs/cgroup (default: the first
    /// `kubelet.service` under the cgroup v2 root).
    #[arg(long, value_name = "PATH")]
    pub kubelet_cgroup_path: Option<String>,
    /// systemd's private D-Bus socket (kubelet restart tracking).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SYSTEMD_SOCKET)]
    pub systemd_socket: PathBuf,
    /// First routing table of the per-network VRFs (upstream's `routing-table-id-start`).
    #[arg(long, value_name = "ID", default_value_t = 1000)]
    pub routing_table_id_start: u32,
    /// OpenFlow probe interval in seconds (`ovn-bridge-remote-probe-interval`,
    /// `bundle-idle-timeout`).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub openflow_probe: u32,
    /// ovn-controller monitors all of SB (`ovn-monitor-all`).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = ArgAction::Set)]
    pub monitor_all: bool,
    /// ovn-controller's logical flow cache (`ovn-enable-lflow-cache`).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = ArgAction::Set)]
    pub enable_lflow_cache: bool,
    /// Most logical flow cache entries (`ovn-limit-lflow-cache`; 0: ovn-controller's default).
    #[arg(long, value_name = "ENTRIES", default_value_t = 0)]
    pub lflow_cache_limit: u64,
    /// Most logical flow cache memory in KiB (`ovn-memlimit-lflow-cache-kb`; 0:
    /// ovn-controller's default).
    #[arg(long, value_name = "KB", default_value_t = 0)]
    pub lflow_cache_limit_kb: u64,
    /// `ovn-ofctrl-wait-before-clear` in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub ofctrl_wait_before_clear: u32,
    /// Dynamic UDN (`--enable-dynamic-udn-allocation`, `--udn-deletion-grace-period`).
    #[command(flatten)]
    pub dynamic_udn: udn_api::dynamic_udn_args::DynamicUdnArgs,
}
