//! Pod interface plumbing against the real kernel: a "pod" netns and a "host" netns per test
//! (unique names, deleted on drop). The veth is made by `setup_pod_interface`, read back with
//! netlink and with `ip -j`, and pinged across.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support_wiring;

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use support_wiring::{TestNetns, container_id};
use udn_api::annotations::{MacAddress, PodRoute};
use udn_node::netlink::{
    PodInterfaceSpec, TxChecksumOffload, check_pod_interface, container_ifindex, delete_link,
    host_veth_name, in_netns, inspect_pod_interface, setup_pod_interface,
};

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn spec(host: &TestNetns, pod: &TestNetns, id: &str) -> PodInterfaceSpec {
    PodInterfaceSpec {
        pod_netns: pod.path(),
        host_netns: host.path(),
        container_id: id.to_owned(),
        ifname: "eth0".into(),
        default_network: true,
        mac: "0a:58:0a:f4:01:05".parse::<MacAddress>().unwrap(),
        mtu: 1400,
        routable_mtu: Some(1300),
        ips: vec![net("10.244.1.5/24"), net("fd00:10:244:1::5/64")],
        gateways: vec![ip("10.244.1.1")],
        routes: vec![PodRoute {
            dest: net("10.96.0.0/16"),
            next_hop: Some(ip("10.244.1.1")),
        }],
        skip_ip_config: false,
        tx_checksum_offload: TxChecksumOffload::Disable,
    }
}

fn link_json<'a>(links: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    links
        .as_array()
        .unwrap()
        .iter()
        .find(|link| link["ifname"] == name)
        .unwrap_or_else(|| panic!("no link {name} in {links}"))
}

#[tokio::test]
async fn default_network_interface_is_plumbed_and_answers_pings() {
    let (host, pod) = (TestNetns::new("host"), TestNetns::new("pod"));
    let id = container_id(1);
    let spec = spec(&host, &pod, &id);
    let plumbed = setup_pod_interface(&spec).await.unwrap();

    let host_name = &id[..15];
    assert_eq!(plumbed.host.name, host_name);
    assert_eq!(plumbed.container.name, "eth0");
    assert_eq!(plumbed.container.mac, Some(spec.mac));
    assert_eq!(plumbed.sandbox, pod.path());

    // What `ip` sees on both sides.
    let host_links = host.ip_json(&["link", "show"]);
    let host_link = link_json(&host_links, host_name);
    assert_eq!(host_link["mtu"], 1400);
    assert!(
        host_link["flags"].to_string().contains("\"UP\""),
        "{host_link}"
    );
    assert_eq!(
        host_link["address"],
        plumbed.host.mac.unwrap().to_string().as_str()
    );
    let pod_links = pod.ip_json(&["link", "show"]);
    let eth0 = link_json(&pod_links, "eth0");
    assert_eq!(eth0["address"], "0a:58:0a:f4:01:05");
    assert_eq!(eth0["mtu"], 1400);
    assert!(
        link_json(&pod_links, "lo")["flags"]
            .to_string()
            .contains("\"UP\"")
    );
    let addresses = pod.ok(&["ip", "-o", "addr", "show", "dev", "eth0"]);
    for expected in ["inet 10.244.1.5/24", "inet6 fd00:10:244:1::5/64"] {
        assert!(
            addresses.contains(expected),
            "{expected} not in {addresses}"
        );
    }
    // The pod's own addresses skip DAD; the kernel's link-local one may still be tentative
    // for a moment (it appears once the carrier event is processed).
    let global: Vec<&str> = addresses
        .lines()
        .filter(|line| line.contains("scope global"))
        .collect();
    assert!(
        global.iter().all(|line| !line.contains("tentative")),
        "{addresses}"
    );
    let routes = pod.ok(&["ip", "route", "show"]);
    assert!(
        routes.contains("default via 10.244.1.1 dev eth0 proto static mtu 1300"),
        "{routes}"
    );
    assert!(
        routes.contains("10.96.0.0/16 via 10.244.1.1 dev eth0 proto static mtu 1300"),
        "{routes}"
    );
    let dad = pod.ok(&["cat", "/proc/sys/net/ipv6/conf/eth0/dad_transmits"]);
    assert_eq!(dad.trim(), "0");
    let features = pod.ok(&["ethtool", "-k", "eth0"]);
    assert!(features.contains("tx-checksumming: off"), "{features}");
    // As with `ethtool -K eth0 tx off`, segmentation offload goes with the checksums.
    assert!(features.contains("tx-tcp-segmentation: off"), "{features}");

    // CHECK: read back through netlink, nothing differs; a wrong expectation is reported.
    let observed = inspect_pod_interface(&pod.path(), "eth0")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(check_pod_interface(&spec, &observed), Vec::<String>::new());
    let mut wrong = spec.clone();
    wrong.mtu = 1500;
    wrong.gateways = vec![ip("10.244.1.254")];
    assert_eq!(
        check_pod_interface(&wrong, &observed),
        [
            "mtu 1400, expected 1500",
            "default route via 10.244.1.254 missing"
        ]
    );

    // The host end carries traffic: give it the gateway address and ping the pod.
    host.ok(&["ip", "addr", "add", "10.244.1.1/24", "dev", host_name]);
    host.ok(&[
        "ip",
        "addr",
        "add",
        "fd00:10:244:1::1/64",
        "dev",
        host_name,
        "nodad",
    ]);
    assert!(host.ping("10.244.1.5"));
    assert!(host.ping("fd00:10:244:1::5"));
    assert!(pod.ping("10.244.1.1"));
}

#[tokio::test]
async fn other_networks_name_the_host_end_after_the_pod_ifindex() {
    let (host, pod) = (TestNetns::new("host"), TestNetns::new("pod"));
    let id = container_id(2);
    let udn = PodInterfaceSpec {
        ifname: "ovn-udn1".into(),
        default_network: false,
        mac: "0a:58:0a:80:01:05".parse().unwrap(),
        ips: vec![net("10.128.1.5/24")],
        gateways: vec![ip("10.128.1.1")],
        routes: Vec::new(),
        tx_checksum_offload: TxChecksumOffload::Keep,
        ..spec(&host, &pod, &id)
    };
    let plumbed = setup_pod_interface(&udn).await.unwrap();
    let index = container_ifindex(&pod.path(), "ovn-udn1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plumbed.container.index, index);
    let expected = host_veth_name(&id, false, index);
    assert_eq!(plumbed.host.name, expected);
    assert!(expected.ends_with(&format!("_{index}")) && expected.len() <= 15);
    let host_links = host.ip_json(&["link", "show"]);
    assert_eq!(link_json(&host_links, &expected)["mtu"], 1400);
    let features = pod.ok(&["ethtool", "-k", "ovn-udn1"]);
    assert!(features.contains("tx-checksumming: on"), "{features}");
    // No temporary name is left behind.
    let names: Vec<String> = host_links
        .as_array()
        .unwrap()
        .iter()
        .map(|link| link["ifname"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["lo", expected.as_str()]);
}

#[tokio::test]
async fn teardown_is_idempotent() {
    let (host, pod) = (TestNetns::new("host"), TestNetns::new("pod"));
    let id = container_id(3);
    let plumbed = setup_pod_interface(&spec(&host, &pod, &id)).await.unwrap();
    let name = plumbed.host.name.clone();
    let deleted = in_netns(&host.path(), move |netlink| async move {
        let first = delete_link(&netlink, &name).await?;
        let second = delete_link(&netlink, &name).await?;
        Ok((first, second))
    })
    .await
    .unwrap();
    assert_eq!(deleted, (true, false));
    // Deleting the host end took the pod end with it.
    assert_eq!(
        inspect_pod_interface(&pod.path(), "eth0").await.unwrap(),
        None
    );
    assert_eq!(container_ifindex(&pod.path(), "eth0").await.unwrap(), None);
}

#[tokio::test]
async fn a_taken_host_name_fails_and_leaves_nothing_in_the_pod() {
    let (host, pod) = (TestNetns::new("host"), TestNetns::new("pod"));
    let id = container_id(4);
    setup_pod_interface(&spec(&host, &pod, &id)).await.unwrap();
    let again = PodInterfaceSpec {
        ifname: "eth1".into(),
        ..spec(&host, &pod, &id)
    };
    let error = setup_pod_interface(&again).await.unwrap_err();
    assert_eq!(error.errno(), Some(17), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("netlink create veth of eth1 (peer "),
        "{error}"
    );
    assert_eq!(
        inspect_pod_interface(&pod.path(), "eth1").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_missing_netns_is_named_in_the_error() {
    let host = TestNetns::new("host");
    let gone = udn_node::netlink::NetnsPath::named("udnw-no-such-netns");
    let mut missing = spec(&host, &host, &container_id(5));
    missing.pod_netns = gone.clone();
    let error = setup_pod_interface(&missing).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot open network namespace /var/run/netns/udnw-no-such-netns"
    );
}

#[tokio::test]
async fn turning_offload_off_on_a_missing_interface_names_it() {
    let pod = TestNetns::new("pod");
    let path = pod.path();
    let error = in_netns(&path, |_| async {
        udn_node::netlink::offload::disable_tx_checksum_offload("pod", "nosuch0")
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("nosuch0"), "{error}");
    assert!(error.contains("No such device"), "{error}");
}
