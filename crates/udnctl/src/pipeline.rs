//! The offline render: admitted objects in, NADs, network IDs and node host subnets out.
//! Pure (no I/O); the same steps the cluster-manager takes against a live cluster, in the
//! order the objects were given.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ipnetwork::IpNetwork;
use udn_api::annotations::NadNetworkAnnotations;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::{ClusterUserDefinedNetwork, NetworkTopology, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;
use udn_api::netconf::SubnetEntry;
use udn_api::render::{NetworkSource, is_primary, network_name, render_nad};
use udn_api::selector::label_selector;
use udn_ipam::{HostSubnetAllocator, NetworkIdLimit, NetworkPools, required_tunnel_keys};

use crate::input::Document;
use crate::objects::{NamespaceInfo, Object, Validators, decode};

/// One problem with the input, printed as one line: where, then what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    origin: String,
    message: String,
}

impl Problem {
    /// A problem found in `origin` (a file, `FILE#N`, or a flag).
    pub(crate) fn new(origin: String, message: String) -> Self {
        Self { origin, message }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// What the cluster would hold after the input is applied.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// NADs, in input order (a CUDN's in namespace order).
    pub(crate) nads: Vec<NetworkAttachmentDefinition>,
    /// Network name -> network ID.
    pub(crate) network_ids: BTreeMap<String, u32>,
    /// Node -> network name -> host subnets (Layer3 networks only).
    pub(crate) node_subnets: BTreeMap<String, BTreeMap<String, Vec<IpNetwork>>>,
    /// Remarks that are not errors (e.g. a CUDN selecting no namespace).
    pub(crate) notes: Vec<String>,
}

/// Validate and render every document; all problems or the result.
pub(crate) fn render(
    documents: &[Document],
    cluster: &ClusterConfig,
    nodes: u32,
) -> Result<Rendered, Vec<Problem>> {
    let validators = Validators::new().map_err(|p| vec![p])?;
    let mut problems = Vec::new();
    let mut admitted = Vec::new();
    let mut seen = BTreeSet::new();
    for doc in documents {
        match decode(doc, &validators) {
            Ok(object) => match duplicate_message(&object, &mut seen) {
                Some(message) => problems.push(Problem::new(doc.origin.clone(), message)),
                None => admitted.push((doc.origin.clone(), object)),
            },
            Err(mut found) => problems.append(&mut found),
        }
    }
    let namespaces: BTreeMap<String, NamespaceInfo> = admitted
        .iter()
        .filter_map(|(_, object)| match object {
            Object::Namespace(ns) => Some((ns.name.clone(), ns.clone())),
            Object::Udn(_) | Object::Cudn(_) => None,
        })
        .collect();

    let mut state = RenderState::new(cluster);
    for (origin, object) in &admitted {
        let found = match object {
            Object::Namespace(_) => Vec::new(),
            Object::Udn(udn) => state.udn(udn, &namespaces),
            Object::Cudn(cudn) => state.cudn(cudn, &namespaces),
        };
        problems.extend(
            found
                .into_iter()
                .map(|message| Problem::new(origin.clone(), message)),
        );
    }
    problems.extend(state.allocate_node_subnets(nodes));
    if problems.is_empty() {
        return Ok(state.rendered);
    }
    // Report in input order, whichever step found the problem.
    let position = |p: &Problem| documents.iter().position(|d| d.origin == p.origin);
    problems.sort_by_key(|p| position(p).unwrap_or(usize::MAX));
    Err(problems)
}

/// The API server's AlreadyExists message when the same object appears twice.
fn duplicate_message(object: &Object, seen: &mut BTreeSet<(String, String)>) -> Option<String> {
    let (resource, key, name) = match object {
        Object::Namespace(ns) => ("namespaces", ns.name.clone(), ns.name.clone()),
        Object::Udn(udn) => {
            let name = udn.metadata.name.clone().unwrap_or_default();
            let ns = udn.metadata.namespace.clone().unwrap_or_default();
            (
                "userdefinednetworks.k8s.ovn.org",
                format!("{ns}/{name}"),
                name,
            )
        }
        Object::Cudn(cudn) => {
            let name = cudn.metadata.name.clone().unwrap_or_default();
            ("clusteruserdefinednetworks.k8s.ovn.org", name.clone(), name)
        }
    };
    (!seen.insert((resource.to_owned(), key)))
        .then(|| format!("{resource} {name:?} already exists"))
}

/// Allocators and results while rendering networks in order.
struct RenderState<'c> {
    cluster: &'c ClusterConfig,
    /// Network IDs and tunnel keys, sized and laid out as cluster-manager's.
    pools: NetworkPools,
    /// Namespace -> name of its primary NAD.
    primary_nads: BTreeMap<String, String>,
    /// Layer3 networks in first-seen order with their cluster subnets.
    layer3: Vec<(String, Vec<SubnetEntry>)>,
    rendered: Rendered,
}

impl<'c> RenderState<'c> {
    fn new(cluster: &'c ClusterConfig) -> Self {
        Self {
            cluster,
            pools: NetworkPools::new(NetworkIdLimit::for_masquerade_subnets(
                cluster.masquerade_subnets(),
            )),
            primary_nads: BTreeMap::new(),
            layer3: Vec::new(),
            rendered: Rendered::default(),
        }
    }

    fn udn(
        &mut self,
        udn: &UserDefinedNetwork,
        namespaces: &BTreeMap<String, NamespaceInfo>,
    ) -> Vec<String> {
        let source = NetworkSource::Udn(udn);
        let subject = format!(
            "UserDefinedNetwork {}/{}",
            source.namespace(),
            source.name()
        );
        let Some(namespace) = namespaces.get(source.namespace()) else {
            return vec![format!(
                "{subject}: namespaces {:?} not found",
                source.namespace()
            )];
        };
        match self.nad(&source, namespace) {
            Ok(()) => Vec::new(),
            Err(message) => vec![condition(&subject, "SyncError", &message)],
        }
    }

    fn cudn(
        &mut self,
        cudn: &ClusterUserDefinedNetwork,
        namespaces: &BTreeMap<String, NamespaceInfo>,
    ) -> Vec<String> {
        let name = cudn.metadata.name.clone().unwrap_or_default();
        let subject = format!("ClusterUserDefinedNetwork {name}");
        let selector = match label_selector(&cudn.spec.namespace_selector) {
            Ok(selector) => selector,
            Err(err) => return vec![format!("{subject}: spec.namespaceSelector: {err}")],
        };
        let selected: Vec<&NamespaceInfo> = namespaces
            .values()
            .filter(|ns| selector.matches(&ns.labels))
            .collect();
        if selected.is_empty() {
            self.rendered
                .notes
                .push(format!("{subject} selects no namespace of the input"));
        }
        selected
            .into_iter()
            .filter_map(|namespace| {
                let source = NetworkSource::Cudn {
                    cudn,
                    namespace: &namespace.name,
                };
                self.nad(&source, namespace).err()
            })
            .map(|message| condition(&subject, "NetworkAttachmentDefinitionSyncError", &message))
            .collect()
    }

    /// Render, check and record the NAD of `source` in `namespace` (upstream `updateNAD`).
    fn nad(&mut self, source: &NetworkSource<'_>, namespace: &NamespaceInfo) -> Result<(), String> {
        let primary = is_primary(source.spec());
        if primary && !namespace.labels.contains_key(LABEL_PRIMARY_UDN_NAMESPACE) {
            return Err(format!(
                "invalid primary network state for namespace {:?}: a valid primary user defined \
                 network or network attachment definition custom resource, and required namespace \
                 label {LABEL_PRIMARY_UDN_NAMESPACE:?} must both be present",
                namespace.name
            ));
        }
        let mut nad = render_nad(source, self.cluster)
            .map_err(|err| format!("failed to generate NetworkAttachmentDefinition: {err}"))?;
        if primary {
            if let Some(existing) = self.primary_nads.get(&namespace.name) {
                return Err(format!(
                    "primary network already exist in namespace {:?}: {existing:?}",
                    namespace.name
                ));
            }
            self.primary_nads
                .insert(namespace.name.clone(), source.name().to_owned());
        }
        let network = network_name(source);
        let annotations = self.allocate_ids(source, &network)?;
        nad.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .extend(annotations);
        if let Some(layer3) = source.spec().layer3()
            && !self.layer3.iter().any(|(name, _)| *name == network)
        {
            let entries = layer3_entries(layer3).map_err(|err| err.to_string())?;
            self.layer3.push((network, entries));
        }
        self.rendered.nads.push(nad);
        Ok(())
    }

    /// Network ID and tunnel keys of `network`, as the NAD annotations that carry them.
    fn allocate_ids(
        &mut self,
        source: &NetworkSource<'_>,
        network: &str,
    ) -> Result<BTreeMap<String, String>, String> {
        let id = self
            .pools
            .allocate_id(network)
            .map_err(|err| err.to_string())?;
        let spec = source.spec();
        let count = required_tunnel_keys(
            false,
            spec.topology() == NetworkTopology::Layer2,
            is_primary(spec),
        );
        let tunnel_keys = self
            .pools
            .allocate_keys(network, id, count)
            .map_err(|err| err.to_string())?;
        self.rendered.network_ids.insert(network.to_owned(), id);
        Ok(NadNetworkAnnotations {
            network_name: Some(network.to_owned()),
            network_id: Some(id),
            tunnel_keys,
        }
        .to_annotations())
    }

    /// Give every example node one host subnet per family of every Layer3 network.
    fn allocate_node_subnets(&mut self, nodes: u32) -> Vec<Problem> {
        let mut problems = Vec::new();
        let node_names: Vec<String> = (1..=nodes).map(|i| format!("node-{i}")).collect();
        for name in &node_names {
            self.rendered.node_subnets.entry(name.clone()).or_default();
        }
        for (network, entries) in &self.layer3 {
            let mut allocator = HostSubnetAllocator::new();
            for entry in entries {
                if let Err(err) = allocator.add_range(entry.cidr, entry.host_subnet_length) {
                    problems.push(Problem::new(network.clone(), err.to_string()));
                }
            }
            for node in &node_names {
                match allocator.allocate(node) {
                    Ok(subnets) => {
                        if let Some(per_node) = self.rendered.node_subnets.get_mut(node) {
                            per_node.insert(network.clone(), subnets);
                        }
                    }
                    Err(err) => problems.push(Problem::new(
                        network.clone(),
                        format!(
                            "error allocating networks for network: {network}, node {node}: {err}"
                        ),
                    )),
                }
            }
        }
        problems
    }
}

/// The status condition upstream would set for a failed sync, as one line.
fn condition(subject: &str, reason: &str, message: &str) -> String {
    format!("{subject}: condition NetworkCreated=False, reason {reason}: {message}")
}

/// The Layer3 cluster subnets with their host lengths (24 / 64 when unset).
fn layer3_entries(
    layer3: &udn_api::crd::Layer3Config,
) -> Result<Vec<SubnetEntry>, udn_api::netconf::SubnetParseError> {
    layer3
        .subnets
        .iter()
        .map(|subnet| match subnet.host_subnet {
            Some(host) => format!("{}/{host}", subnet.cidr.0).parse(),
            None => subnet.cidr.0.parse(),
        })
        .collect()
}
