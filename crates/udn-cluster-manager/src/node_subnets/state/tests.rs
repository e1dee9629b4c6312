//! Tests of the node-subnets state: full and incremental plans, restore, expansion, errors.

use super::*;
use crate::dynamic_udn::scope::Rescope;

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn layer3(ranges: &[&str]) -> Layer3Network {
    let ranges: Vec<SubnetEntry> = ranges.iter().map(|r| r.parse().unwrap()).collect();
    Layer3Network {
        ipv4: ranges.iter().any(|r| r.cidr.is_ipv4()),
        ipv6: ranges.iter().any(|r| r.cidr.is_ipv6()),
        ranges,
        gated: false,
    }
}

fn networks(items: &[(&str, &[&str])]) -> BTreeMap<String, Layer3Network> {
    items
        .iter()
        .map(|(name, ranges)| ((*name).to_owned(), layer3(ranges)))
        .collect()
}

#[test]
fn plans_every_network_at_once_default_included() {
    let mut state = SubnetState::default();
    state.sync_networks(&networks(&[
        ("a_x", &["10.1.0.0/16/24"]),
        ("b_y", &["10.2.0.0/16/24", "fd02::/48/64"]),
        ("default", &["10.244.0.0/16/24"]),
    ]));
    let existing = NodeSubnets::from([
        ("default".to_owned(), vec![net("10.244.1.0/24")]),
        ("gone_z".to_owned(), vec![net("10.9.0.0/24")]),
    ]);
    let plan = state.plan_node("n1", &existing);
    // The annotated default subnet is kept; the stale network's entry is dropped.
    assert_eq!(
        udn_api::annotations::format_node_subnets(&plan.desired)
            .unwrap()
            .unwrap(),
        r#"{"a_x":["10.1.0.0/24"],"b_y":["10.2.0.0/24","fd02:0:0:1::/64"],"default":["10.244.1.0/24"]}"#
    );
    assert_eq!(plan.allocated.len(), 3);
    // The next node's default subnet is the first free one.
    let second = state.plan_node("n2", &NodeSubnets::new());
    assert_eq!(second.desired["default"], [net("10.244.0.0/24")]);
    assert!(plan.errors.is_empty());
    // Idempotent: the same annotation again allocates nothing.
    let again = state.plan_node("n1", &plan.desired);
    assert_eq!(again.desired, plan.desired);
    assert!(again.allocated.is_empty());
}

#[test]
fn new_network_restores_known_annotations_before_allocating() {
    let mut state = SubnetState::default();
    state.observe(
        "b",
        NodeSubnets::from([("n_x".to_owned(), vec![net("10.1.0.0/24")])]),
    );
    let sync = state.sync_networks(&networks(&[("n_x", &["10.1.0.0/16/24"])]));
    assert_eq!(sync.added, ["n_x"]);
    let plan = state.plan_node("a", &NodeSubnets::new());
    assert_eq!(plan.desired["n_x"], [net("10.1.1.0/24")]);
}

#[test]
fn expansion_appends_and_rebuild_on_other_changes() {
    let mut state = SubnetState::default();
    state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25"])]));
    let a = state.plan_node("a", &NodeSubnets::new());
    let b = state.plan_node("b", &NodeSubnets::new());
    let c = state.plan_node("c", &NodeSubnets::new());
    assert_eq!(a.desired["n_x"], [net("10.1.0.0/25")]);
    assert_eq!(b.desired["n_x"], [net("10.1.0.128/25")]);
    assert_eq!(
        c.errors["n_x"],
        "error allocating network for node c, network name n_x: no subnets available"
    );
    state.observe("a", a.desired.clone());
    state.observe("b", b.desired);
    let sync = state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25", "10.2.0.0/24/25"])]));
    assert_eq!(sync.changed, ["n_x"]);
    let c = state.plan_node("c", &NodeSubnets::new());
    assert_eq!(c.desired["n_x"], [net("10.2.0.0/25")]);
    assert_eq!(state.plan_node("a", &a.desired).desired, a.desired);
    // A removed range rebuilds from the known annotations.
    state.observe("c", c.desired);
    let sync = state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25"])]));
    assert_eq!(sync.changed, ["n_x"]);
    assert_eq!(state.free_subnets("n_x"), Some(0));
}

#[test]
fn error_tracking_names_the_first_failing_node_until_it_recovers() {
    let mut state = SubnetState::default();
    state.sync_networks(&networks(&[("n_x", &["10.1.0.0/16/24"])]));
    let fail = |m: &str| BTreeMap::from([("n_x".to_owned(), m.to_owned())]);
    let changes = state.record_errors("b", &fail("boom"));
    assert_eq!(
        changes,
        [ErrorChange {
            network: "n_x".into(),
            error: Some("boom".into()),
            condition_changed: true
        }]
    );
    assert!(state.record_errors("b", &fail("boom")).is_empty());
    let changes = state.record_errors("a", &fail("boom"));
    assert!(!changes[0].condition_changed);
    assert_eq!(state.reported_error_node("n_x"), Some("b"));
    let changes = state.record_errors("b", &BTreeMap::new());
    assert!(changes[0].condition_changed);
    assert_eq!(state.reported_error_node("n_x"), Some("a"));
    let (_, changes) = state.forget_node("a");
    assert!(changes[0].condition_changed);
    assert_eq!(state.reported_error_node("n_x"), None);
}

#[test]
fn forgetting_a_node_frees_its_subnets_and_a_gone_network_drops_everything() {
    let mut state = SubnetState::default();
    state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25"])]));
    state.plan_node("a", &NodeSubnets::new());
    assert_eq!(state.free_subnets("n_x"), Some(1));
    let (touched, _) = state.forget_node("a");
    assert!(touched.contains("n_x"));
    assert_eq!(state.free_subnets("n_x"), Some(2));
    let sync = state.sync_networks(&BTreeMap::new());
    assert_eq!(sync.removed, ["n_x"]);
    assert_eq!(state.free_subnets("n_x"), None);
}

#[test]
fn observed_plans_skip_nodes_with_nothing_new_and_look_only_at_changed_networks() {
    let mut state = SubnetState::default();
    state.sync_networks(&networks(&[("a_x", &["10.1.0.0/16/24"])]));
    let first = state.plan_observed("n1", None).unwrap();
    assert!(first.write);
    let text = udn_api::annotations::format_node_subnets(&first.desired).unwrap();
    drop(state.writing("n1", first, text.clone()));
    assert!(state.is_planned("n1", text.as_deref()));
    assert!(!state.is_planned("n1", None));
    // Our own write echoed back: nothing to do.
    assert!(state.plan_observed("n1", text.as_deref()).is_none());
    let mut sync = NetworkSync::default();
    state.sync_network("b_y", Some(&layer3(&["10.2.0.0/16/24"])), &mut sync);
    let second = state.plan_observed("n1", text.as_deref()).unwrap();
    assert_eq!(second.allocated, [("b_y".to_owned(), net("10.2.0.0/24"))]);
    assert_eq!(second.touched, BTreeSet::from(["b_y".to_owned()]));
    assert_eq!(second.desired.len(), 2);
    // Not written (the patch failed): the node is as before and looked at again.
    let second_text = udn_api::annotations::format_node_subnets(&second.desired).unwrap();
    let writing = state.writing("n1", second, second_text.clone());
    assert!(state.is_planned("n1", second_text.as_deref()));
    state.unwritten("n1", writing, true);
    assert!(!state.is_planned("n1", second_text.as_deref()));
    assert!(state.is_planned("n1", text.as_deref()));
    let retried = state.plan_observed("n1", text.as_deref()).unwrap();
    // Released and allocated again (the allocator's cursor has moved on).
    assert_eq!(retried.allocated, [("b_y".to_owned(), net("10.2.1.0/24"))]);
    // Someone else changed the annotation: parsed again and planned in full (the b_y
    // subnet the node holds comes back).
    let changed = r#"{"a_x":["10.1.9.0/24"]}"#;
    let third = state.plan_observed("n1", Some(changed)).unwrap();
    assert_eq!(third.desired["a_x"], [net("10.1.9.0/24")]);
    assert_eq!(third.desired["b_y"], [net("10.2.1.0/24")]);
}

fn only(pairs: &[(&str, &str)]) -> CurrentScope {
    let mut rendered = crate::dynamic_udn::rendering::Rendered::new();
    for (network, node) in pairs {
        rendered
            .entry((*network).to_owned())
            .or_default()
            .insert((*node).to_owned());
    }
    CurrentScope(Some(crate::dynamic_udn::scope::NodeScope::Only(
        std::sync::Arc::new(rendered),
    )))
}

/// Writes the plan successfully; the annotation text.
fn write(state: &mut SubnetState, node: &str, plan: NodePlan) -> Option<String> {
    let text = udn_api::annotations::format_node_subnets(&plan.desired).unwrap();
    let writing = state.writing(node, plan, text.clone());
    state.written(node, writing);
    text
}

#[test]
fn gated_networks_follow_the_dynamic_udn_scope() {
    let owner = |state: &SubnetState, subnet: &str| {
        state.networks["g_y"]
            .allocator
            .owner_of(net(subnet))
            .map(str::to_owned)
    };
    let mut state = SubnetState::default();
    assert_eq!(
        state.set_scope(CurrentScope(None)),
        Rescope::Pairs(BTreeMap::new())
    );
    let b_text = r#"{"g_y":["10.2.5.0/24"]}"#;
    state.observe_text("b", Some(b_text));
    let mut nets = networks(&[("a_x", &["10.1.0.0/16/24"]), ("g_y", &["10.2.0.0/16/24"])]);
    nets.get_mut("g_y").unwrap().gated = true;
    state.sync_networks(&nets);
    // Before the first scope: gated entries stay as they are (none allocated, none released).
    let a = state.plan_observed("a", None).unwrap();
    assert_eq!(a.desired.keys().collect::<Vec<_>>(), ["a_x"]);
    let a_text = write(&mut state, "a", a);
    let b = state.plan_observed("b", Some(b_text)).unwrap();
    assert_eq!(b.desired["g_y"], [net("10.2.5.0/24")]);
    assert!(b.released.is_empty());
    let b_text = write(&mut state, "b", b);
    // The first scope: a renders g_y, b does not.
    assert_eq!(state.set_scope(only(&[("g_y", "a")])), Rescope::Everything);
    let a = state.plan_observed("a", a_text.as_deref()).unwrap();
    assert_eq!(a.desired["g_y"], [net("10.2.0.0/24")]);
    let a_text = write(&mut state, "a", a);
    let b = state.plan_observed("b", b_text.as_deref()).unwrap();
    assert!(b.write && !b.desired.contains_key("g_y"));
    assert_eq!(b.released, [("g_y".to_owned(), net("10.2.5.0/24"))]);
    // Released only once the annotation without it is written.
    let text = udn_api::annotations::format_node_subnets(&b.desired).unwrap();
    let writing = state.writing("b", b, text.clone());
    assert_eq!(owner(&state, "10.2.5.0/24").as_deref(), Some("b"));
    assert_eq!(
        state.written("b", writing),
        BTreeSet::from(["g_y".to_owned()])
    );
    assert_eq!(owner(&state, "10.2.5.0/24"), None);
    let b_text = text;
    // b starts rendering g_y: only b is looked at again.
    let change = state.set_scope(only(&[("g_y", "a"), ("g_y", "b")]));
    let moved = BTreeMap::from([("b".to_owned(), BTreeSet::from(["g_y".to_owned()]))]);
    assert_eq!(change, Rescope::Pairs(moved));
    assert!(state.plan_observed("a", a_text.as_deref()).is_none());
    let b = state.plan_observed("b", b_text.as_deref()).unwrap();
    assert!(b.write && b.desired.contains_key("g_y"));
    // A failed write leaves the moved pair for the retry.
    let text = udn_api::annotations::format_node_subnets(&b.desired).unwrap();
    let writing = state.writing("b", b, text);
    state.unwritten("b", writing, true);
    let b = state.plan_observed("b", b_text.as_deref()).unwrap();
    assert!(b.write && b.desired.contains_key("g_y"));
    // A scope change of a network that is not gated (or unknown) moves nothing.
    assert_eq!(
        state.set_scope(only(&[("g_y", "a"), ("g_y", "b"), ("a_x", "a")])),
        Rescope::Pairs(BTreeMap::new())
    );
}

#[test]
fn a_network_becoming_gated_leaves_the_nodes_that_do_not_render_it() {
    let mut state = SubnetState::default();
    state.set_scope(only(&[("g_y", "a")]));
    let mut nets = networks(&[("g_y", &["10.2.0.0/16/24"])]);
    state.sync_networks(&nets);
    let b = state.plan_observed("b", None).unwrap();
    assert!(b.desired.contains_key("g_y"));
    let b_text = write(&mut state, "b", b);
    // A plain NAD went away: the network is gated now, and b does not render it.
    nets.get_mut("g_y").unwrap().gated = true;
    let sync = state.sync_networks(&nets);
    assert_eq!(sync.changed, ["g_y"]);
    let b = state.plan_observed("b", b_text.as_deref()).unwrap();
    assert!(b.write && !b.desired.contains_key("g_y"));
    assert_eq!(b.released, [("g_y".to_owned(), net("10.2.0.0/24"))]);
}

mod incremental {
    //! Incremental plans (`plan_observed`) against full plans (`plan_node`) of the same state
    //! over random network changes, Dynamic UDN scope changes (gated networks), node writes,
    //! failed writes, foreign edits and deletions.

    use proptest::prelude::*;

    use super::*;

    const NODES: [&str; 5] = ["n0", "n1", "n2", "n3", "n4"];
    const NETWORKS: [&str; 3] = ["a_x", "b_y", "c_z"];
    /// Range lists per network: small (some nodes fail), grown (appended), rebuilt, dual-stack.
    const RANGES: [&[&str]; 4] = [
        &["10.1.0.0/24/26"],
        &["10.1.0.0/24/26", "10.2.0.0/24/26"],
        &["10.3.0.0/24/25"],
        &["10.4.0.0/16/24", "fd04::/48/64"],
    ];

    #[derive(Clone, Copy, Debug)]
    enum Write {
        Succeeds,
        Fails,
        Conflicts,
    }

    /// The Dynamic UDN scope: not known yet, every node, or the (gated network, node) pairs
    /// of a bit mask.
    #[derive(Clone, Copy, Debug)]
    enum ScopeOp {
        Unknown,
        All,
        Only(u16),
    }

    fn scope_of(op: ScopeOp) -> CurrentScope {
        match op {
            ScopeOp::Unknown => CurrentScope(None),
            ScopeOp::All => CurrentScope::default(),
            ScopeOp::Only(mask) => {
                let mut pairs = Vec::new();
                for (n, network) in NETWORKS.iter().enumerate().skip(1) {
                    for (i, node) in NODES.iter().enumerate() {
                        if mask & (1 << ((n - 1) * NODES.len() + i)) != 0 {
                            pairs.push((*network, *node));
                        }
                    }
                }
                only(&pairs)
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        SetNetwork(usize, usize),
        Scope(ScopeOp),
        RemoveNetwork(usize),
        Reconcile { node: usize, write: Write },
        ForeignEdit(usize),
        DeleteNode(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => (0..NETWORKS.len(), 0..RANGES.len()).prop_map(|(n, r)| Op::SetNetwork(n, r)),
            1 => (0..NETWORKS.len()).prop_map(Op::RemoveNetwork),
            6 => (0..NODES.len(), prop_oneof![
                    6 => Just(Write::Succeeds),
                    1 => Just(Write::Fails),
                    1 => Just(Write::Conflicts),
                ])
                .prop_map(|(node, write)| Op::Reconcile { node, write }),
            1 => (0..NODES.len()).prop_map(Op::ForeignEdit),
            1 => (0..NODES.len()).prop_map(Op::DeleteNode),
            2 => prop_oneof![
                    1 => Just(ScopeOp::Unknown),
                    1 => Just(ScopeOp::All),
                    6 => (0u16..1 << 10).prop_map(ScopeOp::Only),
                ]
                .prop_map(Op::Scope),
        ]
    }

    fn full_plan(state: &SubnetState, node: &str, text: Option<&str>) -> NodePlan {
        let mut full = state.clone();
        full.observe_text(node, text);
        let existing = full.known[node].subnets.clone();
        full.plan_node(node, &existing)
    }

    proptest! {
        #[test]
        fn incremental_plans_match_full_plans(ops in proptest::collection::vec(op(), 1..60)) {
            let mut state = SubnetState::default();
            let mut annotations: BTreeMap<&str, Option<String>> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::SetNetwork(network, ranges) => {
                        let mut sync = NetworkSync::default();
                        // The first network is not gated, the others are.
                        let layer3 = Layer3Network {
                            gated: network > 0,
                            ..layer3(RANGES[ranges])
                        };
                        state.sync_network(NETWORKS[network], Some(&layer3), &mut sync);
                    }
                    Op::Scope(scope) => {
                        state.set_scope(scope_of(scope));
                    }
                    Op::RemoveNetwork(network) => {
                        state.sync_network(NETWORKS[network], None, &mut NetworkSync::default());
                    }
                    Op::Reconcile { node, write } => {
                        let node = NODES[node];
                        let text = annotations.get(node).cloned().flatten();
                        let full = full_plan(&state, node, text.as_deref());
                        match state.plan_observed(node, text.as_deref()) {
                            None => {
                                prop_assert!(!full.write);
                                prop_assert!(full.allocated.is_empty());
                                prop_assert!(full.errors.is_empty());
                            }
                            Some(plan) => {
                                prop_assert_eq!(&plan, &full);
                                state.record_errors(node, &plan.errors);
                                if !plan.write {
                                    prop_assert!(state.is_planned(node, text.as_deref()));
                                    continue;
                                }
                                let written =
                                    udn_api::annotations::format_node_subnets(&plan.desired)
                                        .unwrap();
                                let writing = state.writing(node, plan, written.clone());
                                prop_assert!(state.is_planned(node, written.as_deref()));
                                match write {
                                    Write::Succeeds => {
                                        state.written(node, writing);
                                        annotations.insert(node, written);
                                    }
                                    Write::Fails => state.unwritten(node, writing, true),
                                    Write::Conflicts => state.unwritten(node, writing, false),
                                }
                            }
                        }
                    }
                    Op::ForeignEdit(node) => {
                        annotations.insert(
                            NODES[node],
                            Some(r#"{"a_x":["10.1.0.64/26"],"default":["10.244.0.0/24"]}"#.into()),
                        );
                    }
                    Op::DeleteNode(node) => {
                        state.forget_node(NODES[node]);
                        annotations.remove(NODES[node]);
                    }
                }
            }
        }
    }
}
