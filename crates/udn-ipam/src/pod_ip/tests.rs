//! Upstream `allocator/ip/subnet/allocator_test.go` and Layer2 UDN cases.

use super::*;

pub(super) fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

pub(super) fn nets(list: &[&str]) -> Vec<IpNetwork> {
    list.iter().map(|s| net(s)).collect()
}

pub(super) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn strings(list: &[IpNetwork]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

fn plain(subnets: &[&str]) -> PodIpAllocator {
    PodIpAllocator::new(
        "subnet1",
        &PodIpConfig {
            subnets: nets(subnets),
            ..PodIpConfig::default()
        },
    )
    .unwrap()
}

#[test]
fn first_addresses_are_dot_one() {
    let mut a = plain(&["10.1.1.0/24", "2000::/64"]);
    assert_eq!(
        strings(&a.allocate("p1").unwrap()),
        ["10.1.1.1/24", "2000::1/64"]
    );
    assert_eq!(
        strings(&a.allocate("p2").unwrap()),
        ["10.1.1.2/24", "2000::2/64"]
    );
    // Idempotent per owner.
    assert_eq!(
        strings(&a.allocate("p1").unwrap()),
        ["10.1.1.1/24", "2000::1/64"]
    );
}

#[test]
fn cidr_form_carries_the_subnet_prefix() {
    let mut a = plain(&["10.100.0.0/16"]);
    a.allocate("p1").unwrap();
    a.allocate("p2").unwrap();
    assert_eq!(strings(&a.allocate("p3").unwrap()), ["10.100.0.3/16"]);
}

#[test]
fn excludes_subnets() {
    let mut a = PodIpAllocator::new(
        "subnet1",
        &PodIpConfig {
            subnets: nets(&["10.1.1.0/24"]),
            exclude_subnets: nets(&["10.1.1.0/29"]),
            ..PodIpConfig::default()
        },
    )
    .unwrap();
    assert_eq!(strings(&a.allocate("p").unwrap()), ["10.1.1.8/24"]);
}

#[test]
fn allocate_release_and_static_reallocate() {
    let mut a = plain(&["10.1.1.0/24"]);
    for expected in ["10.1.1.1/24", "10.1.1.2/24"] {
        let ips = a.allocate("p").unwrap();
        assert_eq!(strings(&ips), [expected]);
        assert_eq!(a.release("p"), ips);
        assert_eq!(a.allocate_static("p", &ips).unwrap(), ips);
        a.release("p");
    }
}

#[test]
fn round_robin_does_not_reuse_a_freed_address_right_away() {
    let mut a = plain(&["10.1.1.0/29"]);
    assert_eq!(strings(&a.allocate("a").unwrap()), ["10.1.1.1/29"]);
    assert_eq!(strings(&a.allocate("b").unwrap()), ["10.1.1.2/29"]);
    a.release("a");
    assert_eq!(strings(&a.allocate("c").unwrap()), ["10.1.1.3/29"]);
    for o in ["d", "e", "f"] {
        a.allocate(o).unwrap();
    }
    // .4 .5 .6 went out; the scan wraps to the freed .1.
    assert_eq!(strings(&a.allocate("g").unwrap()), ["10.1.1.1/29"]);
    let err = a.allocate("h").unwrap_err();
    assert!(err.is_full());
}

#[test]
fn multiple_ips_in_one_subnet() {
    let mut a = plain(&["10.1.1.0/24", "2000::/64"]);
    let err = a
        .allocate_static("p", &nets(&["10.1.1.1/24", "10.1.1.2/24"]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to allocate IP 10.1.1.2 for subnet1: attempted to reserve multiple IPs in the same continuous IPAM instance"
    );
    assert!(a.owner_of(ip("10.1.1.1")).is_none());
}

#[test]
fn exhausting_one_subnet_allocates_nothing() {
    let mut a = plain(&["10.1.1.0/24", "10.1.2.0/29"]);
    for n in 1..=6 {
        assert_eq!(
            strings(&a.allocate(&format!("p{n}")).unwrap()),
            [format!("10.1.1.{n}/24"), format!("10.1.2.{n}/29")]
        );
    }
    let err = a.allocate("p7").unwrap_err();
    assert!(err.is_full());
    assert_eq!(
        err.to_string(),
        "failed to allocate new IPs for subnet1: subnet address pool exhausted in 10.1.2.0/29"
    );
    assert!(a.ips_of("p7").is_none());
    assert!(a.owner_of(ip("10.1.1.7")).is_none());
    assert_eq!(a.usage()[0].allocated, 6);
}

#[test]
fn blocking_an_allocated_ip_fails() {
    let mut a = plain(&["10.1.1.0/24", "2000::/64"]);
    let ips = a.allocate("p1").unwrap();
    assert_eq!(strings(&ips), ["10.1.1.1/24", "2000::1/64"]);
    let err = a.allocate_static("p2", &ips).unwrap_err();
    assert!(err.is_already_allocated());
    assert_eq!(
        err.to_string(),
        "provided IP is already allocated: 10.1.1.1 is held by p1"
    );
}

#[test]
fn ip_in_no_subnet() {
    let mut a = plain(&["10.1.1.0/24"]);
    let err = a
        .allocate_static("p", &nets(&["10.2.0.50/24"]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to allocate IP 10.2.0.50 for subnet1: not contained in any known subnet"
    );
}

#[test]
fn reserved_subnets_allow_static_allocation_only() {
    let mut a = PodIpAllocator::new(
        "subnet1",
        &PodIpConfig {
            subnets: nets(&["10.1.1.0/24"]),
            reserved_subnets: nets(&["10.1.1.16/28"]),
            ..PodIpConfig::default()
        },
    )
    .unwrap();
    assert_eq!(strings(&a.allocate("auto").unwrap()), ["10.1.1.1/24"]);
    a.allocate_static("first", &nets(&["10.1.1.16/24"]))
        .unwrap();
    a.allocate_static("last", &nets(&["10.1.1.31/24"])).unwrap();
    let err = a
        .allocate_static("again", &nets(&["10.1.1.31/24"]))
        .unwrap_err();
    assert!(err.is_already_allocated());
    // Automatic allocation never enters the reserved subnet.
    for n in 0..237 {
        let got = a.allocate(&format!("p{n}")).unwrap()[0].ip();
        assert!(!net("10.1.1.16/28").contains(got), "{got}");
    }
    assert!(a.allocate("one-more").unwrap_err().is_full());
}

#[test]
fn reserved_with_exclude_subnets() {
    let mut a = PodIpAllocator::new(
        "subnet1",
        &PodIpConfig {
            subnets: nets(&["10.1.1.0/24"]),
            reserved_subnets: nets(&["10.1.1.0/28", "10.1.1.240/28"]),
            exclude_subnets: nets(&["10.1.1.200/29"]),
            ..PodIpConfig::default()
        },
    )
    .unwrap();
    assert_eq!(strings(&a.allocate("auto").unwrap()), ["10.1.1.16/24"]);
    a.allocate_static("r", &nets(&["10.1.1.5/24"])).unwrap();
    let err = a
        .allocate_static("x", &nets(&["10.1.1.202/24"]))
        .unwrap_err();
    assert!(err.is_already_allocated());
    assert_eq!(
        err.to_string(),
        "provided IP is already allocated: 10.1.1.202 is excluded from allocation"
    );
    assert_eq!(
        a.allocate_static("n", &nets(&["10.1.1.0/24"]))
            .unwrap_err()
            .to_string(),
        "provided IP 10.1.1.0 is not in the valid range. The range of valid IPs is 10.1.1.0/24"
    );
    assert!(a.allocate_static("b", &nets(&["10.1.1.255/24"])).is_err());
    let usage = a.usage()[0];
    // 254 pool addresses (.1 to .254) minus 15 + 15 reserved inside the pool, minus 8 excluded.
    assert_eq!(usage.capacity, 254 - 15 - 15 - 8);
    assert_eq!(usage.allocated, 2);
    assert_eq!(usage.free, usage.capacity - 1);
}

#[test]
fn primary_layer2_excludes_gateway_and_management() {
    let config = PodIpConfig {
        subnets: nets(&["192.168.200.0/24", "fd12:1234::0/64"]),
        primary_layer2: true,
        ..PodIpConfig::default()
    };
    let mut a = PodIpAllocator::new("blue", &config).unwrap();
    for taken in [
        "192.168.200.1/24",
        "192.168.200.2/24",
        "fd12:1234::1/64",
        "fd12:1234::2/64",
    ] {
        let err = a.allocate_static("p", &nets(&[taken])).unwrap_err();
        assert!(err.is_already_allocated(), "{taken}: {err}");
    }
    a.allocate_static("p", &nets(&["192.168.200.3/24", "fd12:1234::3/64"]))
        .unwrap();
    a.release("p");
    assert_eq!(
        strings(&a.allocate("q").unwrap()),
        ["192.168.200.3/24", "fd12:1234::3/64"]
    );
}

#[test]
fn secondary_layer2_can_hand_out_dot_one() {
    let mut a = plain(&["192.168.200.0/24"]);
    a.allocate_static("p", &nets(&["192.168.200.1/24"]))
        .unwrap();
}

#[test]
fn primary_layer2_with_custom_gateway() {
    let config = PodIpConfig {
        subnets: nets(&["10.0.0.0/24"]),
        primary_layer2: true,
        default_gateway_ips: vec![ip("10.0.0.2")],
        ..PodIpConfig::default()
    };
    let mut a = PodIpAllocator::new("blue", &config).unwrap();
    // Gateway .2, management moved to .1: both excluded.
    assert_eq!(strings(&a.allocate("p").unwrap()), ["10.0.0.3/24"]);
}

#[test]
fn infrastructure_subnets_replace_the_dot_one_dot_two_exclusion() {
    let config = PodIpConfig {
        subnets: nets(&["10.0.0.0/24"]),
        infrastructure_subnets: nets(&["10.0.0.8/30"]),
        primary_layer2: true,
        ..PodIpConfig::default()
    };
    let mut a = PodIpAllocator::new("blue", &config).unwrap();
    assert_eq!(strings(&a.allocate("p").unwrap()), ["10.0.0.1/24"]);
    for blocked in ["10.0.0.8/24", "10.0.0.11/24"] {
        assert!(
            a.allocate_static("s", &nets(&[blocked]))
                .unwrap_err()
                .is_already_allocated()
        );
    }
}

#[test]
fn exclusions_must_lie_in_a_subnet() {
    let err = PodIpAllocator::new(
        "blue",
        &PodIpConfig {
            subnets: nets(&["10.0.0.0/24"]),
            exclude_subnets: nets(&["10.0.0.0/16"]),
            ..PodIpConfig::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to exclude subnet 10.0.0.0/16 for blue: not contained in any of the subnets"
    );
    let err = PodIpAllocator::new(
        "blue",
        &PodIpConfig {
            subnets: nets(&["10.0.0.0/24", "10.0.0.128/25"]),
            ..PodIpConfig::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid subnets for blue: 10.0.0.128/25 overlaps 10.0.0.0/24"
    );
}

#[test]
fn no_subnets_and_no_ips() {
    let mut a = PodIpAllocator::new("blue", &PodIpConfig::default()).unwrap();
    assert_eq!(
        a.allocate("p").unwrap_err().to_string(),
        "failed to allocate new IPs for blue: has no IPAM"
    );
    let mut a = plain(&["10.0.0.0/24"]);
    assert_eq!(
        a.allocate_static("p", &[]).unwrap_err().to_string(),
        "failed to allocate IPs for subnet1: no IPs provided"
    );
}

#[test]
fn owner_with_other_ips() {
    let mut a = plain(&["10.0.0.0/24"]);
    a.allocate_static("p", &nets(&["10.0.0.9/24"])).unwrap();
    // Same set again, prefix length ignored on input.
    assert_eq!(
        strings(&a.allocate_static("p", &nets(&["10.0.0.9/32"])).unwrap()),
        ["10.0.0.9/24"]
    );
    assert_eq!(
        a.restore("p", &nets(&["10.0.0.10/24"]))
            .unwrap_err()
            .to_string(),
        "p already holds IPs [10.0.0.9/24] in subnet1; refusing [10.0.0.10/24]"
    );
}

#[test]
fn ipv6_pool_spans_the_first_65536_addresses() {
    let mut a = plain(&["2000::/64"]);
    a.allocate_static("last", &nets(&["2000::ffff/64"]))
        .unwrap();
    assert_eq!(
        a.allocate_static("far", &nets(&["2000::1:0/64"]))
            .unwrap_err()
            .to_string(),
        "provided IP 2000::1:0 is not in the valid range. The range of valid IPs is 2000::/64"
    );
    assert!(a.allocate_static("zero", &nets(&["2000::/64"])).is_err());
    assert_eq!(a.usage()[0].capacity, 65_535);
}

#[test]
fn ipv4_tiny_subnets_have_no_pool() {
    let mut a = plain(&["10.0.0.0/31"]);
    assert!(a.allocate("p").unwrap_err().is_full());
    let mut a = plain(&["10.0.0.0/30"]);
    a.allocate("a").unwrap();
    a.allocate("b").unwrap();
    assert!(a.allocate("c").unwrap_err().is_full());
}

#[test]
fn scales_to_slash_8_and_slash_64() {
    let config = PodIpConfig {
        subnets: nets(&["10.0.0.0/8", "fd00::/64"]),
        exclude_subnets: nets(&["10.0.0.0/9", "fd00::/112"]),
        ..PodIpConfig::default()
    };
    let mut a = PodIpAllocator::new("big", &config).unwrap();
    let usage = a.usage();
    assert_eq!(usage[0].capacity, (1 << 24) - 2 - ((1 << 23) - 1));
    // The whole IPv6 pool lies in the excluded /112.
    assert_eq!(usage[1].capacity, 0);
    let config = PodIpConfig {
        subnets: nets(&["10.0.0.0/8", "fd00::/64"]),
        exclude_subnets: nets(&["10.0.0.0/9"]),
        ..PodIpConfig::default()
    };
    let mut b = PodIpAllocator::new("big", &config).unwrap();
    assert_eq!(
        strings(&b.allocate("p").unwrap()),
        ["10.128.0.0/8", "fd00::1/64"]
    );
    for n in 0..2000 {
        b.allocate(&format!("q{n}")).unwrap();
    }
    assert_eq!(b.usage()[0].allocated, 2001);
    assert!(a.allocate("p").unwrap_err().is_full());
    b.allocate_static("s", &nets(&["10.255.255.254/8"]))
        .unwrap();
    assert!(
        b.allocate_static("t", &nets(&["10.255.255.255/8"]))
            .is_err()
    );
}

#[test]
fn restore_does_not_move_the_cursor() {
    let mut a = plain(&["10.0.0.0/24"]);
    a.restore("old", &nets(&["10.0.0.1/24"])).unwrap();
    a.restore("old2", &nets(&["10.0.0.5/24"])).unwrap();
    assert_eq!(strings(&a.allocate("new").unwrap()), ["10.0.0.2/24"]);
    assert_eq!(a.owner_of(ip("10.0.0.5")), Some("old2"));
    assert_eq!(a.assignments().count(), 3);
}
