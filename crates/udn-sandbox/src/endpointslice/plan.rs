//! From the existing slices to the desired ones, with upstream's reconciler's rules:
//! - slices of an address type the Service no longer has, of another owner (an old Service
//!   of the same name) or of a port set no longer desired are deleted;
//! - per port set, an existing slice keeps the endpoints it has that are still desired
//!   (updated when their conditions changed), is deleted when none is left, and takes the
//!   Service's labels when they changed;
//! - new endpoints fill the slices being updated first (fullest first), then the unchanged
//!   slice they fit best, then new slices of at most `max` endpoints;
//! - an address type with no slice left gets a placeholder slice (no endpoints, no ports),
//!   and an existing placeholder is kept rather than replaced;
//! - a slice to be created replaces one to be deleted (an update under the old name);
//! - no slice is created for a Service being deleted;
//! - every created or updated slice carries the sync's trigger time, or loses it.
//!
//! Ties that upstream leaves to map order are broken by name here, so a plan is
//! deterministic.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::ANNOTATION_TRIGGER_TIME;
use super::desired::{AddressType, Desired, EndpointKey, Group, PortsKey, is_reserved_label};

/// One API call on a slice.
#[derive(Debug, Clone, PartialEq)]
pub enum SliceOp {
    /// Create it (named by `generateName`).
    Create(EndpointSlice),
    /// Replace it (a copy of the stored one, or a new one under an old name).
    Update(EndpointSlice),
    /// Delete it.
    Delete(String),
}

/// The calls that converge one Service's slices; empty when converged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// In order: creates, updates and deletes per address type, then the deletes of
    /// address types the Service no longer has.
    pub ops: Vec<SliceOp>,
}

impl Plan {
    /// Whether nothing is to be done.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// The plan for `desired` given the `existing` slices (those labelled with the Service's
/// name and this controller, not being deleted). `trigger_time` is the sync's
/// `endpoints.kubernetes.io/last-change-trigger-time` (`None`: the annotation goes).
pub fn plan(
    desired: &Desired,
    existing: &[EndpointSlice],
    trigger_time: Option<&str>,
    max: usize,
) -> Plan {
    let mut existing: Vec<&EndpointSlice> = existing.iter().collect();
    existing.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut by_type: BTreeMap<AddressType, Vec<&EndpointSlice>> = BTreeMap::new();
    let mut unsupported = Vec::new();
    for slice in existing {
        match AddressType::parse(&slice.address_type).filter(|t| desired.address_types.contains(t))
        {
            Some(address_type) => by_type.entry(address_type).or_default().push(slice),
            None => unsupported.push(name(slice)),
        }
    }
    let mut ops = Vec::new();
    for address_type in &desired.address_types {
        let slices = by_type
            .get(address_type)
            .map(Vec::as_slice)
            .unwrap_or_default();
        ops.extend(plan_address_type(
            desired,
            *address_type,
            slices,
            trigger_time,
            max,
        ));
    }
    ops.extend(unsupported.into_iter().map(SliceOp::Delete));
    Plan { ops }
}

fn name(slice: &EndpointSlice) -> String {
    slice.metadata.name.clone().unwrap_or_default()
}

fn owned_by(slice: &EndpointSlice, uid: &str) -> bool {
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.kind == "Service" && o.api_version == "v1")
}

/// A new slice of the Service (no name yet).
fn new_slice(
    desired: &Desired,
    address_type: AddressType,
    ports: &[EndpointPort],
) -> EndpointSlice {
    let template = &desired.template;
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(template.generate_name.clone()),
            namespace: Some(template.namespace.clone()),
            labels: Some(template.labels()),
            owner_references: Some(vec![template.owner.clone()]),
            ..ObjectMeta::default()
        },
        address_type: address_type.as_str().to_owned(),
        ports: Some(ports.to_vec()),
        endpoints: Vec::new(),
    }
}

/// upstream's `placeholderSliceCompare`: namespace, labels, owners and the (empty) content.
fn same_placeholder(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    let owners = |s: &EndpointSlice| s.metadata.owner_references.clone().unwrap_or_default();
    a.metadata.namespace == b.metadata.namespace
        && labels(a) == labels(b)
        && owners(a) == owners(b)
        && a.address_type == b.address_type
        && a.endpoints == b.endpoints
        && a.ports.clone().unwrap_or_default() == b.ports.clone().unwrap_or_default()
}

#[derive(Default)]
struct Changes {
    create: Vec<EndpointSlice>,
    update: Vec<EndpointSlice>,
    delete: Vec<EndpointSlice>,
}

fn plan_address_type(
    desired: &Desired,
    address_type: AddressType,
    existing: &[&EndpointSlice],
    trigger_time: Option<&str>,
    max: usize,
) -> Vec<SliceOp> {
    let mut changes = Changes::default();
    let mut by_ports: BTreeMap<PortsKey, Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        if owned_by(slice, &desired.service_uid) {
            by_ports
                .entry(PortsKey::of(slice.ports.as_ref()))
                .or_default()
                .push(slice);
        } else {
            changes.delete.push((*slice).clone());
        }
    }
    for ((group_type, ports_key), group) in &desired.groups {
        if *group_type != address_type {
            continue;
        }
        let slices = by_ports
            .get(ports_key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let group_changes = plan_ports(desired, address_type, slices, group, max);
        changes.create.extend(group_changes.create);
        changes.update.extend(group_changes.update);
        changes.delete.extend(group_changes.delete);
    }
    for (ports_key, slices) in &by_ports {
        if !desired
            .groups
            .contains_key(&(address_type, ports_key.clone()))
        {
            changes.delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }
    if existing.len() == changes.delete.len() && changes.create.is_empty() {
        let placeholder = new_slice(desired, address_type, &[]);
        if changes.delete.len() == 1 && same_placeholder(&changes.delete[0], &placeholder) {
            // The placeholder exists: keep it instead of deleting and recreating it.
            changes.delete.clear();
        } else {
            changes.create.push(placeholder);
        }
    }
    finalize(desired, changes, trigger_time)
}

/// upstream's `finalize`: creates turned into updates of slices to be deleted, then the
/// calls, each created or updated slice stamped with the trigger time.
fn finalize(desired: &Desired, mut changes: Changes, trigger_time: Option<&str>) -> Vec<SliceOp> {
    let mut index = 0;
    while index < changes.delete.len() && !changes.create.is_empty() {
        let old = &changes.delete[index];
        if owned_by(old, &desired.service_uid) {
            if let Some(mut slice) = changes.create.pop() {
                slice.metadata.name = old.metadata.name.clone();
                changes.update.push(slice);
            }
            changes.delete.remove(index);
        } else {
            index += 1;
        }
    }
    let stamp = |mut slice: EndpointSlice| {
        let annotations = slice.metadata.annotations.get_or_insert_with(BTreeMap::new);
        match trigger_time {
            Some(time) => {
                annotations.insert(ANNOTATION_TRIGGER_TIME.to_owned(), time.to_owned());
            }
            None => {
                annotations.remove(ANNOTATION_TRIGGER_TIME);
            }
        }
        slice
    };
    let mut ops = Vec::new();
    if !desired.deleting {
        // Creating slices while the garbage collector deletes the Service's would race it.
        ops.extend(
            changes
                .create
                .into_iter()
                .map(|s| SliceOp::Create(stamp(s))),
        );
    }
    ops.extend(
        changes
            .update
            .into_iter()
            .map(|s| SliceOp::Update(stamp(s))),
    );
    ops.extend(changes.delete.iter().map(|s| SliceOp::Delete(name(s))));
    ops
}

fn non_reserved(labels: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    labels
        .into_iter()
        .flatten()
        .filter(|(k, _)| !is_reserved_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn pop_first(set: &mut BTreeMap<EndpointKey, Endpoint>) -> Option<Endpoint> {
    set.pop_first().map(|(_, endpoint)| endpoint)
}

/// upstream's `reconcileByPortMapping` for the slices of one port set.
fn plan_ports(
    desired: &Desired,
    address_type: AddressType,
    existing: &[&EndpointSlice],
    group: &Group,
    max: usize,
) -> Changes {
    let mut wanted = group.endpoints.clone();
    let mut slices: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged = BTreeSet::new();
    let mut to_update = BTreeSet::new();
    let mut to_delete = BTreeSet::new();
    // 1. Existing slices keep the endpoints still wanted, with their new conditions.
    for slice in existing {
        let slice_name = name(slice);
        let mut kept = Vec::new();
        let mut endpoint_changed = false;
        for endpoint in &slice.endpoints {
            if let Some(want) = wanted.remove(&EndpointKey::of(endpoint)) {
                endpoint_changed |= want != *endpoint;
                kept.push(want);
            }
        }
        let labels_changed =
            non_reserved(slice.metadata.labels.as_ref()) != desired.template.service_labels;
        let mut copy = (*slice).clone();
        if endpoint_changed || kept.len() != slice.endpoints.len() {
            if kept.is_empty() {
                to_delete.insert(slice_name.clone());
            } else {
                copy.endpoints = kept;
                copy.metadata.labels = Some(desired.template.labels());
                to_update.insert(slice_name.clone());
            }
        } else if labels_changed {
            copy.metadata.labels = Some(desired.template.labels());
            to_update.insert(slice_name.clone());
        } else {
            unchanged.insert(slice_name.clone());
        }
        slices.insert(slice_name, copy);
    }
    // 2. New endpoints fill the slices being updated, fullest first.
    if !wanted.is_empty() && !to_update.is_empty() {
        let mut order: Vec<String> = to_update.iter().cloned().collect();
        order.sort_by_key(|n| std::cmp::Reverse(slices[n].endpoints.len()));
        for slice_name in order {
            if let Some(slice) = slices.get_mut(&slice_name) {
                while slice.endpoints.len() < max {
                    let Some(endpoint) = pop_first(&mut wanted) else {
                        break;
                    };
                    slice.endpoints.push(endpoint);
                }
            }
        }
    }
    // 3. The rest into the unchanged slice they fit best, or new slices.
    let mut create = Vec::new();
    while !wanted.is_empty() {
        let fill = if wanted.len() < max {
            best_fit(&unchanged, &slices, wanted.len(), max)
        } else {
            None
        };
        let mut slice = match &fill {
            Some(slice_name) => slices[slice_name].clone(),
            None => new_slice(desired, address_type, &group.ports),
        };
        while slice.endpoints.len() < max {
            let Some(endpoint) = pop_first(&mut wanted) else {
                break;
            };
            slice.endpoints.push(endpoint);
        }
        match fill {
            Some(slice_name) => {
                unchanged.remove(&slice_name);
                to_update.insert(slice_name.clone());
                slices.insert(slice_name, slice);
            }
            None => create.push(slice),
        }
    }
    Changes {
        create,
        update: to_update.iter().map(|n| slices[n].clone()).collect(),
        delete: to_delete.iter().map(|n| slices[n].clone()).collect(),
    }
}

/// upstream's `getSliceToFill`: the slice closest to full once `count` endpoints are added.
fn best_fit(
    candidates: &BTreeSet<String>,
    slices: &BTreeMap<String, EndpointSlice>,
    count: usize,
    max: usize,
) -> Option<String> {
    let mut best: Option<(usize, &String)> = None;
    for slice_name in candidates {
        let total = count + slices[slice_name].endpoints.len();
        if total > max {
            continue;
        }
        let room = max - total;
        if best.is_none_or(|(best_room, _)| room < best_room) {
            best = Some((room, slice_name));
            if room == 0 {
                break;
            }
        }
    }
    best.map(|(_, slice_name)| slice_name.clone())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
