//! `NodesSelected` on the UDN/CUDN of a gated network (upstream Dynamic UDN, field manager
//! `ClusterManager`): True / `DynamicAllocation` / `<N> node(s) rendered with network`, or
//! False / `DynamicAllocation` / `no nodes currently rendered with network`. Server-side
//! apply of that one condition; nothing is written when it already reads so.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};

use crate::node_subnets::networks::{OwnerKey, OwnerKind};

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

/// Applies the condition (the transition time kept while the status stays). A missing owner
/// is not an error.
pub(crate) async fn apply(
    client: &kube::Client,
    owner: &OwnerKey,
    observed: &[Condition],
    status: &str,
    message: &str,
) -> Result<(), kube::Error> {
    let last_transition_time = observed
        .iter()
        .find(|c| c.type_ == CONDITION_TYPE && c.status == status)
        .map_or_else(
            || Time(k8s_openapi::jiff::Timestamp::now()),
            |c| c.last_transition_time.clone(),
        );
    let condition = Condition {
        type_: CONDITION_TYPE.to_owned(),
        status: status.to_owned(),
        reason: REASON.to_owned(),
        message: message.to_owned(),
        last_transition_time,
        observed_generation: None,
    };
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut body = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": owner.kind.kind(),
        "metadata": {"name": owner.name},
        "status": {"conditions": [condition]},
    });
    let result = match (owner.kind, owner.namespace.as_deref()) {
        (OwnerKind::Udn, Some(namespace)) => {
            body["metadata"]["namespace"] = json!(namespace);
            let api: Api<UserDefinedNetwork> = Api::namespaced(client.clone(), namespace);
            api.patch_status(&owner.name, &params, &Patch::Apply(&body))
                .await
                .map(drop)
        }
        _ => {
            let api: Api<ClusterUserDefinedNetwork> = Api::all(client.clone());
            api.patch_status(&owner.name, &params, &Patch::Apply(&body))
                .await
                .map(drop)
        }
    };
    match result {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        other => other,
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
