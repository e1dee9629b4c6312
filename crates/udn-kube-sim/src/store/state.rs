//! The stored objects, their indexes, the resourceVersion counter and the change log that
//! feeds watches. Every write goes through [`State::insert`], [`State::replace`] or
//! [`State::remove`], which keep the indexes and emit exactly one change each.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use super::meta;
use super::node_ports::NodePortIndex;
use super::registry::{Builtin, Registry};
use crate::resource::ResourceKey;

/// A stored object, shared with watchers without copying.
pub(super) type Obj = Arc<Value>;

/// Where an object lives: its type, namespace (`""` for cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct ObjRef {
    pub(super) key: ResourceKey,
    pub(super) namespace: String,
    pub(super) name: String,
}

impl ObjRef {
    pub(super) fn new(key: &ResourceKey, namespace: &str, name: &str) -> Self {
        Self {
            key: key.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The namespace for calls that take `Option<&str>`.
    pub(super) fn ns(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(self.namespace.as_str())
    }
}

/// What a change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One write, as watchers see it.
#[derive(Debug)]
pub(super) struct Change {
    pub(super) rv: u64,
    pub(super) kind: ChangeKind,
    pub(super) key: ResourceKey,
    pub(super) namespace: String,
    /// The new state (for `Deleted`: the last state with the deletion's resourceVersion).
    pub(super) object: Obj,
    /// The state before a `Modified` change.
    pub(super) prev: Option<Obj>,
}

/// Background work of the emulated controllers (garbage collector, namespace controller,
/// CRD finalizer), run before the lock is released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Work {
    /// An object with this uid is gone: collect its dependents.
    OwnerGone(String),
    /// Check one object's owner references (some may be dangling).
    Dependent(ObjRef),
    /// An owner being deleted with the `orphan` or `foregroundDeletion` finalizer.
    Owner(ObjRef),
    /// A terminating namespace: delete its content, then finalize it.
    Namespace(String),
    /// A CRD being deleted: delete its objects, then drop the cleanup finalizer.
    Crd(String),
}

/// Everything behind the lock.
#[derive(Debug)]
pub(super) struct State {
    pub(super) rv: u64,
    pub(super) registry: Registry,
    tables: HashMap<ResourceKey, BTreeMap<(String, String), Obj>>,
    by_uid: HashMap<String, ObjRef>,
    dependents: HashMap<String, BTreeSet<ObjRef>>,
    by_namespace: HashMap<String, BTreeSet<ObjRef>>,
    history: VecDeque<Arc<Change>>,
    /// Every change with a resourceVersion above this one is in `history`.
    pub(super) history_start: u64,
    history_limit: usize,
    pub(super) sender: broadcast::Sender<Arc<Change>>,
    pub(super) work: VecDeque<Work>,
    /// Next ClusterIP handed to a Service (host part in 10.96.0.0/12).
    pub(super) next_cluster_ip: u32,
    /// The node ports the stored Services hold, kept by `index`/`unindex` like the other
    /// indexes so every way a Service is stored or goes updates it.
    pub(super) node_ports: NodePortIndex,
    services: ResourceKey,
}

impl State {
    pub(super) fn new(history_limit: usize, channel_capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(channel_capacity.max(1));
        Self {
            rv: 0,
            registry: Registry::new(),
            tables: HashMap::new(),
            by_uid: HashMap::new(),
            dependents: HashMap::new(),
            by_namespace: HashMap::new(),
            history: VecDeque::new(),
            history_start: 0,
            history_limit,
            sender,
            work: VecDeque::new(),
            next_cluster_ip: 1,
            node_ports: NodePortIndex::default(),
            services: key_of(Builtin::Service),
        }
    }

    pub(super) fn get(&self, r: &ObjRef) -> Option<&Obj> {
        self.tables
            .get(&r.key)?
            .get(&(r.namespace.clone(), r.name.clone()))
    }

    /// The objects of a type, in (namespace, name) order; only `namespace` when given.
    pub(super) fn objects<'a>(
        &'a self,
        key: &ResourceKey,
        namespace: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = (&'a (String, String), &'a Obj)> + 'a> {
        let Some(table) = self.tables.get(key) else {
            return Box::new(std::iter::empty());
        };
        match namespace {
            None => Box::new(table.iter()),
            Some(ns) => Box::new(
                table
                    .range((ns.to_owned(), String::new())..)
                    .take_while(move |((n, _), _)| n == ns),
            ),
        }
    }

    /// Objects of a type after `(namespace, name)` (exclusive), for paging.
    pub(super) fn objects_after<'a>(
        &'a self,
        key: &ResourceKey,
        after: (String, String),
    ) -> Box<dyn Iterator<Item = (&'a (String, String), &'a Obj)> + 'a> {
        let Some(table) = self.tables.get(key) else {
            return Box::new(std::iter::empty());
        };
        Box::new(table.range((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded)))
    }

    pub(super) fn count(&self, key: &ResourceKey) -> usize {
        self.tables.get(key).map_or(0, BTreeMap::len)
    }

    /// Where the object with this uid lives.
    pub(super) fn by_uid(&self, uid: &str) -> Option<&ObjRef> {
        self.by_uid.get(uid)
    }

    /// The objects whose ownerReferences name this uid.
    pub(super) fn dependents_of(&self, uid: &str) -> Vec<ObjRef> {
        self.dependents
            .get(uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The namespaced objects in a namespace.
    pub(super) fn in_namespace(&self, namespace: &str) -> Vec<ObjRef> {
        self.by_namespace
            .get(namespace)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub(super) fn namespace_is_empty(&self, namespace: &str) -> bool {
        self.by_namespace
            .get(namespace)
            .is_none_or(BTreeSet::is_empty)
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn index(&mut self, r: &ObjRef, obj: &Value) {
        let uid = meta::meta_str(obj, "uid");
        if !uid.is_empty() {
            self.by_uid.insert(uid.to_owned(), r.clone());
        }
        for owner in meta::owner_uids(obj) {
            self.dependents.entry(owner).or_default().insert(r.clone());
        }
        if !r.namespace.is_empty() {
            self.by_namespace
                .entry(r.namespace.clone())
                .or_default()
                .insert(r.clone());
        }
        if r.key == self.services {
            self.node_ports.add(obj);
        }
    }

    fn unindex(&mut self, r: &ObjRef, obj: &Value) {
        let uid = meta::meta_str(obj, "uid");
        if self.by_uid.get(uid) == Some(r) {
            self.by_uid.remove(uid);
        }
        for owner in meta::owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(r);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
        if let Some(set) = self.by_namespace.get_mut(&r.namespace) {
            set.remove(r);
            if set.is_empty() {
                self.by_namespace.remove(&r.namespace);
            }
        }
        if r.key == self.services {
            self.node_ports.remove(obj);
        }
    }

    fn emit(&mut self, change: Change) {
        let change = Arc::new(change);
        if self.history_limit == 0 {
            self.history_start = change.rv;
        } else {
            while self.history.len() >= self.history_limit {
                match self.history.pop_front() {
                    Some(old) => self.history_start = old.rv,
                    None => break,
                }
            }
            self.history.push_back(Arc::clone(&change));
        }
        // No receiver is not an error: nobody is watching.
        let _ = self.sender.send(change);
    }

    /// The kept changes after `rv`, oldest first.
    pub(super) fn history_after(&self, rv: u64) -> impl Iterator<Item = &Arc<Change>> {
        let start = self.history.partition_point(|change| change.rv <= rv);
        self.history.range(start..)
    }

    /// Forget the change log: resuming from any earlier resourceVersion gets 410.
    pub(super) fn compact(&mut self) {
        self.history.clear();
        self.history_start = self.rv;
    }

    /// Store a new object with a fresh resourceVersion; emits ADDED.
    pub(super) fn insert(&mut self, r: &ObjRef, mut obj: Value) -> Obj {
        let rv = self.next_rv();
        meta::set_resource_version(&mut obj, rv);
        let obj = Arc::new(obj);
        self.index(r, &obj);
        self.tables
            .entry(r.key.clone())
            .or_default()
            .insert((r.namespace.clone(), r.name.clone()), Arc::clone(&obj));
        self.emit(Change {
            rv,
            kind: ChangeKind::Added,
            key: r.key.clone(),
            namespace: r.namespace.clone(),
            object: Arc::clone(&obj),
            prev: None,
        });
        self.after_write(r, &obj);
        obj
    }

    /// Replace a stored object with a fresh resourceVersion; emits MODIFIED.
    pub(super) fn replace(&mut self, r: &ObjRef, mut obj: Value) -> Obj {
        let rv = self.next_rv();
        meta::set_resource_version(&mut obj, rv);
        let obj = Arc::new(obj);
        let prev = self
            .tables
            .entry(r.key.clone())
            .or_default()
            .insert((r.namespace.clone(), r.name.clone()), Arc::clone(&obj));
        if let Some(prev) = &prev {
            self.unindex(r, prev);
        }
        self.index(r, &obj);
        self.emit(Change {
            rv,
            kind: ChangeKind::Modified,
            key: r.key.clone(),
            namespace: r.namespace.clone(),
            object: Arc::clone(&obj),
            prev,
        });
        self.after_write(r, &obj);
        obj
    }

    /// Remove an object; emits DELETED with its last state at a fresh resourceVersion,
    /// which is returned. Queues the controllers' follow-up work.
    pub(super) fn remove(&mut self, r: &ObjRef) -> Option<Obj> {
        let table = self.tables.get_mut(&r.key)?;
        let old = table.remove(&(r.namespace.clone(), r.name.clone()))?;
        if table.is_empty() {
            self.tables.remove(&r.key);
        }
        self.unindex(r, &old);
        let rv = self.next_rv();
        let mut last = (*old).clone();
        meta::set_resource_version(&mut last, rv);
        let last = Arc::new(last);
        self.emit(Change {
            rv,
            kind: ChangeKind::Deleted,
            key: r.key.clone(),
            namespace: r.namespace.clone(),
            object: Arc::clone(&last),
            prev: None,
        });
        self.after_remove(r, &last);
        Some(last)
    }

    /// Store an object exactly as given (snapshot restore): no event, no new version.
    pub(super) fn restore(&mut self, r: &ObjRef, obj: Value) {
        let rv = meta::resource_version(&obj);
        let obj = Arc::new(obj);
        self.index(r, &obj);
        self.tables
            .entry(r.key.clone())
            .or_default()
            .insert((r.namespace.clone(), r.name.clone()), obj);
        self.rv = self.rv.max(rv);
        self.history_start = self.rv;
    }

    /// Drop every object of a type (its CRD is gone), without events.
    pub(super) fn drop_table(&mut self, key: &ResourceKey) {
        if let Some(table) = self.tables.remove(key) {
            for ((namespace, name), obj) in table {
                self.unindex(&ObjRef::new(key, &namespace, &name), &obj);
            }
        }
    }

    /// Queue follow-ups of a write: owner references that may dangle; an owner being
    /// deleted with a garbage-collector finalizer.
    fn after_write(&mut self, r: &ObjRef, obj: &Value) {
        if meta::owner_uids(obj)
            .iter()
            .any(|uid| !self.by_uid.contains_key(uid))
        {
            self.work.push_back(Work::Dependent(r.clone()));
        }
        if meta::is_deleting(obj) {
            let finalizers = meta::finalizers(obj);
            if finalizers
                .iter()
                .any(|f| f == meta::ORPHAN_FINALIZER || f == meta::FOREGROUND_FINALIZER)
            {
                self.work.push_back(Work::Owner(r.clone()));
            }
        }
    }

    /// Queue follow-ups of a removal: dependents, owners waiting in the foreground, the
    /// terminating namespace or CRD it was holding.
    fn after_remove(&mut self, r: &ObjRef, obj: &Value) {
        let uid = meta::meta_str(obj, "uid");
        if self.dependents.contains_key(uid) {
            self.work.push_back(Work::OwnerGone(uid.to_owned()));
        }
        for owner in meta::owner_uids(obj) {
            if let Some(owner_ref) = self.by_uid.get(&owner).cloned()
                && self.get(&owner_ref).is_some_and(|o| meta::is_deleting(o))
            {
                self.work.push_back(Work::Owner(owner_ref));
            }
        }
        if !r.namespace.is_empty() && self.namespace_is_empty(&r.namespace) {
            let ns = ObjRef::new(&namespaces_key(), "", &r.namespace);
            if self.get(&ns).is_some_and(|o| meta::is_deleting(o)) {
                self.work.push_back(Work::Namespace(r.namespace.clone()));
            }
        }
        if let Some(entry) = self.registry.get(&r.key)
            && let super::registry::Flavor::Custom { crd_name } = &entry.flavor
            && self.count(&r.key) == 0
        {
            self.work.push_back(Work::Crd(crd_name.clone()));
        }
        if r.key == crds_key()
            && let Some(key) = super::crd::served_key(obj)
        {
            self.registry.unregister(&key);
            self.drop_table(&key);
        }
    }
}

/// Key of the Namespace type.
pub(super) fn namespaces_key() -> ResourceKey {
    key_of(Builtin::Namespace)
}

/// Key of the CustomResourceDefinition type.
pub(super) fn crds_key() -> ResourceKey {
    key_of(Builtin::Crd)
}

fn key_of(builtin: Builtin) -> ResourceKey {
    let (group, plural) = match builtin {
        Builtin::Namespace => ("", "namespaces"),
        Builtin::Node => ("", "nodes"),
        Builtin::Pod => ("", "pods"),
        Builtin::Service => ("", "services"),
        Builtin::Event => ("", "events"),
        Builtin::EventsV1 => ("events.k8s.io", "events"),
        Builtin::EndpointSlice => ("discovery.k8s.io", "endpointslices"),
        Builtin::Lease => ("coordination.k8s.io", "leases"),
        Builtin::ConfigMap => ("", "configmaps"),
        Builtin::Crd => ("apiextensions.k8s.io", "customresourcedefinitions"),
    };
    ResourceKey {
        group: group.to_owned(),
        plural: plural.to_owned(),
    }
}
