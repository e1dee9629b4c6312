use udn_api::annotations::{PodNetworks, format_pod_networks};
use udn_api::netconf::{NetConf, NetInfo};

use super::*;

fn nets(texts: &[&str]) -> Vec<IpNetwork> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

fn render(key: &str, entry: PodNetworkAnnotation) -> String {
    format_pod_networks(&PodNetworks::from([(key.to_owned(), entry)])).unwrap()
}

fn v4_cluster() -> ClusterConfig {
    ClusterConfig::ipv4_only()
}

fn layer3(role: &str) -> Network {
    let conf = NetConf {
        name: "green_green-network".into(),
        topology: "layer3".into(),
        role: role.into(),
        subnets: "203.203.0.0/16/24".into(),
        nad_name: "green/green-network".into(),
        ..NetConf::default()
    };
    let info = NetInfo::from_netconf(&conf, &v4_cluster()).unwrap();
    Network {
        name: conf.name,
        id: 1,
        info,
        nads: ["green/green-network".to_owned()].into(),
        tunnel_keys: Vec::new(),
    }
}

fn inputs<'a>(
    network: &'a Network,
    cluster: &'a ClusterConfig,
    role: PodNetworkRole,
    ips: &'a [IpNetwork],
) -> EntryInputs<'a> {
    EntryInputs {
        network,
        cluster,
        role,
        ips,
        mac: None,
        gateway_request: &[],
        default_route_elsewhere: false,
        seed: "green/p",
    }
}

#[test]
fn guide_example_default_infrastructure_locked_and_layer3_primary() {
    let cluster = v4_cluster();
    let default = Network::default_network();
    let ips = nets(&["10.244.0.6/24"]);
    let entry = pod_entry(&inputs(
        &default,
        &cluster,
        PodNetworkRole::InfrastructureLocked,
        &ips,
    ));
    assert_eq!(
        render("default", entry),
        r#"{"default":{"ip_addresses":["10.244.0.6/24"],"mac_address":"0a:58:0a:f4:00:06","routes":[{"dest":"10.244.0.0/16","nextHop":"10.244.0.1"},{"dest":"100.64.0.0/16","nextHop":"10.244.0.1"}],"ip_address":"10.244.0.6/24","role":"infrastructure-locked"}}"#
    );
    let udn = layer3("primary");
    let ips = nets(&["203.203.2.5/24"]);
    let entry = pod_entry(&inputs(&udn, &cluster, PodNetworkRole::Primary, &ips));
    assert_eq!(
        render("green/green-network", entry),
        r#"{"green/green-network":{"ip_addresses":["203.203.2.5/24"],"mac_address":"0a:58:cb:cb:02:05","gateway_ips":["203.203.2.1"],"routes":[{"dest":"203.203.0.0/16","nextHop":"203.203.2.1"},{"dest":"10.96.0.0/16","nextHop":"203.203.2.1"},{"dest":"100.65.0.0/16","nextHop":"203.203.2.1"}],"ip_address":"203.203.2.5/24","gateway_ip":"203.203.2.1","role":"primary"}}"#
    );
}

#[test]
fn default_primary_has_services_hairpin_join_and_gateway() {
    let cluster = v4_cluster();
    let default = Network::default_network();
    let ips = nets(&["10.244.1.5/24"]);
    let entry = pod_entry(&inputs(&default, &cluster, PodNetworkRole::Primary, &ips));
    assert_eq!(
        render("default", entry),
        r#"{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","gateway_ips":["10.244.1.1"],"routes":[{"dest":"10.244.0.0/16","nextHop":"10.244.1.1"},{"dest":"10.96.0.0/16","nextHop":"10.244.1.1"},{"dest":"169.254.0.5/32","nextHop":"10.244.1.1"},{"dest":"100.64.0.0/16","nextHop":"10.244.1.1"}],"ip_address":"10.244.1.5/24","gateway_ip":"10.244.1.1","role":"primary"}}"#
    );
    let mut elsewhere = inputs(&default, &cluster, PodNetworkRole::Primary, &ips);
    elsewhere.default_route_elsewhere = true;
    assert!(pod_entry(&elsewhere).gateway_ips.is_empty());
}

#[test]
fn secondary_layer3_gets_cluster_routes_only_and_dual_stack_groups_by_family() {
    let cluster = ClusterConfig::default();
    let udn = layer3("secondary");
    let ips = nets(&["203.203.2.5/24"]);
    let entry = pod_entry(&inputs(&udn, &cluster, PodNetworkRole::Secondary, &ips));
    assert!(entry.gateway_ips.is_empty());
    assert_eq!(entry.routes.len(), 1);
    let default = Network::default_network();
    let ips = nets(&["10.244.1.5/24", "fd00:10:244:2::5/64"]);
    let entry = pod_entry(&inputs(&default, &cluster, PodNetworkRole::Primary, &ips));
    let dests: Vec<String> = entry.routes.iter().map(|r| r.dest.to_string()).collect();
    assert_eq!(
        dests,
        [
            "10.244.0.0/16",
            "10.96.0.0/16",
            "169.254.0.5/32",
            "100.64.0.0/16",
            "fd00:10:244::/48",
            "fd00:10:96::/112",
            "fd69::5/128",
            "fd98::/64"
        ]
    );
    assert_eq!(entry.gateway_ips.len(), 2);
}

#[test]
fn no_ips_gives_a_stable_locally_administered_mac() {
    let cluster = v4_cluster();
    let default = Network::default_network();
    let a = pod_entry(&inputs(&default, &cluster, PodNetworkRole::Secondary, &[]));
    let b = pod_entry(&inputs(&default, &cluster, PodNetworkRole::Secondary, &[]));
    assert_eq!(a.mac_address, b.mac_address);
    assert_eq!(a.mac_address.0[0] & 0x03, 0x02);
}
