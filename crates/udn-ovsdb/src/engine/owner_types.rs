//! Row owner types: owner types stamped on rows of a unit instead of the unit's own (upstream
//! stamps some rows with types of its own, e.g. `NetpolNode` on the management-port ACL of a
//! node switch), declared per engine as belonging to the units of one owner type.
//!
//! Which unit a row belongs to is read from the row alone: its `k8s.ovn.org/owner` is the
//! unit name and its `k8s.ovn.org/owner-type` is the unit's owner type, or a row owner type
//! declared for it. A row owner type belongs to exactly one unit owner type and is never a
//! unit's owner type itself, so every row has at most one unit; with a plain set of accepted
//! types, a `NetpolNode` row of `a` would be claimed by both `Node/a` and `RemoteNode/a`, and
//! a plan of one could delete the other's row.

use std::collections::BTreeMap;

/// Row owner type -> the unit owner type whose units own rows stamped with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RowOwnerTypes(BTreeMap<String, String>);

impl RowOwnerTypes {
    /// Declares rows stamped `row_owner_type` as rows of units of `unit_owner_type`
    /// (replacing an earlier declaration of `row_owner_type`).
    pub(crate) fn declare(&mut self, row_owner_type: &str, unit_owner_type: &str) {
        self.0
            .insert(row_owner_type.to_owned(), unit_owner_type.to_owned());
    }

    /// The owner type of the unit owning a row stamped `stamped`.
    pub(crate) fn unit_type<'a>(&'a self, stamped: &'a str) -> &'a str {
        self.0.get(stamped).map_or(stamped, String::as_str)
    }

    /// The unit owner type `row_owner_type` is declared for, when it is a row owner type.
    pub(crate) fn declared(&self, row_owner_type: &str) -> Option<&str> {
        self.0.get(row_owner_type).map(String::as_str)
    }

    /// Every owner type stamped on rows of units of `unit_owner_type`: it and the row owner
    /// types declared for it.
    pub(crate) fn stamped_types<'a>(
        &'a self,
        unit_owner_type: &'a str,
    ) -> impl Iterator<Item = &'a str> {
        std::iter::once(unit_owner_type).chain(
            self.0
                .iter()
                .filter(move |(_, unit)| *unit == unit_owner_type)
                .map(|(row, _)| row.as_str()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_map_to_the_unit_type_they_are_declared_for() {
        let mut types = RowOwnerTypes::default();
        types.declare("NetpolNode", "Node");
        types.declare("NodeACL", "Node");
        types.declare("Other", "Cluster");
        assert_eq!(types.unit_type("NetpolNode"), "Node");
        assert_eq!(types.unit_type("Node"), "Node");
        assert_eq!(types.unit_type("Pod"), "Pod");
        assert_eq!(types.declared("NetpolNode"), Some("Node"));
        assert_eq!(types.declared("Node"), None);
        assert_eq!(
            types.stamped_types("Node").collect::<Vec<_>>(),
            ["Node", "NetpolNode", "NodeACL"]
        );
        assert_eq!(types.stamped_types("Pod").collect::<Vec<_>>(), ["Pod"]);
        types.declare("Other", "Node");
        assert_eq!(types.unit_type("Other"), "Node");
    }
}
