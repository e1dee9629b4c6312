use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::network_id_limit::{MAX_NETWORK_ID, NetworkIdBound};
use crate::tunnel_key::{FIRST_ALLOCATABLE_TUNNEL_KEY, FIRST_FREE_TUNNEL_KEY};

fn limit(max_id: NetworkId) -> NetworkIdLimit {
    NetworkIdLimit::default().capped(max_id)
}

#[test]
fn layout_constants() {
    assert_eq!(MAX_NETWORK_ID, 32_766);
    // The last transit key and the first free key are adjacent, and the free range holds one
    // key per possible network.
    assert_eq!(BASE_TRANSIT_SWITCH_TUNNEL_KEY + MAX_NETWORK_ID, 16_744_449);
    assert_eq!(FIRST_FREE_TUNNEL_KEY, 16_744_450);
    assert_eq!(
        MAX_DATAPATH_TUNNEL_KEY + 1 - FIRST_FREE_TUNNEL_KEY,
        MAX_NETWORK_ID
    );
    assert_eq!(
        TunnelKeyAllocator::for_network_id_pool().free_capacity(),
        MAX_NETWORK_ID
    );
    assert_eq!(TunnelKeyAllocator::new().first_free_key(), 16_715_779);
}

#[test]
fn first_networks_and_round_robin() {
    let mut pools = NetworkPools::default();
    assert_eq!(pools.id_of("default"), Some(0));
    assert_eq!(pools.allocate_id("a").unwrap(), 1);
    assert_eq!(pools.allocate_id("a").unwrap(), 1);
    assert_eq!(
        pools.allocate_keys("a", 1, 2).unwrap(),
        vec![16_711_684, 16_744_450]
    );
    assert_eq!(pools.allocate_id("b").unwrap(), 2);
    assert_eq!(pools.release("a"), (Some(1), vec![16_744_450]));
    // A freed ID or key is not handed out again before the range wraps.
    assert_eq!(pools.allocate_id("c").unwrap(), 3);
    assert_eq!(
        pools.allocate_keys("c", 3, 2).unwrap(),
        vec![16_711_686, 16_744_451]
    );
    assert_eq!(pools.allocate_keys("b", 2, 0).unwrap(), Vec::<u32>::new());
}

#[test]
fn ids_above_4095_get_their_transit_key() {
    let mut pools = NetworkPools::default();
    for n in 1..=5000 {
        assert_eq!(pools.allocate_id(&format!("n{n}")).unwrap(), n);
    }
    assert_eq!(
        pools.allocate_keys("n5000", 5000, 2).unwrap(),
        vec![16_716_683, 16_744_450]
    );
    assert_eq!(pools.used_ids(), 5001);
}

#[test]
fn id_exhaustion_names_the_bounding_pool_and_recovers_on_release() {
    let masquerade = NetworkIdLimit::for_masquerade_subnets(["169.254.0.0/26".parse().unwrap()]);
    assert_eq!(masquerade.max_id, 26);
    let mut pools = NetworkPools::new(masquerade);
    for n in 1..=26 {
        pools.allocate_id(&format!("n{n}")).unwrap();
    }
    let err = pools.allocate_id("late").unwrap_err();
    assert_eq!(err.exhausted_pool(), Some(Pool::MasqueradeIps));
    assert_eq!(
        err.to_string(),
        "the masquerade-ips pool is exhausted: network IDs 1..=26 are all taken (bounded by the masquerade subnet 169.254.0.0/26 (2 IPs per network))"
    );
    assert_eq!(pools.id_of("late"), None);
    pools.release("n7");
    assert_eq!(pools.allocate_id("late").unwrap(), 7);

    let mut configured = NetworkPools::new(limit(2));
    configured.allocate_id("a").unwrap();
    configured.allocate_id("b").unwrap();
    let err = configured.allocate_id("c").unwrap_err();
    assert_eq!(err.exhausted_pool(), Some(Pool::NetworkIds));
    assert!(err.to_string().contains("the configured limit"), "{err}");

    let none = NetworkPools::new(NetworkIdLimit::for_masquerade_subnets(["169.254.169.0/29"
        .parse()
        .unwrap()]));
    assert_eq!(
        none.clone().allocate_id("a").unwrap_err().to_string(),
        "the masquerade-ips pool is exhausted: no network ID fits the masquerade subnet 169.254.169.0/29 (2 IPs per network)"
    );
    assert_eq!(none.used_ids(), 1);
}

#[test]
fn tunnel_key_exhaustion_names_its_pool_and_rolls_back() {
    let mut pools = NetworkPools::default();
    // The transit key plus every free key.
    let all = MAX_NETWORK_ID as usize + 1;
    pools.allocate_keys("big", 1, all).unwrap();
    let err = pools.allocate_keys("late", 2, 2).unwrap_err();
    assert_eq!(err.exhausted_pool(), Some(Pool::TunnelKeys));
    assert_eq!(
        err.to_string(),
        "the tunnel-keys pool is exhausted: free tunnel keys 16744450..=16777215 are all taken"
    );
    assert_eq!(pools.pool_keys_of("late"), &[] as &[u32]);
    // A network that needs no free key is unaffected.
    assert_eq!(pools.allocate_keys("l3", 3, 0).unwrap(), Vec::<u32>::new());
    pools.release("big");
    assert_eq!(pools.allocate_keys("late", 2, 2).unwrap().len(), 2);
}

#[test]
fn keys_of_the_old_layout_are_kept_and_block_their_ids() {
    let mut pools = NetworkPools::default();
    // Upstream's first primary Layer2 network: ID 1, free key 16715779 = transit key of 4096.
    pools
        .reserve_keys("old", &[16_711_684, 16_715_779])
        .unwrap();
    pools.reserve_id("old", 1).unwrap();
    assert_eq!(pools.pool_keys_of("old"), &[16_715_779]);
    assert_eq!(
        pools.allocate_keys("old", 1, 2).unwrap(),
        vec![16_711_684, 16_715_779]
    );
    // The ID whose transit key it is cannot be reserved nor allocated.
    let err = pools.reserve_id("intruder", 4096).unwrap_err();
    assert_eq!(
        err.to_string(),
        "network ID 4096 of network intruder cannot be used: its transit tunnel key 16715779 is held by network old"
    );
    for n in 2..=4097 {
        let id = pools.allocate_id(&format!("n{n}")).unwrap();
        assert_ne!(id, 4096);
    }
    // n2..=n4095 got 2..=4095, then 4096 was skipped.
    assert_eq!(pools.id_of("n4096"), Some(4097));
    assert_eq!(pools.id_of("n4097"), Some(4098));
    // Released, the ID is usable again.
    pools.release("old");
    pools.reserve_id("intruder", 4096).unwrap();
}

#[test]
fn a_kept_key_that_is_a_held_ids_transit_key_is_refused() {
    let mut pools = NetworkPools::default();
    pools.reserve_id("new", 4100).unwrap();
    let err = pools
        .reserve_keys("old", &[16_711_684, 16_715_783])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tunnel key 16715783 of network old is the transit tunnel key of network ID 4100, held by network new"
    );
    assert_eq!(pools.used_tunnel_keys(), 0);
    // Out-of-range keys are refused as before.
    assert!(pools.reserve_keys("x", &[16_711_690, 12]).is_err());
}

#[test]
fn restored_ids_outside_the_pool_are_refused() {
    let mut pools = NetworkPools::new(limit(10));
    assert!(matches!(
        pools.reserve_id("a", 11),
        Err(NetworkPoolError::Id {
            source: IdError::OutOfRange { .. },
            ..
        })
    ));
    pools.reserve_id("a", 10).unwrap();
    pools.reserve_id("a", 10).unwrap();
    assert_eq!(pools.limit().bound, NetworkIdBound::Configured);
}

#[derive(Debug, Clone)]
enum Op {
    Add { net: u8, keys: bool },
    Remove(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..40, any::<bool>()).prop_map(|(net, keys)| Op::Add { net, keys }),
        1 => (0u8..40).prop_map(Op::Remove),
    ]
}

/// Every ID and tunnel key (transit keys included) is unique, and IDs stay in the pool.
fn check(
    pools: &NetworkPools,
    annotated: &BTreeMap<String, (u32, Vec<u32>)>,
) -> Result<(), TestCaseError> {
    let mut ids = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for (network, (id, held)) in annotated {
        prop_assert!(ids.insert(*id), "{} duplicate id {}", network, id);
        prop_assert!(*id <= pools.limit().max_id);
        prop_assert!(
            keys.insert(BASE_TRANSIT_SWITCH_TUNNEL_KEY + id),
            "{} transit key taken",
            network
        );
        for key in held.iter().skip(1) {
            prop_assert!(keys.insert(*key), "{} duplicate key {}", network, key);
            prop_assert!(*key <= MAX_DATAPATH_TUNNEL_KEY);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Allocate and release at random in a small pool, with keys of the old layout kept
    /// from the start; restore the annotations in a shuffled order into fresh pools and
    /// continue: nothing is ever handed out twice and every annotation is kept.
    #[test]
    fn never_duplicates_and_restores(
        max_id in 4u32..48,
        legacy in prop::collection::btree_set(0u32..40, 0..6),
        ops in prop::collection::vec(op(), 1..120),
        seed in any::<u64>(),
    ) {
        let mut pools = NetworkPools::new(limit(4096 + max_id));
        let mut annotated: BTreeMap<String, (u32, Vec<u32>)> = BTreeMap::new();
        for (i, offset) in legacy.iter().enumerate() {
            let name = format!("legacy{i}");
            let id = u32::try_from(i).unwrap() + 1;
            let keys = vec![BASE_TRANSIT_SWITCH_TUNNEL_KEY + id, FIRST_ALLOCATABLE_TUNNEL_KEY + offset];
            pools.reserve_keys(&name, &keys).unwrap();
            pools.reserve_id(&name, id).unwrap();
            annotated.insert(name, (id, keys));
        }
        // Start the round robin past the upstream range, where old keys block IDs.
        let mut fillers = Vec::new();
        for n in 0..4095u32 {
            let name = format!("filler{n}");
            if pools.allocate_id(&name).is_ok() {
                fillers.push(name);
            }
        }
        for name in fillers {
            pools.release(&name);
        }
        for op in ops {
            match op {
                Op::Add { net, keys } => {
                    let name = format!("net{net}");
                    let Ok(id) = pools.allocate_id(&name) else { continue };
                    match pools.allocate_keys(&name, id, if keys { 2 } else { 0 }) {
                        Ok(held) => { annotated.insert(name, (id, held)); }
                        Err(err) => prop_assert!(false, "keys: {}", err),
                    }
                }
                Op::Remove(net) => {
                    let name = format!("net{net}");
                    pools.release(&name);
                    annotated.remove(&name);
                }
            }
            check(&pools, &annotated)?;
        }
        let mut order: Vec<(&String, &(u32, Vec<u32>))> = annotated.iter().collect();
        order.sort_by_key(|(name, _)| name.bytes().fold(seed, |h, b| h.rotate_left(5) ^ u64::from(b)));
        let mut restored = NetworkPools::new(limit(4096 + max_id));
        for (name, (_, keys)) in &order {
            if !keys.is_empty() {
                restored.reserve_keys(name, keys).unwrap();
            }
        }
        for (name, (id, _)) in &order {
            restored.reserve_id(name, *id).unwrap();
        }
        let mut after = annotated.clone();
        for n in 0..8 {
            let name = format!("more{n}");
            let Ok(id) = restored.allocate_id(&name) else { break };
            let held = restored.allocate_keys(&name, id, 2).unwrap();
            after.insert(name, (id, held));
            check(&restored, &after)?;
        }
        for (name, (id, keys)) in &annotated {
            prop_assert_eq!(restored.id_of(name), Some(*id));
            if !keys.is_empty() {
                prop_assert_eq!(&restored.allocate_keys(name, *id, 2).unwrap(), keys);
            }
        }
    }
}
