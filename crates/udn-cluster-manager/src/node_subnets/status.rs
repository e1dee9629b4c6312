//! `NetworkAllocationSucceeded` on the UDN/CUDN a network was rendered from, and the
//! `NetworkAllocationFailed` Warning events (upstream `networkClusterController
//! .updateNetworkStatus` and the UDN controller's `UpdateSubsystemCondition`): desired
//! condition (pure), comparison with the observed one, server-side apply of that one
//! condition with upstream's field manager.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::events::{Event, EventType, Recorder};

use super::networks::OwnerKey;
use crate::owner_condition;

/// Field manager of the condition (upstream's network cluster controller).
pub const FIELD_MANAGER: &str = "NetworkClusterController";
/// Condition type.
pub const CONDITION_TYPE: &str = "NetworkAllocationSucceeded";
/// Event reason of a node allocation failure.
pub const EVENT_REASON: &str = "NetworkAllocationFailed";

/// The condition fields compared and written (the transition time is managed on apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredCondition {
    /// `True` or `False`.
    pub status: &'static str,
    /// Upstream reason.
    pub reason: &'static str,
    /// Upstream message.
    pub message: String,
}

/// Upstream `getNetworkAllocationUDNCondition`: True unless a node failed; only one failing
/// node is named, to keep the message short.
pub fn allocation_condition(error_node: Option<&str>) -> DesiredCondition {
    match error_node {
        None => DesiredCondition {
            status: "True",
            reason: "NetworkAllocationSucceeded",
            message: "Network allocation succeeded for all synced nodes.".to_owned(),
        },
        Some(node) => DesiredCondition {
            status: "False",
            reason: "InternalError",
            message: format!(
                "Network allocation failed for at least one node: {node}, check UDN events for more info."
            ),
        },
    }
}

/// The event note of a node failure.
pub fn event_note(node: &str, error: &str) -> String {
    format!("Error occurred for node {node}: {error}")
}

/// Whether `observed` (the object's conditions) already carries `desired`.
pub(crate) fn is_current(observed: &[Condition], desired: &DesiredCondition) -> bool {
    observed.iter().any(|c| {
        c.type_ == CONDITION_TYPE
            && c.status == desired.status
            && c.reason == desired.reason
            && c.message == desired.message
    })
}

/// Applies the condition to the owner's status (server-side apply, forced, field manager
/// [`FIELD_MANAGER`]). A missing owner is not an error.
pub(crate) async fn apply_condition(
    client: &kube::Client,
    owner: &OwnerKey,
    observed: &[Condition],
    desired: &DesiredCondition,
) -> Result<(), kube::Error> {
    let condition = owner_condition::condition(
        observed,
        CONDITION_TYPE,
        desired.status,
        desired.reason,
        &desired.message,
    );
    owner_condition::apply(client, owner, FIELD_MANAGER, &condition).await
}

/// The object reference events are published on.
pub(crate) fn owner_reference(owner: &OwnerKey, uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("k8s.ovn.org/v1".to_owned()),
        kind: Some(owner.kind.kind().to_owned()),
        name: Some(owner.name.clone()),
        namespace: owner.namespace.clone(),
        uid: (!uid.is_empty()).then(|| uid.to_owned()),
        ..ObjectReference::default()
    }
}

/// Publishes the Warning event of a node failure on the owner.
pub(crate) async fn publish_failure(
    recorder: &Recorder,
    reference: &ObjectReference,
    node: &str,
    error: &str,
) -> Result<(), kube::Error> {
    recorder
        .publish(
            &Event {
                type_: EventType::Warning,
                reason: EVENT_REASON.to_owned(),
                note: Some(event_note(node, error)),
                action: "AllocateNodeSubnets".to_owned(),
                secondary: None,
            },
            reference,
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_condition_texts() {
        assert_eq!(
            allocation_condition(None),
            DesiredCondition {
                status: "True",
                reason: "NetworkAllocationSucceeded",
                message: "Network allocation succeeded for all synced nodes.".into(),
            }
        );
        let failed = allocation_condition(Some("worker-2"));
        assert_eq!(failed.status, "False");
        assert_eq!(failed.reason, "InternalError");
        assert_eq!(
            failed.message,
            "Network allocation failed for at least one node: worker-2, check UDN events for more info."
        );
        assert_eq!(
            event_note("worker-2", "boom"),
            "Error occurred for node worker-2: boom"
        );
    }

    #[test]
    fn transition_time_kept_while_status_is_unchanged() {
        let desired = allocation_condition(Some("a"));
        let old = owner_condition::condition(
            &[],
            CONDITION_TYPE,
            desired.status,
            desired.reason,
            &desired.message,
        );
        assert!(is_current(std::slice::from_ref(&old), &desired));
        let moved = allocation_condition(Some("b"));
        assert!(!is_current(std::slice::from_ref(&old), &moved));
        let next = owner_condition::condition(
            std::slice::from_ref(&old),
            CONDITION_TYPE,
            moved.status,
            moved.reason,
            &moved.message,
        );
        assert_eq!(next.last_transition_time, old.last_transition_time);
    }
}
