use serde_json::json;
use udn_api::cluster::ClusterConfig;
use udn_api::nad::NetworkAttachmentDefinition;

use super::*;

fn config() -> ZoneConfig {
    ZoneConfig {
        zone: "node1".into(),
        cluster: ClusterConfig::default(),
        multi_network: true,
        segmentation: true,
        dynamic_udn: false,
        lean: crate::model::Lean::default(),
    }
}

fn nad(
    ns: &str,
    name: &str,
    network: &str,
    extra: &str,
    id: Option<u32>,
) -> NetworkAttachmentDefinition {
    let config = format!(
        r#"{{"cniVersion":"1.1.0","name":"{network}","type":"ovn-k8s-cni-overlay","netAttachDefName":"{ns}/{name}"{extra}}}"#
    );
    let mut annotations = serde_json::Map::new();
    if let Some(id) = id {
        annotations.insert("k8s.ovn.org/network-id".into(), json!(id.to_string()));
    }
    serde_json::from_value(json!({
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"config": config},
    }))
    .unwrap()
}

const L3_PRIMARY: &str = r#","topology":"layer3","role":"primary","subnets":"10.1.0.0/16/24""#;

#[test]
fn groups_nads_by_network_name_and_finds_primaries() {
    let nads = [
        nad("blue", "net", "cluster_udn_shared", L3_PRIMARY, Some(3)),
        nad("green", "net", "cluster_udn_shared", L3_PRIMARY, Some(3)),
        nad(
            "red",
            "sec",
            "red_sec",
            r#","topology":"layer2","role":"secondary","subnets":"10.9.0.0/24""#,
            Some(4),
        ),
        nad("red", "other-cni", "x", "", None),
    ];
    let set = network_set(&nads, &config());
    assert_eq!(set.problems, []);
    assert_eq!(
        set.networks.keys().collect::<Vec<_>>(),
        ["cluster_udn_shared", "default", "red_sec"]
    );
    let shared = &set.networks["cluster_udn_shared"];
    assert_eq!(shared.id, 3);
    assert_eq!(
        shared.nads.iter().collect::<Vec<_>>(),
        ["blue/net", "green/net"]
    );
    assert_eq!(
        set.primary_of("green")
            .map(|(nad, n)| (nad, n.name.as_str())),
        Some(("green/net", "cluster_udn_shared"))
    );
    assert!(set.primary_of("red").is_none());
    assert_eq!(set.network_of_nad("red/sec").map(|n| n.id), Some(4));
}

#[test]
fn disagreeing_and_invalid_nads_are_problems_not_networks() {
    let nads = [
        nad("a", "net", "shared", L3_PRIMARY, Some(1)),
        nad(
            "b",
            "net",
            "shared",
            r#","topology":"layer2","role":"primary","subnets":"10.1.0.0/16""#,
            Some(1),
        ),
        nad("c", "bad", "c_bad", r#","topology":"layer9""#, Some(2)),
        nad("d", "noid", "d_noid", L3_PRIMARY, None),
    ];
    let set = network_set(&nads, &config());
    let reasons: Vec<(&str, &str)> = set
        .problems
        .iter()
        .map(|p| (p.nad.as_str(), p.reason))
        .collect();
    assert_eq!(
        reasons,
        [("c/bad", "InvalidConfig"), ("b/net", "InvalidConfig")]
    );
    assert!(
        set.problems[0]
            .message
            .contains("topology layer9 not supported"),
        "{}",
        set.problems[0].message
    );
    assert!(
        set.problems[1]
            .message
            .contains("already defined by NetworkAttachmentDefinition a/net")
    );
    assert!(set.networks.contains_key("shared"));
    assert!(set.pending.contains("d_noid") && !set.networks.contains_key("d_noid"));
}

#[test]
fn without_segmentation_primary_networks_are_refused_and_without_multi_network_all() {
    let nads = [nad("a", "net", "a_net", L3_PRIMARY, Some(1))];
    let mut cfg = config();
    cfg.segmentation = false;
    let set = network_set(&nads, &cfg);
    assert_eq!(set.networks.len(), 1);
    assert!(
        set.problems[0]
            .message
            .contains("--enable-network-segmentation")
    );
    cfg.multi_network = false;
    let set = network_set(&nads, &cfg);
    assert_eq!(set.networks.len(), 1);
    assert!(set.problems.is_empty());
}

#[test]
fn layer3_expansion_merges_ranges_in_order() {
    let nads = [
        nad("a", "net", "shared", L3_PRIMARY, Some(1)),
        nad(
            "b",
            "net",
            "shared",
            r#","topology":"layer3","role":"primary","subnets":"10.1.0.0/16/24,10.2.0.0/16/24""#,
            Some(1),
        ),
    ];
    let set = network_set(&nads, &config());
    let info = set.networks["shared"].user_defined().unwrap();
    let subnets: Vec<String> = info.subnets.iter().map(|s| s.cidr.to_string()).collect();
    assert_eq!(subnets, ["10.1.0.0/16", "10.2.0.0/16"]);
}
