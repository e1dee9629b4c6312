//! Which network a CNI request is for, and what the pod's annotation says about it (pure):
//! upstream's `ParseNetConf` rules for the request's netconf, the namespace's primary
//! network from the NADs, and the pod interface (upstream `PodInterfaceInfo`) from the
//! `k8s.ovn.org/pod-networks` entry.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use k8s_openapi::api::core::v1::Pod;
use udn_api::annotations::mac_address::MacAddress;
use udn_api::annotations::pod_networks::{PodNetworkRole, PodRoute, parse_pod_networks};
use udn_api::cluster::ClusterConfig;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{ANNOTATION_POD_NETWORKS, DEFAULT_NETWORK_NAME, nad_key};
use udn_api::netconf::{NetConf, NetConfParseError, NetInfo, UserDefinedNetInfo};

/// The network of one attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The network's name (`default` for the cluster default network).
    pub net_name: String,
    /// The NAD key (`default` for the default network).
    pub nad_key: String,
    /// The network's MTU.
    pub mtu: u32,
    /// The network, for user-defined ones.
    pub info: Option<UserDefinedNetInfo>,
}

impl Attachment {
    /// The default network.
    pub fn default_network(mtu: u32) -> Self {
        Self {
            net_name: DEFAULT_NETWORK_NAME.to_owned(),
            nad_key: DEFAULT_NETWORK_NAME.to_owned(),
            mtu,
            info: None,
        }
    }

    /// Whether this is the default network.
    pub fn is_default(&self) -> bool {
        self.info.is_none()
    }
}

/// Why a request's netconf names no usable network.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The netconf does not parse (or is not ours).
    #[error("invalid network configuration: {0}")]
    NetConf(#[from] NetConfParseError),
    /// The values are invalid.
    #[error("invalid network configuration: {0}")]
    Info(String),
}

/// The attachment a request's netconf (stdin) asks for: without `topology` it is the
/// default network (upstream renames it `default`), otherwise the user-defined network of
/// its `netAttachDefName`.
pub fn attachment_of_netconf(
    config: &str,
    cluster: &ClusterConfig,
) -> Result<Attachment, NetworkError> {
    let conf = NetConf::parse(config, cluster.mtu)?;
    let mtu = u32::try_from(conf.mtu).unwrap_or(cluster.mtu);
    match NetInfo::from_netconf(&conf, cluster).map_err(|e| NetworkError::Info(e.to_string()))? {
        NetInfo::Default => Ok(Attachment::default_network(mtu)),
        NetInfo::UserDefined(info) => Ok(Attachment {
            net_name: info.name.clone(),
            nad_key: conf.nad_name.clone(),
            mtu: u32::try_from(info.mtu).unwrap_or(cluster.mtu),
            info: Some(*info),
        }),
    }
}

/// The primary user-defined network of `namespace` (its NAD whose NetConf has
/// `role: primary`), if any; NADs that do not parse are skipped (the controller reports
/// them).
pub fn primary_attachment<'a>(
    nads: impl IntoIterator<Item = &'a NetworkAttachmentDefinition>,
    namespace: &str,
    cluster: &ClusterConfig,
) -> Option<Attachment> {
    nads.into_iter()
        .filter(|nad| nad.metadata.namespace.as_deref() == Some(namespace))
        .filter_map(|nad| {
            let key = nad_key(namespace, nad.metadata.name.as_deref().unwrap_or_default());
            let attachment = attachment_of_netconf(nad.spec.config.as_deref()?, cluster).ok()?;
            let primary = attachment.info.as_ref().is_some_and(|info| info.primary);
            (primary && attachment.nad_key == key).then_some(attachment)
        })
        .min_by(|a, b| a.nad_key.cmp(&b.nad_key))
}

/// One interface of a pod as its annotation describes it (upstream `PodInterfaceInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInterface {
    /// Addresses with prefix lengths.
    pub ips: Vec<IpNetwork>,
    /// The MAC.
    pub mac: MacAddress,
    /// Default gateways (one per family at most).
    pub gateways: Vec<IpAddr>,
    /// Extra routes.
    pub routes: Vec<PodRoute>,
    /// The role of the network for the pod.
    pub role: Option<PodNetworkRole>,
    /// The network MTU.
    pub mtu: u32,
    /// The network.
    pub attachment: Attachment,
}

/// The pod's interface on `attachment` once its annotation has a readable entry for the
/// NAD key (upstream `isOvnReady`); `None` while it has not.
pub fn pod_interface(pod: &Pod, attachment: &Attachment) -> Option<PodInterface> {
    let value = pod
        .metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_POD_NETWORKS)?;
    let entry = parse_pod_networks(value)
        .ok()?
        .remove(&attachment.nad_key)?;
    Some(PodInterface {
        ips: entry.ip_addresses,
        mac: entry.mac_address,
        gateways: entry.gateway_ips,
        routes: entry.routes,
        role: entry.role,
        mtu: attachment.mtu,
        attachment: attachment.clone(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;
    use udn_api::cluster_args::ClusterArgs;

    fn cluster() -> ClusterConfig {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            cluster: ClusterArgs,
        }
        Cli::parse_from(["x", "--mtu", "1400"])
            .cluster
            .cluster()
            .unwrap()
    }

    fn nad(namespace: &str, name: &str, config: &str) -> NetworkAttachmentDefinition {
        let mut nad: NetworkAttachmentDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"namespace": namespace, "name": name},
            "spec": {"config": config},
        }))
        .unwrap();
        nad.metadata.namespace = Some(namespace.to_owned());
        nad
    }

    const PRIMARY: &str = r#"{"cniVersion":"1.0.0","name":"blue_net","type":"ovn-k8s-cni-overlay","netAttachDefName":"blue/net","role":"primary","topology":"layer3","subnets":"10.128.0.0/16/24","mtu":1300}"#;

    #[test]
    fn default_and_user_defined_netconfs() {
        let default = attachment_of_netconf(
            r#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}"#,
            &cluster(),
        )
        .unwrap();
        assert_eq!(default, Attachment::default_network(1400));
        let udn = attachment_of_netconf(PRIMARY, &cluster()).unwrap();
        assert_eq!(udn.net_name, "blue_net");
        assert_eq!(udn.nad_key, "blue/net");
        assert_eq!(udn.mtu, 1300);
        assert!(attachment_of_netconf(r#"{"type":"bridge","name":"x"}"#, &cluster()).is_err());
        assert!(attachment_of_netconf("{", &cluster()).is_err());
    }

    #[test]
    fn the_namespace_primary_network() {
        let nads = [
            nad("blue", "net", PRIMARY),
            nad("red", "net", &PRIMARY.replace("blue/net", "red/net")),
            nad("blue", "broken", "{"),
        ];
        let primary = primary_attachment(&nads, "blue", &cluster()).unwrap();
        assert_eq!(primary.nad_key, "blue/net");
        assert!(primary_attachment(&nads, "green", &cluster()).is_none());
    }

    #[test]
    fn the_pod_interface_appears_with_its_annotation_entry() {
        let mut pod = Pod::default();
        let attachment = Attachment::default_network(1400);
        assert!(pod_interface(&pod, &attachment).is_none());
        pod.metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_POD_NETWORKS.to_owned(),
            r#"{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","gateway_ips":["10.244.1.1"],"routes":[{"dest":"10.244.0.0/16","nextHop":"10.244.1.1"}],"ip_address":"10.244.1.5/24","gateway_ip":"10.244.1.1","role":"primary"}}"#.to_owned(),
        )]));
        let iface = pod_interface(&pod, &attachment).unwrap();
        assert_eq!(iface.ips, ["10.244.1.5/24".parse::<IpNetwork>().unwrap()]);
        assert_eq!(iface.gateways, ["10.244.1.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(iface.routes.len(), 1);
        assert_eq!(iface.mtu, 1400);
        let other = Attachment {
            nad_key: "blue/net".into(),
            ..attachment
        };
        assert!(pod_interface(&pod, &other).is_none());
    }
}
