//! UDN/CUDN spec -> rendered [`NetConf`] (upstream `renderCNINetworkConfig`), with the
//! render-time checks in upstream order.

use super::error::RenderError;
use super::source::{NetworkSource, NetworkSpecRef, nad_name, network_name};
use super::transit::set_transit_subnets;
use super::validate::validate_netconf;
use crate::cluster::ClusterConfig;
use crate::crd::{
    Cidr, EvpnConfig, IpamConfig, Layer2Config, Layer3Config, Layer3Subnet, LocalnetConfig,
    NetworkRole, NetworkTopology, OutboundSnat, TransportOption, VrfConfig,
};
use crate::names::{CNI_TYPE, CNI_VERSION};
use crate::netconf::{
    EvpnNetConf, NetConf, NetInfo, OUTBOUND_SNAT_DISABLED, OUTBOUND_SNAT_ENABLED, TRANSPORT_EVPN,
    TRANSPORT_NO_OVERLAY, UDN_JOIN_SUBNET_V4, UDN_JOIN_SUBNET_V6, VrfNetConf,
};

/// Render and validate the CNI config of `source` (everything of [`super::render_nad`]
/// except the object metadata).
pub fn render_netconf(
    source: &NetworkSource<'_>,
    cluster: &ClusterConfig,
) -> Result<NetConf, RenderError> {
    if source.namespace().is_empty() {
        return Err(RenderError::EmptyNamespace);
    }
    let spec = source.spec();
    let nad_name = nad_name(source);
    let mut conf = NetConf {
        cni_version: CNI_VERSION.to_owned(),
        plugin_type: CNI_TYPE.to_owned(),
        name: network_name(source),
        nad_name: nad_name.clone(),
        topology: spec.topology().cni_name().to_owned(),
        transport: transport_cni_name(spec.transport()).to_owned(),
        uplink: source.uplink().unwrap_or_default().to_owned(),
        ..NetConf::default()
    };
    let mismatch = || RenderError::TopologyConfigMismatch {
        topology: crd_topology_name(spec.topology()),
    };
    match spec.topology() {
        NetworkTopology::Layer3 => layer3(&mut conf, spec.layer3().ok_or_else(mismatch)?),
        NetworkTopology::Layer2 => {
            layer2(&mut conf, spec.layer2().ok_or_else(mismatch)?, cluster)?;
        }
        NetworkTopology::Localnet => {
            localnet(&mut conf, spec.localnet().ok_or_else(mismatch)?, cluster);
        }
    }
    transport_settings(&mut conf, spec, cluster)?;
    if conf.allow_persistent_ips && !cluster.features.persistent_ips {
        return Err(RenderError::PersistentIpsDisabled);
    }
    validate_netconf(&nad_name, &mut conf, cluster)
        .map_err(|reason| RenderError::InvalidNetConf { reason })?;
    NetInfo::from_netconf(&conf, cluster).map_err(|reason| RenderError::NetInfo { reason })?;
    Ok(conf)
}

fn layer3(conf: &mut NetConf, cfg: &Layer3Config) {
    conf.role = cfg.role.cni_name().to_owned();
    conf.mtu = i64::from(cfg.mtu.unwrap_or_default());
    conf.subnets = layer3_subnets(&cfg.subnets);
    conf.join_subnet = join_subnets(cfg.role, cfg.join_subnets.as_ref().map(|j| j.0.as_slice()));
}

fn layer2(
    conf: &mut NetConf,
    cfg: &Layer2Config,
    cluster: &ClusterConfig,
) -> Result<(), RenderError> {
    let ipam = cfg.ipam.as_ref();
    let ipam_enabled = IpamConfig::enabled(ipam);
    if IpamConfig::persistent(ipam) && !ipam_enabled {
        return Err(RenderError::IpamLifecycleNotSupported);
    }
    let subnets = cfg
        .subnets
        .as_ref()
        .map(|s| s.0.as_slice())
        .unwrap_or_default();
    if ipam_enabled && subnets.is_empty() {
        return Err(RenderError::SubnetsRequired);
    }
    if !ipam_enabled && !subnets.is_empty() {
        return Err(RenderError::SubnetsMustBeUnset);
    }
    conf.role = cfg.role.cni_name().to_owned();
    conf.mtu = i64::from(cfg.mtu.unwrap_or_default());
    conf.allow_persistent_ips = IpamConfig::persistent(ipam);
    conf.subnets = join_cidrs(subnets);
    if cluster.features.preconfigured_udn_addresses {
        conf.reserved_subnets = join_cidrs(cfg.reserved_subnets.as_deref().unwrap_or_default());
        conf.infrastructure_subnets =
            join_cidrs(cfg.infrastructure_subnets.as_deref().unwrap_or_default());
        conf.default_gateway_ips = cfg
            .default_gateway_ips
            .as_ref()
            .map(|ips| {
                ips.0
                    .iter()
                    .map(|ip| ip.0.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
    }
    conf.join_subnet = join_subnets(cfg.role, cfg.join_subnets.as_ref().map(|j| j.0.as_slice()));
    if cfg.role == NetworkRole::Primary {
        set_transit_subnets(conf, cluster)
            .map_err(|reason| RenderError::TransitSubnet { reason })?;
    }
    Ok(())
}

fn localnet(conf: &mut NetConf, cfg: &LocalnetConfig, cluster: &ClusterConfig) {
    conf.role = cfg.role.cni_name().to_owned();
    conf.mtu = match cfg.mtu {
        Some(mtu) if mtu > 0 => i64::from(mtu),
        _ => i64::from(cluster.mtu) + 100,
    };
    conf.allow_persistent_ips = IpamConfig::persistent(cfg.ipam.as_ref());
    conf.subnets = join_cidrs(
        cfg.subnets
            .as_ref()
            .map(|s| s.0.as_slice())
            .unwrap_or_default(),
    );
    conf.exclude_subnets = join_cidrs(cfg.exclude_subnets.as_deref().unwrap_or_default());
    conf.physical_network_name
        .clone_from(&cfg.physical_network_name);
    if let Some(access) = cfg.vlan.as_ref().and_then(|vlan| vlan.access.as_ref()) {
        conf.vlan_id = i64::from(access.id);
    }
}

/// EVPN (feature check, `evpn` block) and no-overlay (`outboundSNAT`).
fn transport_settings(
    conf: &mut NetConf,
    spec: NetworkSpecRef<'_>,
    cluster: &ClusterConfig,
) -> Result<(), RenderError> {
    match spec.transport() {
        Some(TransportOption::Evpn) => {
            if !cluster.features.evpn {
                return Err(RenderError::EvpnNotEnabled);
            }
            conf.evpn = spec.evpn().map(evpn_netconf);
        }
        Some(TransportOption::NoOverlay) => {
            if let Some(no_overlay) = spec.no_overlay() {
                conf.outbound_snat = match no_overlay.outbound_snat {
                    OutboundSnat::Enabled => OUTBOUND_SNAT_ENABLED,
                    OutboundSnat::Disabled => OUTBOUND_SNAT_DISABLED,
                }
                .to_owned();
            }
        }
        None => {}
    }
    Ok(())
}

/// The `evpn` block without VIDs (udn allocates none; upstream omits a zero VID).
fn evpn_netconf(cfg: &EvpnConfig) -> EvpnNetConf {
    let vrf = |v: &VrfConfig| VrfNetConf {
        vni: v.vni,
        route_target: v
            .route_target
            .as_ref()
            .map(|rt| rt.0.clone())
            .unwrap_or_default(),
        vid: 0,
    };
    EvpnNetConf {
        vtep: cfg.vtep.clone(),
        mac_vrf: cfg.mac_vrf.as_ref().map(vrf),
        ip_vrf: cfg.ip_vrf.as_ref().map(vrf),
    }
}

/// The CRD spelling of a topology, as upstream's `string(topology)`.
fn crd_topology_name(topology: NetworkTopology) -> &'static str {
    match topology {
        NetworkTopology::Layer2 => "Layer2",
        NetworkTopology::Layer3 => "Layer3",
        NetworkTopology::Localnet => "Localnet",
    }
}

fn transport_cni_name(transport: Option<TransportOption>) -> &'static str {
    match transport {
        Some(TransportOption::NoOverlay) => TRANSPORT_NO_OVERLAY,
        Some(TransportOption::Evpn) => TRANSPORT_EVPN,
        None => "",
    }
}

/// Layer3 `subnets`: `cidr` or `cidr/hostSubnet` (only when hostSubnet > 0), verbatim.
fn layer3_subnets(subnets: &[Layer3Subnet]) -> String {
    subnets
        .iter()
        .map(|s| match s.host_subnet {
            Some(host) if host > 0 => format!("{}/{host}", s.cidr.0),
            _ => s.cidr.0.clone(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn join_cidrs(cidrs: &[Cidr]) -> String {
    cidrs
        .iter()
        .map(|c| c.0.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Primary networks: the given join subnets, or both UDN defaults; others: none.
fn join_subnets(role: NetworkRole, join: Option<&[Cidr]>) -> String {
    if role != NetworkRole::Primary {
        return String::new();
    }
    match join {
        Some(join) if !join.is_empty() => join_cidrs(join),
        _ => format!("{UDN_JOIN_SUBNET_V4},{UDN_JOIN_SUBNET_V6}"),
    }
}
