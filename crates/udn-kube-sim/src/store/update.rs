//! UPDATE (PUT) of the main resource or `/status`, and PATCH on top of it: optimistic
//! concurrency, the spec/status split, immutable metadata, generation bumps, no-op
//! updates, and the deletion of an object whose last finalizer goes.

use serde_json::{Value, json};
use udn_schema::{FieldError, FieldErrorKind, FieldErrors};

use super::create::{ensure_object, place_namespace, set_type_meta};
use super::registry::{Builtin, TypeEntry};
use super::state::{ObjRef, State};
use super::{crd, defaults, events, meta, validate};
use crate::error::ApiError;
use crate::options::{PatchKind, Subresource, WriteOptions};
use crate::patch::{PatchContext, apply_patch};
use crate::resource::ResourceKey;

/// The body's name must be the URL's.
fn check_name(obj: &Value, name: &str) -> Result<(), ApiError> {
    let body = meta::meta_str(obj, "name");
    if body.is_empty() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        )));
    }
    if body != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body}) does not match the name on the URL ({name})"
        )));
    }
    Ok(())
}

/// Copy a top-level field of `from` into `to` (or remove it from `to`).
fn copy_field(to: &mut Value, from: &Value, field: &str) {
    if let Some(map) = to.as_object_mut() {
        match from.get(field) {
            Some(value) => map.insert(field.to_owned(), value.clone()),
            None => map.remove(field),
        };
    }
}

/// A `/status` write: the stored object with the body's status (and managedFields). Nodes
/// also take the body's labels and annotations: kube-apiserver's node status strategy
/// resets only the spec, which is how node agents and controllers (OVN-Kubernetes among
/// them) annotate Nodes through `nodes/status`, the only node write their RBAC grants.
/// CRDs and the other built-ins ignore everything but the status.
fn status_only(entry: &TypeEntry, old: &Value, body: &Value) -> Value {
    let mut new = old.clone();
    copy_field(&mut new, body, "status");
    let managed = meta::meta_value(body, "managedFields");
    if !managed.is_null() {
        meta::set_meta(&mut new, "managedFields", managed);
    }
    if entry.is(Builtin::Node) {
        for field in ["labels", "annotations"] {
            meta::set_meta(&mut new, field, meta::meta_value(body, field));
        }
    }
    new
}

/// Whether the update changes what bumps `metadata.generation`.
fn spec_changed(entry: &TypeEntry, new: &Value, old: &Value) -> bool {
    let skip_status = entry.rt.status_subresource;
    meta::spec_part(new, skip_status) != meta::spec_part(old, skip_status)
        || (entry.is(Builtin::EndpointSlice) && meta::labels(new) != meta::labels(old))
        || (entry.is(Builtin::Crd) && new.get("spec") != old.get("spec"))
}

/// `ShouldDeleteDuringUpdate`: the object is being deleted and nothing holds it anymore.
fn emptied(entry: &TypeEntry, new: &Value, old: &Value) -> bool {
    meta::is_deleting(old)
        && meta::finalizers(new).is_empty()
        && (!entry.is(Builtin::Namespace)
            || meta::string_list(new.pointer("/spec/finalizers")).is_empty())
}

impl State {
    /// UPDATE.
    pub(super) fn update(
        &mut self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        if subresource == Subresource::Status && !entry.rt.status_subresource {
            return Err(ApiError::resource_not_served());
        }
        let mut obj = obj;
        ensure_object(&obj)?;
        let namespace = place_namespace(&entry, namespace, &mut obj)?;
        check_name(&obj, name)?;
        let r = ObjRef::new(key, &namespace, name);
        let Some(old) = self.get(&r).cloned() else {
            if entry.allow_create_on_update() && subresource == Subresource::Main {
                for field in ["resourceVersion", "uid", "creationTimestamp"] {
                    meta::set_meta(&mut obj, field, Value::Null);
                }
                return self.create(key, r.ns(), obj, opts);
            }
            return Err(ApiError::not_found(&entry.rt.group, &entry.rt.plural, name));
        };
        let old_rv = meta::resource_version(&old);
        let body_rv = meta::meta_str(&obj, "resourceVersion");
        if body_rv.is_empty() {
            if !entry.allow_unconditional_update() {
                let errors = FieldErrors(vec![FieldError::new(
                    "metadata.resourceVersion",
                    FieldErrorKind::Invalid,
                    Some("0x0".to_owned()),
                    "must be specified for an update",
                )]);
                return Err(validate::invalid(
                    &entry.rt.group,
                    &entry.rt.plural,
                    name,
                    &errors,
                ));
            }
        } else if body_rv.parse::<u64>().ok() != Some(old_rv) {
            return Err(ApiError::conflict(&entry.rt.group, &entry.rt.plural, name));
        }

        let mut new = match subresource {
            Subresource::Main => {
                if entry.rt.status_subresource {
                    copy_field(&mut obj, &old, "status");
                }
                obj
            }
            Subresource::Status => status_only(&entry, &old, &obj),
        };
        defaults::prepare_for_update(&entry, &mut new, &old);
        if entry.is(Builtin::Service) && subresource == Subresource::Main {
            self.prepare_service_update(&mut new, &old)?;
        }
        let mut metadata_errors = Vec::new();
        let body_uid = meta::meta_str(&new, "uid").to_owned();
        let old_uid = meta::meta_str(&old, "uid");
        if !body_uid.is_empty() && body_uid != old_uid {
            metadata_errors.push(FieldError::new(
                "metadata.uid",
                FieldErrorKind::Invalid,
                Some(format!("{body_uid:?}")),
                "field is immutable",
            ));
        }
        metadata_errors.extend(validate::new_finalizer_errors(&new, &old));
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            meta::set_meta(&mut new, field, meta::meta_value(&old, field));
        }
        set_type_meta(&entry, &mut new);
        meta::set_resource_version(&mut new, old_rv);
        if entry.has_generation()
            && subresource == Subresource::Main
            && spec_changed(&entry, &new, &old)
        {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta::set_meta(&mut new, "generation", json!(generation + 1));
        }
        let mut new = validate::check(&entry, new, Some(&old), false, metadata_errors)?;
        set_type_meta(&entry, &mut new);
        let served = if entry.is(Builtin::Crd) && subresource == Subresource::Main {
            let served = crd::type_from_crd(&new)?;
            let mut status = crd::established_status(&new, &served, &meta::now());
            let terminating = old
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|conditions| {
                    conditions
                        .iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some("Terminating"))
                });
            if let Some(terminating) = terminating
                && let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut)
            {
                list.push(terminating.clone());
            }
            if let Some(map) = new.as_object_mut() {
                map.insert("status".to_owned(), status);
            }
            Some(served)
        } else {
            None
        };

        if emptied(&entry, &new, &old) {
            if !opts.dry_run {
                self.remove(&r);
            }
            return Ok(new);
        }
        if new == *old {
            return Ok((*old).clone());
        }
        if opts.dry_run {
            return Ok(new);
        }
        let stored = self.replace(&r, new);
        if let Some(served) = served {
            self.registry.register(served);
        }
        Ok((*stored).clone())
    }

    /// An update made by the emulated controllers: `change` edits the stored object's
    /// metadata, and the result goes through the update path (so the last finalizer
    /// removed deletes it).
    pub(super) fn system_update(
        &mut self,
        r: &ObjRef,
        change: impl FnOnce(&mut Value),
    ) -> Result<(), ApiError> {
        let Some(current) = self.get(r) else {
            return Ok(());
        };
        let mut new = (**current).clone();
        change(&mut new);
        self.update(
            &r.key,
            r.ns(),
            &r.name,
            new,
            Subresource::Main,
            &WriteOptions::default(),
        )
        .map(|_| ())
    }

    /// PATCH: the patch applied to the stored object, then the update (or, for an apply
    /// patch of a missing object, the create) path. The events.k8s.io view patches the
    /// converted core Event.
    #[allow(clippy::too_many_arguments)] // mirrors the REST call's parts one to one
    pub(super) fn patch(
        &mut self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        if subresource == Subresource::Status && !entry.rt.status_subresource {
            return Err(ApiError::resource_not_served());
        }
        let view = events::is_view(key);
        let storage = if view {
            events::core_key()
        } else {
            key.clone()
        };
        let ns = if entry.rt.namespaced {
            namespace.unwrap_or_default()
        } else {
            ""
        };
        let r = ObjRef::new(&storage, ns, name);
        let current = self.get(&r).map(|obj| {
            if view {
                events::to_view(obj)
            } else {
                (**obj).clone()
            }
        });
        if current.is_none() && kind != PatchKind::Apply {
            return Err(ApiError::not_found(&entry.rt.group, &entry.rt.plural, name));
        }
        let api_version = entry.api_version();
        let now = meta::now();
        let ctx = PatchContext {
            api_version: &api_version,
            kind: &entry.rt.kind,
            group: &entry.rt.group,
            plural: &entry.rt.plural,
            name,
            namespace: r.ns(),
            field_manager: opts.field_manager.as_deref(),
            force: opts.force,
            subresource,
            now: &now,
            schema_hints: entry.apply_hints.as_ref(),
        };
        let mut patched = apply_patch(current.as_ref(), kind, body, &ctx)?;
        ensure_object(&patched)?;
        if view {
            patched = events::to_core(&patched);
        }
        if meta::meta_str(&patched, "name").is_empty() {
            meta::set_meta(&mut patched, "name", json!(name));
        }
        let result = match current {
            None => {
                check_name(&patched, name)?;
                meta::set_meta(&mut patched, "resourceVersion", Value::Null);
                self.create(&storage, r.ns(), patched, opts)
            }
            Some(current) => {
                if meta::meta_str(&patched, "resourceVersion").is_empty() {
                    meta::set_resource_version(&mut patched, meta::resource_version(&current));
                }
                self.update(&storage, r.ns(), name, patched, subresource, opts)
            }
        };
        if view {
            result
                .map(|obj| events::to_view(&obj))
                .map_err(events::error_to_view)
        } else {
            result
        }
    }
}
