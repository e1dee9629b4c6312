//! The plain views of Services and EndpointSlices the load balancers are built from.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// Kubernetes' managed-by value of its EndpointSlice controller.
const DEFAULT_SLICE_CONTROLLER: &str = "endpointslice-controller.k8s.io";
/// The mirror controller's managed-by value.
const MIRROR_SLICE_CONTROLLER: &str = "endpointslice-mirror-controller.k8s.ovn.org";
const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
const LABEL_UDN_SERVICE_NAME: &str = "k8s.ovn.org/service-name";
const ANNOTATION_NETWORK: &str = "k8s.ovn.org/endpointslice-network";
/// Kubernetes' default `sessionAffinityConfig.clientIP.timeoutSeconds`.
const DEFAULT_AFFINITY_TIMEOUT: u32 = 10_800;

/// One Service port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServicePortView {
    /// Port name (empty for a single unnamed port).
    pub name: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// The Service port.
    pub port: u16,
    /// `nodePort` (none when unset or 0).
    pub node_port: Option<u16>,
}

/// What the load balancers need of a Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceView {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.clusterIPs` (none for a headless or ExternalName Service).
    pub cluster_ips: Vec<IpAddr>,
    /// Ports.
    pub ports: Vec<ServicePortView>,
    /// `affinity_timeout` for session affinity `ClientIP`.
    pub affinity_timeout: Option<u32>,
    /// `spec.externalIPs`, then the `status.loadBalancer.ingress` IPs of a LoadBalancer
    /// Service (upstream `GetExternalAndLBIPs`).
    pub external_ips: Vec<IpAddr>,
    /// `externalTrafficPolicy: Local`.
    pub etp_local: bool,
    /// `internalTrafficPolicy: Local`.
    pub itp_local: bool,
}

impl ServiceView {
    /// `ns/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The view of `service`, `None` when it has no name.
pub fn service_view(service: &Service) -> Option<ServiceView> {
    let namespace = service.metadata.namespace.clone()?;
    let name = service.metadata.name.clone()?;
    let spec = service.spec.as_ref()?;
    let external_name = spec.type_.as_deref() == Some("ExternalName");
    let mut ips: Vec<String> = spec.cluster_ips.clone().unwrap_or_default();
    if ips.is_empty()
        && let Some(ip) = &spec.cluster_ip
    {
        ips.push(ip.clone());
    }
    let cluster_ips = if external_name {
        Vec::new()
    } else {
        ips.iter().filter_map(|ip| ip.parse().ok()).collect()
    };
    let ports = spec
        .ports
        .iter()
        .flatten()
        .filter_map(|p| {
            Some(ServicePortView {
                name: p.name.clone().unwrap_or_default(),
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
                port: u16::try_from(p.port).ok()?,
                node_port: p
                    .node_port
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| *n != 0),
            })
        })
        .collect();
    let affinity_timeout = (spec.session_affinity.as_deref() == Some("ClientIP")).then(|| {
        spec.session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref())
            .and_then(|c| c.timeout_seconds)
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(DEFAULT_AFFINITY_TIMEOUT)
    });
    let mut external_ips: Vec<IpAddr> = spec
        .external_ips
        .iter()
        .flatten()
        .filter_map(|ip| ip.parse().ok())
        .collect();
    if spec.type_.as_deref() == Some("LoadBalancer") {
        let ingress = service
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref());
        external_ips.extend(
            ingress
                .into_iter()
                .flatten()
                .filter_map(|i| i.ip.as_deref()?.parse::<IpAddr>().ok()),
        );
    }
    Some(ServiceView {
        namespace,
        name,
        cluster_ips,
        ports,
        affinity_timeout,
        external_ips,
        etp_local: spec.external_traffic_policy.as_deref() == Some("Local"),
        itp_local: spec.internal_traffic_policy.as_deref() == Some("Local"),
    })
}

/// One endpoint of a slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointView {
    /// Addresses.
    pub addresses: Vec<IpAddr>,
    /// `conditions.ready` (unset means ready).
    pub ready: bool,
    /// `conditions.serving` (unset means `ready`).
    pub serving: bool,
    /// `conditions.terminating`.
    pub terminating: bool,
    /// `nodeName`.
    pub node: Option<String>,
}

/// What the load balancers need of an EndpointSlice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceView {
    /// Namespace.
    pub namespace: String,
    /// The Service (`kubernetes.io/service-name` on default slices,
    /// `k8s.ovn.org/service-name` on mirrors).
    pub service: String,
    /// The network a mirror's addresses belong to; `None` for a default slice.
    pub network: Option<String>,
    /// Ports: (name, port, protocol).
    pub ports: Vec<(String, u16, String)>,
    /// Endpoints.
    pub endpoints: Vec<EndpointView>,
}

/// The view of `slice`, `None` unless Kubernetes' controller or the mirror manages it.
pub fn slice_view(slice: &EndpointSlice) -> Option<SliceView> {
    let labels = slice.metadata.labels.as_ref()?;
    let (service, network) = match labels.get(LABEL_MANAGED_BY).map(String::as_str) {
        Some(DEFAULT_SLICE_CONTROLLER) => (labels.get(LABEL_SERVICE_NAME)?.clone(), None),
        Some(MIRROR_SLICE_CONTROLLER) => (
            labels.get(LABEL_UDN_SERVICE_NAME)?.clone(),
            Some(
                slice
                    .metadata
                    .annotations
                    .as_ref()?
                    .get(ANNOTATION_NETWORK)?
                    .clone(),
            ),
        ),
        _ => return None,
    };
    if !matches!(slice.address_type.as_str(), "IPv4" | "IPv6") {
        return None;
    }
    let ports = slice
        .ports
        .iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p.name.clone().unwrap_or_default(),
                u16::try_from(p.port?).ok()?,
                p.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
            ))
        })
        .collect();
    let endpoints = slice
        .endpoints
        .iter()
        .map(|e| {
            let c = e.conditions.clone().unwrap_or_default();
            let ready = c.ready.unwrap_or(true);
            EndpointView {
                addresses: e.addresses.iter().filter_map(|a| a.parse().ok()).collect(),
                ready,
                serving: c.serving.unwrap_or(ready),
                terminating: c.terminating.unwrap_or(false),
                node: e.node_name.clone(),
            }
        })
        .collect();
    Some(SliceView {
        namespace: slice.metadata.namespace.clone()?,
        service,
        network,
        ports,
        endpoints,
    })
}
