//! Which pods want which set elements, and the plans that bring the six sets there.
//!
//! Pod IPs are reused as soon as a pod terminates, possibly before its delete event
//! arrives, so two pods can want the same element. Each element records the pods that want
//! it, and a pod's update or removal deletes an element only when no other pod wants it.

use std::collections::{BTreeMap, BTreeSet};

use super::names::{SetId, table_id};
use super::pod::{IsolationElement, PodIsolationInput, PodKey, desired_pod_elements};
use crate::nft::{Element, Set, Transaction};

/// The elements each pod wants, and the pods each element is wanted by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElementIndex {
    pods: BTreeMap<PodKey, BTreeSet<IsolationElement>>,
    wanted_by: BTreeMap<IsolationElement, BTreeSet<PodKey>>,
}

/// A change of one pod's elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodPlan {
    /// The pod.
    pub key: PodKey,
    /// Its elements after the change (empty: the pod is forgotten).
    pub elements: BTreeSet<IsolationElement>,
    /// Elements to delete: the pod's old ones that no other pod wants.
    pub delete: BTreeSet<IsolationElement>,
    /// Elements to add: its new ones that no pod had.
    pub add: BTreeSet<IsolationElement>,
}

impl ElementIndex {
    /// The index of every pod host isolation takes in `pods` (a later input for the same pod
    /// wins).
    pub fn from_inputs<'a>(pods: impl IntoIterator<Item = &'a PodIsolationInput>) -> Self {
        let mut index = Self::default();
        for pod in pods {
            if let Some(elements) = desired_pod_elements(pod) {
                index.set_pod(&pod.key, elements);
            }
        }
        index
    }

    /// Every element some pod wants.
    pub fn elements(&self) -> impl Iterator<Item = &IsolationElement> {
        self.wanted_by.keys()
    }

    /// The elements `key` wants.
    pub fn pod(&self, key: &PodKey) -> Option<&BTreeSet<IsolationElement>> {
        self.pods.get(key)
    }

    /// The pods known.
    pub fn pods(&self) -> impl Iterator<Item = &PodKey> {
        self.pods.keys()
    }

    /// The pods that want `element`.
    pub fn wanted_by(&self, element: &IsolationElement) -> Option<&BTreeSet<PodKey>> {
        self.wanted_by.get(element)
    }

    /// The plan giving `key` exactly `elements` (empty: remove the pod); `None` when it
    /// already has them.
    pub fn plan_pod(&self, key: &PodKey, elements: BTreeSet<IsolationElement>) -> Option<PodPlan> {
        let empty = BTreeSet::new();
        let old = self.pods.get(key).unwrap_or(&empty);
        if *old == elements {
            return None;
        }
        let only_this_pod = |element: &IsolationElement| {
            self.wanted_by
                .get(element)
                .is_none_or(|pods| pods.len() == 1 && pods.contains(key))
        };
        let delete = old
            .difference(&elements)
            .filter(|element| only_this_pod(element))
            .copied()
            .collect();
        let add = elements
            .difference(old)
            .filter(|element| !self.wanted_by.contains_key(element))
            .copied()
            .collect();
        Some(PodPlan {
            key: key.clone(),
            elements,
            delete,
            add,
        })
    }

    /// Records `plan` as applied.
    pub fn commit(&mut self, plan: &PodPlan) {
        self.set_pod(&plan.key, plan.elements.clone());
    }

    fn set_pod(&mut self, key: &PodKey, elements: BTreeSet<IsolationElement>) {
        if let Some(old) = self.pods.remove(key) {
            for element in old.difference(&elements) {
                if let Some(pods) = self.wanted_by.get_mut(element) {
                    pods.remove(key);
                    if pods.is_empty() {
                        self.wanted_by.remove(element);
                    }
                }
            }
        }
        for element in &elements {
            self.wanted_by
                .entry(*element)
                .or_default()
                .insert(key.clone());
        }
        if !elements.is_empty() {
            self.pods.insert(key.clone(), elements);
        }
    }
}

fn nft_element(element: &IsolationElement) -> Element {
    Element::set(element.set.name(), element.key.parts())
}

/// The initial (or full) sync: each of the six sets flushed and filled with `index`'s
/// elements, in one transaction, so no pod is ever unprotected in between.
pub fn sync_transaction(index: &ElementIndex) -> Transaction {
    let mut tx = Transaction::new(table_id());
    for set in SetId::ALL {
        tx.flush(Set::new(set.name(), set.key_type()));
    }
    for element in index.elements() {
        tx.add(nft_element(element));
    }
    tx
}

/// `plan` as one transaction. Deletions are add-then-delete, so a set that lost the element
/// behind our back (someone flushed it) does not make the transaction fail.
pub fn pod_transaction(plan: &PodPlan) -> Transaction {
    let mut tx = Transaction::new(table_id());
    for element in &plan.delete {
        tx.add_then_delete(nft_element(element));
    }
    for element in &plan.add {
        tx.add(nft_element(element));
    }
    tx
}
