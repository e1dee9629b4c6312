//! Which objects to reconcile when a watched object changes. The watch tasks apply each
//! event to its cache first and then call these, so a reconcile always sees the change.

use std::collections::BTreeSet;

use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::selector::label_selector;

use super::shared::Owner;
use super::stores::Stores;

/// Kinds of the owner references we follow.
const KIND_UDN: &str = "UserDefinedNetwork";
const KIND_CUDN: &str = "ClusterUserDefinedNetwork";

/// The queues of the three controllers.
#[derive(Clone, Debug)]
pub(crate) struct Triggers {
    /// UDN controller.
    pub(crate) udns: UnboundedSender<ObjectRef<UserDefinedNetwork>>,
    /// CUDN controller.
    pub(crate) cudns: UnboundedSender<ObjectRef<ClusterUserDefinedNetwork>>,
    /// NAD network-ID controller.
    pub(crate) nads: UnboundedSender<ObjectRef<NetworkAttachmentDefinition>>,
}

impl Triggers {
    /// Queue `owners` (closed queues, during shutdown, are ignored).
    pub(crate) fn owners(&self, owners: impl IntoIterator<Item = Owner>) {
        for owner in owners {
            let _ = match owner {
                Owner::Udn { namespace, name } => self
                    .udns
                    .unbounded_send(ObjectRef::new(&name).within(&namespace))
                    .map_err(drop),
                Owner::Cudn { name } => self
                    .cudns
                    .unbounded_send(ObjectRef::new(&name))
                    .map_err(drop),
            };
        }
    }

    /// Queue a NAD for the network-ID controller.
    pub(crate) fn nad(&self, nad: &NetworkAttachmentDefinition) {
        let _ = self.nads.unbounded_send(ObjectRef::from_obj(nad));
    }

    /// Queue the NADs (`namespace/name`) that waited for an exhausted pool, and the cached
    /// UDN/CUDN that would own each (a NAD that could not be created has no other trace).
    pub(crate) fn pool_waiters(&self, waiting: &BTreeSet<String>, stores: &Stores) {
        for key in waiting {
            let Some((namespace, name)) = key.split_once('/') else {
                continue;
            };
            if let Some(nad) = stores.nad(namespace, name) {
                self.nad(&nad);
            }
            let meta = ObjectMeta {
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            };
            self.owners(nad_owners(&meta, false, stores));
        }
    }
}

/// Owners to reconcile when NAD `nad` changes: its controller owner and any UDN/CUDN of the
/// same name (a foreign NAD blocking them may have changed). A deleted NAD also wakes every
/// UDN of its namespace and every CUDN (it may have been the namespace's primary network).
pub(crate) fn nad_owners(nad: &ObjectMeta, deleted: bool, stores: &Stores) -> BTreeSet<Owner> {
    let namespace = nad.namespace.clone().unwrap_or_default();
    let name = nad.name.clone().unwrap_or_default();
    let mut owners = BTreeSet::new();
    if let Some(owner) = nad
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
    {
        match owner.kind.as_str() {
            KIND_UDN => {
                owners.insert(Owner::Udn {
                    namespace: namespace.clone(),
                    name: owner.name.clone(),
                });
            }
            KIND_CUDN => {
                owners.insert(Owner::Cudn {
                    name: owner.name.clone(),
                });
            }
            _ => {}
        }
    }
    owners.insert(Owner::Udn {
        namespace: namespace.clone(),
        name: name.clone(),
    });
    owners.insert(Owner::Cudn { name });
    if deleted {
        owners.extend(udns_in(stores, &namespace));
        owners.extend(all_cudns(stores));
    }
    retain_cached(owners, stores)
}

/// Owners to reconcile when namespace `ns` changes: its UDNs, and every CUDN that selects
/// it or holds a NAD in it.
pub(crate) fn namespace_owners(
    ns: &PartialObjectMeta<Namespace>,
    stores: &Stores,
) -> BTreeSet<Owner> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    let labels = ns.metadata.labels.clone().unwrap_or_default();
    let mut owners: BTreeSet<Owner> = udns_in(stores, &name).collect();
    let holders: BTreeSet<String> = stores
        .nads_in(&name)
        .iter()
        .flat_map(|nad| nad.metadata.owner_references.clone().unwrap_or_default())
        .filter(|r| r.controller == Some(true) && r.kind == KIND_CUDN)
        .map(|r| r.uid)
        .collect();
    for cudn in stores.cudns.state() {
        let selects = label_selector(&cudn.spec.namespace_selector)
            .is_ok_and(|selector| selector.matches(&labels));
        let holds = cudn
            .metadata
            .uid
            .as_ref()
            .is_some_and(|uid| holders.contains(uid));
        if selects || holds {
            owners.insert(Owner::Cudn {
                name: cudn.metadata.name.clone().unwrap_or_default(),
            });
        }
    }
    owners
}

/// Every cached UDN and CUDN (after a cache relist, when deletions may have been missed).
pub(crate) fn all_owners(stores: &Stores) -> BTreeSet<Owner> {
    stores
        .udns
        .state()
        .iter()
        .map(|udn| udn_owner(&udn.metadata))
        .chain(all_cudns(stores))
        .collect()
}

/// The owner key of a UDN.
pub(crate) fn udn_owner(meta: &ObjectMeta) -> Owner {
    Owner::Udn {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
    }
}

fn udns_in<'a>(stores: &'a Stores, namespace: &'a str) -> impl Iterator<Item = Owner> + 'a {
    stores
        .udns
        .state_filter(|udn| udn.metadata.namespace.as_deref() == Some(namespace))
        .into_iter()
        .map(|udn| udn_owner(&udn.metadata))
}

fn all_cudns(stores: &Stores) -> impl Iterator<Item = Owner> {
    stores.cudns.state().into_iter().map(|cudn| Owner::Cudn {
        name: cudn.metadata.name.clone().unwrap_or_default(),
    })
}

/// Only owners that exist in the caches (the controllers skip the others anyway).
fn retain_cached(owners: BTreeSet<Owner>, stores: &Stores) -> BTreeSet<Owner> {
    owners
        .into_iter()
        .filter(|owner| match owner {
            Owner::Udn { namespace, name } => stores
                .udns
                .get(&ObjectRef::new(name).within(namespace))
                .is_some(),
            Owner::Cudn { name } => stores.cudns.get(&ObjectRef::new(name)).is_some(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector::{self, store::Writer};
    use kube::runtime::watcher::Event;
    use serde_json::json;
    use udn_test_support::{cudn as cudn_builder, l3_udn};

    use super::*;
    use crate::network::fixtures::{cudn, nad, udn};

    struct Caches {
        stores: Stores,
        udns: Writer<UserDefinedNetwork>,
        cudns: Writer<ClusterUserDefinedNetwork>,
        nads: Writer<NetworkAttachmentDefinition>,
    }

    fn caches() -> Caches {
        let (udns, udn_writer) = reflector::store();
        let (cudns, cudn_writer) = reflector::store();
        let (nads, nad_writer) = reflector::store();
        let (namespaces, _) = reflector::store();
        let (pods, _) = reflector::store();
        Caches {
            stores: Stores {
                udns,
                cudns,
                nads,
                namespaces,
                pods,
            },
            udns: udn_writer,
            cudns: cudn_writer,
            nads: nad_writer,
        }
    }

    fn namespace(name: &str, labels: serde_json::Value) -> PartialObjectMeta<Namespace> {
        serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": name, "labels": labels},
        }))
        .unwrap()
    }

    fn udn_owner_of(namespace: &str, name: &str) -> Owner {
        Owner::Udn {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn setup() -> Caches {
        let mut caches = caches();
        for (ns, name) in [("blue", "net"), ("blue", "other"), ("red", "net")] {
            let object = udn(l3_udn(ns, name, "Secondary", &["10.1.0.0/16"]), name);
            caches.udns.apply_watcher_event(&Event::Apply(object));
        }
        let tenant = cudn(
            cudn_builder(
                "tenant",
                json!({"matchLabels": {"tenant": "x"}}),
                json!({"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.2.0.0/16"]}}),
            ),
            "c1",
        );
        caches.cudns.apply_watcher_event(&Event::Apply(tenant));
        let mut owned = (*nad("green", "tenant", "{}", Some("c1"))).clone();
        if let Some(refs) = owned.metadata.owner_references.as_mut() {
            refs[0].kind = "ClusterUserDefinedNetwork".into();
        }
        caches.nads.apply_watcher_event(&Event::Apply(owned));
        caches
    }

    #[test]
    fn nad_events_wake_owner_and_same_name_objects() {
        let caches = setup();
        let owned = nad("blue", "net", "{}", Some("u1"));
        assert_eq!(
            nad_owners(&owned.metadata, false, &caches.stores),
            BTreeSet::from([udn_owner_of("blue", "net")])
        );
        let foreign_named_tenant = nad("blue", "tenant", "{}", None);
        assert_eq!(
            nad_owners(&foreign_named_tenant.metadata, false, &caches.stores),
            BTreeSet::from([Owner::Cudn {
                name: "tenant".into()
            }])
        );
        let deleted = nad("blue", "unrelated", "{}", None);
        assert_eq!(
            nad_owners(&deleted.metadata, true, &caches.stores),
            BTreeSet::from([
                udn_owner_of("blue", "net"),
                udn_owner_of("blue", "other"),
                Owner::Cudn {
                    name: "tenant".into()
                },
            ])
        );
    }

    #[test]
    fn namespace_events_wake_its_udns_and_selecting_or_holding_cudns() {
        let caches = setup();
        assert_eq!(
            namespace_owners(&namespace("red", json!({})), &caches.stores),
            BTreeSet::from([udn_owner_of("red", "net")])
        );
        let cudn = Owner::Cudn {
            name: "tenant".into(),
        };
        assert_eq!(
            namespace_owners(&namespace("new", json!({"tenant": "x"})), &caches.stores),
            BTreeSet::from([cudn.clone()])
        );
        // No longer matching, but it still holds the CUDN's NAD.
        assert_eq!(
            namespace_owners(&namespace("green", json!({})), &caches.stores),
            BTreeSet::from([cudn])
        );
        assert_eq!(all_owners(&caches.stores).len(), 4);
    }
}
