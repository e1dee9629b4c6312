//! Writing one status condition of a UDN or CUDN: `meta.SetStatusCondition`'s transition
//! time (kept while the status stays) and a forced server-side apply of that condition alone
//! under the writer's field manager, as upstream's controllers each own their condition type.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};

use crate::node_subnets::networks::{OwnerKey, OwnerKind};

/// The condition `type_` with `status`, `reason`, `message`, its transition time taken from
/// `observed` when the status there is the same, else now.
pub(crate) fn condition(
    observed: &[Condition],
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> Condition {
    let last_transition_time = observed
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map_or_else(
            || Time(k8s_openapi::jiff::Timestamp::now()),
            |c| c.last_transition_time.clone(),
        );
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time,
        observed_generation: None,
    }
}

/// Applies `condition` to the owner's status (server-side apply, forced, `field_manager`).
/// A missing owner is not an error.
pub(crate) async fn apply(
    client: &kube::Client,
    owner: &OwnerKey,
    field_manager: &str,
    condition: &Condition,
) -> Result<(), kube::Error> {
    let params = PatchParams::apply(field_manager).force();
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

/// The owner's current conditions (none when it is gone or cannot be read).
pub(crate) async fn observed(client: &kube::Client, owner: &OwnerKey) -> Vec<Condition> {
    let conditions = match (owner.kind, owner.namespace.as_deref()) {
        (OwnerKind::Udn, Some(namespace)) => {
            let api: Api<UserDefinedNetwork> = Api::namespaced(client.clone(), namespace);
            let udn = api.get_opt(&owner.name).await.ok().flatten();
            udn.and_then(|u| u.status).map(|s| s.conditions)
        }
        _ => {
            let api: Api<ClusterUserDefinedNetwork> = Api::all(client.clone());
            let cudn = api.get_opt(&owner.name).await.ok().flatten();
            cudn.and_then(|c| c.status).map(|s| s.conditions)
        }
    };
    conditions.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_kept_while_status_is_unchanged() {
        let first = condition(&[], "T", "True", "R", "one");
        let same = condition(std::slice::from_ref(&first), "T", "True", "R", "two");
        assert_eq!(same.last_transition_time, first.last_transition_time);
        assert_eq!(same.message, "two");
        let flipped = condition(std::slice::from_ref(&first), "T", "False", "R", "two");
        assert_eq!(flipped.status, "False");
    }
}
