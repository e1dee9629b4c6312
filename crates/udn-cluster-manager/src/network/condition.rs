//! The `NetworkCreated` condition (upstream `newNetworkCreatedCondition` /
//! `newClusterNetworkCreatedCondition`) and `meta.SetStatusCondition` semantics.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::nad_plan::NadState;
use super::sync_error::SyncError;

/// Condition type written by the UDN/CUDN controllers.
pub(crate) const CONDITION_NETWORK_CREATED: &str = "NetworkCreated";
/// Reason: the NAD(s) exist.
pub(crate) const REASON_NAD_CREATED: &str = "NetworkAttachmentDefinitionCreated";
/// Reason: the NAD(s) are being deleted.
pub(crate) const REASON_NAD_DELETED: &str = "NetworkAttachmentDefinitionDeleted";
/// Reason (UDN): any sync error.
pub(crate) const REASON_SYNC_ERROR: &str = "SyncError";
/// Reason (CUDN): any sync error.
pub(crate) const REASON_NAD_SYNC_ERROR: &str = "NetworkAttachmentDefinitionSyncError";
/// Reason (UDN and CUDN, udn's): a pool (network IDs, masquerade IPs, tunnel keys) is used
/// up; the message names it. Upstream, with its fixed 4096 IDs, reports `SyncError`.
pub(crate) const REASON_POOL_EXHAUSTED: &str = "NetworkPoolExhausted";

/// A condition to set: type `NetworkCreated` with this status, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConditionSpec {
    /// `True` or `False`.
    pub(crate) status: &'static str,
    /// CamelCase reason.
    pub(crate) reason: &'static str,
    /// Message.
    pub(crate) message: String,
}

impl ConditionSpec {
    /// Whether the condition reports a failure.
    pub(crate) fn is_error(&self) -> bool {
        [
            REASON_SYNC_ERROR,
            REASON_NAD_SYNC_ERROR,
            REASON_POOL_EXHAUSTED,
        ]
        .contains(&self.reason)
    }
}

/// The UDN condition for the NAD state after the sync, or the sync error.
pub(crate) fn udn_condition(outcome: &Result<Option<NadState>, SyncError>) -> ConditionSpec {
    match outcome {
        Err(err) => ConditionSpec {
            status: "False",
            reason: match err {
                SyncError::Exhausted { .. } => REASON_POOL_EXHAUSTED,
                _ => REASON_SYNC_ERROR,
            },
            message: err.to_string(),
        },
        Ok(Some(nad)) if nad.deleting => ConditionSpec {
            status: "False",
            reason: REASON_NAD_DELETED,
            message: "NetworkAttachmentDefinition is being deleted".to_owned(),
        },
        Ok(_) => ConditionSpec {
            status: "True",
            reason: REASON_NAD_CREATED,
            message: "NetworkAttachmentDefinition has been created".to_owned(),
        },
    }
}

/// The CUDN condition for the NADs that synced (any order) and the errors (in order; several
/// are joined by newlines, as Go's `errors.Join`).
pub(crate) fn cudn_condition(nads: &[NadState], errors: &[SyncError]) -> ConditionSpec {
    let mut sorted: Vec<&NadState> = nads.iter().collect();
    sorted.sort_by(|a, b| a.namespace.cmp(&b.namespace));
    if !errors.is_empty() {
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        // The network is one for all namespaces: if it has no ID, that is the news.
        let exhausted = errors
            .iter()
            .any(|err| matches!(err, SyncError::Exhausted { .. }));
        return ConditionSpec {
            status: "False",
            reason: if exhausted {
                REASON_POOL_EXHAUSTED
            } else {
                REASON_NAD_SYNC_ERROR
            },
            message: messages.join("\n"),
        };
    }
    let deleting: Vec<String> = sorted
        .iter()
        .filter(|nad| nad.deleting)
        .map(|nad| format!("{}/{}", nad.namespace, nad.name))
        .collect();
    if !deleting.is_empty() {
        return ConditionSpec {
            status: "False",
            reason: REASON_NAD_DELETED,
            message: format!(
                "NetworkAttachmentDefinition are being deleted: [{}]",
                deleting.join(" ")
            ),
        };
    }
    let namespaces: Vec<&str> = sorted.iter().map(|nad| nad.namespace.as_str()).collect();
    ConditionSpec {
        status: "True",
        reason: REASON_NAD_CREATED,
        message: format!(
            "NetworkAttachmentDefinition has been created in following namespaces: [{}]",
            namespaces.join(", ")
        ),
    }
}

/// `meta.SetStatusCondition`: the conditions with `spec` set, or `None` when nothing changes.
/// The transition time moves only when the status changes.
pub(crate) fn set_condition(
    conditions: &[Condition],
    spec: &ConditionSpec,
    now: &Time,
) -> Option<Vec<Condition>> {
    let mut out = conditions.to_vec();
    match out
        .iter_mut()
        .find(|c| c.type_ == CONDITION_NETWORK_CREATED)
    {
        None => out.push(Condition {
            type_: CONDITION_NETWORK_CREATED.to_owned(),
            status: spec.status.to_owned(),
            reason: spec.reason.to_owned(),
            message: spec.message.clone(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }),
        Some(existing) => {
            if existing.status == spec.status
                && existing.reason == spec.reason
                && existing.message == spec.message
            {
                return None;
            }
            if existing.status != spec.status {
                existing.status = spec.status.to_owned();
                existing.last_transition_time = now.clone();
            }
            existing.reason = spec.reason.to_owned();
            existing.message.clone_from(&spec.message);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(namespace: &str, deleting: bool) -> NadState {
        NadState {
            namespace: namespace.into(),
            name: "net".into(),
            deleting,
        }
    }

    fn time(text: &str) -> Time {
        Time(text.parse().unwrap())
    }

    #[test]
    fn udn_conditions() {
        assert_eq!(
            udn_condition(&Ok(Some(state("a", false)))),
            ConditionSpec {
                status: "True",
                reason: "NetworkAttachmentDefinitionCreated",
                message: "NetworkAttachmentDefinition has been created".into()
            }
        );
        assert_eq!(
            udn_condition(&Ok(Some(state("a", true)))),
            ConditionSpec {
                status: "False",
                reason: "NetworkAttachmentDefinitionDeleted",
                message: "NetworkAttachmentDefinition is being deleted".into()
            }
        );
        let err = udn_condition(&Err(SyncError::Foreign {
            namespace: "a".into(),
            name: "net".into(),
        }));
        assert_eq!((err.status, err.reason), ("False", "SyncError"));
        assert!(err.is_error());
    }

    #[test]
    fn cudn_conditions() {
        assert_eq!(
            cudn_condition(&[state("red", false), state("blue", false)], &[]).message,
            "NetworkAttachmentDefinition has been created in following namespaces: [blue, red]"
        );
        assert_eq!(
            cudn_condition(&[], &[]).message,
            "NetworkAttachmentDefinition has been created in following namespaces: []"
        );
        let deleting = cudn_condition(&[state("red", true), state("blue", true)], &[]);
        assert_eq!(
            (deleting.status, deleting.reason, deleting.message.as_str()),
            (
                "False",
                "NetworkAttachmentDefinitionDeleted",
                "NetworkAttachmentDefinition are being deleted: [blue/net red/net]"
            )
        );
        let errors = cudn_condition(
            &[state("red", false)],
            &[
                SyncError::Foreign {
                    namespace: "a".into(),
                    name: "net".into(),
                },
                SyncError::InvalidPrimaryNetwork {
                    namespace: "b".into(),
                },
            ],
        );
        assert_eq!(errors.reason, "NetworkAttachmentDefinitionSyncError");
        assert_eq!(errors.message.lines().count(), 2);
        assert!(errors.message.starts_with(
            "foreign NetworkAttachmentDefinition with the desired name already exist [a/net]\ninvalid primary"
        ));
    }

    #[test]
    fn exhaustion_has_its_own_reason() {
        let exhausted = SyncError::Exhausted {
            network: "a_net".into(),
            pool: udn_ipam::Pool::MasqueradeIps,
            detail: "the masquerade-ips pool is exhausted: full".into(),
        };
        let udn = udn_condition(&Err(exhausted.clone()));
        assert_eq!(
            (udn.status, udn.reason, udn.message.as_str()),
            (
                "False",
                "NetworkPoolExhausted",
                "failed to allocate network ID for network a_net: the masquerade-ips pool is exhausted: full"
            )
        );
        assert!(udn.is_error());
        let foreign = SyncError::Foreign {
            namespace: "a".into(),
            name: "net".into(),
        };
        let cudn = cudn_condition(&[], &[foreign.clone(), exhausted]);
        assert_eq!(cudn.reason, "NetworkPoolExhausted");
        assert!(cudn.is_error());
        assert_eq!(
            cudn_condition(&[], &[foreign]).reason,
            "NetworkAttachmentDefinitionSyncError"
        );
    }

    #[test]
    fn set_condition_moves_transition_time_only_on_status_change() {
        let t0 = time("2025-01-01T00:00:00Z");
        let t1 = time("2025-01-01T00:01:00Z");
        let created = udn_condition(&Ok(None));
        let first = set_condition(&[], &created, &t0).unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(set_condition(&first, &created, &t1), None);
        let deleted = udn_condition(&Ok(Some(state("a", true))));
        let second = set_condition(&first, &deleted, &t1).unwrap();
        assert_eq!(second[0].last_transition_time, t1);
        let error = ConditionSpec {
            status: "False",
            reason: REASON_SYNC_ERROR,
            message: "boom".into(),
        };
        let third = set_condition(&second, &error, &time("2025-01-01T00:02:00Z")).unwrap();
        assert_eq!(third[0].last_transition_time, t1);
        assert_eq!(third[0].message, "boom");
        let other = Condition {
            type_: "NetworkAllocationSucceeded".into(),
            status: "True".into(),
            reason: "NetworkAllocationSucceeded".into(),
            message: "ok".into(),
            last_transition_time: t0,
            observed_generation: None,
        };
        let kept = set_condition(std::slice::from_ref(&other), &created, &t1).unwrap();
        assert_eq!(kept[0], other);
        assert_eq!(kept[1].type_, "NetworkCreated");
    }
}
