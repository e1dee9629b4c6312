//! `pods/binding`: the scheduler's way of assigning a Pod to a Node, as kube-apiserver's
//! `BindingREST` does it: the Binding's name must be the URL's, its target a Node by name;
//! the Pod must exist, match the Binding's uid / resourceVersion preconditions, not be
//! terminating, not be bound already and have no scheduling gates; then `spec.nodeName` is
//! set, the Binding's annotations are merged into the Pod's, and the `PodScheduled`
//! condition becomes True (its transition time kept when it was True already).

use serde_json::{Value, json};

use super::meta;
use super::state::{ObjRef, State};
use crate::error::ApiError;
use crate::options::WriteOptions;
use crate::resource::ResourceKey;

/// The Status a successful binding answers with.
fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// `ValidatePodBinding`; kube-apiserver returns its errors unwrapped, so they reach the
/// client as a 500 with the field errors as the message.
fn validate(binding: &Value) -> Result<(), ApiError> {
    let kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let target = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut errors = Vec::new();
    if !kind.is_empty() && kind != "Node" {
        errors.push(format!(
            "target.kind: Unsupported value: {kind:?}: supported values: \"Node\", \"<empty>\""
        ));
    }
    if target.is_empty() {
        errors.push("target.name: Required value".to_owned());
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(unknown(errors.remove(0))),
        _ => Err(unknown(format!("[{}]", errors.join(", ")))),
    }
}

fn unknown(message: String) -> ApiError {
    ApiError {
        code: 500,
        reason: "",
        message,
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    }
}

/// `podutil.UpdatePodCondition` with `PodScheduled=True`.
fn set_scheduled(pod: &mut Value, now: &str) {
    let Some(map) = pod.as_object_mut() else {
        return;
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    let Some(conditions) = conditions else { return };
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let mut scheduled = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    match list.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(old) => {
            if old["status"] == "True" {
                scheduled["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = scheduled;
        }
        None => list.push(scheduled),
    }
}

impl State {
    /// POST `pods/<name>/binding`.
    pub(super) fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        binding: &Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        if meta::meta_str(binding, "name") != name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        validate(binding)?;
        let key = ResourceKey {
            group: String::new(),
            plural: "pods".to_owned(),
        };
        let r = ObjRef::new(&key, namespace, name);
        let Some(pod) = self.get(&r).cloned() else {
            return Err(ApiError::not_found("", "pods", name));
        };
        for (field, what) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            let wanted = meta::meta_str(binding, field);
            let actual = meta::meta_str(&pod, field);
            if !wanted.is_empty() && wanted != actual {
                return Err(ApiError::conflict_with(
                    "",
                    "pods",
                    name,
                    &format!(
                        "Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {actual}"
                    ),
                ));
            }
        }
        let refuse = |why: String| Err(ApiError::conflict_with("", "pods/binding", name, &why));
        if meta::is_deleting(&pod) {
            return refuse(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            ));
        }
        let bound = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !bound.is_empty() {
            return refuse(format!("pod {name} is already assigned to node {bound:?}"));
        }
        let gated = pod
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if gated {
            return refuse(format!("pod {name} has non-empty .spec.schedulingGates"));
        }
        let mut new = (*pod).clone();
        let target = binding.pointer("/target/name").cloned().unwrap_or_default();
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("nodeName".to_owned(), target);
        }
        if let Some(extra) = binding
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            && !extra.is_empty()
        {
            let mut annotations = meta::meta_value(&new, "annotations");
            if !annotations.is_object() {
                annotations = json!({});
            }
            if let Some(map) = annotations.as_object_mut() {
                map.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            meta::set_meta(&mut new, "annotations", annotations);
        }
        set_scheduled(&mut new, &meta::now());
        if !opts.dry_run {
            self.replace(&r, new);
        }
        Ok(success())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_sets_pod_scheduled_and_keeps_a_true_transition_time() {
        let mut pod = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "t0"}]}});
        set_scheduled(&mut pod, "t1");
        assert_eq!(
            pod["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "t1"}])
        );
        set_scheduled(&mut pod, "t2");
        assert_eq!(pod["status"]["conditions"][0]["lastTransitionTime"], "t1");
    }

    #[test]
    fn a_binding_needs_a_node_target() {
        let error = validate(&json!({"target": {"kind": "Pod"}})).unwrap_err();
        assert_eq!(error.code, 500);
        assert_eq!(
            error.message,
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
        );
        assert!(validate(&json!({"target": {"name": "n1"}})).is_ok());
    }
}
