//! The reflector caches the controllers read, and the input snapshots built from them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::render::is_primary;

use super::cudn_plan::{CudnInputs, NamespaceInfo, selected_namespaces};
use super::nad_plan::{NadTarget, controlled_by};
use super::pod_use::{PodUse, pod_use};
use super::udn_plan::UdnInputs;

/// Read handles of every cache (cheap to clone).
#[derive(Clone)]
pub(crate) struct Stores {
    /// UserDefinedNetworks.
    pub(crate) udns: Store<UserDefinedNetwork>,
    /// ClusterUserDefinedNetworks.
    pub(crate) cudns: Store<ClusterUserDefinedNetwork>,
    /// NetworkAttachmentDefinitions.
    pub(crate) nads: Store<NetworkAttachmentDefinition>,
    /// Namespace metadata.
    pub(crate) namespaces: Store<PartialObjectMeta<Namespace>>,
    /// Pod metadata.
    pub(crate) pods: Store<PartialObjectMeta<Pod>>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("udns", &self.udns.len())
            .field("cudns", &self.cudns.len())
            .field("nads", &self.nads.len())
            .field("namespaces", &self.namespaces.len())
            .field("pods", &self.pods.len())
            .finish()
    }
}

impl Stores {
    /// The NAD `namespace/name`.
    pub(crate) fn nad(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<NetworkAttachmentDefinition>> {
        self.nads.get(&ObjectRef::new(name).within(namespace))
    }

    /// Every NAD of `namespace`.
    pub(crate) fn nads_in(&self, namespace: &str) -> Vec<Arc<NetworkAttachmentDefinition>> {
        self.nads
            .state_filter(|nad| nad.metadata.namespace.as_deref() == Some(namespace))
    }

    /// The labels of `namespace`, `None` when it is not cached.
    pub(crate) fn namespace_labels(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces
            .get(&ObjectRef::new(namespace))
            .map(|ns| ns.metadata.labels.clone().unwrap_or_default())
    }

    /// Every namespace.
    pub(crate) fn namespace_infos(&self) -> BTreeMap<String, NamespaceInfo> {
        self.namespaces
            .state()
            .iter()
            .map(|ns| {
                (
                    ns.metadata.name.clone().unwrap_or_default(),
                    NamespaceInfo {
                        labels: ns.metadata.labels.clone().unwrap_or_default(),
                        terminating: ns.metadata.deletion_timestamp.is_some(),
                    },
                )
            })
            .collect()
    }

    /// Users of NAD `namespace/name` among the cached pods.
    pub(crate) fn pod_use(&self, namespace: &str, name: &str) -> PodUse {
        let pods = self
            .pods
            .state_filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace));
        pod_use(namespace, name, pods.iter().map(|pod| &pod.metadata))
    }

    /// NADs controlled by the object with `uid`, by namespace.
    pub(crate) fn owned_nads(
        &self,
        uid: &str,
    ) -> BTreeMap<String, Arc<NetworkAttachmentDefinition>> {
        self.nads
            .state_filter(|nad| controlled_by(&nad.metadata, uid))
            .into_iter()
            .map(|nad| (nad.metadata.namespace.clone().unwrap_or_default(), nad))
            .collect()
    }

    /// The target of a NAD named `name` in `namespace`; the namespace's NADs are only
    /// collected when a primary network would create one.
    fn target(&self, namespace: &str, name: &str, primary: bool) -> NadTarget {
        let existing = self.nad(namespace, name);
        let namespace_nads = if primary && existing.is_none() {
            self.nads_in(namespace)
        } else {
            Vec::new()
        };
        NadTarget {
            namespace_labels: self.namespace_labels(namespace),
            existing,
            namespace_nads,
        }
    }

    /// The inputs of one UDN.
    pub(crate) fn udn_inputs(&self, udn: Arc<UserDefinedNetwork>) -> UdnInputs {
        let namespace = udn.metadata.namespace.clone().unwrap_or_default();
        let name = udn.metadata.name.clone().unwrap_or_default();
        let target = self.target(&namespace, &name, is_primary(&udn.spec));
        let pods = if udn.metadata.deletion_timestamp.is_some() {
            self.pod_use(&namespace, &name)
        } else {
            PodUse::default()
        };
        UdnInputs { udn, target, pods }
    }

    /// The inputs of one CUDN; `owned` are its NADs (from the cache, or from the API server
    /// while it is deleted).
    pub(crate) fn cudn_inputs(
        &self,
        cudn: Arc<ClusterUserDefinedNetwork>,
        owned: BTreeMap<String, Arc<NetworkAttachmentDefinition>>,
    ) -> CudnInputs {
        let name = cudn.metadata.name.clone().unwrap_or_default();
        let namespaces = self.namespace_infos();
        let selected = if cudn.metadata.deletion_timestamp.is_some() {
            Default::default()
        } else {
            selected_namespaces(&cudn, &namespaces).unwrap_or_default()
        };
        let primary = is_primary(&cudn.spec.network);
        let targets = selected
            .iter()
            .map(|namespace| (namespace.clone(), self.target(namespace, &name, primary)))
            .collect();
        let pods = owned
            .keys()
            .filter(|namespace| !selected.contains(*namespace))
            .map(|namespace| (namespace.clone(), self.pod_use(namespace, &name)))
            .collect();
        CudnInputs {
            cudn,
            namespaces,
            owned,
            targets,
            pods,
        }
    }
}
