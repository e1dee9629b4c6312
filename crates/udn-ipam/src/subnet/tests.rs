//! Upstream `subnet_allocator_test.go` sequences and error messages.

use super::*;

pub(super) fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

pub(super) fn alloc_with(range: &str, host_len: u8) -> HostSubnetAllocator {
    let mut a = HostSubnetAllocator::new();
    a.add_range(net(range), host_len).unwrap();
    a
}

fn one(a: &mut HostSubnetAllocator, owner: &str) -> String {
    let subnets = a.allocate(owner).unwrap();
    assert_eq!(subnets.len(), 1, "{subnets:?}");
    subnets[0].to_string()
}

fn strings(subnets: &[IpNetwork]) -> Vec<String> {
    subnets.iter().map(ToString::to_string).collect()
}

fn set_next(a: &mut HostSubnetAllocator, family: IpFamily, next: u128) {
    a.ranges_mut(family)[0].next = next;
}

fn totals(a: &HostSubnetAllocator) -> (u128, u128) {
    let mut v4 = 0;
    let mut v6 = 0;
    for u in a.usage() {
        match IpFamily::of_net(u.range) {
            IpFamily::V4 => v4 += u.total,
            IpFamily::V6 => v6 += u.total,
        }
    }
    (v4, v6)
}

fn used(a: &HostSubnetAllocator) -> (u128, u128) {
    let mut v4 = 0;
    let mut v6 = 0;
    for u in a.usage() {
        match IpFamily::of_net(u.range) {
            IpFamily::V4 => v4 += u.used,
            IpFamily::V6 => v6 += u.used,
        }
    }
    (v4, v6)
}

#[test]
fn ipv4_slash16_into_slash24() {
    let mut a = alloc_with("10.1.0.0/16", 24);
    assert_eq!(totals(&a), (256, 0));
    for n in 0..256 {
        assert_eq!(one(&mut a, &format!("node-{n}")), format!("10.1.{n}.0/24"));
    }
    let err = a.allocate("test").unwrap_err();
    assert_eq!(
        err,
        SubnetError::Full {
            family: IpFamily::V4
        }
    );
    assert_eq!(err.to_string(), "no subnets available");
    assert_eq!(used(&a), (256, 0));
}

#[test]
fn ipv4_10_132() {
    let mut a = alloc_with("10.132.0.0/16", 24);
    assert_eq!(one(&mut a, "a"), "10.132.0.0/24");
    assert_eq!(one(&mut a, "b"), "10.132.1.0/24");
    assert_eq!(one(&mut a, "c"), "10.132.2.0/24");
}

#[test]
fn ipv6_slash48_into_slash64() {
    let mut a = alloc_with("fd01::/48", 64);
    assert_eq!(totals(&a), (0, 65536));
    for n in 1..256 {
        assert_eq!(
            one(&mut a, &format!("node-{n}")),
            format!("fd01:0:0:{n:x}::/64")
        );
    }
    assert_eq!(one(&mut a, "node-256"), "fd01:0:0:100::/64");
    set_next(&mut a, IpFamily::V6, 0xFFFF);
    assert_eq!(one(&mut a, "x"), "fd01:0:0:ffff::/64");
    assert_eq!(one(&mut a, "y"), "fd01:0:0:101::/64");
}

#[test]
fn ipv4_large_host_bits() {
    let mut a = alloc_with("10.1.0.0/16", 22);
    assert_eq!(totals(&a), (64, 0));
    for n in 0..64 {
        assert_eq!(
            one(&mut a, &format!("node-{n}")),
            format!("10.1.{}.0/22", n * 4)
        );
    }
    assert!(matches!(a.allocate("test"), Err(SubnetError::Full { .. })));
    assert_eq!(used(&a), (64, 0));
}

#[test]
fn ipv6_large_host_bits_does_not_skip_zero() {
    let mut a = alloc_with("fd01::/48", 60);
    assert_eq!(totals(&a), (0, 4096));
    assert_eq!(one(&mut a, "node-0"), "fd01::/60");
    for n in 1..256u32 {
        assert_eq!(
            one(&mut a, &format!("node-{n}")),
            format!("fd01:0:0:{:x}::/60", n << 4)
        );
    }
}

#[test]
fn ipv4_large_subnet_bits_rotates() {
    let mut a = alloc_with("10.1.0.0/16", 26);
    assert_eq!(totals(&a), (1024, 0));
    for n in 0..256 {
        assert_eq!(one(&mut a, &format!("a-{n}")), format!("10.1.{n}.0/26"));
    }
    for n in 0..256 {
        assert_eq!(one(&mut a, &format!("b-{n}")), format!("10.1.{n}.64/26"));
    }
    assert_eq!(one(&mut a, "c"), "10.1.0.128/26");
    set_next(&mut a, IpFamily::V4, 1023);
    assert_eq!(one(&mut a, "d"), "10.1.255.192/26");
    assert_eq!(one(&mut a, "e"), "10.1.1.128/26");
}

#[test]
fn ipv6_large_subnet_bits_scans_at_most_2_pow_24() {
    let mut a = alloc_with("fd01::/48", 84);
    assert_eq!(totals(&a), (0, 68_719_476_736));
    for n in 1..256u32 {
        let expected: IpNetwork = format!("fd01:0:0:0:{:x}:{:x}::/84", n >> 4, (n << 12) & 0xFFFF)
            .parse()
            .unwrap();
        assert_eq!(one(&mut a, &format!("node-{n}")), expected.to_string());
    }
    assert_eq!(one(&mut a, "x"), "fd01::10:0:0:0/84");
    set_next(&mut a, IpFamily::V6, 0x00FF_FFFF);
    assert_eq!(one(&mut a, "y"), "fd01::f:ffff:f000:0:0/84");
    assert_eq!(one(&mut a, "z"), "fd01::10:1000:0:0/84");
}

#[test]
fn ipv4_overlapping_octets() {
    let mut a = alloc_with("10.0.0.0/14", 22);
    assert_eq!(totals(&a), (256, 0));
    for n in 0..4 {
        assert_eq!(one(&mut a, &format!("a-{n}")), format!("10.{n}.0.0/22"));
    }
    for n in 0..4 {
        assert_eq!(one(&mut a, &format!("b-{n}")), format!("10.{n}.4.0/22"));
    }
    assert_eq!(one(&mut a, "c"), "10.0.8.0/22");
    set_next(&mut a, IpFamily::V4, 255);
    assert_eq!(one(&mut a, "d"), "10.3.252.0/22");
    assert_eq!(one(&mut a, "e"), "10.1.8.0/22");
}

#[test]
fn ipv4_default_cluster_network_slash23() {
    let mut a = alloc_with("10.128.0.0/14", 23);
    let got: Vec<String> = (0..6).map(|n| one(&mut a, &format!("n{n}"))).collect();
    assert_eq!(
        got,
        [
            "10.128.0.0/23",
            "10.129.0.0/23",
            "10.130.0.0/23",
            "10.131.0.0/23",
            "10.128.2.0/23",
            "10.129.2.0/23"
        ]
    );
}

#[test]
fn no_subnet_bits() {
    let mut a = alloc_with("10.1.0.0/16", 16);
    assert_eq!(one(&mut a, "a"), "10.1.0.0/16");
    assert!(matches!(
        a.allocate("b"),
        Err(SubnetError::Full {
            family: IpFamily::V4
        })
    ));
    assert_eq!(used(&a), (1, 0));

    let mut a = alloc_with("fd01::/64", 64);
    assert_eq!(one(&mut a, "a"), "fd01::/64");
    assert!(matches!(
        a.allocate("b"),
        Err(SubnetError::Full {
            family: IpFamily::V6
        })
    ));
    assert_eq!(used(&a), (0, 1));
}

#[test]
fn invalid_host_lengths() {
    let mut a = HostSubnetAllocator::new();
    let cases = [
        (
            "10.1.0.0/16",
            14,
            "subnet capacity cannot be larger than number of networks available",
        ),
        ("10.1.0.0/16", 32, "host capacity cannot be zero"),
        (
            "fd01::/64",
            62,
            "subnet capacity cannot be larger than number of networks available",
        ),
        ("fd01::/64", 128, "host capacity cannot be zero"),
    ];
    for (range, host_len, message) in cases {
        assert_eq!(
            a.add_range(net(range), host_len).unwrap_err().to_string(),
            message
        );
    }
    assert!(a.usage().is_empty());
}

#[test]
fn overlapping_ranges_are_rejected_identical_ones_ignored() {
    let mut a = alloc_with("10.1.0.0/16", 24);
    a.add_range(net("10.1.0.0/16"), 24).unwrap();
    assert_eq!(
        a.add_range(net("10.1.128.0/17"), 24)
            .unwrap_err()
            .to_string(),
        "network range 10.1.128.0/17 overlaps existing range 10.1.0.0/16"
    );
    assert_eq!(a.range_networks(IpFamily::V4), vec![net("10.1.0.0/16")]);
}

#[test]
fn mark_allocated_network() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    let subnets: Vec<IpNetwork> = (0..4)
        .map(|i| a.allocate(&format!("test-{i}")).unwrap()[0])
        .collect();
    assert!(a.allocate("test").is_err());
    a.release("test-2", &[subnets[2]]).unwrap();
    for _ in 0..2 {
        a.mark_allocated("test-2", &[subnets[2]]).unwrap();
    }
    assert!(a.allocate("test").is_err());
    assert_eq!(
        a.mark_allocated("test", &[net("10.2.3.0/24")])
            .unwrap_err()
            .to_string(),
        "network 10.2.3.0/24 does not belong to any known range"
    );
    assert_eq!(
        a.mark_allocated("test", &[net("10.1.0.0/24")])
            .unwrap_err()
            .to_string(),
        "network 10.1.0.0/24 is not a /18 host subnet of range 10.1.0.0/16"
    );
}

#[test]
fn mark_allocated_different_owner_is_all_or_nothing() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    let subnets: Vec<IpNetwork> = (0..4)
        .map(|i| a.allocate(&format!("test-{i}")).unwrap()[0])
        .collect();
    a.release("test-2", &[subnets[2]]).unwrap();
    assert_eq!(
        a.mark_allocated("thief", &[subnets[2], subnets[3]])
            .unwrap_err()
            .to_string(),
        "network 10.1.192.0/18 already owned by test-3"
    );
    a.mark_allocated("blah", &[subnets[2]]).unwrap();
    a.release("blah", &[subnets[2]]).unwrap();
    a.release("test-3", &[subnets[3]]).unwrap();
    a.mark_allocated("thief", &[subnets[2], subnets[3]])
        .unwrap();
    assert_eq!(a.subnets_of("thief"), vec![subnets[2], subnets[3]]);
}

#[test]
fn mark_allocated_normalises_host_bits() {
    let mut a = alloc_with("10.1.0.0/16", 24);
    a.mark_allocated("n1", &[net("10.1.7.9/24")]).unwrap();
    assert_eq!(a.owner_of(net("10.1.7.0/24")), Some("n1"));
}

#[test]
fn release_networks() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    let sn = a.allocate("test").unwrap();
    a.release("test", &sn).unwrap();
    let sn = a.allocate("test").unwrap();
    assert_eq!(
        a.release("thief", &sn).unwrap_err().to_string(),
        "network 10.1.64.0/18 already owned by test"
    );
    assert!(a.mark_allocated("thief", &sn).is_err());
    assert_eq!(a.release_owner("test"), sn);
    assert_eq!(
        a.release("test", &sn).unwrap_err().to_string(),
        "network 10.1.64.0/18 does not belong to any known range"
    );
}

#[test]
fn allocate_release_subnet_reuses_the_freed_one() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    for i in 0..4 {
        assert_eq!(
            one(&mut a, &format!("test-{i}")),
            format!("10.1.{}.0/18", i * 64)
        );
    }
    assert!(a.allocate("test").is_err());
    a.release("test-2", &[net("10.1.128.0/18")]).unwrap();
    assert_eq!(one(&mut a, "test"), "10.1.128.0/18");
    assert!(a.allocate("test-extra").is_err());
}

#[test]
fn multiple_ranges_in_insertion_order() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    a.add_range(net("10.2.0.0/16"), 18).unwrap();
    for i in 0..4 {
        assert_eq!(
            one(&mut a, &format!("test-{i}")),
            format!("10.1.{}.0/18", i * 64)
        );
    }
    for i in 0..4 {
        assert_eq!(
            one(&mut a, &format!("test-{}", i + 4)),
            format!("10.2.{}.0/18", i * 64)
        );
    }
    assert!(a.allocate("test").is_err());
    assert_eq!(used(&a), (8, 0));
    a.release("test-2", &[net("10.1.128.0/18")]).unwrap();
    a.release("test-6", &[net("10.2.128.0/18")]).unwrap();
    assert_eq!(one(&mut a, "x"), "10.1.128.0/18");
    assert_eq!(one(&mut a, "y"), "10.2.128.0/18");
    assert!(a.allocate("test").is_err());
}

#[test]
fn dual_stack() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    a.add_range(net("10.2.0.0/16"), 18).unwrap();
    a.add_range(net("fd01::/48"), 64).unwrap();
    for i in 0..4 {
        assert_eq!(
            strings(&a.allocate(&format!("test-{i}")).unwrap()),
            [
                format!("10.1.{}.0/18", i * 64),
                format!("fd01:0:0:{:x}::/64", i + 1)
            ]
        );
    }
    for i in 0..4 {
        assert_eq!(
            strings(&a.allocate(&format!("test-{}", i + 4)).unwrap()),
            [
                format!("10.2.{}.0/18", i * 64),
                format!("fd01:0:0:{:x}::/64", i + 5)
            ]
        );
    }
    assert!(matches!(
        a.allocate("test"),
        Err(SubnetError::Full {
            family: IpFamily::V4
        })
    ));
    assert_eq!(used(&a), (8, 8));
    a.release("test-2", &[net("10.1.128.0/18"), net("fd01:0:0:3::/64")])
        .unwrap();
    a.release("test-6", &[net("10.2.128.0/18"), net("fd01:0:0:7::/64")])
        .unwrap();
    assert_eq!(
        strings(&a.allocate("x").unwrap()),
        ["10.1.128.0/18", "fd01:0:0:9::/64"]
    );
    assert_eq!(
        strings(&a.allocate("y").unwrap()),
        ["10.2.128.0/18", "fd01:0:0:a::/64"]
    );
    assert!(a.allocate("test").is_err());
}

#[test]
fn dual_stack_v6_failure_rolls_back_new_v4() {
    let mut a = alloc_with("10.1.0.0/16", 24);
    a.add_range(net("fd01::/64"), 64).unwrap();
    a.allocate("first").unwrap();
    assert!(matches!(
        a.allocate("second"),
        Err(SubnetError::Full {
            family: IpFamily::V6
        })
    ));
    assert!(a.subnets_of("second").is_empty());
    assert_eq!(used(&a), (1, 1));
}

#[test]
fn same_owner_gets_the_same_subnets() {
    let mut a = alloc_with("10.1.0.0/16", 18);
    a.add_range(net("fd01::/48"), 64).unwrap();
    let first = a.allocate("test-0").unwrap();
    let second = a.allocate("test-0").unwrap();
    assert_eq!(first, second);
}

#[test]
fn owner_in_a_later_range_keeps_its_subnet() {
    let mut a = alloc_with("10.1.0.0/16", 24);
    a.add_range(net("10.2.0.0/16"), 24).unwrap();
    a.mark_allocated("n1", &[net("10.2.5.0/24")]).unwrap();
    assert_eq!(one(&mut a, "n1"), "10.2.5.0/24");
    assert_eq!(one(&mut a, "n2"), "10.1.0.0/24");
}

#[test]
fn expansion_appends_a_range_used_after_the_first_is_full() {
    let mut a = alloc_with("10.1.0.0/24", 26);
    for n in 0..4 {
        a.allocate(&format!("n{n}")).unwrap();
    }
    assert!(a.allocate("late").is_err());
    a.add_range(net("10.9.0.0/24"), 26).unwrap();
    assert_eq!(one(&mut a, "late"), "10.9.0.0/26");
    let usage = a.usage();
    assert_eq!(usage.len(), 2);
    assert_eq!(usage[0].free(), 0);
    assert_eq!(usage[1].free(), 3);
}

#[test]
fn rotation_inverts() {
    let range = SubnetRange::new(net("10.0.0.0/14"), 22).unwrap();
    let rotation = range.rotation.unwrap();
    for n in 0..256 {
        assert_eq!(rotation.invert(rotation.apply(n)), n);
    }
}
