//! Pods to elements, and the refcounted plans (upstream's nftPodElementsSet scenarios, then
//! random sequences).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::num::NonZeroU16;

use proptest::prelude::*;
use udn_api::annotations::OpenPort;

use crate::isolation::*;
use crate::nft::{Object, Verb};

pub(super) fn pod(name: &str, ips: &[&str], ports: &[OpenPort]) -> PodIsolationInput {
    PodIsolationInput {
        key: PodKey::new("ns1", name),
        host_network: false,
        infrastructure_locked: true,
        default_network_ips: ips.iter().map(|ip| ip.parse().unwrap()).collect(),
        open_ports: ports.to_vec(),
    }
}

fn tcp(port: u16) -> OpenPort {
    OpenPort::Tcp(NonZeroU16::new(port).unwrap())
}

fn elements_of(pod: &PodIsolationInput) -> BTreeSet<IsolationElement> {
    desired_pod_elements(pod).unwrap()
}

fn names(elements: &BTreeSet<IsolationElement>) -> Vec<String> {
    elements.iter().map(ToString::to_string).collect()
}

#[test]
fn pod_elements_per_family_port_and_icmp() {
    let dual = pod(
        "a",
        &["10.244.0.5", "fd00:10:244::5"],
        &[
            tcp(80),
            OpenPort::Udp(NonZeroU16::new(53).unwrap()),
            OpenPort::Icmp,
        ],
    );
    insta::assert_snapshot!(names(&elements_of(&dual)).join("\n"), @r"
    udn-open-ports-v4 { 10.244.0.5 . tcp . 80 }
    udn-open-ports-v4 { 10.244.0.5 . udp . 53 }
    udn-open-ports-v6 { fd00:10:244::5 . tcp . 80 }
    udn-open-ports-v6 { fd00:10:244::5 . udp . 53 }
    udn-open-ports-icmp-v4 { 10.244.0.5 }
    udn-open-ports-icmp-v6 { fd00:10:244::5 }
    udn-pod-default-ips-v4 { 10.244.0.5 }
    udn-pod-default-ips-v6 { fd00:10:244::5 }
    ");
}

#[test]
fn pods_left_alone() {
    let mut host = pod("h", &["10.0.0.1"], &[]);
    host.host_network = true;
    assert_eq!(desired_pod_elements(&host), None);
    let mut default_network = pod("d", &["10.0.0.2"], &[]);
    default_network.infrastructure_locked = false;
    assert_eq!(desired_pod_elements(&default_network), None);
    assert_eq!(desired_pod_elements(&pod("n", &[], &[tcp(80)])), None);
}

fn key(name: &str) -> PodKey {
    PodKey::new("ns1", name)
}

fn apply(index: &mut ElementIndex, pod: &PodIsolationInput) -> Option<PodPlan> {
    let plan = index.plan_pod(&pod.key, elements_of(pod))?;
    index.commit(&plan);
    Some(plan)
}

fn remove(index: &mut ElementIndex, name: &str) -> Option<PodPlan> {
    let plan = index.plan_pod(&key(name), BTreeSet::new())?;
    index.commit(&plan);
    Some(plan)
}

#[test]
fn shared_ip_stays_until_every_pod_is_gone() {
    let mut index = ElementIndex::from_inputs(&[
        pod("pod1", &["1.1.1.2"], &[]),
        pod("pod2", &["1.1.1.2"], &[]),
        pod("pod3", &["1.1.1.3"], &[]),
    ]);
    assert_eq!(
        sync_transaction(&index).render().unwrap(),
        "flush set inet ovn-kubernetes udn-open-ports-v4\n\
         flush set inet ovn-kubernetes udn-open-ports-v6\n\
         flush set inet ovn-kubernetes udn-open-ports-icmp-v4\n\
         flush set inet ovn-kubernetes udn-open-ports-icmp-v6\n\
         flush set inet ovn-kubernetes udn-pod-default-ips-v4\n\
         flush set inet ovn-kubernetes udn-pod-default-ips-v6\n\
         add element inet ovn-kubernetes udn-pod-default-ips-v4 { 1.1.1.2 }\n\
         add element inet ovn-kubernetes udn-pod-default-ips-v4 { 1.1.1.3 }\n"
    );
    // pod1 moves to a new IP: 1.1.1.2 stays (pod2 has it).
    let plan = apply(&mut index, &pod("pod1", &["1.1.1.1"], &[])).unwrap();
    assert_eq!(
        pod_transaction(&plan).render().unwrap(),
        "add element inet ovn-kubernetes udn-pod-default-ips-v4 { 1.1.1.1 }\n"
    );
    // pod2 goes: now 1.1.1.2 goes too (add-then-delete: safe if it is already gone).
    let plan = remove(&mut index, "pod2").unwrap();
    assert_eq!(
        pod_transaction(&plan).render().unwrap(),
        "add element inet ovn-kubernetes udn-pod-default-ips-v4 { 1.1.1.2 }\n\
         delete element inet ovn-kubernetes udn-pod-default-ips-v4 { 1.1.1.2 }\n"
    );
    // a new pod reuses pod3's IP before pod3's delete arrives: nothing to add; pod3's
    // delete then keeps it.
    let plan = apply(&mut index, &pod("pod4", &["1.1.1.3"], &[])).unwrap();
    assert!(pod_transaction(&plan).is_empty());
    let plan = remove(&mut index, "pod3").unwrap();
    assert!(pod_transaction(&plan).is_empty());
    let wanted: Vec<String> = index.elements().map(ToString::to_string).collect();
    assert_eq!(
        wanted,
        [
            "udn-pod-default-ips-v4 { 1.1.1.1 }",
            "udn-pod-default-ips-v4 { 1.1.1.3 }"
        ]
    );
    assert_eq!(
        index.wanted_by(&IsolationElement {
            set: SetId::new(SetKind::PodIps, IpFamily::V4),
            key: ElementKey::Address("1.1.1.3".parse().unwrap()),
        }),
        Some(&BTreeSet::from([key("pod4")]))
    );
    // unchanged: no plan; unknown pod removed: no plan.
    assert_eq!(apply(&mut index, &pod("pod4", &["1.1.1.3"], &[])), None);
    assert_eq!(remove(&mut index, "nobody"), None);
}

#[test]
fn open_ports_change() {
    let mut index = ElementIndex::default();
    apply(&mut index, &pod("web", &["10.0.0.9"], &[tcp(80)])).unwrap();
    let plan = apply(
        &mut index,
        &pod("web", &["10.0.0.9"], &[tcp(8080), OpenPort::Icmp]),
    )
    .unwrap();
    insta::assert_snapshot!(pod_transaction(&plan).render().unwrap(), @r"
    add element inet ovn-kubernetes udn-open-ports-v4 { 10.0.0.9 . tcp . 80 }
    delete element inet ovn-kubernetes udn-open-ports-v4 { 10.0.0.9 . tcp . 80 }
    add element inet ovn-kubernetes udn-open-ports-v4 { 10.0.0.9 . tcp . 8080 }
    add element inet ovn-kubernetes udn-open-ports-icmp-v4 { 10.0.0.9 }
    ");
}

/// One step of a random history.
#[derive(Clone, Debug)]
enum Step {
    Upsert(usize, Vec<usize>, Vec<OpenPort>),
    Delete(usize),
}

const POD_NAMES: usize = 5;

fn ip_pool() -> Vec<IpAddr> {
    ["10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00::1", "fd00::2"]
        .iter()
        .map(|ip| ip.parse().unwrap())
        .collect()
}

fn step() -> impl Strategy<Value = Step> {
    let port = prop_oneof![
        Just(OpenPort::Icmp),
        (1u16..4).prop_map(|p| OpenPort::Tcp(NonZeroU16::new(p).unwrap())),
        (1u16..3).prop_map(|p| OpenPort::Udp(NonZeroU16::new(p).unwrap())),
    ];
    prop_oneof![
        3 => (0..POD_NAMES, prop::collection::vec(0..5usize, 0..3), prop::collection::vec(port, 0..3))
            .prop_map(|(pod, ips, ports)| Step::Upsert(pod, ips, ports)),
        1 => (0..POD_NAMES).prop_map(Step::Delete),
    ]
}

/// Applies a transaction of element operations to a model of the sets, as nft does.
fn apply_to_model(model: &mut BTreeSet<(String, Vec<String>)>, tx: &crate::nft::Transaction) {
    for operation in tx.operations() {
        let Object::Element(element) = &operation.object else {
            if let (Verb::Flush, Object::Set(set)) = (operation.verb, &operation.object) {
                model.retain(|(name, _)| *name != set.name);
            }
            continue;
        };
        let entry = (element.container.clone(), element.key.clone());
        match operation.verb {
            Verb::Add => {
                model.insert(entry);
            }
            Verb::Delete => assert!(model.remove(&entry), "deleting a missing element {entry:?}"),
            verb => panic!("unexpected {verb:?}"),
        }
    }
}

proptest! {
    #[test]
    fn sets_are_the_union_of_live_pods_elements(steps in prop::collection::vec(step(), 1..40)) {
        let pool = ip_pool();
        let mut index = ElementIndex::default();
        let mut model = BTreeSet::new();
        let mut live: BTreeMap<PodKey, BTreeSet<IsolationElement>> = BTreeMap::new();
        let mut live_inputs: BTreeMap<PodKey, PodIsolationInput> = BTreeMap::new();
        for step in steps {
            let (pod_key, elements) = match &step {
                Step::Upsert(n, ips, ports) => {
                    let input = PodIsolationInput {
                        key: key(&format!("pod{n}")),
                        host_network: false,
                        infrastructure_locked: true,
                        default_network_ips: ips.iter().map(|i| pool[*i]).collect(),
                        open_ports: ports.clone(),
                    };
                    // A pod with no IP is left as it is, as in update_pod.
                    let Some(elements) = desired_pod_elements(&input) else { continue };
                    live_inputs.insert(input.key.clone(), input.clone());
                    (input.key, elements)
                }
                Step::Delete(n) => {
                    live_inputs.remove(&key(&format!("pod{n}")));
                    (key(&format!("pod{n}")), BTreeSet::new())
                }
            };
            if let Some(plan) = index.plan_pod(&pod_key, elements.clone()) {
                apply_to_model(&mut model, &pod_transaction(&plan));
                index.commit(&plan);
            }
            if elements.is_empty() { live.remove(&pod_key); } else { live.insert(pod_key, elements); }
            let union: BTreeSet<(String, Vec<String>)> = live
                .values()
                .flatten()
                .map(|e| (e.set.name().to_owned(), e.key.parts()))
                .collect();
            prop_assert_eq!(&model, &union);
            let indexed: BTreeSet<(String, Vec<String>)> =
                index.elements().map(|e| (e.set.name().to_owned(), e.key.parts())).collect();
            prop_assert_eq!(&indexed, &union);
        }
        // The index built step by step is the one a full sync of the live pods builds, and
        // that sync gives the same sets.
        let rebuilt = ElementIndex::from_inputs(live_inputs.values());
        prop_assert_eq!(&rebuilt, &index);
        let mut synced = model.clone();
        synced.insert(("udn-open-ports-v6".to_owned(), vec!["stale".to_owned()]));
        apply_to_model(&mut synced, &sync_transaction(&rebuilt));
        prop_assert_eq!(&synced, &model);
    }
}
