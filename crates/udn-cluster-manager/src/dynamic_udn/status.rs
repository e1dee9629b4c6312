//! `NodesSelected` on the UDN/CUDN of a gated network (upstream Dynamic UDN, field manager
//! `ClusterManager`): True / `DynamicAllocation` / `<N> node(s) rendered with network`, or
//! False / `DynamicAllocation` / `no nodes currently rendered with network`, written through
//! [`crate::owner_condition`].

/// Field manager of the condition (upstream's).
pub(crate) const FIELD_MANAGER: &str = "ClusterManager";
/// Condition type.
pub(crate) const CONDITION_TYPE: &str = "NodesSelected";
/// Its reason, either way.
pub(crate) const REASON: &str = "DynamicAllocation";

/// (status, message) for `nodes` rendered nodes.
pub(crate) fn nodes_selected(nodes: usize) -> (&'static str, String) {
    if nodes == 0 {
        (
            "False",
            "no nodes currently rendered with network".to_owned(),
        )
    } else {
        ("True", format!("{nodes} node(s) rendered with network"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_texts() {
        assert_eq!(
            nodes_selected(0),
            (
                "False",
                "no nodes currently rendered with network".to_owned()
            )
        );
        assert_eq!(
            nodes_selected(3),
            ("True", "3 node(s) rendered with network".to_owned())
        );
    }
}
