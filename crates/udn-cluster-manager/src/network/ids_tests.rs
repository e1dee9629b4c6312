use proptest::prelude::*;

use super::*;

fn nad(key: &str, network: &str, keys: usize, id: Option<u32>) -> NadIdentity {
    NadIdentity {
        key: key.to_owned(),
        network: network.to_owned(),
        tunnel_keys: keys,
        annotated: NadNetworkAnnotations {
            network_name: id.map(|_| network.to_owned()),
            network_id: id,
            tunnel_keys: Vec::new(),
        },
    }
}

#[test]
fn first_network_gets_one_and_nads_share_their_network_id() {
    let mut ids = NetworkIds::new();
    let a = ids.assign(&nad("ns1/blue", "ns1_blue", 0, None)).unwrap();
    assert_eq!(
        a,
        NadNetworkAnnotations {
            network_name: Some("ns1_blue".into()),
            network_id: Some(1),
            tunnel_keys: vec![],
        }
    );
    assert_eq!(
        ids.assign(&nad("a/red", "cluster_udn_red", 0, None))
            .unwrap()
            .network_id,
        Some(2)
    );
    assert_eq!(
        ids.assign(&nad("b/red", "cluster_udn_red", 0, None))
            .unwrap()
            .network_id,
        Some(2)
    );
    assert_eq!(ids.forget("a/red"), None);
    assert_eq!(ids.id_of("cluster_udn_red"), Some(2));
    assert_eq!(
        ids.forget("b/red"),
        Some(Released {
            network: "cluster_udn_red".into(),
            id: Some(2),
            tunnel_keys: vec![],
        })
    );
    assert_eq!(ids.forget("b/red"), None);
    // Round robin: the freed ID is not handed out again right away.
    assert_eq!(
        ids.assign(&nad("c/green", "c_green", 0, None))
            .unwrap()
            .network_id,
        Some(3)
    );
}

#[test]
fn primary_layer2_gets_two_tunnel_keys() {
    let mut ids = NetworkIds::new();
    let assigned = ids.assign(&nad("ns/l2", "ns_l2", 2, None)).unwrap();
    assert_eq!(assigned.network_id, Some(1));
    assert_eq!(assigned.tunnel_keys, vec![16_711_684, 16_744_450]);
    assert_eq!(
        ids.assign(&nad("ns/l2", "ns_l2", 2, None)).unwrap(),
        assigned
    );
    let released = ids.forget("ns/l2").unwrap();
    assert_eq!(released.tunnel_keys, vec![16_744_450]);
}

#[test]
fn restore_keeps_ids_and_reallocates_clashes() {
    let mut a = nad("a/x", "a_x", 2, Some(5));
    a.annotated.tunnel_keys = vec![16_711_688, 16_715_790];
    let nads = vec![
        nad("c/z", "c_z", 0, None),
        nad("b/y", "b_y", 0, Some(5)),
        a,
        nad("d/x2", "a_x", 2, None),
    ];
    let mut ids = NetworkIds::new();
    let report = ids.restore(&nads);
    assert_eq!(report.nads, 4);
    assert_eq!(report.kept, 1);
    assert_eq!(report.discarded, vec![("b/y".to_owned(), 5)]);
    assert!(report.failed.is_empty());
    assert_eq!(ids.id_of("a_x"), Some(5));
    assert_eq!(ids.id_of("b_y"), Some(1));
    assert_eq!(ids.id_of("c_z"), Some(2));
    // The second NAD of a_x gets the network's annotated keys.
    assert_eq!(
        ids.assign(&nad("d/x2", "a_x", 2, None))
            .unwrap()
            .tunnel_keys,
        vec![16_711_688, 16_715_790]
    );
    // Nothing is released while one NAD still holds the network.
    assert_eq!(ids.forget("a/x"), None);
    assert_eq!(ids.forget("d/x2").unwrap().id, Some(5));
}

#[test]
fn a_nad_changing_network_releases_the_old_one() {
    let mut ids = NetworkIds::new();
    ids.assign(&nad("ns/n", "old", 0, None)).unwrap();
    ids.assign(&nad("ns/n", "new", 0, None)).unwrap();
    assert_eq!(ids.id_of("old"), None);
    assert_eq!(ids.id_of("new"), Some(2));
}

#[test]
fn retain_forgets_missing_nads() {
    let mut ids = NetworkIds::new();
    ids.assign(&nad("a/n", "a_n", 0, None)).unwrap();
    ids.assign(&nad("b/n", "b_n", 0, None)).unwrap();
    let released = ids.retain(&BTreeSet::from(["b/n".to_owned()]));
    assert_eq!(released.len(), 1);
    assert_eq!(released[0].network, "a_n");
    assert_eq!(
        ids.assignments(),
        BTreeMap::from([("b_n".to_owned(), 2), ("default".to_owned(), 0)])
    );
}

#[derive(Clone, Debug)]
enum Op {
    Create { ns: u8, network: u8 },
    Delete { ns: u8, network: u8 },
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..4, 0u8..6).prop_map(|(ns, network)| Op::Create { ns, network }),
        3 => (0u8..4, 0u8..6).prop_map(|(ns, network)| Op::Delete { ns, network }),
        1 => Just(Op::Restart),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// NADs carry what `assign` returned; a restart restores from those annotations. No two
    /// live networks ever share an ID, and a network keeps its ID while a NAD holds it.
    #[test]
    fn restarts_never_reassign_or_duplicate(ops in prop::collection::vec(op(), 1..60)) {
        let mut ids = NetworkIds::new();
        let mut nads: BTreeMap<String, NadIdentity> = BTreeMap::new();
        let mut held: BTreeMap<String, u32> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Create { ns, network } => {
                    let key = format!("ns{ns}/net{network}");
                    let name = format!("net{network}");
                    let keys = usize::from(network % 2 == 0) * 2;
                    let mut identity = nad(&key, &name, keys, None);
                    let assigned = ids.assign(&identity).unwrap();
                    identity.annotated = assigned.clone();
                    nads.insert(key, identity);
                    let id = assigned.network_id.unwrap();
                    if let Some(before) = held.insert(name.clone(), id) {
                        prop_assert_eq!(before, id, "network {} changed ID", name);
                    }
                }
                Op::Delete { ns, network } => {
                    let key = format!("ns{ns}/net{network}");
                    if nads.remove(&key).is_some()
                        && let Some(released) = ids.forget(&key)
                    {
                        held.remove(&released.network);
                    }
                }
                Op::Restart => {
                    ids = NetworkIds::new();
                    let snapshot: Vec<NadIdentity> = nads.values().cloned().collect();
                    let report = ids.restore(&snapshot);
                    prop_assert!(report.discarded.is_empty());
                    prop_assert!(report.failed.is_empty());
                    for (network, id) in &held {
                        prop_assert_eq!(ids.id_of(network), Some(*id));
                    }
                }
            }
            let live: Vec<u32> = held.values().copied().collect();
            let unique: BTreeSet<u32> = live.iter().copied().collect();
            prop_assert_eq!(live.len(), unique.len());
            for identity in nads.values() {
                prop_assert_eq!(identity.annotated.network_id, held.get(&identity.network).copied());
            }
        }
    }
}
