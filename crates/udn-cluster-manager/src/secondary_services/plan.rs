//! The pure core: one Service, the pods of its namespace and the EndpointSlices there in;
//! the creates, updates and deletes of our slices and the Events to publish out. No I/O;
//! the result depends only on the inputs (pods and slices are sorted first, so not even on
//! their order).
//!
//! Our slices of a Service are the ones of its namespace labelled
//! `kubernetes.io/service-name: <service>` and `endpointslice.kubernetes.io/managed-by:`
//! [`MANAGED_BY`]; no other slice is ever touched. Placement follows Kubernetes'
//! reconciler: endpoints stay in the slice they are in, new ones fill the slices with room
//! (at most [`MAX_ENDPOINTS_PER_SLICE`]), a slice left empty is reused before one is
//! created, and only what is left over is deleted; a slice of an unknown address type, or
//! owned by an earlier Service of the same name, is deleted.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::desired::{Family, Group, Groups, PortsKey, Skipped, desired_groups, pod_key};
use super::opt_in::{OptIn, Serve, opt_in};
use super::{
    LABEL_HEADLESS, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY, MAX_ENDPOINTS_PER_SLICE,
};
use crate::events::Note;

/// Normal: slices were created, updated or deleted for a served network.
pub(crate) const REASON_UPDATED: &str = "EndpointSlicesUpdated";
/// Normal: the Service no longer opts in (or cannot be served); our slices were deleted.
pub(crate) const REASON_DELETED: &str = "EndpointSlicesDeleted";
/// The Event action of the Normal Events.
const ACTION: &str = "UpdateEndpointSlices";

/// One write.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SliceOp {
    /// Create this slice (it has a `generateName`).
    Create(Box<EndpointSlice>),
    /// Replace a slice with this one (name and resourceVersion of the existing one).
    Update(Box<EndpointSlice>),
    /// Delete the slice of this name.
    Delete {
        /// The slice's name.
        name: String,
    },
}

/// What to do for one Service.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ServicePlan {
    /// The writes, creates first, then updates, then deletes; empty when converged.
    pub(crate) ops: Vec<SliceOp>,
    /// Warning Events about the Service (published whether or not there are writes).
    pub(crate) warnings: Vec<Note>,
    /// The Normal Event to publish once the writes succeeded (`None` without writes).
    pub(crate) done: Option<Note>,
    /// Chosen pods left out because their network-status cannot be read (logged).
    pub(crate) skipped: Vec<Skipped>,
}

/// The plan of `service` given the pods of any namespace (only its own count) and the
/// EndpointSlices (only ours of this Service count).
pub(crate) fn plan_service(
    service: &Service,
    pods: &[&Pod],
    slices: &[&EndpointSlice],
) -> ServicePlan {
    let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
    let name = service.metadata.name.as_deref().unwrap_or_default();
    let ours = ours(namespace, name, slices);
    match opt_in(service) {
        OptIn::None => removal(
            &ours,
            "the Service has no isim.dev/network or k8s.v1.cni.cncf.io/networks annotation",
            Vec::new(),
        ),
        OptIn::Invalid(note) => ServicePlan {
            warnings: vec![note],
            ..ServicePlan::default()
        },
        OptIn::Unsupported(note) => removal(&ours, "the Service cannot be served", vec![note]),
        OptIn::Serve(serve) => serve_plan(service, serve, pods, &ours),
    }
}

/// The plan for Service `namespace/name` that no longer exists: our slices go (the garbage
/// collector would delete them too, as the Service owns them).
pub(crate) fn plan_service_gone(
    namespace: &str,
    name: &str,
    slices: &[&EndpointSlice],
) -> ServicePlan {
    ServicePlan {
        ops: ours(namespace, name, slices)
            .iter()
            .map(|slice| delete(slice))
            .collect(),
        ..ServicePlan::default()
    }
}

/// Our slices of Service `namespace/name`, sorted.
fn ours<'a>(namespace: &str, name: &str, slices: &[&'a EndpointSlice]) -> Vec<&'a EndpointSlice> {
    let mut ours: Vec<&EndpointSlice> = slices
        .iter()
        .copied()
        .filter(|slice| {
            let label = |key: &str| {
                slice
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(key))
                    .map(String::as_str)
            };
            slice.metadata.namespace.as_deref().unwrap_or_default() == namespace
                && label(LABEL_SERVICE_NAME) == Some(name)
                && label(LABEL_MANAGED_BY) == Some(MANAGED_BY)
        })
        .collect();
    ours.sort_by(|a, b| {
        a.metadata
            .name
            .cmp(&b.metadata.name)
            .then_with(|| as_json(a).cmp(&as_json(b)))
    });
    ours
}

/// `pods` sorted by namespace, name and uid, one per namespace and name.
fn sorted_pods<'a>(pods: &[&'a Pod]) -> Vec<&'a Pod> {
    let identity = |pod: &Pod| {
        (
            pod.metadata.namespace.clone(),
            pod.metadata.name.clone(),
            pod.metadata.uid.clone(),
        )
    };
    let mut sorted = pods.to_vec();
    sorted.sort_by(|a, b| match identity(a).cmp(&identity(b)) {
        Ordering::Equal => as_json(a).cmp(&as_json(b)),
        other => other,
    });
    sorted.dedup_by(|a, b| {
        a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
    });
    sorted
}

/// A total order for ties (objects that agree on their identity but not their content).
fn as_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn delete(slice: &EndpointSlice) -> SliceOp {
    SliceOp::Delete {
        name: slice.metadata.name.clone().unwrap_or_default(),
    }
}

/// Every slice of ours goes, with a Normal Event saying `why` when there were some.
fn removal(ours: &[&EndpointSlice], why: &str, warnings: Vec<Note>) -> ServicePlan {
    let ops: Vec<SliceOp> = ours.iter().map(|slice| delete(slice)).collect();
    let done = (!ops.is_empty()).then(|| Note {
        warning: false,
        reason: REASON_DELETED,
        action: ACTION,
        text: format!(
            "deleted {} secondary-network EndpointSlice(s): {why}",
            ops.len()
        ),
    });
    ServicePlan {
        ops,
        warnings,
        done,
        skipped: Vec::new(),
    }
}

fn serve_plan(
    service: &Service,
    serve: Serve,
    pods: &[&Pod],
    ours: &[&EndpointSlice],
) -> ServicePlan {
    let mut plan = ServicePlan {
        warnings: serve.warnings,
        ..ServicePlan::default()
    };
    // Being deleted: the garbage collector removes the slices; nothing new.
    if service.metadata.deletion_timestamp.is_some() {
        return plan;
    }
    let pods = sorted_pods(pods);
    let (groups, skipped) = desired_groups(service, &serve.network, &serve.pods, &pods);
    plan.skipped = skipped;
    let template = Template::of(service);
    let endpoints: usize = groups.values().map(|g| g.endpoints.len()).sum();
    let placement = place(&template, &groups, ours);
    plan.ops = placement.ops;
    if !plan.ops.is_empty() {
        let count = |f: fn(&SliceOp) -> bool| plan.ops.iter().filter(|op| f(op)).count();
        let created = count(|op| matches!(op, SliceOp::Create(_)));
        let updated = count(|op| matches!(op, SliceOp::Update(_)));
        let deleted = count(|op| matches!(op, SliceOp::Delete { .. }));
        plan.done = Some(Note {
            warning: false,
            reason: REASON_UPDATED,
            action: ACTION,
            text: format!(
                "network {} ({}): {endpoints} endpoint(s) in {} EndpointSlice(s); created {created}, updated {updated}, deleted {deleted}",
                serve.network.key(),
                serve.annotation,
                placement.slices,
            ),
        });
    }
    plan
}

/// What every slice of the Service carries.
#[derive(Clone, Debug, PartialEq)]
struct Template {
    namespace: String,
    service: String,
    headless: bool,
    owner: OwnerReference,
}

impl Template {
    fn of(service: &Service) -> Self {
        let name = service.metadata.name.clone().unwrap_or_default();
        let cluster_ip = service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref());
        Self {
            namespace: service.metadata.namespace.clone().unwrap_or_default(),
            service: name.clone(),
            headless: cluster_ip == Some("None"),
            owner: OwnerReference {
                api_version: "v1".to_owned(),
                kind: "Service".to_owned(),
                name,
                uid: service.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
        }
    }

    /// Whether `slice` belongs to this Service rather than an earlier one of the same name.
    fn owns(&self, slice: &EndpointSlice) -> bool {
        !slice
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|owner| owner.controller == Some(true) && owner.uid != self.owner.uid)
    }

    fn set_labels(&self, labels: &mut BTreeMap<String, String>) {
        labels.insert(LABEL_SERVICE_NAME.to_owned(), self.service.clone());
        labels.insert(LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned());
        if self.headless {
            labels.insert(LABEL_HEADLESS.to_owned(), String::new());
        } else {
            labels.remove(LABEL_HEADLESS);
        }
    }

    fn new_slice(
        &self,
        family: Family,
        ports: &[EndpointPort],
        endpoints: Vec<Endpoint>,
    ) -> EndpointSlice {
        let mut labels = BTreeMap::new();
        self.set_labels(&mut labels);
        EndpointSlice {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}-", self.service)),
                namespace: Some(self.namespace.clone()),
                labels: Some(labels),
                owner_references: Some(vec![self.owner.clone()]),
                ..ObjectMeta::default()
            },
            address_type: family.as_str().to_owned(),
            endpoints,
            ports: (!ports.is_empty()).then(|| ports.to_vec()),
        }
    }

    /// `existing` with this content, or `None` when it has it already.
    fn update(
        &self,
        existing: &EndpointSlice,
        ports: &[EndpointPort],
        endpoints: Vec<Endpoint>,
    ) -> Option<EndpointSlice> {
        let mut labels = existing.metadata.labels.clone().unwrap_or_default();
        self.set_labels(&mut labels);
        let current = existing.metadata.labels.as_ref() == Some(&labels)
            && existing.metadata.owner_references.as_deref()
                == Some(std::slice::from_ref(&self.owner))
            && existing.endpoints == endpoints
            && PortsKey::of(existing.ports.as_deref().unwrap_or_default()) == PortsKey::of(ports);
        if current {
            return None;
        }
        let mut updated = existing.clone();
        updated.metadata.labels = Some(labels);
        updated.metadata.owner_references = Some(vec![self.owner.clone()]);
        updated.metadata.managed_fields = None;
        updated.endpoints = endpoints;
        updated.ports = (!ports.is_empty()).then(|| ports.to_vec());
        Some(updated)
    }
}

/// The writes, and how many slices there are once they are done.
struct Placement {
    ops: Vec<SliceOp>,
    slices: usize,
}

/// A slice's endpoints to be.
struct Placed<'a> {
    existing: Option<&'a EndpointSlice>,
    family: Family,
    ports: &'a [EndpointPort],
    endpoints: Vec<Endpoint>,
}

/// Our slices sorted out: the ones to delete whatever happens (unknown address type, an
/// earlier Service's), the ones of a desired (family, ports), and the spare ones per family.
struct Existing<'a, 'g> {
    deletes: Vec<SliceOp>,
    matching: BTreeMap<&'g (Family, PortsKey), Vec<&'a EndpointSlice>>,
    spare: BTreeMap<Family, Vec<&'a EndpointSlice>>,
}

fn sort_out<'a, 'g>(
    template: &Template,
    groups: &'g Groups,
    ours: &[&'a EndpointSlice],
) -> Existing<'a, 'g> {
    let mut existing = Existing {
        deletes: Vec::new(),
        matching: BTreeMap::new(),
        spare: BTreeMap::new(),
    };
    for slice in ours.iter().copied() {
        let family = Family::parse(&slice.address_type);
        let Some(family) = family.filter(|_| template.owns(slice)) else {
            existing.deletes.push(delete(slice));
            continue;
        };
        let ports = PortsKey::of(slice.ports.as_deref().unwrap_or_default());
        match groups.get_key_value(&(family, ports)) {
            Some((key, _)) => existing.matching.entry(key).or_default().push(slice),
            None => existing.spare.entry(family).or_default().push(slice),
        }
    }
    existing
}

/// Puts the endpoints of `groups` into `ours` (reused where possible) and new slices.
fn place<'a>(template: &Template, groups: &'a Groups, ours: &[&'a EndpointSlice]) -> Placement {
    let Existing {
        mut deletes,
        mut matching,
        mut spare,
    } = sort_out(template, groups, ours);
    let mut placed: Vec<Placed<'a>> = Vec::new();
    let mut overflow: Vec<Placed<'a>> = Vec::new();
    for (key, group) in groups {
        let slices = matching.remove(key).unwrap_or_default();
        let (mut filled, rest) = keep_in_place(key.0, group, &slices, &mut spare);
        let mut rest = rest.into_iter();
        for slot in &mut filled {
            let room = MAX_ENDPOINTS_PER_SLICE.saturating_sub(slot.endpoints.len());
            slot.endpoints.extend(rest.by_ref().take(room));
        }
        placed.extend(filled);
        let rest: Vec<Endpoint> = rest.collect();
        overflow.extend(rest.chunks(MAX_ENDPOINTS_PER_SLICE).map(|chunk| Placed {
            existing: None,
            family: key.0,
            ports: &group.ports,
            endpoints: chunk.to_vec(),
        }));
    }
    // Left over: into a spare slice of the family (by name), else a new one.
    for spares in spare.values_mut() {
        spares.sort_by(|a, b| b.metadata.name.cmp(&a.metadata.name));
    }
    for mut slot in overflow {
        slot.existing = spare.get_mut(&slot.family).and_then(Vec::pop);
        placed.push(slot);
    }
    deletes.extend(spare.values().flatten().map(|slice| delete(slice)));
    let slices = placed.len();
    let mut ops = writes(template, placed);
    ops.extend(deletes);
    Placement { ops, slices }
}

/// The creates, then the updates, that give every placed slice its endpoints.
fn writes(template: &Template, placed: Vec<Placed<'_>>) -> Vec<SliceOp> {
    let mut creates = Vec::new();
    let mut updates = Vec::new();
    for mut slot in placed {
        slot.endpoints.sort_by_key(pod_key);
        match slot.existing {
            None => {
                let slice = template.new_slice(slot.family, slot.ports, slot.endpoints);
                creates.push(SliceOp::Create(Box::new(slice)));
            }
            Some(existing) => {
                if let Some(updated) = template.update(existing, slot.ports, slot.endpoints) {
                    updates.push(SliceOp::Update(Box::new(updated)));
                }
            }
        }
    }
    creates.extend(updates);
    creates
}

/// The endpoints of `group` that `slices` (of its family and ports) have already, kept
/// there (with their desired content, at most [`MAX_ENDPOINTS_PER_SLICE`] per slice); a
/// slice left with none becomes spare. Returns the slices kept and the endpoints to place.
fn keep_in_place<'a>(
    family: Family,
    group: &'a Group,
    slices: &[&'a EndpointSlice],
    spare: &mut BTreeMap<Family, Vec<&'a EndpointSlice>>,
) -> (Vec<Placed<'a>>, Vec<Endpoint>) {
    let mut remaining = group.endpoints.clone();
    let mut kept_slices = Vec::new();
    for slice in slices.iter().copied() {
        let mut kept = Vec::new();
        for endpoint in &slice.endpoints {
            if kept.len() == MAX_ENDPOINTS_PER_SLICE {
                break;
            }
            if let Some(desired) = remaining.remove(&pod_key(endpoint)) {
                kept.push(desired);
            }
        }
        if kept.is_empty() {
            spare.entry(family).or_default().push(slice);
        } else {
            kept_slices.push(Placed {
                existing: Some(slice),
                family,
                ports: &group.ports,
                endpoints: kept,
            });
        }
    }
    (kept_slices, remaining.into_values().collect())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
