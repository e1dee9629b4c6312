//! ACL rows as upstream's `libovsdbutil.BuildACL` builds them: direction from the pipeline,
//! meter `acl-logging`, logging off, no name for these owner types, the dbIDs object keys in
//! `external_ids`, and a tier where the server has `ACL.tier`.

use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::acl;

use super::columns::{optional_string, string_map};
use super::dbids::DbIds;
use super::zone::SchemaFeatures;

/// The meter every ACL uses (`types.OvnACLLoggingMeter`).
pub(crate) const ACL_LOGGING_METER: &str = "acl-logging";

/// Tier of the UDN isolation ACLs (`types.PrimaryACLTier`).
pub(crate) const PRIMARY_TIER: i64 = 0;
/// Tier of most other ACLs (`types.DefaultACLTier`).
pub(crate) const DEFAULT_TIER: i64 = 2;

/// The pipeline an ACL is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pipeline {
    /// `to-lport` (upstream `LportIngress`).
    Ingress,
    /// `from-lport`, before load balancing (upstream `LportEgress`).
    Egress,
}

impl Pipeline {
    fn direction(self) -> &'static str {
        match self {
            Self::Ingress => "to-lport",
            Self::Egress => "from-lport",
        }
    }
}

/// One ACL: what `BuildACL(ids, priority, match, action, nil, pipeline, tier)` returns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AclSpec<'a> {
    pub(crate) priority: i64,
    pub(crate) match_: &'a str,
    pub(crate) action: &'a str,
    pub(crate) pipeline: Pipeline,
    pub(crate) tier: i64,
}

/// The ACL row for `ids` (row id: the primary id; owner type: the ids' owner type).
pub(crate) fn acl_row(ids: &DbIds, spec: AclSpec<'_>, features: SchemaFeatures) -> DesiredRow {
    let row = DesiredRow::new(acl::TABLE, ids.primary_id())
        .string(acl::DIRECTION, spec.pipeline.direction())
        .integer(acl::PRIORITY, spec.priority)
        .string(acl::MATCH, spec.match_)
        .string(acl::ACTION, spec.action)
        .string(acl::METER, ACL_LOGGING_METER)
        .boolean(acl::LOG, false)
        .value(acl::NAME, optional_string(None))
        .value(acl::SEVERITY, optional_string(None))
        .value(acl::OPTIONS, string_map::<&str, &str>([]))
        .value(acl::EXTERNAL_IDS, string_map(ids.object_ids()));
    let row = if features.acl_tier {
        row.integer("tier", spec.tier)
    } else {
        row
    };
    super::desired::owned_as(row, ids.owner_type())
}
