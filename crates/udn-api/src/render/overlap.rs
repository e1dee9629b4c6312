//! Upstream `SubnetOverlapCheck`: the network's subnets, join subnets and (primary Layer2)
//! transit subnets against the cluster's internal subnets, in upstream list order, with
//! upstream type names and messages.

use std::fmt;

use ipnetwork::IpNetwork;

use crate::cluster::ClusterConfig;
use crate::crd::NetworkTopology;
use crate::netconf::{NetConf, NetInfo, NetInfoError, contains_cidr};

/// What a subnet in the overlap check is (upstream `ConfigSubnetType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubnetKind {
    /// `cluster subnet`: default-network cluster subnets.
    Cluster,
    /// `service subnet`.
    Service,
    /// `built-in join subnet`: the default network's join subnets.
    BuiltInJoin,
    /// `masquerade subnet`.
    Masquerade,
    /// `transit switch subnet`: cluster transit (Layer3) or the network's (Layer2).
    Transit,
    /// `user defined subnet`: the network's subnets.
    UserDefined,
    /// `user defined join subnet`: the network's join subnets.
    UserDefinedJoin,
}

impl SubnetKind {
    /// The upstream name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cluster => "cluster subnet",
            Self::Service => "service subnet",
            Self::BuiltInJoin => "built-in join subnet",
            Self::Masquerade => "masquerade subnet",
            Self::Transit => "transit switch subnet",
            Self::UserDefined => "user defined subnet",
            Self::UserDefinedJoin => "user defined join subnet",
        }
    }
}

impl fmt::Display for SubnetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the overlap check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigSubnet {
    /// What it is.
    pub kind: SubnetKind,
    /// The subnet.
    pub subnet: IpNetwork,
}

/// The overlap check failed. Display is the upstream text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverlapCheckError {
    /// The config's subnets do not parse (or break the family rule).
    #[error("error while parsing subnets: {reason}")]
    NetInfo {
        /// The parse failure.
        reason: NetInfoError,
    },
    /// Two subnets overlap; `subnet` comes later in the list than `other`.
    #[error(
        "pod or join subnet overlaps with already configured internal subnets: {} \"{}\" overlaps {} \"{}\"",
        subnet.kind, subnet.subnet, other.kind, other.subnet
    )]
    Overlap {
        /// The later entry.
        subnet: ConfigSubnet,
        /// The earlier entry it overlaps.
        other: ConfigSubnet,
    },
}

/// Upstream `SubnetOverlapCheck` for a user-defined network config.
pub fn subnet_overlap_check(
    conf: &NetConf,
    cluster: &ClusterConfig,
) -> Result<(), OverlapCheckError> {
    let mut list = internal_subnets(conf, cluster);
    let info = NetInfo::from_netconf(conf, cluster)
        .map_err(|reason| OverlapCheckError::NetInfo { reason })?;
    let Some(info) = info.user_defined() else {
        return Ok(());
    };
    let own = [
        (
            SubnetKind::UserDefined,
            info.subnets.iter().map(|s| s.cidr).collect::<Vec<_>>(),
        ),
        (SubnetKind::UserDefinedJoin, info.join_subnets.clone()),
        (SubnetKind::Transit, info.transit_subnets.clone()),
    ];
    for (kind, subnets) in own {
        list.extend(
            subnets
                .into_iter()
                .map(|subnet| ConfigSubnet { kind, subnet }),
        );
    }
    remove_excluded(&mut list, &info.exclude_subnets);
    first_overlap(&list)
}

/// Cluster, service, built-in join, masquerade and (Layer3) cluster transit subnets.
fn internal_subnets(conf: &NetConf, cluster: &ClusterConfig) -> Vec<ConfigSubnet> {
    let entry = |kind, subnet| ConfigSubnet { kind, subnet };
    let mut list: Vec<ConfigSubnet> = cluster
        .cluster_subnets
        .iter()
        .map(|s| entry(SubnetKind::Cluster, s.cidr))
        .chain(
            cluster
                .service_cidrs
                .iter()
                .map(|s| entry(SubnetKind::Service, *s)),
        )
        .collect();
    list.extend([
        entry(SubnetKind::BuiltInJoin, cluster.join_subnet_v4.into()),
        entry(SubnetKind::BuiltInJoin, cluster.join_subnet_v6.into()),
        entry(SubnetKind::Masquerade, cluster.masquerade_subnet_v4.into()),
        entry(SubnetKind::Masquerade, cluster.masquerade_subnet_v6.into()),
    ]);
    if conf.topology_kind() == Some(NetworkTopology::Layer3) {
        list.extend([
            entry(SubnetKind::Transit, cluster.transit_subnet_v4.into()),
            entry(SubnetKind::Transit, cluster.transit_subnet_v6.into()),
        ]);
    }
    list
}

/// Drop entries contained in an excluded subnet exactly as upstream does: it removes
/// while ranging over the original slice, so the entry after a removed one is skipped
/// and the stale tail is visited (a removal past the end is ignored here).
fn remove_excluded(list: &mut Vec<ConfigSubnet>, excludes: &[IpNetwork]) {
    if excludes.is_empty() {
        return;
    }
    let original_len = list.len();
    let mut len = original_len;
    for index in 0..original_len {
        let Some(entry) = list.get(index).copied() else {
            break;
        };
        let excluded = excludes.iter().any(|e| contains_cidr(e, &entry.subnet));
        if excluded && index < len {
            list.copy_within(index + 1..len, index);
            len -= 1;
        }
    }
    list.truncate(len);
}

/// Upstream `CheckForOverlaps`: the first pair (i, j < i) where either contains the
/// other's address.
fn first_overlap(list: &[ConfigSubnet]) -> Result<(), OverlapCheckError> {
    for (i, subnet) in list.iter().enumerate() {
        for other in list.iter().take(i) {
            if subnet.subnet.contains(other.subnet.ip())
                || other.subnet.contains(subnet.subnet.ip())
            {
                return Err(OverlapCheckError::Overlap {
                    subnet: *subnet,
                    other: *other,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        crate::netconf::parse_cidr(s).unwrap()
    }

    fn entries(nets: &[&str]) -> Vec<ConfigSubnet> {
        nets.iter()
            .map(|s| ConfigSubnet {
                kind: SubnetKind::UserDefined,
                subnet: net(s),
            })
            .collect()
    }

    #[test]
    fn removal_skips_the_next_entry_like_upstream() {
        let mut list = entries(&["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.1.0.0/16"]);
        remove_excluded(&mut list, &[net("10.0.0.0/16")]);
        // 10.0.0.0/24 removed, 10.0.1.0/24 shifted into the visited slot and skipped,
        // 10.0.2.0/24 removed, the stale tail entry is past the end.
        let left: Vec<String> = list.iter().map(|e| e.subnet.to_string()).collect();
        assert_eq!(left, ["10.0.1.0/24", "10.1.0.0/16"]);
    }

    #[test]
    fn reports_the_later_entry_first() {
        let list = entries(&["10.0.0.0/16", "192.168.0.0/16", "10.0.5.0/24"]);
        let err = first_overlap(&list).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pod or join subnet overlaps with already configured internal subnets: user defined subnet \"10.0.5.0/24\" overlaps user defined subnet \"10.0.0.0/16\""
        );
    }
}
