//! The node agent's configuration: flags ([`args`]) over upstream's ini config file
//! ([`file`], [`ini`]), checked into [`Config`].

pub mod args;
pub mod file;
pub mod ini;

use std::path::PathBuf;

pub use args::NodeArgs;
use udn_api::cluster::ClusterConfig;
use udn_api::cluster_args::{ClusterArgs, ClusterArgsError, GatewayModeArg};
use udn_ovsdb::client::Endpoint;

/// Why the configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The cluster flags are invalid.
    #[error(transparent)]
    Cluster(#[from] ClusterArgsError),
    /// `--node-name` is empty.
    #[error("--node-name: a node name is required")]
    NoNodeName,
    /// Segmentation needs multi-network, as upstream.
    #[error("--enable-network-segmentation requires --enable-multi-network")]
    SegmentationWithoutMultiNetwork,
    /// Only the shared gateway mode is built.
    #[error("--gateway-mode=local: only --gateway-mode=shared is supported by the node agent")]
    LocalGateway,
    /// A database address does not parse.
    #[error("--{flag}: {reason}")]
    Address {
        /// The flag.
        flag: &'static str,
        /// Why.
        reason: String,
    },
    /// An IP flag does not parse.
    #[error("--{flag}: {value:?} is not an IP address")]
    Ip {
        /// The flag.
        flag: &'static str,
        /// The value.
        value: String,
    },
    /// `--ovs-datapath-type` is neither `system` nor `netdev`.
    #[error("--ovs-datapath-type: {0:?}: expected system or netdev")]
    DatapathType(String),
    /// `--routing-table-id-start` is below upstream's minimum.
    #[error("--routing-table-id-start: {0} is below the minimum 1000")]
    RoutingTableStart(u32),
}

/// What the agent needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// This node.
    pub node_name: String,
    /// Its zone (`k8s.ovn.org/zone-name`).
    pub zone: String,
    /// The cluster.
    pub cluster: ClusterConfig,
    /// NAD-based secondary networks.
    pub multi_network: bool,
    /// Primary UDNs and host isolation.
    pub segmentation: bool,
    /// Dynamic UDN: the node wires a primary UDN (management port, routes, flows) only
    /// while cluster-manager gives the node the network's per-node state.
    pub dynamic_udn: bool,
    /// `--gateway-interface`.
    pub gateway_interface: Option<String>,
    /// `--gateway-nexthop`.
    pub gateway_nexthop: Option<std::net::IpAddr>,
    /// `--encap-ip`.
    pub encap_ip: Option<std::net::IpAddr>,
    /// `--encap-type`.
    pub encap_type: String,
    /// Where the CNI config file goes.
    pub cni_conf_dir: PathBuf,
    /// The CNI server's socket.
    pub cni_server_socket: PathBuf,
    /// The CNI server's budget per request.
    pub cni_request_timeout: std::time::Duration,
    /// `logLevel` of the CNI config file.
    pub cni_log_level: u32,
    /// `logFile` of the CNI config file.
    pub cni_log_file: Option<String>,
    /// OVS's database.
    pub ovs: Endpoint,
    /// OVS's database, as given (`unix:PATH` or `tcp:IP:PORT`).
    pub ovs_address: String,
    /// `ovn-remote` (the zone's SB as ovn-controller reaches it), as given.
    pub ovn_remote: String,
    /// Bridges' `datapath_type`; `netdev` also turns pod TX checksum offload off (OVS's
    /// userspace datapath does not fill in partial checksums of veth packets).
    pub datapath_type: String,
    /// `--kubelet-cgroup-path`.
    pub kubelet_cgroup_path: Option<String>,
    /// systemd's private socket.
    pub systemd_socket: PathBuf,
    /// First VRF routing table.
    pub routing_table_id_start: u32,
    /// `--openflow-probe`.
    pub openflow_probe: u32,
    /// `--monitor-all`.
    pub monitor_all: bool,
    /// `--enable-lflow-cache`.
    pub enable_lflow_cache: bool,
    /// `--lflow-cache-limit` (0: unset).
    pub lflow_cache_limit: u64,
    /// `--lflow-cache-limit-kb` (0: unset).
    pub lflow_cache_limit_kb: u64,
    /// `--ofctrl-wait-before-clear`.
    pub ofctrl_wait_before_clear: u32,
}

fn ip(flag: &'static str, value: Option<&String>) -> Result<Option<std::net::IpAddr>, ConfigError> {
    value
        .map(|v| {
            v.parse().map_err(|_| ConfigError::Ip {
                flag,
                value: v.clone(),
            })
        })
        .transpose()
}

impl Config {
    /// Builds the configuration from the flags.
    pub fn from_args(args: &NodeArgs, cluster: &ClusterArgs) -> Result<Self, ConfigError> {
        if args.node_name.trim().is_empty() {
            return Err(ConfigError::NoNodeName);
        }
        if args.enable_network_segmentation && !args.enable_multi_network {
            return Err(ConfigError::SegmentationWithoutMultiNetwork);
        }
        if cluster.gateway_mode == GatewayModeArg::Local {
            return Err(ConfigError::LocalGateway);
        }
        if !matches!(args.ovs_datapath_type.as_str(), "system" | "netdev") {
            return Err(ConfigError::DatapathType(args.ovs_datapath_type.clone()));
        }
        if args.routing_table_id_start < 1000 {
            return Err(ConfigError::RoutingTableStart(args.routing_table_id_start));
        }
        let ovs = args
            .ovs_address
            .parse()
            .map_err(|e: udn_ovsdb::client::EndpointError| ConfigError::Address {
                flag: "ovs-address",
                reason: e.to_string(),
            })?;
        Ok(Self {
            node_name: args.node_name.clone(),
            zone: args.zone.clone().unwrap_or_else(|| args.node_name.clone()),
            cluster: cluster.cluster()?,
            multi_network: args.enable_multi_network,
            segmentation: args.enable_network_segmentation,
            dynamic_udn: args.dynamic_udn.enable_dynamic_udn_allocation,
            gateway_interface: args.gateway_interface.clone(),
            gateway_nexthop: ip("gateway-nexthop", args.gateway_nexthop.as_ref())?,
            encap_ip: ip("encap-ip", args.encap_ip.as_ref())?,
            encap_type: args.encap_type.clone(),
            cni_conf_dir: args.cni_conf_dir.clone(),
            cni_server_socket: args.cni_server_socket.clone(),
            cni_request_timeout: std::time::Duration::from_secs(args.cni_request_timeout.max(1)),
            cni_log_level: args.loglevel,
            cni_log_file: args.cnilogfile.clone(),
            ovs,
            ovs_address: args.ovs_address.clone(),
            ovn_remote: args.sb_address.clone(),
            datapath_type: args.ovs_datapath_type.clone(),
            kubelet_cgroup_path: args.kubelet_cgroup_path.clone(),
            systemd_socket: args.systemd_socket.clone(),
            routing_table_id_start: args.routing_table_id_start,
            openflow_probe: args.openflow_probe,
            monitor_all: args.monitor_all,
            enable_lflow_cache: args.enable_lflow_cache,
            lflow_cache_limit: args.lflow_cache_limit,
            lflow_cache_limit_kb: args.lflow_cache_limit_kb,
            ofctrl_wait_before_clear: args.ofctrl_wait_before_clear,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write as _;

    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    #[command(args_override_self = true)]
    struct Cli {
        #[command(flatten)]
        node: NodeArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    }

    fn parse(args: &[&str]) -> Result<Config, String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let (merged, _) = file::merged_args(args).map_err(|e| e.to_string())?;
        let cli = Cli::try_parse_from(merged).map_err(|e| e.to_string())?;
        Config::from_args(&cli.node, &cli.cluster).map_err(|e| e.to_string())
    }

    #[test]
    fn the_command_line_wins_over_the_config_file() {
        let mut conf = tempfile::NamedTempFile::new().unwrap();
        write!(
            conf,
            "[default]\nmtu=1300\nencap-ip=192.0.2.9\n[ovnkubernetesfeature]\n\
             enable-multi-network=true\nenable-network-segmentation=true\n\
             [ovnkubenode]\nkubelet-cgroup-path=system.slice/kubelet.service\n"
        )
        .unwrap();
        let path = conf.path().to_str().unwrap();
        let config = parse(&[
            "udn-node",
            "--node-name",
            "n1",
            "--config-file",
            path,
            "--mtu",
            "1400",
        ])
        .unwrap();
        assert_eq!(config.cluster.mtu, 1400);
        assert_eq!(config.encap_ip, Some("192.0.2.9".parse().unwrap()));
        assert!(config.multi_network && config.segmentation);
        assert_eq!(
            config.kubelet_cgroup_path.as_deref(),
            Some("system.slice/kubelet.service")
        );
        assert_eq!(config.zone, "n1");
        assert_eq!(
            config.cni_server_socket,
            PathBuf::from(args::DEFAULT_CNI_SERVER_SOCKET)
        );
    }

    #[test]
    fn bad_settings_name_the_flag() {
        let cases: [(&[&str], &str); 5] = [
            (&["udn-node", "--node-name", ""], "--node-name"),
            (
                &[
                    "udn-node",
                    "--node-name",
                    "n",
                    "--enable-network-segmentation",
                ],
                "requires --enable-multi-network",
            ),
            (
                &["udn-node", "--node-name", "n", "--encap-ip", "x"],
                "--encap-ip",
            ),
            (
                &[
                    "udn-node",
                    "--node-name",
                    "n",
                    "--ovs-datapath-type",
                    "dpdk",
                ],
                "--ovs-datapath-type",
            ),
            (
                &[
                    "udn-node",
                    "--node-name",
                    "n",
                    "--routing-table-id-start",
                    "5",
                ],
                "--routing-table-id-start",
            ),
        ];
        for (args, needle) in cases {
            let error = parse(args).unwrap_err();
            assert!(error.contains(needle), "{args:?}: {error}");
        }
        let error = parse(&[
            "udn-node",
            "--node-name",
            "n",
            "--config-file",
            "/nonexistent/x",
        ])
        .unwrap_err();
        assert!(error.contains("--config-file /nonexistent/x"), "{error}");
    }
}
