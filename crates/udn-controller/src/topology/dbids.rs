//! Upstream's "DbObjectIDs" scheme (`pkg/libovsdb/ops/db_object_ids.go`,
//! `db_object_types.go`) for the rows that use it here (ACLs, port groups): an owner type,
//! object keys in a fixed order, the primary id `<controller>:<owner type>:<value>...`, and
//! `HashForOVN` names.
//!
//! The engine stamps `k8s.ovn.org/owner-controller`, `k8s.ovn.org/owner-type` and
//! `k8s.ovn.org/id` itself, so a row built from these ids carries the object keys in its
//! `external_ids`, the primary id as its row id and the owner type as its owner type.

/// `k8s.ovn.org/name` (`ObjectNameKey`).
pub(crate) const NAME_KEY: &str = "k8s.ovn.org/name";
/// `direction` (`PolicyDirectionKey`).
pub(crate) const DIRECTION_KEY: &str = "direction";
/// `ip` (`IpKey`).
pub(crate) const IP_KEY: &str = "ip";

/// Owner type `Cluster`.
pub(crate) const CLUSTER_OWNER_TYPE: &str = "Cluster";
/// Owner type `UDNIsolation`.
pub(crate) const UDN_ISOLATION_OWNER_TYPE: &str = "UDNIsolation";
/// Owner type `NetpolNode`.
pub(crate) const NETPOL_NODE_OWNER_TYPE: &str = "NetpolNode";

/// An upstream `ObjectIDsType`: the owner type and the object keys in primary-id order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdsType {
    /// Owner type.
    pub(crate) owner_type: &'static str,
    /// Object keys, in the order the primary id joins their values.
    pub(crate) keys: &'static [&'static str],
}

/// `ACLUDN`: UDN isolation ACLs.
pub(crate) const ACL_UDN: IdsType = IdsType {
    owner_type: UDN_ISOLATION_OWNER_TYPE,
    keys: &[NAME_KEY, DIRECTION_KEY],
};
/// `PortGroupUDN`: the `SecondaryPods` port group.
pub(crate) const PORT_GROUP_UDN: IdsType = IdsType {
    owner_type: UDN_ISOLATION_OWNER_TYPE,
    keys: &[NAME_KEY],
};
/// `PortGroupCluster`: `clusterPortGroup`, `clusterRtrPortGroup`.
pub(crate) const PORT_GROUP_CLUSTER: IdsType = IdsType {
    owner_type: CLUSTER_OWNER_TYPE,
    keys: &[NAME_KEY],
};
/// `ACLNetpolNode`: the allow-from-node ACL of a management port IP.
pub(crate) const ACL_NETPOL_NODE: IdsType = IdsType {
    owner_type: NETPOL_NODE_OWNER_TYPE,
    keys: &[NAME_KEY, IP_KEY],
};

/// The ids of one object: its type, owning controller and one value per key of the type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DbIds {
    ty: IdsType,
    controller: String,
    values: Vec<String>,
}

impl DbIds {
    /// Ids of type `ty` owned by `controller`, `values` in the order of `ty.keys`.
    pub(crate) fn new<const N: usize>(ty: IdsType, controller: &str, values: [&str; N]) -> Self {
        debug_assert_eq!(N, ty.keys.len(), "one value per key of the ids type");
        Self {
            ty,
            controller: controller.to_owned(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    /// The owner type.
    pub(crate) fn owner_type(&self) -> &'static str {
        self.ty.owner_type
    }

    /// The primary id (`DbObjectIDs.String`): `<controller>:<owner type>:<v1>:<v2>...`.
    pub(crate) fn primary_id(&self) -> String {
        let mut id = format!("{}:{}", self.controller, self.ty.owner_type);
        for value in &self.values {
            id.push(':');
            id.push_str(value);
        }
        id
    }

    /// The object keys and their values (the `external_ids` besides the engine's stamps).
    pub(crate) fn object_ids(&self) -> Vec<(&'static str, &str)> {
        self.ty
            .keys
            .iter()
            .copied()
            .zip(self.values.iter().map(String::as_str))
            .collect()
    }

    /// The port group name of these ids (`libovsdbutil.GetPortGroupName`).
    pub(crate) fn port_group_name(&self) -> String {
        hash_for_ovn(&self.primary_id())
    }
}

/// Upstream `util.HashForOVN`: `"a"` followed by the decimal FNV-1a 64-bit hash of `text`
/// (OVN port group and address set names may not contain `-` or `:`).
pub fn hash_for_ovn(text: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = text.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    });
    format!("a{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_the_values_verified_against_upstream() {
        for (id, name) in [
            (
                "default-network-controller:UDNIsolation:SecondaryPods",
                "a8747502060113802905",
            ),
            (
                "default-network-controller:Cluster:clusterPortGroup",
                "a13298398610555951118",
            ),
            (
                "default-network-controller:Cluster:clusterRtrPortGroup",
                "a4743249366342378346",
            ),
            (
                "network1-network-controller:Cluster:clusterPortGroup",
                "a6023288408186719228",
            ),
            (
                "network1-network-controller:Cluster:clusterRtrPortGroup",
                "a11980077269908519924",
            ),
        ] {
            assert_eq!(hash_for_ovn(id), name, "{id}");
        }
    }

    #[test]
    fn primary_ids_join_values_in_key_order() {
        let ids = DbIds::new(
            ACL_UDN,
            "default-network-controller",
            ["DenyPrimaryUDN", "Ingress"],
        );
        assert_eq!(
            ids.primary_id(),
            "default-network-controller:UDNIsolation:DenyPrimaryUDN:Ingress"
        );
        assert_eq!(
            ids.object_ids(),
            [(NAME_KEY, "DenyPrimaryUDN"), (DIRECTION_KEY, "Ingress")]
        );
        let pg = DbIds::new(
            PORT_GROUP_UDN,
            "default-network-controller",
            ["SecondaryPods"],
        );
        assert_eq!(pg.port_group_name(), "a8747502060113802905");
        let acl = DbIds::new(
            ACL_NETPOL_NODE,
            "isolatednet-network-controller",
            ["isolatednet_node1", "192.168.1.2"],
        );
        assert_eq!(
            acl.primary_id(),
            "isolatednet-network-controller:NetpolNode:isolatednet_node1:192.168.1.2"
        );
        assert_eq!(acl.owner_type(), "NetpolNode");
    }
}
