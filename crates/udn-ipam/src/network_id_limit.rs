//! How many network IDs a cluster can hand out, and why ([`NetworkIdLimit`]).
//!
//! A network ID `N` is used for two derived values that bound it:
//! - its transit switch tunnel key `16711683 + N`, which must leave room in OVN's global key
//!   range (`..=2^24-1`) for one free tunnel key per network (a primary Layer2 network needs
//!   one besides its transit key): `N <= MAX_NETWORK_ID` (32766);
//! - its two masquerade IPs, `base + 10 + 2N - 1` and `base + 10 + 2N`, which must be inside
//!   the masquerade subnet of every IP family the cluster runs: `169.254.0.0/17` fits
//!   `N <= 16378`, `fd69::/112` fits `N <= 32762`.
//!
//! The pool is `0..=max_id` with `max_id` the smallest of these bounds (and of a configured
//! limit, if any); ID 0 is the default network's.

use std::fmt;

use ipnetwork::IpNetwork;

use crate::family::network_size;
use crate::masquerade::UDN_MASQUERADE_IP_BASE;
use crate::network_id::NetworkId;

/// The largest network ID udn hands out: its transit key `16711683 + 32766 = 16744449` leaves
/// the 32766 keys `16744450..=16777215` for one free tunnel key per network.
pub const MAX_NETWORK_ID: NetworkId = 32_766;

/// IDs `0..NETWORK_ID_POOL_SIZE` have a transit switch key in udn's tunnel key layout.
pub const NETWORK_ID_POOL_SIZE: u32 = MAX_NETWORK_ID + 1;

/// A pool a network takes values from; what an exhaustion error names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pool {
    /// Network IDs, bounded by the tunnel key layout or a configured limit.
    NetworkIds,
    /// Network IDs, bounded by the masquerade subnet (two IPs per network).
    MasqueradeIps,
    /// Free tunnel keys (primary Layer2 networks).
    TunnelKeys,
}

impl Pool {
    /// The pool's name in conditions, events and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::NetworkIds => "network-ids",
            Self::MasqueradeIps => "masquerade-ips",
            Self::TunnelKeys => "tunnel-keys",
        }
    }
}

impl fmt::Display for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What limits the network ID pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkIdBound {
    /// The tunnel key layout ([`MAX_NETWORK_ID`]).
    TunnelKeys,
    /// The masquerade subnet of one IP family (two IPs per network).
    Masquerade {
        /// The subnet.
        subnet: IpNetwork,
    },
    /// A limit set in the configuration.
    Configured,
}

impl fmt::Display for NetworkIdBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TunnelKeys => write!(
                f,
                "the transit switch tunnel keys (at most {MAX_NETWORK_ID} networks)"
            ),
            Self::Masquerade { subnet } => {
                write!(f, "the masquerade subnet {subnet} (2 IPs per network)")
            }
            Self::Configured => f.write_str("the configured limit"),
        }
    }
}

/// The size of the network ID pool and what bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkIdLimit {
    /// The largest ID handed out (0 when no network fits).
    pub max_id: NetworkId,
    /// What bounds it.
    pub bound: NetworkIdBound,
}

impl Default for NetworkIdLimit {
    /// Only the tunnel key layout: [`MAX_NETWORK_ID`].
    fn default() -> Self {
        Self {
            max_id: MAX_NETWORK_ID,
            bound: NetworkIdBound::TunnelKeys,
        }
    }
}

impl NetworkIdLimit {
    /// The limit for a cluster whose IP families use `masquerade_subnets` (one per family).
    pub fn for_masquerade_subnets(masquerade_subnets: impl IntoIterator<Item = IpNetwork>) -> Self {
        masquerade_subnets
            .into_iter()
            .fold(Self::default(), |limit, subnet| {
                let fits = masquerade_max_network_id(subnet);
                if fits < limit.max_id {
                    Self {
                        max_id: fits,
                        bound: NetworkIdBound::Masquerade { subnet },
                    }
                } else {
                    limit
                }
            })
    }

    /// This limit, lowered to `max_id` when that is smaller (a configured limit).
    pub fn capped(self, max_id: NetworkId) -> Self {
        if max_id < self.max_id {
            Self {
                max_id,
                bound: NetworkIdBound::Configured,
            }
        } else {
            self
        }
    }

    /// Number of IDs in the pool, the default network's 0 included.
    pub fn pool_size(&self) -> u32 {
        self.max_id + 1
    }

    /// The pool an exhaustion is reported against.
    pub fn pool(&self) -> Pool {
        match self.bound {
            NetworkIdBound::Masquerade { .. } => Pool::MasqueradeIps,
            NetworkIdBound::TunnelKeys | NetworkIdBound::Configured => Pool::NetworkIds,
        }
    }
}

/// The largest network ID whose two masquerade IPs fit in `subnet` (0 when none does):
/// `base + 10 + 2N` must be an address of the subnet.
pub fn masquerade_max_network_id(subnet: IpNetwork) -> NetworkId {
    let last_offset = network_size(subnet).saturating_sub(1);
    let fits = last_offset.saturating_sub(UDN_MASQUERADE_IP_BASE) / 2;
    NetworkId::try_from(fits).unwrap_or(NetworkId::MAX)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::masquerade::udn_masquerade_ips;

    fn net(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    #[test]
    fn masquerade_capacity_of_the_usual_subnets() {
        assert_eq!(masquerade_max_network_id(net("169.254.0.0/17")), 16_378);
        assert_eq!(masquerade_max_network_id(net("fd69::/112")), 32_762);
        assert_eq!(masquerade_max_network_id(net("169.254.0.0/26")), 26);
        // Upstream's /29 fits no network: the first pair is at offsets 11 and 12.
        assert_eq!(masquerade_max_network_id(net("169.254.169.0/29")), 0);
        assert_eq!(masquerade_max_network_id(net("169.254.169.0/28")), 2);
        assert_eq!(masquerade_max_network_id(net("fd69::/64")), u32::MAX);
    }

    #[test]
    fn the_smallest_bound_wins() {
        let dual =
            NetworkIdLimit::for_masquerade_subnets([net("169.254.0.0/17"), net("fd69::/112")]);
        assert_eq!(dual.max_id, 16_378);
        assert_eq!(
            dual.bound,
            NetworkIdBound::Masquerade {
                subnet: net("169.254.0.0/17")
            }
        );
        assert_eq!(dual.pool(), Pool::MasqueradeIps);
        assert_eq!(dual.pool_size(), 16_379);
        let v6 = NetworkIdLimit::for_masquerade_subnets([net("fd69::/112")]);
        assert_eq!(v6.max_id, 32_762);
        let slash16 = NetworkIdLimit::for_masquerade_subnets([net("169.254.0.0/16")]);
        assert_eq!(slash16.max_id, 32_762);
        let wide =
            NetworkIdLimit::for_masquerade_subnets([net("169.254.0.0/15"), net("fd69::/64")]);
        assert_eq!(wide, NetworkIdLimit::default());
        assert_eq!(wide.max_id, MAX_NETWORK_ID);
        assert_eq!(wide.pool(), Pool::NetworkIds);
        let capped = dual.capped(100);
        assert_eq!(
            (capped.max_id, capped.bound),
            (100, NetworkIdBound::Configured)
        );
        assert_eq!(capped.pool(), Pool::NetworkIds);
        assert_eq!(dual.capped(20_000), dual);
        assert!(NetworkIdLimit::default().max_id >= 10_000);
    }

    #[test]
    fn bounds_read_well() {
        assert_eq!(
            NetworkIdBound::Masquerade {
                subnet: net("169.254.0.0/26")
            }
            .to_string(),
            "the masquerade subnet 169.254.0.0/26 (2 IPs per network)"
        );
        assert_eq!(Pool::MasqueradeIps.to_string(), "masquerade-ips");
        assert_eq!(Pool::TunnelKeys.name(), "tunnel-keys");
        assert_eq!(Pool::NetworkIds.name(), "network-ids");
    }

    proptest! {
        #[test]
        fn every_id_up_to_the_bound_has_masquerade_ips(prefix in 20u8..=30, v6 in any::<bool>()) {
            let subnet = if v6 {
                net(&format!("fd69::/{}", prefix + 96))
            } else {
                net(&format!("169.254.0.0/{prefix}"))
            };
            let max = masquerade_max_network_id(subnet);
            if max > 0 {
                prop_assert!(udn_masquerade_ips(subnet, 1).is_ok());
                prop_assert!(udn_masquerade_ips(subnet, max).is_ok());
                prop_assert!(udn_masquerade_ips(subnet, max / 2 + 1).is_ok());
            }
            prop_assert!(udn_masquerade_ips(subnet, max + 1).is_err());
        }
    }
}
