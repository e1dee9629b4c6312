//! What every network's topology in a zone is built from besides the network itself: the
//! zone's configuration, the nodes, rows other controllers own, and what the server's
//! schema supports.

use std::collections::{BTreeMap, BTreeSet};

use udn_ovsdb::nb;
use udn_ovsdb::protocol::Uuid;
use udn_ovsdb::schema::DbSchema;

use super::udn_enabled_services::UdnEnabledService;
use crate::model::{Node, ZoneConfig};
use crate::services::LbSpec;

/// Upstream's default `--acl-logging-rate-limit` (packets per second of the `acl-logging`
/// meter).
pub const DEFAULT_ACL_LOGGING_RATE_LIMIT: u32 = 20;

/// The inputs shared by every network of the zone.
#[derive(Clone, Debug)]
pub struct ZoneInputs<'a> {
    /// The zone's configuration (cluster subnets, gateway mode, segmentation).
    pub config: &'a ZoneConfig,
    /// Every node of the cluster, local and remote (`Node::local`).
    pub nodes: &'a [Node],
    /// UUID of the shared COPP `ovnkube-default` (owned by the default network's engine);
    /// `None` until it exists. The default network's own routers refer to it by row id.
    pub copp: Option<Uuid>,
    /// UUIDs of existing `Load_Balancer_Group` rows by name (they are not engine rows: see
    /// [`super::keyed`]).
    pub load_balancer_groups: BTreeMap<String, Uuid>,
    /// Of those UUIDs (the COPP's, the groups'), the ones of rows the pass inserts ahead of
    /// this network's transactions with that UUID (on the same connection), not in the
    /// database yet: referred to with [`RowRef::Ahead`](udn_ovsdb::engine::RowRef::Ahead).
    pub ahead: BTreeSet<Uuid>,
    /// Optional columns the server's schema has.
    pub features: SchemaFeatures,
    /// `--ephemeral-port-range` (or the kernel's `net.ipv4.ip_local_port_range`), written as
    /// `external_port_range` on every NAT when set.
    pub ephemeral_port_range: Option<String>,
    /// `--acl-logging-rate-limit`: the `acl-logging` meter's rate.
    pub acl_logging_rate_limit: u32,
    /// The network's load balancers ([`crate::services::lbs_by_network`]), sorted by name.
    pub services: &'a [LbSpec],
    /// The default-network Services primary UDNs may reach (`--udn-allowed-default-services`
    /// that exist with a cluster IP), sorted.
    pub udn_enabled_services: &'a [UdnEnabledService],
}

impl<'a> ZoneInputs<'a> {
    /// Inputs with no shared rows known yet, the vendored schema's features, no ephemeral
    /// port range and the default ACL logging rate.
    pub fn new(config: &'a ZoneConfig, nodes: &'a [Node]) -> Self {
        Self {
            config,
            nodes,
            copp: None,
            load_balancer_groups: BTreeMap::new(),
            ahead: BTreeSet::new(),
            features: SchemaFeatures::VENDORED,
            ephemeral_port_range: None,
            acl_logging_rate_limit: DEFAULT_ACL_LOGGING_RATE_LIMIT,
            services: &[],
            udn_enabled_services: &[],
        }
    }

    /// A node by name.
    pub(crate) fn node(&self, name: &str) -> Option<&'a Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// Optional columns newer NB schemas have and the vendored 7.0.0 lacks: written only when
/// the server has them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SchemaFeatures {
    /// `ACL.tier` (NB 7.1.0 on): ACL tiers (UDN isolation is tier 0, node ACLs tier 2).
    pub acl_tier: bool,
    /// `NAT.match` (NB 7.1.0 on): conditional SNAT (the masquerade SNAT's `eth.dst` match,
    /// the legacy Layer2 cluster-subnet SNAT's `outport` match).
    pub nat_match: bool,
}

impl SchemaFeatures {
    /// What the vendored schema (NB 7.0.0) has: none of them.
    pub const VENDORED: Self = Self {
        acl_tier: false,
        nat_match: false,
    };

    /// Every optional column (a current OVN).
    pub const ALL: Self = Self {
        acl_tier: true,
        nat_match: true,
    };

    /// What `schema` (the server's) has.
    pub fn of(schema: &DbSchema) -> Self {
        let has = |table: &str, column: &str| {
            schema
                .table(table)
                .is_some_and(|t| t.columns.contains_key(column))
        };
        Self {
            acl_tier: has(nb::acl::TABLE, "tier"),
            nat_match: has(nb::nat::TABLE, "match"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_schema_has_no_optional_columns() {
        let schema = DbSchema::from_text(nb::SCHEMA_JSON).unwrap();
        assert_eq!(SchemaFeatures::of(&schema), SchemaFeatures::VENDORED);
        let mut newer = schema;
        let column = newer.tables["ACL"].columns["priority"].clone();
        newer
            .tables
            .get_mut("ACL")
            .unwrap()
            .columns
            .insert("tier".into(), column.clone());
        newer
            .tables
            .get_mut("NAT")
            .unwrap()
            .columns
            .insert("match".into(), column);
        assert_eq!(SchemaFeatures::of(&newer), SchemaFeatures::ALL);
    }
}
