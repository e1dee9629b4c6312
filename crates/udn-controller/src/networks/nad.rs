//! One NetworkAttachmentDefinition, parsed: its NetConf as a typed network, and the
//! identity annotations cluster-manager writes on it.

use udn_api::annotations::{AnnotationError, NadNetworkAnnotations};
use udn_api::cluster::ClusterConfig;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::nad_key;
use udn_api::netconf::{NetConf, NetConfParseError, NetInfo, NetInfoError, UserDefinedNetInfo};

/// What the zone takes from one NAD that defines a user-defined network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NadNetwork {
    /// `namespace/name`.
    pub key: String,
    /// The typed network configuration.
    pub info: UserDefinedNetInfo,
    /// `k8s.ovn.org/network-id`, once cluster-manager has written it.
    pub network_id: Option<u32>,
    /// `k8s.ovn.org/tunnel-keys`.
    pub tunnel_keys: Vec<u32>,
}

/// Why a NAD defines no usable network (reported on the NAD as a Warning Event).
#[derive(Debug, thiserror::Error)]
pub enum NadError {
    /// `spec.config` is not an OVN-Kubernetes NetConf.
    #[error("NetworkAttachmentDefinition {nad}: spec.config: {source}")]
    Config {
        /// NAD key.
        nad: String,
        /// Why.
        #[source]
        source: NetConfParseError,
    },
    /// The NetConf's values are invalid.
    #[error("NetworkAttachmentDefinition {nad}: invalid network configuration: {source}")]
    NetInfo {
        /// NAD key.
        nad: String,
        /// Why.
        #[source]
        source: NetInfoError,
    },
    /// `netAttachDefName` does not name this NAD (upstream `ParseNADInfo`).
    #[error(
        "NetworkAttachmentDefinition {nad}: spec.config: netAttachDefName {found:?} does not match the NAD {nad:?}"
    )]
    NameMismatch {
        /// NAD key.
        nad: String,
        /// The `netAttachDefName` found.
        found: String,
    },
    /// An identity annotation does not parse.
    #[error("NetworkAttachmentDefinition {nad}: {source}")]
    Annotation {
        /// NAD key.
        nad: String,
        /// Why.
        #[source]
        source: Box<AnnotationError>,
    },
}

/// Parses a NAD. `Ok(None)`: not an OVN-Kubernetes user-defined network (another CNI type,
/// no config, or the default network's NetConf).
pub fn parse_nad(
    nad: &NetworkAttachmentDefinition,
    cluster: &ClusterConfig,
) -> Result<Option<NadNetwork>, NadError> {
    let key = nad_key(
        nad.metadata.namespace.as_deref().unwrap_or_default(),
        nad.metadata.name.as_deref().unwrap_or_default(),
    );
    let Some(config) = nad.spec.config.as_deref() else {
        return Ok(None);
    };
    let conf = match NetConf::parse(config, cluster.mtu) {
        Ok(conf) => conf,
        Err(NetConfParseError::NotOvnManaged) => return Ok(None),
        Err(source) => return Err(NadError::Config { nad: key, source }),
    };
    let info = NetInfo::from_netconf(&conf, cluster).map_err(|source| NadError::NetInfo {
        nad: key.clone(),
        source,
    })?;
    let NetInfo::UserDefined(info) = info else {
        return Ok(None);
    };
    if conf.nad_name != key {
        return Err(NadError::NameMismatch {
            nad: key,
            found: conf.nad_name,
        });
    }
    let annotations = nad.metadata.annotations.clone().unwrap_or_default();
    let ids = NadNetworkAnnotations::from_annotations(&annotations).map_err(|source| {
        NadError::Annotation {
            nad: key.clone(),
            source: Box::new(source),
        }
    })?;
    Ok(Some(NadNetwork {
        key,
        info: *info,
        network_id: ids.network_id,
        tunnel_keys: ids.tunnel_keys,
    }))
}
