//! Property tests of the pod ip allocator.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::tests::{ip, net, nets};
use super::*;

// ---- Property tests on small subnets. ----

#[derive(Debug, Clone)]
enum Op {
    Allocate(u8),
    Static(u8, u8, u8),
    Release(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..30).prop_map(Op::Allocate),
        1 => (0u8..30, 0u8..16, 0u8..16).prop_map(|(o, a, b)| Op::Static(o, a, b)),
        2 => (0u8..30).prop_map(Op::Release),
    ]
}

fn small_config() -> PodIpConfig {
    PodIpConfig {
        subnets: nets(&["10.0.0.0/28", "fd00::/124"]),
        exclude_subnets: nets(&["10.0.0.8/30"]),
        reserved_subnets: nets(&["10.0.0.12/31", "fd00::8/125"]),
        primary_layer2: true,
        ..PodIpConfig::default()
    }
}

/// Upstream's model of the first subnet: a bitmap over base+1..=base+14 with a round-robin
/// cursor, where excluded, reserved, gateway and management offsets are pre-allocated.
struct Model {
    blocked: BTreeSet<u128>,
    cursor: u128,
}

impl Model {
    fn next(&mut self) -> Option<u128> {
        let max = 14u128;
        for i in 0..max {
            let at = (self.cursor + i) % max;
            if !self.blocked.contains(&(at + 1)) {
                self.cursor = (at + 1) % max;
                return Some(at + 1);
            }
        }
        None
    }
}

fn check(a: &PodIpAllocator) -> Result<(), TestCaseError> {
    let mut seen = BTreeSet::new();
    for (owner, ips) in a.assignments() {
        let subnets: BTreeSet<usize> = ips
            .iter()
            .map(|n| {
                a.pools
                    .iter()
                    .position(|p| p.subnet.contains(n.ip()))
                    .unwrap()
            })
            .collect();
        prop_assert_eq!(
            subnets.len(),
            ips.len(),
            "{} holds two IPs of one subnet",
            owner
        );
        for n in ips {
            prop_assert!(seen.insert(n.ip()), "{} handed out twice", n);
            prop_assert_eq!(a.owner_of(n.ip()), Some(owner));
            for bad in [
                "10.0.0.0",
                "10.0.0.15",
                "10.0.0.1",
                "10.0.0.2",
                "10.0.0.8",
                "10.0.0.11",
                "fd00::",
                "fd00::1",
                "fd00::2",
            ] {
                prop_assert_ne!(n.ip(), ip(bad));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn never_hands_out_twice_and_matches_upstream_order(ops in prop::collection::vec(op(), 1..120)) {
        let mut a = PodIpAllocator::new("net", &small_config()).unwrap();
        let mut model = Model {
            blocked: [1u128, 2, 8, 9, 10, 11, 12, 13].into_iter().collect(),
            cursor: 0,
        };
        let mut holders: BTreeMap<String, u128> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Allocate(o) => {
                    let owner = format!("p{o}");
                    let had = a.ips_of(&owner).map(<[IpNetwork]>::to_vec);
                    let got = a.allocate(&owner);
                    if let Some(had) = had {
                        prop_assert_eq!(got.unwrap(), had);
                        continue;
                    }
                    // The v6 pool (fd00::3..=fd00::7 after exclusions) may run out first.
                    match got {
                        Ok(ips) => {
                            let expected = model.next().unwrap();
                            let offset = addr_to_u128(ips[0].ip()) - addr_to_u128(ip("10.0.0.0"));
                            prop_assert_eq!(offset, expected);
                            model.blocked.insert(offset);
                            holders.insert(owner, offset);
                        }
                        Err(PodIpError::Full { subnet, .. }) if subnet.is_ipv4() => {
                            prop_assert!(model.next().is_none());
                        }
                        Err(PodIpError::Full { .. }) => {
                            // Upstream took and released a v4 address: its cursor moved.
                            prop_assert!(model.next().is_some());
                        }
                        Err(e) => prop_assert!(false, "unexpected error {}", e),
                    }
                }
                Op::Static(o, v4, v6) => {
                    let owner = format!("p{o}");
                    let want = vec![
                        net(&format!("10.0.0.{v4}/28")),
                        net(&format!("fd00::{v6:x}/124")),
                    ];
                    if a.allocate_static(&owner, &want).is_ok() && !holders.contains_key(&owner) {
                        let offset = u128::from(v4);
                        model.blocked.insert(offset);
                        holders.insert(owner, offset);
                    }
                }
                Op::Release(o) => {
                    let owner = format!("p{o}");
                    a.release(&owner);
                    if let Some(offset) = holders.remove(&owner)
                        && !(12..=13).contains(&offset)
                    {
                        model.blocked.remove(&offset);
                    }
                }
            }
            check(&a)?;
        }
    }

    #[test]
    fn restore_in_any_order_then_continue(
        ops in prop::collection::vec(op(), 1..80),
        seed in any::<u64>(),
        more in 1u8..12,
    ) {
        let mut a = PodIpAllocator::new("net", &small_config()).unwrap();
        for op in ops {
            match op {
                Op::Allocate(o) => { let _ = a.allocate(&format!("p{o}")); }
                Op::Static(o, v4, v6) => {
                    let _ = a.allocate_static(
                        &format!("p{o}"),
                        &[net(&format!("10.0.0.{v4}/28")), net(&format!("fd00::{v6:x}/124"))],
                    );
                }
                Op::Release(o) => { a.release(&format!("p{o}")); }
            }
        }
        let mut saved: Vec<(String, Vec<IpNetwork>)> =
            a.assignments().map(|(o, ips)| (o.to_owned(), ips.to_vec())).collect();
        saved.sort_by_key(|(o, _)| o.bytes().fold(seed, |h, b| h.rotate_left(9) ^ u64::from(b)));
        let mut restored = PodIpAllocator::new("net", &small_config()).unwrap();
        for (owner, ips) in &saved {
            restored.restore(owner, ips).unwrap();
        }
        check(&restored)?;
        for n in 0..more {
            match restored.allocate(&format!("new{n}")) {
                Ok(_) => {}
                Err(e) => prop_assert!(e.is_full(), "{}", e),
            }
            check(&restored)?;
        }
        for (owner, ips) in &saved {
            prop_assert_eq!(restored.ips_of(owner), Some(ips.as_slice()));
        }
    }
}
