//! One pod reconcile (release or plan under the lock, then the claim statuses and one patch
//! of the pod's annotation, with pod events for failures) and one claim reconcile.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tracing::{info, warn};
use udn_api::annotations::{PodNetworks, format_pod_networks};
use udn_api::names::ANNOTATION_POD_NETWORKS;

use super::attachments::attachments;
use super::claims::{claim_view, write_status};
use super::controller::{
    Inner, Shared, is_active, is_completed, lock, object_key, pod_networks_of, split_key,
};
use super::state::{PodInput, PodPlan};
use super::{EVENT_REASON, Layer2IpamError};
use crate::context::CLUSTER_MANAGER;

/// Patch attempts on resourceVersion conflicts before giving up for now.
const MAX_ATTEMPTS: usize = 4;

async fn publish_pod_event(shared: &Shared, pod: &Pod, message: &str) {
    let reference = ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    let event = Event {
        type_: EventType::Warning,
        reason: EVENT_REASON.to_owned(),
        note: Some(message.to_owned()),
        action: "AllocatePod".to_owned(),
        secondary: None,
    };
    if let Err(error) = shared.recorder.publish(&event, &reference).await {
        warn!(pod = %object_key(&pod.metadata), error = %error, "cannot publish event");
    }
}

async fn patch_pod(
    api: &Api<Pod>,
    name: &str,
    resource_version: Option<&str>,
    value: &str,
) -> Result<Pod, kube::Error> {
    let body = json!({
        "metadata": {
            "resourceVersion": resource_version,
            "annotations": {ANNOTATION_POD_NETWORKS: value},
        },
    });
    let params = PatchParams {
        field_manager: Some(CLUSTER_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Merge(&body)).await
}

/// What one attempt decided.
enum Step {
    Done,
    Write {
        plan: PodPlan,
        existing: PodNetworks,
        pod: Box<Pod>,
    },
}

/// Plans a pod under the lock (release, skip, or the writes to do).
fn plan_step(
    shared: &Shared,
    key: &str,
    pod: Option<&Pod>,
) -> (Step, BTreeSet<String>, Vec<String>) {
    let mut inner = lock(&shared.inner);
    let Inner { index, state, .. } = &mut *inner;
    let mut touched = BTreeSet::new();
    let uid = pod.and_then(|p| p.metadata.uid.as_deref());
    if state.pod_uid(key).is_some_and(|held| Some(held) != uid) {
        touched.extend(state.release_pod(key));
    }
    let Some(pod) = pod.filter(|pod| is_active(pod)) else {
        if pod.is_some_and(is_completed) {
            touched.extend(state.release_pod(key));
        }
        return (Step::Done, touched, Vec::new());
    };
    let found = match attachments(pod, index) {
        Ok(found) => found,
        Err(error) => return (Step::Done, touched, vec![error.to_string()]),
    };
    if found.is_empty() {
        return (Step::Done, touched, Vec::new());
    }
    let existing = match pod_networks_of(pod) {
        Ok(existing) => existing,
        Err(error) => return (Step::Done, touched, vec![error.to_string()]),
    };
    let (namespace, name) = split_key(key);
    let claims = |claim_key: &str| {
        let (ns, name) = split_key(claim_key);
        shared
            .claims
            .as_ref()?
            .get(&ObjectRef::new(name).within(ns))
            .map(|claim| claim_view(&claim))
    };
    let plan = state.plan_pod(
        &PodInput {
            key,
            namespace,
            name,
            uid: uid.unwrap_or_default(),
            existing: &existing,
            attachments: &found,
        },
        &shared.ctx.config.cluster.service_cidrs,
        shared.persistent_ips(),
        &claims,
    );
    touched.extend(plan.touched.iter().cloned());
    let messages = plan.errors.iter().map(|e| e.message.clone()).collect();
    (
        Step::Write {
            plan,
            existing,
            pod: Box::new(pod.clone()),
        },
        touched,
        messages,
    )
}

/// Writes the claim statuses of a plan (before the pod, as upstream).
async fn write_claims(shared: &Shared, plan: &mut PodPlan) -> Result<(), Layer2IpamError> {
    for write in &plan.claim_writes {
        let (ns, name) = split_key(&write.key);
        let claim = shared
            .claims
            .as_ref()
            .and_then(|claims| claims.get(&ObjectRef::new(name).within(ns)))
            .ok_or_else(|| Layer2IpamError::ClaimGone {
                claim: write.key.clone(),
            })?;
        write_status(&shared.ctx.client, write, &claim)
            .await
            .map_err(|source| Layer2IpamError::Claim {
                claim: write.key.clone(),
                source,
            })?;
        info!(claim = %write.key, pod = %write.pod, ips = write.ips.len(), "IPAMClaim status written");
    }
    // Written claims keep their IPs even if the pod write fails.
    plan.new.retain(|h| !h.owner.starts_with("ipamclaim:"));
    Ok(())
}

/// Whether the pod needs another look later (an allocation failed).
pub(super) async fn reconcile_pod(shared: &Shared, key: &str) -> Result<bool, Layer2IpamError> {
    let (namespace, name) = split_key(key);
    let api: Api<Pod> = Api::namespaced(shared.ctx.client.clone(), namespace);
    let mut current = shared
        .pods
        .get(&ObjectRef::new(name).within(namespace))
        .map(|p| (*p).clone());
    for _ in 0..MAX_ATTEMPTS {
        let (step, touched, messages) = plan_step(shared, key, current.as_ref());
        shared.update_gauges(&touched);
        if let Some(pod) = &current {
            for message in &messages {
                warn!(pod = %key, error = %message, "pod allocation failed");
                publish_pod_event(shared, pod, message).await;
            }
        }
        let Step::Write {
            mut plan,
            existing,
            pod,
        } = step
        else {
            return Ok(false);
        };
        let retry = plan.errors.iter().any(|e| e.retry);
        if let Err(error) = write_claims(shared, &mut plan).await {
            lock(&shared.inner).state.rollback(key, &plan);
            return Err(error);
        }
        if plan.desired == existing {
            return Ok(retry);
        }
        let value =
            format_pod_networks(&plan.desired).map_err(|source| Layer2IpamError::Encode {
                pod: key.to_owned(),
                source,
            })?;
        match patch_pod(&api, name, pod.metadata.resource_version.as_deref(), &value).await {
            Ok(_) => {
                info!(pod = %key, "pod-networks annotation written");
                return Ok(retry);
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                current = api
                    .get_opt(name)
                    .await
                    .map_err(|source| Layer2IpamError::Get {
                        pod: key.to_owned(),
                        source,
                    })?;
            }
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                current = None;
            }
            Err(source) => {
                lock(&shared.inner).state.rollback(key, &plan);
                return Err(Layer2IpamError::Patch {
                    pod: key.to_owned(),
                    source,
                });
            }
        }
    }
    Err(Layer2IpamError::Conflict {
        pod: key.to_owned(),
        attempts: MAX_ATTEMPTS,
    })
}

pub(super) fn reconcile_claim(shared: &Shared, key: &str) {
    let (namespace, name) = split_key(key);
    let claim = shared
        .claims
        .as_ref()
        .and_then(|claims| claims.get(&ObjectRef::new(name).within(namespace)));
    let touched: Vec<String> = {
        let mut inner = lock(&shared.inner);
        match claim {
            None => inner.state.release_claim(key).into_iter().collect(),
            Some(claim) => {
                let view = claim_view(&claim);
                if inner.state.ensure_claim(&view) {
                    vec![view.network]
                } else {
                    Vec::new()
                }
            }
        }
    };
    shared.update_gauges(&touched);
}
