//! DELETE and DELETE collection: preconditions, the garbage collector's finalizers for
//! the propagation policy, marking objects with finalizers, and the namespace and CRD
//! deletions that their controllers finish.

use serde_json::{Map, Value, json};

use super::filter::Filter;
use super::list::{list_item, list_object};
use super::registry::{Builtin, TypeEntry};
use super::state::{ObjRef, State, Work};
use super::{crd, defaults, meta};
use crate::error::ApiError;
use crate::options::{DeleteOptions, ListOptions, Propagation};
use crate::resource::ResourceKey;

/// The finalizers after applying the propagation policy: `orphan` / `foregroundDeletion`
/// replaced by the one the policy asks for.
fn gc_finalizers(current: &[String], propagation: Propagation) -> Vec<String> {
    let mut finalizers: Vec<String> = current
        .iter()
        .filter(|f| *f != meta::ORPHAN_FINALIZER && *f != meta::FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    match propagation {
        Propagation::Orphan => finalizers.push(meta::ORPHAN_FINALIZER.to_owned()),
        Propagation::Foreground => finalizers.push(meta::FOREGROUND_FINALIZER.to_owned()),
        Propagation::Background => {}
    }
    finalizers
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
}

/// `markAsDeleting`: deletionTimestamp (kept when set), grace period 0, generation bump.
fn mark_deleting(obj: &mut Value, now: &str) {
    if !meta::is_deleting(obj) {
        if let Some(generation) = obj
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
        {
            meta::set_meta(obj, "generation", json!(generation + 1));
        }
        meta::set_meta(obj, "deletionTimestamp", json!(now));
    }
    meta::set_meta(obj, "deletionGracePeriodSeconds", json!(0));
}

fn check_preconditions(
    entry: &TypeEntry,
    obj: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let name = meta::meta_str(obj, "name");
    let conflict =
        |why: String| ApiError::conflict_with(&entry.rt.group, &entry.rt.kind, name, &why);
    if let Some(uid) = &opts.precondition_uid {
        let actual = meta::meta_str(obj, "uid");
        if uid != actual {
            return Err(conflict(format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
            )));
        }
    }
    if let Some(rv) = &opts.precondition_resource_version {
        let actual = meta::meta_str(obj, "resourceVersion");
        if rv != actual {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
            )));
        }
    }
    Ok(())
}

impl State {
    /// DELETE.
    pub(super) fn delete(
        &mut self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        let ns = if entry.rt.namespaced {
            namespace.unwrap_or_default()
        } else {
            ""
        };
        let r = ObjRef::new(key, ns, name);
        let Some(existing) = self.get(&r).cloned() else {
            return Err(ApiError::not_found(&entry.rt.group, &entry.rt.plural, name));
        };
        check_preconditions(&entry, &existing, opts)?;
        let now = meta::now();
        let current = meta::finalizers(&existing);
        let finalizers = gc_finalizers(&current, opts.propagation);
        let mut marked = (*existing).clone();
        if !same_set(&current, &finalizers) {
            meta::set_finalizers(&mut marked, &finalizers);
        }
        let mut work = None;
        match entry.builtin() {
            Some(Builtin::Namespace) => {
                mark_deleting(&mut marked, &now);
                if let Some(map) = marked.as_object_mut() {
                    let status = map.entry("status").or_insert_with(|| json!({}));
                    if !status.is_object() {
                        *status = json!({});
                    }
                    status["phase"] = json!("Terminating");
                }
                let held = !finalizers.is_empty()
                    || meta::string_list(marked.pointer("/spec/finalizers"))
                        .iter()
                        .any(|f| f == defaults::NAMESPACE_FINALIZER);
                if !held {
                    return self.remove_now(&r, &existing, opts);
                }
                work = Some(Work::Namespace(name.to_owned()));
            }
            Some(Builtin::Crd) => {
                mark_deleting(&mut marked, &now);
                let mut with_cleanup = meta::finalizers(&marked);
                if !with_cleanup.iter().any(|f| f == crd::CLEANUP_FINALIZER) {
                    with_cleanup.push(crd::CLEANUP_FINALIZER.to_owned());
                    meta::set_finalizers(&mut marked, &with_cleanup);
                }
                if !meta::is_deleting(&existing) {
                    crd::set_terminating(&mut marked, &now);
                }
                work = Some(Work::Crd(name.to_owned()));
            }
            _ => {
                if finalizers.is_empty() {
                    return self.remove_now(&r, &existing, opts);
                }
                mark_deleting(&mut marked, &now);
            }
        }
        if opts.dry_run || marked == *existing {
            return Ok(marked);
        }
        let stored = self.replace(&r, marked);
        if let Some(work) = work {
            self.work.push_back(work);
        }
        Ok((*stored).clone())
    }

    fn remove_now(
        &mut self,
        r: &ObjRef,
        existing: &Value,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        if opts.dry_run {
            return Ok(existing.clone());
        }
        Ok(self
            .remove(r)
            .map_or_else(|| existing.clone(), |obj| (*obj).clone()))
    }

    /// DELETE collection: every selected object deleted (or marked) as by DELETE; returns
    /// the list of the selected objects as they were.
    pub(super) fn delete_collection(
        &mut self,
        key: &ResourceKey,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        let filter = Filter::new(&entry, list)?;
        let namespace = if entry.rt.namespaced { namespace } else { None };
        let mut selected = self.select(key, namespace, &filter);
        if let Some(limit) = list
            .limit
            .filter(|l| *l > 0)
            .and_then(|l| usize::try_from(l).ok())
        {
            selected.truncate(limit);
        }
        let mut items = Vec::new();
        for obj in selected {
            let ns = meta::meta_str(&obj, "namespace");
            let name = meta::meta_str(&obj, "name");
            match self.delete(key, (!ns.is_empty()).then_some(ns), name, opts) {
                Ok(_) => {}
                Err(error) if error.code == 404 => {}
                Err(error) => return Err(error),
            }
            items.push(list_item(&entry, &obj));
        }
        let mut metadata = Map::new();
        metadata.insert("resourceVersion".to_owned(), json!(self.rv.to_string()));
        Ok(list_object(&entry, items, metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn propagation_sets_the_gc_finalizer() {
        let current = vec!["a".to_owned(), "orphan".to_owned()];
        assert_eq!(gc_finalizers(&current, Propagation::Background), vec!["a"]);
        assert_eq!(
            gc_finalizers(&current, Propagation::Foreground),
            vec!["a", "foregroundDeletion"]
        );
        assert_eq!(
            gc_finalizers(&current, Propagation::Orphan),
            vec!["a", "orphan"]
        );
    }
}
