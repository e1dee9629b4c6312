//! CREATE: namespace placement and admission, generated names, system metadata, the
//! type's create strategy, validation, and CRD registration.

use serde_json::{Value, json};

use super::registry::{Builtin, Flavor, TypeEntry};
use super::state::{ObjRef, State, crds_key, namespaces_key};
use super::{crd, defaults, meta, validate};
use crate::error::{ApiError, StatusCause};
use crate::options::WriteOptions;
use crate::resource::ResourceKey;

/// How often a generated name is redrawn when it is taken.
const GENERATE_NAME_TRIES: usize = 8;

/// The request body must be a JSON object with an object (or no) `metadata`.
pub(super) fn ensure_object(obj: &Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request was not a JSON object",
        ));
    }
    match obj.get("metadata") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(ApiError::bad_request(
            "the metadata of the provided object is not an object",
        )),
    }
}

/// Reconcile the request namespace with the body's (EnsureObjectNamespaceMatches-
/// RequestNamespace) and return the object's namespace (`""` for cluster-scoped types).
pub(super) fn place_namespace(
    entry: &TypeEntry,
    namespace: Option<&str>,
    obj: &mut Value,
) -> Result<String, ApiError> {
    if !entry.rt.namespaced {
        meta::set_meta(obj, "namespace", Value::Null);
        return Ok(String::new());
    }
    let requested = namespace.unwrap_or_default();
    let body = meta::meta_str(obj, "namespace").to_owned();
    let placed = match (requested.is_empty(), body.is_empty()) {
        (_, true) => requested.to_owned(),
        (true, false) => body,
        (false, false) if body == requested => body,
        (false, false) => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    };
    if placed.is_empty() {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    meta::set_meta(obj, "namespace", json!(placed));
    Ok(placed)
}

/// Set `apiVersion` and `kind` to the type's.
pub(super) fn set_type_meta(entry: &TypeEntry, obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".to_owned(), json!(entry.api_version()));
        map.insert("kind".to_owned(), json!(entry.rt.kind));
    }
}

impl State {
    /// NamespaceLifecycle admission: a namespaced object needs an existing namespace that
    /// is not terminating.
    fn admit_namespace(
        &self,
        entry: &TypeEntry,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        if !entry.rt.namespaced {
            return Ok(());
        }
        let Some(ns) = self.get(&ObjRef::new(&namespaces_key(), "", namespace)) else {
            return Err(ApiError::not_found("", "namespaces", namespace));
        };
        if ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
            let mut error = ApiError::forbidden(
                &entry.rt.group,
                &entry.rt.plural,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            );
            error.causes.push(StatusCause {
                reason: "NamespaceTerminating".to_owned(),
                message: format!("namespace {namespace} is being terminated"),
                field: "metadata.namespace".to_owned(),
            });
            return Err(error);
        }
        Ok(())
    }

    /// Custom resources cannot be created while their CRD is being deleted.
    fn admit_crd(&self, entry: &TypeEntry, name: &str) -> Result<(), ApiError> {
        let Flavor::Custom { crd_name } = &entry.flavor else {
            return Ok(());
        };
        let crd = self.get(&ObjRef::new(&crds_key(), "", crd_name));
        if crd.is_some_and(|crd| meta::is_deleting(crd)) {
            return Err(ApiError::forbidden(
                &entry.rt.group,
                &entry.rt.plural,
                name,
                "create not allowed while custom resource definition is terminating",
            ));
        }
        Ok(())
    }

    /// CREATE.
    pub(super) fn create(
        &mut self,
        key: &ResourceKey,
        namespace: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        let mut obj = obj;
        ensure_object(&obj)?;
        let namespace = place_namespace(&entry, namespace, &mut obj)?;
        if !meta::meta_str(&obj, "resourceVersion").is_empty() {
            return Err(ApiError::internal(
                "Internal error occurred: resourceVersion should not be set on objects to be created",
            ));
        }
        let requested_name = meta::meta_str(&obj, "name").to_owned();
        self.admit_namespace(&entry, &namespace, &requested_name)?;
        self.admit_crd(&entry, &requested_name)?;

        let generate = meta::meta_str(&obj, "generateName").to_owned();
        let mut name = requested_name;
        if name.is_empty() && !generate.is_empty() {
            for _ in 0..GENERATE_NAME_TRIES {
                name = meta::generate_name(&generate);
                if self.get(&ObjRef::new(key, &namespace, &name)).is_none() {
                    break;
                }
            }
            meta::set_meta(&mut obj, "name", json!(name));
        }
        let now = meta::now();
        meta::set_meta(&mut obj, "uid", json!(meta::new_uid()));
        meta::set_meta(&mut obj, "creationTimestamp", json!(now));
        meta::set_meta(&mut obj, "deletionTimestamp", Value::Null);
        meta::set_meta(&mut obj, "deletionGracePeriodSeconds", Value::Null);
        let generation = if entry.has_generation() {
            json!(1)
        } else {
            Value::Null
        };
        meta::set_meta(&mut obj, "generation", generation);
        set_type_meta(&entry, &mut obj);
        defaults::prepare_for_create(&entry, &mut obj, &mut self.next_cluster_ip);
        if entry.is(Builtin::Service) {
            self.allocate_service_create(&mut obj)?;
        }

        let mut obj = validate::check(&entry, obj, None, true, Vec::new())?;
        set_type_meta(&entry, &mut obj);
        let served = if entry.is(Builtin::Crd) {
            let served = crd::type_from_crd(&obj)?;
            let status = crd::established_status(&obj, &served, &now);
            if let Some(map) = obj.as_object_mut() {
                map.insert("status".to_owned(), status);
            }
            Some(served)
        } else {
            None
        };

        let r = ObjRef::new(key, &namespace, &name);
        if let Some(existing) = self.get(&r) {
            let mut error = ApiError::already_exists(&entry.rt.group, &entry.rt.plural, &name);
            if meta::is_deleting(existing) {
                error.message = format!("object is being deleted: {}", error.message);
            }
            return Err(error);
        }
        if opts.dry_run {
            return Ok(obj);
        }
        let stored = self.insert(&r, obj);
        if let Some(served) = served {
            self.registry.register(served);
        }
        Ok((*stored).clone())
    }
}
