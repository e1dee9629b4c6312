//! What a NAD means for network IDs (upstream `ParseNADInfo` as the NAD controller uses
//! it): not ours, the default network, invalid, or a user-defined network. Pure.

use udn_api::annotations::NadNetworkAnnotations;
use udn_api::cluster::ClusterConfig;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::netconf::{NetConf, NetConfParseError, NetInfo};
use udn_api::render::validate_netconf;
use udn_ipam::required_tunnel_keys;

use super::ids::NadIdentity;

/// A NAD classified for the network-ID allocator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NadKind {
    /// Not an OVN-Kubernetes NAD: ignored.
    NotOvn,
    /// The default network (ID 0, nothing written).
    Default,
    /// An OVN-Kubernetes NAD whose config is invalid (upstream records an `InvalidConfig`
    /// event with this message and leaves the NAD alone).
    Invalid(String),
    /// A user-defined network.
    Network(NadIdentity),
}

/// Classify `nad`. Unparsable identity annotations count as absent (they get rewritten).
pub(crate) fn nad_kind(nad: &NetworkAttachmentDefinition, cluster: &ClusterConfig) -> NadKind {
    let namespace = nad.metadata.namespace.as_deref().unwrap_or_default();
    let name = nad.metadata.name.as_deref().unwrap_or_default();
    let key = udn_api::names::nad_key(namespace, name);
    let config = nad.spec.config.as_deref().unwrap_or_default();
    let mut conf = match NetConf::parse(config, cluster.mtu) {
        Ok(conf) => conf,
        Err(NetConfParseError::NotOvnManaged) => return NadKind::NotOvn,
        Err(err) => return NadKind::Invalid(err.to_string()),
    };
    if conf.is_default_network() {
        return NadKind::Default;
    }
    if let Err(err) = validate_netconf(&key, &mut conf, cluster) {
        return NadKind::Invalid(err.to_string());
    }
    let info = match NetInfo::from_netconf(&conf, cluster) {
        Ok(NetInfo::UserDefined(info)) => info,
        Ok(NetInfo::Default) => return NadKind::Default,
        Err(err) => return NadKind::Invalid(err.to_string()),
    };
    let annotated = nad
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| NadNetworkAnnotations::from_annotations(a).ok())
        .unwrap_or_default();
    NadKind::Network(NadIdentity {
        key,
        tunnel_keys: required_tunnel_keys(
            false,
            info.topology == udn_api::crd::NetworkTopology::Layer2,
            info.primary,
        ),
        network: info.name,
        annotated,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::network::fixtures::nad;

    #[test]
    fn classifies_nads() {
        let cluster = ClusterConfig::default();
        assert_eq!(
            nad_kind(&nad("a", "b", r#"{"type":"bridge"}"#, None), &cluster),
            NadKind::NotOvn
        );
        assert_eq!(
            nad_kind(
                &nad(
                    "a",
                    "default",
                    r#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay"}"#,
                    None
                ),
                &cluster
            ),
            NadKind::Default
        );
        assert!(matches!(
            nad_kind(&nad("a", "b", "{", None), &cluster),
            NadKind::Invalid(_)
        ));
        let wrong_name = r#"{"cniVersion":"1.1.0","name":"a_b","netAttachDefName":"a/other","role":"secondary","subnets":"10.1.0.0/16","topology":"layer2","type":"ovn-k8s-cni-overlay"}"#;
        assert_eq!(
            nad_kind(&nad("a", "b", wrong_name, None), &cluster),
            NadKind::Invalid(
                "net-attach-def name (a/b) is inconsistent with config (a/other)".into()
            )
        );
    }

    #[test]
    fn primary_layer2_identity_reads_annotations() {
        let config = r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"a_b","netAttachDefName":"a/b","role":"primary","subnets":"10.1.0.0/16","topology":"layer2","transitSubnet":"100.88.0.0/16","type":"ovn-k8s-cni-overlay"}"#;
        let mut object = (*nad("a", "b", config, None)).clone();
        object.metadata.annotations = Some(BTreeMap::from([
            ("k8s.ovn.org/network-id".to_owned(), "4".to_owned()),
            ("k8s.ovn.org/tunnel-keys".to_owned(), "bad".to_owned()),
        ]));
        let NadKind::Network(identity) = nad_kind(&object, &ClusterConfig::default()) else {
            panic!("expected a network");
        };
        assert_eq!(identity.key, "a/b");
        assert_eq!(identity.network, "a_b");
        assert_eq!(identity.tunnel_keys, 2);
        // The tunnel-keys value does not parse, so none of the annotations count.
        assert_eq!(identity.annotated, NadNetworkAnnotations::default());
    }
}
