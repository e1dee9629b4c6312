//! Property tests of the subnet allocator.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use proptest::prelude::*;

use super::tests::{alloc_with, net};
use super::*;

// ---- A literal transcription of upstream's scan, as the reference for property tests. ----

/// Upstream `generateSubnet` with its byte-wise placement.
fn reference_generate(range: IpNetwork, host_len: u8, base: u32) -> Option<IpNetwork> {
    let network = crate::family::canonical(range);
    let prefix = u32::from(network.prefix());
    let (mut bytes, addr_len): (Vec<u8>, u32) = match network.network() {
        IpAddr::V4(v4) => (v4.octets().to_vec(), 32),
        IpAddr::V6(v6) => (v6.octets().to_vec(), 128),
    };
    let host_bits = addr_len - u32::from(host_len);
    let subnet_bits = u32::from(host_len) - prefix;
    let mut base = u64::from(base);
    if addr_len == 32
        && host_bits % 8 != 0
        && (host_bits - 1) / 8 != (host_bits + subnet_bits - 1) / 8
    {
        let left_shift = 8 - host_bits % 8;
        let left_mask = (1u64 << subnet_bits) - 1;
        let right_shift = subnet_bits - left_shift;
        let right_mask = (1u64 << left_shift) - 1;
        base = ((base << left_shift) & left_mask) | ((base >> right_shift) & right_mask);
    } else if addr_len == 128 && subnet_bits >= 16 && base & 0xFFFF == 0 {
        return None;
    }
    let mut value = base << (host_bits % 8);
    let mut b = ((addr_len - host_bits - 1) / 8) as usize;
    while value != 0 {
        bytes[b] |= value as u8;
        value >>= 8;
        b = b.wrapping_sub(1);
    }
    let ip = match addr_len {
        32 => IpAddr::from(<[u8; 4]>::try_from(bytes.as_slice()).unwrap()),
        _ => IpAddr::from(<[u8; 16]>::try_from(bytes.as_slice()).unwrap()),
    };
    Some(IpNetwork::new(ip, host_len).unwrap())
}

/// Upstream `allocateNetwork` over one range: returns the subnet and the new `next`.
fn reference_allocate(
    range: IpNetwork,
    host_len: u8,
    next: u32,
    taken: &BTreeSet<IpNetwork>,
) -> (Option<IpNetwork>, u32) {
    let subnet_bits = u32::from(host_len) - u32::from(range.prefix());
    let num: u32 = if subnet_bits > 24 {
        1 << 24
    } else {
        1 << subnet_bits
    };
    for i in 0..num {
        let n = (i + next) % num;
        if let Some(sn) = reference_generate(range, host_len, n)
            && !taken.contains(&sn)
        {
            return (Some(sn), n + 1);
        }
    }
    (None, 0)
}

#[derive(Debug, Clone)]
enum Op {
    Allocate(u8),
    ReleaseOwner(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..40).prop_map(Op::Allocate),
        1 => (0u8..40).prop_map(Op::ReleaseOwner),
    ]
}

/// Small ranges so that exhaustion happens; one v6 range with >= 16 subnet bits for the skip.
fn range_config() -> impl Strategy<Value = (IpNetwork, u8)> {
    prop_oneof![
        Just((net("10.1.0.0/24"), 27)),
        Just((net("10.0.0.0/14"), 22)),
        Just((net("10.1.0.0/16"), 26)),
        Just((net("10.1.0.0/22"), 25)),
        Just((net("fd01::/120"), 124)),
        Just((net("fd01::/48"), 64)),
    ]
}

fn check_invariants(a: &HostSubnetAllocator) -> Result<(), TestCaseError> {
    let mut seen: BTreeMap<IpNetwork, String> = BTreeMap::new();
    for range in a.v4.iter().chain(a.v6.iter()) {
        for (owner, positions) in &range.held_by {
            prop_assert!(
                positions.len() <= 1,
                "{} holds {} subnets in one range",
                owner,
                positions.len()
            );
            for n in positions {
                let sn = range.subnet_at(*n).unwrap();
                prop_assert!(range.network.contains(sn.network()));
                prop_assert_eq!(sn.prefix(), range.host_len);
                for other in seen.keys() {
                    prop_assert!(
                        !other.contains(sn.network()) && !sn.contains(other.network()),
                        "{} overlaps {}",
                        sn,
                        other
                    );
                }
                seen.insert(sn, owner.to_string());
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn matches_upstream_scan((range, host_len) in range_config(), ops in prop::collection::vec(op(), 1..120)) {
        let mut a = alloc_with(&range.to_string(), host_len);
        let mut taken: BTreeMap<String, IpNetwork> = BTreeMap::new();
        let mut next = 0u32;
        for op in ops {
            match op {
                Op::Allocate(n) => {
                    let owner = format!("node-{n}");
                    let got = a.allocate(&owner);
                    if let Some(existing) = taken.get(&owner) {
                        prop_assert_eq!(got.unwrap(), vec![*existing]);
                        continue;
                    }
                    let all: BTreeSet<IpNetwork> = taken.values().copied().collect();
                    let (expected, new_next) = reference_allocate(range, host_len, next, &all);
                    next = new_next;
                    match expected {
                        Some(sn) => {
                            prop_assert_eq!(got.unwrap(), vec![sn]);
                            taken.insert(owner, sn);
                        }
                        None => prop_assert!(matches!(got, Err(SubnetError::Full { .. })), "expected full, got {:?}", got),
                    }
                }
                Op::ReleaseOwner(n) => {
                    let owner = format!("node-{n}");
                    let released = a.release_owner(&owner);
                    prop_assert_eq!(released, taken.remove(&owner).into_iter().collect::<Vec<_>>());
                }
            }
            check_invariants(&a)?;
            prop_assert_eq!(a.usage()[0].used, taken.len() as u128);
        }
    }

    #[test]
    fn restore_in_any_order_then_continue(
        ops in prop::collection::vec(op(), 1..80),
        seed in any::<u64>(),
        more in 1u8..20,
    ) {
        let build = || {
            let mut a = HostSubnetAllocator::new();
            a.add_range(net("10.1.0.0/24"), 27).unwrap();
            a.add_range(net("10.2.0.0/24"), 26).unwrap();
            a.add_range(net("fd01::/48"), 64).unwrap();
            a
        };
        let mut a = build();
        for op in ops {
            match op {
                Op::Allocate(n) => { let _ = a.allocate(&format!("node-{n}")); }
                Op::ReleaseOwner(n) => { a.release_owner(&format!("node-{n}")); }
            }
        }
        let mut annotations: Vec<(String, Vec<IpNetwork>)> = (0..40)
            .map(|n| format!("node-{n}"))
            .map(|o| { let s = a.subnets_of(&o); (o, s) })
            .filter(|(_, s)| !s.is_empty())
            .collect();
        annotations.sort_by_key(|(o, _)| o.bytes().fold(seed, |h, b| h.rotate_left(7) ^ u64::from(b)));
        let mut restored = build();
        for (owner, subnets) in &annotations {
            restored.mark_allocated(owner, subnets).unwrap();
        }
        check_invariants(&restored)?;
        for n in 0..more {
            match restored.allocate(&format!("new-{n}")) {
                Ok(_) | Err(SubnetError::Full { .. }) => {}
                Err(e) => prop_assert!(false, "unexpected error {}", e),
            }
            check_invariants(&restored)?;
        }
        for (owner, subnets) in &annotations {
            prop_assert_eq!(&restored.subnets_of(owner), subnets);
        }
    }
}
