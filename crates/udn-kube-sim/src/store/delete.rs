//! DELETE and DELETE collection: preconditions, the garbage collector's finalizers for
//! the propagation policy, marking objects with finalizers, the graceful deletion of bound
//! Pods, and the namespace and CRD deletions that their controllers finish.

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

/// How a DELETE of a Pod goes (`BeforeDelete` with the pod strategy's
/// `CheckGracefulDelete`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum PodGrace {
    /// As any object: removed (or held by finalizers) now.
    Now,
    /// A graceful deletion is under way and this one does not shorten it: nothing changes.
    Pending,
    /// Marked: `deletionTimestamp` (when it should be gone) and the grace period.
    Graceful { timestamp: String, period: i64 },
}

fn timestamp(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn plus(at: jiff::Timestamp, seconds: i64) -> jiff::Timestamp {
    at.checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or(at)
}

/// The grace of a Pod deletion at `now`. A first deletion takes `gracePeriodSeconds`, else
/// `spec.terminationGracePeriodSeconds`, else 0; 0 for a pod not bound to a node or already
/// Succeeded/Failed; a negative period is 1. A pod being deleted gracefully can only have
/// its grace shortened (its `deletionTimestamp` moves back, not before now).
fn pod_grace(pod: &Value, opts: &DeleteOptions, now: jiff::Timestamp) -> PodGrace {
    let stored_grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .map(|g| if g < 0 { 1 } else { g });
    let requested = opts.grace_period_seconds.map(|g| if g < 0 { 1 } else { g });
    if meta::is_deleting(pod) {
        let Some(stored) = stored_grace.filter(|g| *g > 0) else {
            return PodGrace::Now;
        };
        let Some(mut period) = requested.filter(|p| *p < stored) else {
            return PodGrace::Pending;
        };
        let deadline = meta::meta_str(pod, "deletionTimestamp")
            .parse::<jiff::Timestamp>()
            .unwrap_or(now);
        let mut moved = plus(plus(deadline, -stored), period);
        if moved < now {
            moved = now;
            if period != 0 {
                // The grace already ran out: the shortest graceful one, so another actor
                // still makes the final delete.
                period = 1;
            }
        }
        if period == 0 {
            return PodGrace::Now;
        }
        return PodGrace::Graceful {
            timestamp: timestamp(moved),
            period,
        };
    }
    let spec = pod.get("spec");
    let mut period = requested
        .or_else(|| {
            spec.and_then(|s| s.get("terminationGracePeriodSeconds"))
                .and_then(Value::as_i64)
        })
        .unwrap_or(0);
    let bound = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if !bound || matches!(phase, Some("Succeeded" | "Failed")) {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    if period == 0 {
        return PodGrace::Now;
    }
    PodGrace::Graceful {
        timestamp: timestamp(plus(now, period)),
        period,
    }
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
        if entry.is(Builtin::Pod) {
            match pod_grace(&existing, opts, jiff::Timestamp::now()) {
                PodGrace::Now => {}
                PodGrace::Pending => return Ok((*existing).clone()),
                PodGrace::Graceful { timestamp, period } => {
                    meta::set_meta(&mut marked, "deletionTimestamp", json!(timestamp));
                    meta::set_meta(&mut marked, "deletionGracePeriodSeconds", json!(period));
                    if opts.dry_run {
                        return Ok(marked);
                    }
                    return Ok((*self.replace(&r, marked)).clone());
                }
            }
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

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    fn grace(seconds: i64) -> DeleteOptions {
        DeleteOptions {
            grace_period_seconds: Some(seconds),
            ..DeleteOptions::default()
        }
    }

    #[test]
    fn a_bound_pod_gets_its_grace_an_unbound_or_finished_one_goes_now() {
        let now = at("2025-01-01T00:00:00Z");
        let bound = json!({"metadata": {}, "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}});
        let graceful = |timestamp: &str, period| PodGrace::Graceful {
            timestamp: timestamp.to_owned(),
            period,
        };
        assert_eq!(
            pod_grace(&bound, &DeleteOptions::default(), now),
            graceful("2025-01-01T00:00:30Z", 30)
        );
        assert_eq!(
            pod_grace(&bound, &grace(5), now),
            graceful("2025-01-01T00:00:05Z", 5)
        );
        assert_eq!(
            pod_grace(&bound, &grace(-3), now),
            graceful("2025-01-01T00:00:01Z", 1)
        );
        assert_eq!(pod_grace(&bound, &grace(0), now), PodGrace::Now);
        let unbound = json!({"metadata": {}, "spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(
            pod_grace(&unbound, &DeleteOptions::default(), now),
            PodGrace::Now
        );
        let done =
            json!({"metadata": {}, "spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}});
        assert_eq!(pod_grace(&done, &grace(10), now), PodGrace::Now);
        let no_default = json!({"metadata": {}, "spec": {"nodeName": "n1"}});
        assert_eq!(
            pod_grace(&no_default, &DeleteOptions::default(), now),
            PodGrace::Now
        );
    }

    #[test]
    fn a_terminating_pod_can_only_have_its_grace_shortened() {
        let now = at("2025-01-01T00:00:10Z");
        let terminating = json!({"metadata": {"deletionTimestamp": "2025-01-01T00:00:30Z", "deletionGracePeriodSeconds": 30},
                                 "spec": {"nodeName": "n1"}});
        assert_eq!(
            pod_grace(&terminating, &DeleteOptions::default(), now),
            PodGrace::Pending
        );
        assert_eq!(pod_grace(&terminating, &grace(30), now), PodGrace::Pending);
        assert_eq!(
            pod_grace(&terminating, &grace(20), now),
            PodGrace::Graceful {
                timestamp: "2025-01-01T00:00:20Z".to_owned(),
                period: 20
            }
        );
        // Shortened into the past: now, with the shortest graceful period.
        assert_eq!(
            pod_grace(&terminating, &grace(5), now),
            PodGrace::Graceful {
                timestamp: "2025-01-01T00:00:10Z".to_owned(),
                period: 1
            }
        );
        assert_eq!(pod_grace(&terminating, &grace(0), now), PodGrace::Now);
        let forced = json!({"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}});
        assert_eq!(
            pod_grace(&forced, &DeleteOptions::default(), now),
            PodGrace::Now
        );
    }

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
