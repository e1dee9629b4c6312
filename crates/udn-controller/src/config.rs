//! The controller's flags (upstream ovnkube's names) and the configuration built from them.

use clap::Args;
use udn_api::cluster_args::{ClusterArgs, ClusterArgsError, GatewayModeArg};
use udn_ovsdb::client::Endpoint;

use crate::model::{Lean, ZoneConfig};

/// Flags specific to the NB controller.
#[derive(Clone, Debug, Args)]
pub struct ControllerArgs {
    /// The zone's Northbound database: `unix:PATH` or `tcp:IP:PORT`.
    #[arg(
        long,
        value_name = "ADDRESS",
        default_value = "unix:/var/run/ovn/ovnnb_db.sock"
    )]
    pub nb_address: String,
    /// The zone's Southbound database: `unix:PATH` or `tcp:IP:PORT`.
    #[arg(
        long,
        value_name = "ADDRESS",
        default_value = "unix:/var/run/ovn/ovnsb_db.sock"
    )]
    pub sb_address: String,
    /// The zone this controller programs (upstream runs one zone per node, named after the
    /// node). A node is local when its name is the zone, or when its `k8s.ovn.org/zone-name`
    /// annotation names the zone.
    #[arg(long, value_name = "NAME")]
    pub zone: String,
    /// NAD-based secondary networks (required for UDNs).
    #[arg(long)]
    pub enable_multi_network: bool,
    /// UserDefinedNetwork support: primary networks, UDN isolation (requires
    /// --enable-multi-network).
    #[arg(long)]
    pub enable_network_segmentation: bool,
    /// Packets per second of the `acl-logging` meter.
    #[arg(long, value_name = "PPS", default_value_t = crate::topology::DEFAULT_ACL_LOGGING_RATE_LIMIT)]
    pub acl_logging_rate_limit: u32,
    /// Source port range of SNATs (`external_port_range` of every NAT), `low-high`; not
    /// written when empty.
    #[arg(long, value_name = "LOW-HIGH", default_value = "")]
    pub ephemeral_port_range: String,
    /// Dynamic UDN (`--enable-dynamic-udn-allocation`, `--udn-deletion-grace-period`).
    #[command(flatten)]
    pub dynamic_udn: udn_api::dynamic_udn_args::DynamicUdnArgs,
    /// The savings at equal features (`docs/topology-costs.md`).
    #[command(flatten)]
    pub lean: LeanArgs,
}

/// One flag per saving at equal features: `true` (the default) renders less than upstream
/// where a network does not need it, `false` gives upstream's exact rows.
#[derive(Clone, Debug, Args)]
pub struct LeanArgs {
    /// A Layer3 network gets its transit switch (and the local `rtots-`/`tstor-` pair) only
    /// while a remote node has the network.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub lean_transit_on_demand: bool,
    /// Multicast is off: no `mcast_*` switch keys, no `mcast_flood` router port option, no
    /// `clusterRtrPortGroup`.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub lean_skip_multicast: bool,
    /// No allow-from-node ACL on a UDN's node switch (it only matters under NetworkPolicy
    /// default-deny, which udn does not render).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub lean_skip_node_allow_acl: bool,
}

impl LeanArgs {
    /// The savings these flags switch on.
    pub fn lean(&self) -> Lean {
        Lean {
            transit_on_demand: self.lean_transit_on_demand,
            skip_multicast: self.lean_skip_multicast,
            skip_node_allow_acl: self.lean_skip_node_allow_acl,
        }
    }
}

/// Why the configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The cluster flags are invalid.
    #[error(transparent)]
    Cluster(#[from] ClusterArgsError),
    /// Segmentation needs multi-network, as upstream.
    #[error("--enable-network-segmentation requires --enable-multi-network")]
    SegmentationWithoutMultiNetwork,
    /// `--zone` is empty.
    #[error("--zone: a zone name is required (upstream: the node name)")]
    NoZone,
    /// Only the shared gateway mode is supported.
    #[error("--gateway-mode=local: only --gateway-mode=shared is supported by the NB controller")]
    LocalGateway,
    /// `--ephemeral-port-range` is not `low-high`.
    #[error("--ephemeral-port-range: {range:?} is not LOW-HIGH with 1 <= LOW <= HIGH <= 65535")]
    PortRange {
        /// The value given.
        range: String,
    },
    /// A database address does not parse.
    #[error("--{flag}: {reason}")]
    Address {
        /// The flag.
        flag: &'static str,
        /// Why.
        reason: String,
    },
}

/// What the controller needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The zone and the cluster.
    pub zone: ZoneConfig,
    /// Northbound endpoint.
    pub nb: Endpoint,
    /// Southbound endpoint.
    pub sb: Endpoint,
    /// `--acl-logging-rate-limit`.
    pub acl_logging_rate_limit: u32,
    /// `--ephemeral-port-range`, when given.
    pub ephemeral_port_range: Option<String>,
}

fn endpoint(flag: &'static str, text: &str) -> Result<Endpoint, ConfigError> {
    text.parse()
        .map_err(|e: udn_ovsdb::client::EndpointError| ConfigError::Address {
            flag,
            reason: e.to_string(),
        })
}

fn port_range(text: &str) -> Result<Option<String>, ConfigError> {
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || ConfigError::PortRange {
        range: text.to_owned(),
    };
    let (low, high) = text.split_once('-').ok_or_else(bad)?;
    let low: u16 = low.parse().map_err(|_| bad())?;
    let high: u16 = high.parse().map_err(|_| bad())?;
    if low == 0 || low > high {
        return Err(bad());
    }
    Ok(Some(format!("{low}-{high}")))
}

impl Config {
    /// Builds the configuration from the flags.
    pub fn from_args(args: &ControllerArgs, cluster: &ClusterArgs) -> Result<Self, ConfigError> {
        if args.enable_network_segmentation && !args.enable_multi_network {
            return Err(ConfigError::SegmentationWithoutMultiNetwork);
        }
        if args.zone.trim().is_empty() {
            return Err(ConfigError::NoZone);
        }
        if cluster.gateway_mode == GatewayModeArg::Local {
            return Err(ConfigError::LocalGateway);
        }
        Ok(Self {
            zone: ZoneConfig {
                zone: args.zone.clone(),
                cluster: cluster.cluster()?,
                multi_network: args.enable_multi_network,
                segmentation: args.enable_network_segmentation && args.enable_multi_network,
                dynamic_udn: args.dynamic_udn.enable_dynamic_udn_allocation,
                lean: args.lean.lean(),
            },
            nb: endpoint("nb-address", &args.nb_address)?,
            sb: endpoint("sb-address", &args.sb_address)?,
            acl_logging_rate_limit: args.acl_logging_rate_limit,
            ephemeral_port_range: port_range(&args.ephemeral_port_range)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        controller: ControllerArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    }

    fn config(args: &[&str]) -> Result<Config, ConfigError> {
        let flags =
            Flags::try_parse_from(std::iter::once("udn-controller").chain(args.iter().copied()))
                .map_err(|e| ConfigError::Address {
                    flag: "parse",
                    reason: e.to_string(),
                })?;
        Config::from_args(&flags.controller, &flags.cluster)
    }

    #[test]
    fn flags_build_the_zone_and_bad_ones_name_the_flag() {
        let ok = config(&[
            "--zone",
            "node1",
            "--enable-multi-network",
            "--enable-network-segmentation",
            "--nb-address",
            "unix:/run/nb.sock",
            "--sb-address",
            "tcp:127.0.0.1:6642",
            "--ephemeral-port-range",
            "32768-60999",
        ])
        .unwrap();
        assert!(ok.zone.segmentation && ok.zone.multi_network);
        assert_eq!(ok.zone.zone, "node1");
        assert_eq!(ok.ephemeral_port_range.as_deref(), Some("32768-60999"));
        assert_eq!(ok.acl_logging_rate_limit, 20);
        assert_eq!(ok.zone.lean, Lean::ALL);
        let upstream = config(&[
            "--zone",
            "n",
            "--lean-transit-on-demand=false",
            "--lean-skip-multicast",
            "false",
            "--lean-skip-node-allow-acl=false",
        ])
        .unwrap();
        assert_eq!(upstream.zone.lean, Lean::UPSTREAM);
        let err = |args: &[&str]| config(args).unwrap_err().to_string();
        assert!(
            err(&["--zone", "n", "--enable-network-segmentation"])
                .contains("requires --enable-multi-network")
        );
        assert!(err(&["--zone", " "]).contains("--zone"));
        assert!(err(&["--zone", "n", "--nb-address", "http://x"]).contains("--nb-address"));
        assert!(
            err(&["--zone", "n", "--ephemeral-port-range", "9-1"])
                .contains("--ephemeral-port-range")
        );
        assert!(err(&["--zone", "n", "--gateway-mode", "local"]).contains("--gateway-mode=local"));
    }
}
