//! When two configurations of one network are the same network (upstream
//! `canReconcile` / `AreNetworksCompatible`): everything but the NAD set, the network ID's
//! arrival and a Layer3 network's subnets (expansion appends ranges; node subnets come from
//! the nodes' annotations) must be equal. An incompatible change tears the network down and
//! builds it again.

use udn_api::crd::NetworkTopology;
use udn_api::netconf::UserDefinedNetInfo;

/// The part of a network's configuration that cannot change in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkIdentity(UserDefinedNetInfo);

impl NetworkIdentity {
    /// The identity of `info`.
    pub fn of(info: &UserDefinedNetInfo) -> Self {
        let mut info = info.clone();
        if info.topology == NetworkTopology::Layer3 {
            info.subnets.clear();
        } else {
            info.subnets.sort_by(|a, b| {
                (a.cidr, a.host_subnet_length).cmp(&(b.cidr, b.host_subnet_length))
            });
        }
        Self(info)
    }
}

#[cfg(test)]
mod tests {
    use udn_api::cluster::ClusterConfig;
    use udn_api::netconf::{NetConf, NetInfo};

    use super::*;

    fn info(topology: &str, subnets: &str, mtu: i64) -> UserDefinedNetInfo {
        let conf = NetConf {
            name: "ns_net".into(),
            topology: topology.into(),
            role: "primary".into(),
            subnets: subnets.into(),
            mtu,
            nad_name: "ns/net".into(),
            ..NetConf::default()
        };
        match NetInfo::from_netconf(&conf, &ClusterConfig::default()) {
            Ok(NetInfo::UserDefined(info)) => *info,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn layer3_subnet_expansion_is_compatible_other_changes_are_not() {
        let base = NetworkIdentity::of(&info("layer3", "10.1.0.0/16/24", 1400));
        assert_eq!(
            base,
            NetworkIdentity::of(&info("layer3", "10.1.0.0/16/24,10.2.0.0/16/24", 1400))
        );
        assert_ne!(
            base,
            NetworkIdentity::of(&info("layer3", "10.1.0.0/16/24", 1300))
        );
        assert_ne!(
            base,
            NetworkIdentity::of(&info("layer2", "10.1.0.0/16", 1400))
        );
        let l2 = NetworkIdentity::of(&info("layer2", "10.1.0.0/16,fd00::/64", 1400));
        assert_eq!(
            l2,
            NetworkIdentity::of(&info("layer2", "fd00::/64,10.1.0.0/16", 1400))
        );
        assert_ne!(
            l2,
            NetworkIdentity::of(&info("layer2", "10.9.0.0/16,fd00::/64", 1400))
        );
    }
}
