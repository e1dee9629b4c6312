//! The controllers the real control plane runs after a deletion, emulated synchronously
//! before each write returns: the garbage collector (background, foreground and orphan
//! propagation through ownerReferences), the namespace controller (delete the content of a
//! terminating namespace, then finalize it) and the CRD finalizer (delete a CRD's objects,
//! then drop its cleanup finalizer).

use serde_json::{Value, json};

use super::state::{ObjRef, State, Work, crds_key, namespaces_key};
use super::{crd, defaults, meta};
use crate::options::{DeleteOptions, Propagation};

/// Upper bound on work items per request, against reference cycles.
const MAX_WORK: usize = 1_000_000;

/// How an owner reference relates to a live object.
enum OwnerState {
    /// The owner exists and is not waiting for its dependents.
    Solid,
    /// No object has the owner's uid.
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

impl State {
    /// Run the queued controller work until none is left.
    pub(super) fn drain(&mut self) {
        let mut done = 0;
        while let Some(work) = self.work.pop_front() {
            done += 1;
            if done > MAX_WORK {
                tracing::warn!(left = self.work.len(), "controller work did not settle");
                self.work.clear();
                break;
            }
            match work {
                Work::OwnerGone(uid) => {
                    for dependent in self.dependents_of(&uid) {
                        self.collect_dependent(&dependent);
                    }
                }
                Work::Dependent(r) => self.collect_dependent(&r),
                Work::Owner(r) => self.finish_owner(&r),
                Work::Namespace(name) => self.finish_namespace(&name),
                Work::Crd(name) => self.finish_crd(&name),
            }
        }
    }

    fn owner_state(&self, uid: &str) -> OwnerState {
        let Some(owner) = self.by_uid(uid).and_then(|r| self.get(r)) else {
            return OwnerState::Dangling;
        };
        if meta::is_deleting(owner)
            && meta::finalizers(owner)
                .iter()
                .any(|f| f == meta::FOREGROUND_FINALIZER)
        {
            OwnerState::Waiting
        } else {
            OwnerState::Solid
        }
    }

    /// `attemptToDeleteItem`: drop references to missing or foreground-deleting owners
    /// when a live owner remains, else delete the object. An owner whose kind the server
    /// does not serve (a CRD not installed, e.g. KubeVirt's `VirtualMachineInstance`) cannot
    /// be looked up: the real collector fails the item and retries it, so the object stays.
    fn collect_dependent(&mut self, r: &ObjRef) {
        let Some(obj) = self.get(r).cloned() else {
            return;
        };
        let unresolvable = meta::owner_refs(&obj).iter().any(|owner| {
            let text = |key: &str| owner.get(key).and_then(Value::as_str).unwrap_or_default();
            self.registry
                .by_kind(text("apiVersion"), text("kind"))
                .is_none()
        });
        if unresolvable {
            return;
        }
        let uids = meta::owner_uids(&obj);
        if uids.is_empty() {
            return;
        }
        let mut solid = 0;
        let mut stale = Vec::new();
        let mut waiting = false;
        for uid in uids {
            match self.owner_state(&uid) {
                OwnerState::Solid => solid += 1,
                OwnerState::Dangling => stale.push(uid),
                OwnerState::Waiting => {
                    waiting = true;
                    stale.push(uid);
                }
            }
        }
        if solid > 0 {
            if !stale.is_empty() {
                log_step(self.system_update(r, |obj| remove_owner_refs(obj, &stale)));
            }
            return;
        }
        let uid = meta::meta_str(&obj, "uid").to_owned();
        let finalizers = meta::finalizers(&obj);
        let propagation = if waiting && !self.dependents_of(&uid).is_empty() {
            Propagation::Foreground
        } else if finalizers.iter().any(|f| f == meta::ORPHAN_FINALIZER) {
            Propagation::Orphan
        } else if finalizers.iter().any(|f| f == meta::FOREGROUND_FINALIZER) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        let opts = DeleteOptions {
            propagation,
            precondition_uid: Some(uid),
            ..DeleteOptions::default()
        };
        log_step(self.delete(&r.key, r.ns(), &r.name, &opts).map(|_| ()));
    }

    /// An owner deleted with `orphan` or `foregroundDeletion`: orphan or delete its
    /// dependents, then drop the finalizer once nothing blocks it.
    fn finish_owner(&mut self, r: &ObjRef) {
        let Some(owner) = self.get(r).cloned() else {
            return;
        };
        if !meta::is_deleting(&owner) {
            return;
        }
        let uid = meta::meta_str(&owner, "uid").to_owned();
        let finalizers = meta::finalizers(&owner);
        if finalizers.iter().any(|f| f == meta::ORPHAN_FINALIZER) {
            for dependent in self.dependents_of(&uid) {
                let owner_uid = [uid.clone()];
                log_step(self.system_update(&dependent, |obj| remove_owner_refs(obj, &owner_uid)));
            }
            log_step(self.system_update(r, |obj| remove_finalizer(obj, meta::ORPHAN_FINALIZER)));
            return;
        }
        if !finalizers.iter().any(|f| f == meta::FOREGROUND_FINALIZER) {
            return;
        }
        for dependent in self.dependents_of(&uid) {
            if self.get(&dependent).is_some_and(|d| !meta::is_deleting(d)) {
                self.collect_dependent(&dependent);
            }
        }
        let blocked = self.dependents_of(&uid).iter().any(|dependent| {
            self.get(dependent)
                .is_some_and(|obj| blocks_owner(obj, &uid))
        });
        if !blocked {
            log_step(
                self.system_update(r, |obj| remove_finalizer(obj, meta::FOREGROUND_FINALIZER)),
            );
        }
    }

    /// The namespace controller: delete what is left in a terminating namespace; once it
    /// is empty, remove the `kubernetes` finalizer (and the namespace, when nothing else
    /// holds it).
    fn finish_namespace(&mut self, name: &str) {
        let r = ObjRef::new(&namespaces_key(), "", name);
        let Some(ns) = self.get(&r).cloned() else {
            return;
        };
        if !meta::is_deleting(&ns) {
            return;
        }
        for obj_ref in self.in_namespace(name) {
            if self
                .get(&obj_ref)
                .is_some_and(|obj| !meta::is_deleting(obj))
            {
                let result = self.delete(
                    &obj_ref.key,
                    obj_ref.ns(),
                    &obj_ref.name,
                    &DeleteOptions::default(),
                );
                log_step(result.map(|_| ()));
            }
        }
        if !self.namespace_is_empty(name) {
            return;
        }
        let mut finalized = (*ns).clone();
        let spec_finalizers: Vec<String> = meta::string_list(finalized.pointer("/spec/finalizers"))
            .into_iter()
            .filter(|f| f != defaults::NAMESPACE_FINALIZER)
            .collect();
        if let Some(spec) = finalized.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("finalizers".to_owned(), json!(spec_finalizers));
        }
        if finalized != *ns {
            self.replace(&r, finalized);
        }
        if spec_finalizers.is_empty() && meta::finalizers(&ns).is_empty() {
            self.remove(&r);
        }
    }

    /// The CRD finalizer: delete the CRD's objects; once none is left, drop the cleanup
    /// finalizer (which removes the CRD and stops serving its type).
    fn finish_crd(&mut self, name: &str) {
        let r = ObjRef::new(&crds_key(), "", name);
        let Some(crd_obj) = self.get(&r).cloned() else {
            return;
        };
        if !meta::is_deleting(&crd_obj) {
            return;
        }
        let Some(key) = crd::served_key(&crd_obj) else {
            return;
        };
        let live: Vec<ObjRef> = self
            .objects(&key, None)
            .filter(|(_, obj)| !meta::is_deleting(obj))
            .map(|((ns, n), _)| ObjRef::new(&key, ns, n))
            .collect();
        for obj_ref in live {
            let result = self.delete(
                &obj_ref.key,
                obj_ref.ns(),
                &obj_ref.name,
                &DeleteOptions::default(),
            );
            log_step(result.map(|_| ()));
        }
        if self.count(&key) == 0 {
            log_step(self.system_update(&r, |obj| remove_finalizer(obj, crd::CLEANUP_FINALIZER)));
        }
    }
}

/// Controllers retry on errors; here they are only logged.
fn log_step(result: Result<(), crate::error::ApiError>) {
    if let Err(error) = result
        && error.code != 404
    {
        tracing::debug!(%error, "controller step failed");
    }
}

/// Whether `obj` holds a `blockOwnerDeletion` reference to `uid`.
fn blocks_owner(obj: &Value, uid: &str) -> bool {
    meta::owner_refs(obj).iter().any(|r| {
        r.get("uid").and_then(Value::as_str) == Some(uid)
            && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
    })
}

fn remove_owner_refs(obj: &mut Value, uids: &[String]) {
    let kept: Vec<Value> = meta::owner_refs(obj)
        .into_iter()
        .filter(|r| {
            !r.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|u| uids.iter().any(|x| x == u))
        })
        .collect();
    let value = if kept.is_empty() {
        Value::Null
    } else {
        Value::Array(kept)
    };
    meta::set_meta(obj, "ownerReferences", value);
}

fn remove_finalizer(obj: &mut Value, finalizer: &str) {
    let kept: Vec<String> = meta::finalizers(obj)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    meta::set_finalizers(obj, &kept);
}
