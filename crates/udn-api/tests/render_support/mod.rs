//! Builders shared by the `render_*` integration tests (each test crate uses a subset).
#![allow(dead_code)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::{
    Cidr, ClusterUserDefinedNetwork, ClusterUserDefinedNetworkSpec, DualStackCidrs, IpamConfig,
    IpamLifecycle, IpamMode, Layer2Config, Layer3Config, Layer3Subnet, LocalnetConfig, NetworkRole,
    NetworkSpec, NetworkTopology, UserDefinedNetwork, UserDefinedNetworkSpec,
};
use udn_api::render::{NetworkSource, RenderError, render_nad};

pub(crate) const NS: &str = "mynamespace";
pub(crate) const NAME: &str = "test-net";

pub(crate) fn cidrs(list: &[&str]) -> Vec<Cidr> {
    list.iter().map(|c| Cidr((*c).to_owned())).collect()
}

pub(crate) fn dual(list: &[&str]) -> DualStackCidrs {
    DualStackCidrs(cidrs(list))
}

pub(crate) fn l3(role: NetworkRole, subnets: &[(&str, Option<i32>)]) -> Layer3Config {
    Layer3Config {
        role,
        mtu: None,
        subnets: subnets
            .iter()
            .map(|(cidr, host)| Layer3Subnet {
                cidr: Cidr((*cidr).to_owned()),
                host_subnet: *host,
            })
            .collect(),
        join_subnets: None,
    }
}

pub(crate) fn l2(role: NetworkRole, subnets: &[&str]) -> Layer2Config {
    Layer2Config {
        role,
        mtu: None,
        subnets: (!subnets.is_empty()).then(|| dual(subnets)),
        reserved_subnets: None,
        infrastructure_subnets: None,
        default_gateway_ips: None,
        join_subnets: None,
        ipam: None,
    }
}

pub(crate) fn localnet(physnet: &str, subnets: &[&str]) -> LocalnetConfig {
    LocalnetConfig {
        role: NetworkRole::Secondary,
        physical_network_name: physnet.to_owned(),
        subnets: (!subnets.is_empty()).then(|| dual(subnets)),
        exclude_subnets: None,
        ipam: None,
        mtu: None,
        vlan: None,
    }
}

pub(crate) fn persistent() -> Option<IpamConfig> {
    Some(IpamConfig {
        mode: None,
        lifecycle: Some(IpamLifecycle::Persistent),
    })
}

pub(crate) fn ipam(mode: Option<IpamMode>, lifecycle: Option<IpamLifecycle>) -> Option<IpamConfig> {
    Some(IpamConfig { mode, lifecycle })
}

pub(crate) fn udn_spec_l3(cfg: Layer3Config) -> UserDefinedNetworkSpec {
    UserDefinedNetworkSpec {
        topology: NetworkTopology::Layer3,
        layer3: Some(cfg),
        layer2: None,
    }
}

pub(crate) fn udn_spec_l2(cfg: Layer2Config) -> UserDefinedNetworkSpec {
    UserDefinedNetworkSpec {
        topology: NetworkTopology::Layer2,
        layer3: None,
        layer2: Some(cfg),
    }
}

pub(crate) fn net_spec(topology: NetworkTopology) -> NetworkSpec {
    NetworkSpec {
        topology,
        layer3: None,
        layer2: None,
        localnet: None,
        transport: None,
        no_overlay: None,
        evpn: None,
    }
}

pub(crate) fn net_l3(cfg: Layer3Config) -> NetworkSpec {
    NetworkSpec {
        layer3: Some(cfg),
        ..net_spec(NetworkTopology::Layer3)
    }
}

pub(crate) fn net_l2(cfg: Layer2Config) -> NetworkSpec {
    NetworkSpec {
        layer2: Some(cfg),
        ..net_spec(NetworkTopology::Layer2)
    }
}

pub(crate) fn net_localnet(cfg: LocalnetConfig) -> NetworkSpec {
    NetworkSpec {
        localnet: Some(cfg),
        ..net_spec(NetworkTopology::Localnet)
    }
}

/// A UDN `mynamespace/test-net` with uid `1`.
pub(crate) fn udn(spec: UserDefinedNetworkSpec) -> UserDefinedNetwork {
    let mut udn = UserDefinedNetwork::new(NAME, spec);
    udn.metadata.namespace = Some(NS.to_owned());
    udn.metadata.uid = Some("1".to_owned());
    udn
}

/// A CUDN `test-net` with uid `1`.
pub(crate) fn cudn(network: NetworkSpec) -> ClusterUserDefinedNetwork {
    let mut cudn = ClusterUserDefinedNetwork::new(
        NAME,
        ClusterUserDefinedNetworkSpec {
            namespace_selector: LabelSelector::default(),
            uplinks: None,
            network,
        },
    );
    cudn.metadata.uid = Some("1".to_owned());
    cudn
}

/// The kind dual-stack cluster with persistent IPs enabled (upstream test setup).
pub(crate) fn cluster() -> ClusterConfig {
    let mut cluster = ClusterConfig::default();
    cluster.features.persistent_ips = true;
    cluster
}

pub(crate) fn render_udn(
    spec: UserDefinedNetworkSpec,
    cluster: &ClusterConfig,
) -> Result<String, RenderError> {
    let udn = udn(spec);
    let nad = render_nad(&NetworkSource::Udn(&udn), cluster)?;
    Ok(nad.spec.config.unwrap_or_default())
}

pub(crate) fn render_cudn(
    network: NetworkSpec,
    cluster: &ClusterConfig,
) -> Result<String, RenderError> {
    let cudn = cudn(network);
    let nad = render_nad(
        &NetworkSource::Cudn {
            cudn: &cudn,
            namespace: NS,
        },
        cluster,
    )?;
    Ok(nad.spec.config.unwrap_or_default())
}

pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
