//! What a NAD is rendered from: a UDN, or a CUDN plus one selected namespace; and the
//! spec accessors shared by the render and the cluster-manager (upstream `SpecGetter`,
//! `IsPrimaryNetwork`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::crd::{
    ClusterUserDefinedNetwork, EvpnConfig, Layer2Config, Layer3Config, LocalnetConfig, NetworkRole,
    NetworkSpec, NetworkTopology, NoOverlayConfig, TransportOption, UserDefinedNetwork,
    UserDefinedNetworkSpec,
};
use crate::names::{cudn_network_name, nad_key, udn_network_name};

/// The object a NAD is rendered from, with the namespace the NAD goes to.
#[derive(Clone, Copy, Debug)]
pub enum NetworkSource<'a> {
    /// A UDN; its NAD goes to the UDN's own namespace.
    Udn(&'a UserDefinedNetwork),
    /// A CUDN rendered into one selected namespace.
    Cudn {
        /// The CUDN.
        cudn: &'a ClusterUserDefinedNetwork,
        /// The target namespace.
        namespace: &'a str,
    },
}

impl<'a> NetworkSource<'a> {
    /// The owner's metadata.
    pub fn meta(&self) -> &'a ObjectMeta {
        match self {
            Self::Udn(udn) => &udn.metadata,
            Self::Cudn { cudn, .. } => &cudn.metadata,
        }
    }

    /// The owner's name, which is also the NAD name (empty when unset).
    pub fn name(&self) -> &'a str {
        self.meta().name.as_deref().unwrap_or_default()
    }

    /// The namespace the NAD goes to (empty when a UDN has none).
    pub fn namespace(&self) -> &'a str {
        match self {
            Self::Udn(udn) => udn.metadata.namespace.as_deref().unwrap_or_default(),
            Self::Cudn { namespace, .. } => namespace,
        }
    }

    /// The owner's kind: `UserDefinedNetwork` or `ClusterUserDefinedNetwork`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Udn(_) => "UserDefinedNetwork",
            Self::Cudn { .. } => "ClusterUserDefinedNetwork",
        }
    }

    /// The network spec.
    pub fn spec(&self) -> NetworkSpecRef<'a> {
        match self {
            Self::Udn(udn) => NetworkSpecRef::Udn(&udn.spec),
            Self::Cudn { cudn, .. } => NetworkSpecRef::Cudn(&cudn.spec.network),
        }
    }

    /// The uplink (`spec.uplinks[0]` of a CUDN).
    pub fn uplink(&self) -> Option<&'a str> {
        match self {
            Self::Udn(_) => None,
            Self::Cudn { cudn, .. } => cudn
                .spec
                .uplinks
                .as_ref()
                .and_then(|uplinks| uplinks.first())
                .map(String::as_str),
        }
    }
}

/// Network name: `<namespace>_<name>` for a UDN, `cluster_udn_<name>` for a CUDN.
pub fn network_name(source: &NetworkSource<'_>) -> String {
    match source {
        NetworkSource::Udn(_) => udn_network_name(source.namespace(), source.name()),
        NetworkSource::Cudn { .. } => cudn_network_name(source.name()),
    }
}

/// NAD key / `netAttachDefName`: `<namespace>/<name>`.
pub fn nad_name(source: &NetworkSource<'_>) -> String {
    nad_key(source.namespace(), source.name())
}

/// A UDN spec or a CUDN network spec (upstream `SpecGetter`).
#[derive(Clone, Copy, Debug)]
pub enum NetworkSpecRef<'a> {
    /// `UserDefinedNetwork.spec`.
    Udn(&'a UserDefinedNetworkSpec),
    /// `ClusterUserDefinedNetwork.spec.network`.
    Cudn(&'a NetworkSpec),
}

impl<'a> From<&'a UserDefinedNetworkSpec> for NetworkSpecRef<'a> {
    fn from(spec: &'a UserDefinedNetworkSpec) -> Self {
        Self::Udn(spec)
    }
}

impl<'a> From<&'a NetworkSpec> for NetworkSpecRef<'a> {
    fn from(spec: &'a NetworkSpec) -> Self {
        Self::Cudn(spec)
    }
}

impl<'a> NetworkSpecRef<'a> {
    /// `topology`.
    pub fn topology(self) -> NetworkTopology {
        match self {
            Self::Udn(spec) => spec.topology,
            Self::Cudn(spec) => spec.topology,
        }
    }

    /// `layer3`.
    pub fn layer3(self) -> Option<&'a Layer3Config> {
        match self {
            Self::Udn(spec) => spec.layer3.as_ref(),
            Self::Cudn(spec) => spec.layer3.as_ref(),
        }
    }

    /// `layer2`.
    pub fn layer2(self) -> Option<&'a Layer2Config> {
        match self {
            Self::Udn(spec) => spec.layer2.as_ref(),
            Self::Cudn(spec) => spec.layer2.as_ref(),
        }
    }

    /// `localnet` (CUDN only).
    pub fn localnet(self) -> Option<&'a LocalnetConfig> {
        match self {
            Self::Udn(_) => None,
            Self::Cudn(spec) => spec.localnet.as_ref(),
        }
    }

    /// `transport` (CUDN only).
    pub fn transport(self) -> Option<TransportOption> {
        match self {
            Self::Udn(_) => None,
            Self::Cudn(spec) => spec.transport,
        }
    }

    /// `evpn` (CUDN only).
    pub fn evpn(self) -> Option<&'a EvpnConfig> {
        match self {
            Self::Udn(_) => None,
            Self::Cudn(spec) => spec.evpn.as_ref(),
        }
    }

    /// `noOverlay` (CUDN only).
    pub fn no_overlay(self) -> Option<&'a NoOverlayConfig> {
        match self {
            Self::Udn(_) => None,
            Self::Cudn(spec) => spec.no_overlay.as_ref(),
        }
    }

    /// The role of the config matching the topology; `None` when that config is missing.
    pub fn role(self) -> Option<NetworkRole> {
        match self.topology() {
            NetworkTopology::Layer3 => self.layer3().map(|c| c.role),
            NetworkTopology::Layer2 => self.layer2().map(|c| c.role),
            NetworkTopology::Localnet => self.localnet().map(|c| c.role),
        }
    }
}

/// Whether the spec is a primary network: a Layer3 or Layer2 config with role Primary
/// (upstream `IsPrimaryNetwork`; localnet is never primary).
pub fn is_primary<'a>(spec: impl Into<NetworkSpecRef<'a>>) -> bool {
    let spec = spec.into();
    let role = match spec.topology() {
        NetworkTopology::Layer3 => spec.layer3().map(|c| c.role),
        NetworkTopology::Layer2 => spec.layer2().map(|c| c.role),
        NetworkTopology::Localnet => None,
    };
    role == Some(NetworkRole::Primary)
}
