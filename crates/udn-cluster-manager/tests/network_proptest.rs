//! Random UDN specs that pass the CRD schema, created through the API server: every one
//! ends with a `NetworkCreated` condition (True, or False with a message) and nothing
//! panics. Subnets are drawn from a pool that overlaps the cluster, service, join,
//! masquerade and transit ranges, in v4/v6 mixes.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use network_support::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use udn_test_support::namespace;

const V4: &[&str] = &[
    "10.10.0.0/16",
    "10.244.0.0/16",
    "10.96.0.0/16",
    "100.64.0.0/16",
    "100.65.0.0/16",
    "100.88.0.0/16",
    "169.254.0.0/17",
    "192.168.100.0/16",
    "172.16.0.0/24",
    "10.0.0.0/8",
];
const V6: &[&str] = &[
    "2001:db8::/64",
    "fd00:10:244::/48",
    "fd00:10:96::/112",
    "fd98::/64",
    "fd99::/64",
    "fd97::/64",
    "fd69::/112",
    "2001:db8:1::/60",
];

fn subnets() -> impl Strategy<Value = Vec<String>> {
    let v4 = prop::sample::select(V4).prop_map(str::to_owned);
    let v6 = prop::sample::select(V6).prop_map(str::to_owned);
    prop_oneof![
        v4.clone().prop_map(|a| vec![a]),
        v6.clone().prop_map(|a| vec![a]),
        (v4, v6).prop_map(|(a, b)| vec![a, b]),
    ]
}

fn role() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["Primary", "Secondary"][..])
}

fn layer3() -> impl Strategy<Value = Value> {
    (
        role(),
        subnets(),
        prop::option::of((
            prop::sample::select(&[16, 20, 24, 26, 31][..]),
            prop::sample::select(&[64, 72, 120][..]),
        )),
        prop::option::of(prop::sample::select(&[1300, 1400, 9000][..])),
        prop::option::of(Just(json!(["100.62.0.0/24", "fd92::/64"]))),
    )
        .prop_map(|(role, subnets, host, mtu, join)| {
            let subnets: Vec<Value> = subnets
                .iter()
                .map(|cidr| match host {
                    Some((v4, v6)) => {
                        let host = if cidr.contains(':') { v6 } else { v4 };
                        json!({"cidr": cidr, "hostSubnet": host})
                    }
                    None => json!({"cidr": cidr}),
                })
                .collect();
            let mut config = json!({"role": role, "subnets": subnets});
            if let Some(mtu) = mtu {
                config["mtu"] = json!(mtu);
            }
            if let Some(join) = join {
                config["joinSubnets"] = join;
            }
            json!({"topology": "Layer3", "layer3": config})
        })
}

fn layer2() -> impl Strategy<Value = Value> {
    (
        role(),
        subnets(),
        prop::sample::select(&["unset", "Enabled", "Disabled"][..]),
        any::<bool>(),
        prop::option::of(prop::sample::select(&[1300, 1500][..])),
    )
        .prop_map(|(role, subnets, mode, persistent, mtu)| {
            let mut config = json!({"role": role});
            // Mostly coherent with the schema: IPAM disabled goes with no subnets.
            if mode != "Disabled" {
                config["subnets"] = json!(subnets);
            }
            let mut ipam = serde_json::Map::new();
            if mode != "unset" {
                ipam.insert("mode".into(), json!(mode));
            }
            if persistent && mode != "Disabled" {
                ipam.insert("lifecycle".into(), json!("Persistent"));
            }
            if !ipam.is_empty() {
                config["ipam"] = Value::Object(ipam);
            }
            if let Some(mtu) = mtu {
                config["mtu"] = json!(mtu);
            }
            json!({"topology": "Layer2", "layer2": config})
        })
}

struct World {
    runtime: tokio::runtime::Runtime,
    cluster: Cluster,
    _manager: Manager,
    next: AtomicUsize,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let cluster = Cluster::new();
        let manager = runtime.block_on(async { Manager::start(&cluster) });
        World {
            runtime,
            cluster,
            _manager: manager,
            next: AtomicUsize::new(0),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_accepted_udn_gets_a_condition(
        spec in prop_oneof![layer3(), layer2()],
        labelled in any::<bool>(),
    ) {
        let world = world();
        let n = world.next.fetch_add(1, Ordering::SeqCst);
        let ns = format!("ns{n}");
        world.cluster.create(Kind::Namespace, None, namespace(&ns, labelled));
        let udn = json!({
            "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "net", "namespace": ns},
            "spec": spec,
        });
        if world.cluster.try_create(Kind::Udn, Some(&ns), udn).is_none() {
            // The CRD schema refused it: not this test's concern.
            return Ok(());
        }
        let condition = world.runtime.block_on(eventually("a NetworkCreated condition", || {
            world.cluster.condition(Kind::Udn, Some(&ns), "net")
        }));
        let (status, reason, message) = summary(&condition);
        prop_assert!(!message.is_empty());
        match status.as_str() {
            "True" => {
                prop_assert_eq!(reason.as_str(), "NetworkAttachmentDefinitionCreated");
                let nad = world.runtime.block_on(eventually("the NAD with its ID", || {
                    world.cluster.get(Kind::Nad, Some(&ns), "net").filter(|nad| {
                        nad["metadata"]["annotations"]["k8s.ovn.org/network-id"].is_string()
                    })
                }));
                prop_assert_eq!(&nad["metadata"]["finalizers"], &json!([FINALIZER]));
            }
            "False" => {
                prop_assert_eq!(reason.as_str(), "SyncError");
                prop_assert!(world.cluster.get(Kind::Nad, Some(&ns), "net").is_none());
            }
            other => prop_assert!(false, "unexpected status {other}"),
        }
    }
}
