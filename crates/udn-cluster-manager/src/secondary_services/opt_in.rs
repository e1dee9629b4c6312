//! Which network a Service opts into, and which pods back it: the two annotations read, and
//! every way they can be wrong (each with the Warning Event that says so).
//!
//! - Neither annotation, or only empty values: not opted in (our slices are deleted).
//! - Both: a Warning, nothing else changes.
//! - A value that does not parse (or a selection of zero or several networks): a Warning
//!   naming the annotation, nothing else changes (the slices stay as they were).
//! - A Service the opt-in does not fit (`isim.dev/network` on a Service with a cluster IP
//!   or a selector; `k8s.v1.cni.cncf.io/networks` on one without a selector; any opt-in on
//!   an `ExternalName` Service): a Warning saying why, and no slices.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use udn_api::annotations::network_selection::parse_network_selection_for_pod;
use udn_api::names::ANNOTATION_NETWORKS;

use super::attachment::Network;
use super::{ANNOTATION_ISIM_NETWORK, LABEL_ENDPOINT_CONTROLLER_NAME, MANAGED_BY, error_chain};
use crate::events::Note;

/// Warning: an opt-in annotation does not parse.
pub(crate) const REASON_INVALID: &str = "InvalidNetworkAnnotation";
/// Warning: both opt-in annotations are set.
pub(crate) const REASON_CONFLICT: &str = "ConflictingNetworkAnnotations";
/// Warning: the opt-in does not fit the Service.
pub(crate) const REASON_UNSUPPORTED: &str = "UnsupportedServiceForNetwork";
/// Warning: a selector Service lacks the KEP-4770 label.
pub(crate) const REASON_LABEL: &str = "EndpointControllerLabelMissing";
/// The Event action of the opt-in warnings.
const ACTION: &str = "ReadNetworkAnnotation";

/// The pod labels ihcsim's Services filter on, in order of preference.
const APP_LABELS: [&str; 2] = ["app.kubernetes.io/name", "app"];

/// What a Service asks for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OptIn {
    /// Nothing: no slices of ours.
    None,
    /// Slices for the pods on a network.
    Serve(Serve),
    /// The opt-in does not fit the Service: no slices, and this Warning.
    Unsupported(Note),
    /// The annotations cannot be read: this Warning, and the slices stay as they are.
    Invalid(Note),
}

/// A network to serve and how to choose its pods.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Serve {
    /// The annotation that opted in.
    pub(crate) annotation: &'static str,
    /// The network.
    pub(crate) network: Network,
    /// The pods (of the Service's namespace) that back the Service.
    pub(crate) pods: PodFilter,
    /// Warnings that do not stop the slices.
    pub(crate) warnings: Vec<Note>,
}

/// Which pods of the Service's namespace back it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PodFilter {
    /// Every pod.
    All,
    /// The pods whose label `key` is `value`.
    Label {
        /// The label.
        key: &'static str,
        /// Its value.
        value: String,
    },
    /// The pods the Service's selector matches (never empty).
    Selector(BTreeMap<String, String>),
}

impl PodFilter {
    /// Whether a pod with `labels` is chosen.
    pub(crate) fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let label = |key: &str| labels.and_then(|l| l.get(key));
        match self {
            Self::All => true,
            Self::Label { key, value } => label(key) == Some(value),
            Self::Selector(selector) => selector.iter().all(|(k, v)| label(k) == Some(v)),
        }
    }
}

fn warning(reason: &'static str, text: String) -> Note {
    Note {
        warning: true,
        reason,
        action: ACTION,
        text,
    }
}

/// The opt-in of `service`.
pub(crate) fn opt_in(service: &Service) -> OptIn {
    let annotation = |key: &str| {
        service
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    let spec = service.spec.as_ref();
    let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
    let selector = spec
        .and_then(|s| s.selector.as_ref())
        .filter(|s| !s.is_empty());
    let external_name = spec.and_then(|s| s.type_.as_deref()) == Some("ExternalName");
    match (
        annotation(ANNOTATION_ISIM_NETWORK),
        annotation(ANNOTATION_NETWORKS),
    ) {
        (None, None) => OptIn::None,
        (Some(_), Some(_)) => OptIn::Invalid(warning(
            REASON_CONFLICT,
            format!(
                "both {ANNOTATION_ISIM_NETWORK} and {ANNOTATION_NETWORKS} are set; \
                 set one of them (EndpointSlices left unchanged)"
            ),
        )),
        (Some(value), None) => isim_opt_in(service, value, namespace, selector, external_name),
        (None, Some(value)) => selection_opt_in(service, value, namespace, selector, external_name),
    }
}

/// `isim.dev/network` on a Service.
fn isim_opt_in(
    service: &Service,
    value: &str,
    namespace: &str,
    selector: Option<&BTreeMap<String, String>>,
    external_name: bool,
) -> OptIn {
    let network = match isim_network(value, namespace) {
        Ok(network) => network,
        Err(reason) => {
            return OptIn::Invalid(warning(
                REASON_INVALID,
                format!(
                    "annotation {ANNOTATION_ISIM_NETWORK} {value:?}: {reason} \
                     (EndpointSlices left unchanged)"
                ),
            ));
        }
    };
    let cluster_ip = service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref());
    let why = if external_name {
        "an ExternalName Service has no endpoints"
    } else if cluster_ip != Some("None") {
        "the Service must be headless (clusterIP: None): its cluster IP may not reach the network"
    } else if selector.is_some() {
        "the Service must have no selector (Kubernetes writes the endpoints of a selector \
         Service); use k8s.v1.cni.cncf.io/networks for selector Services"
    } else {
        return OptIn::Serve(Serve {
            annotation: ANNOTATION_ISIM_NETWORK,
            network,
            pods: app_filter(service),
            warnings: Vec::new(),
        });
    };
    OptIn::Unsupported(unsupported(ANNOTATION_ISIM_NETWORK, why, &network))
}

fn unsupported(annotation: &str, why: &str, network: &Network) -> Note {
    warning(
        REASON_UNSUPPORTED,
        format!(
            "annotation {annotation} ignored: {why}; no EndpointSlices for network {}",
            network.key()
        ),
    )
}

/// `k8s.v1.cni.cncf.io/networks` on a Service.
fn selection_opt_in(
    service: &Service,
    value: &str,
    namespace: &str,
    selector: Option<&BTreeMap<String, String>>,
    external_name: bool,
) -> OptIn {
    let invalid = |reason: String| {
        OptIn::Invalid(warning(
            REASON_INVALID,
            format!("{reason} (EndpointSlices left unchanged)"),
        ))
    };
    let elements = match parse_network_selection_for_pod(value, namespace) {
        Ok(elements) => elements,
        Err(error) => return invalid(error_chain(&error)),
    };
    let element = match elements.as_slice() {
        [element] => element,
        [] => {
            return invalid(format!(
                "annotation {ANNOTATION_NETWORKS} {value:?} names no network"
            ));
        }
        several => {
            let names: Vec<String> = several.iter().map(|e| e.nad_key(namespace)).collect();
            return invalid(format!(
                "annotation {ANNOTATION_NETWORKS} names {} networks ({}); a Service supports one",
                several.len(),
                names.join(", ")
            ));
        }
    };
    let network = Network {
        namespace: element.namespace_or(namespace).to_owned(),
        name: element.name.clone(),
        interface: (!element.interface.is_empty()).then(|| element.interface.clone()),
    };
    let selector = match selector {
        _ if external_name => {
            let why = "an ExternalName Service has no endpoints";
            return OptIn::Unsupported(unsupported(ANNOTATION_NETWORKS, why, &network));
        }
        None => {
            let why = "the Service has no selector to choose its pods; use isim.dev/network \
                       on a headless selector-less Service";
            return OptIn::Unsupported(unsupported(ANNOTATION_NETWORKS, why, &network));
        }
        Some(selector) => selector,
    };
    let warnings = kep_label_warning(service).into_iter().collect();
    OptIn::Serve(Serve {
        annotation: ANNOTATION_NETWORKS,
        network,
        pods: PodFilter::Selector(selector.clone()),
        warnings,
    })
}

/// The Warning for a selector Service without the KEP-4770 label naming us.
fn kep_label_warning(service: &Service) -> Option<Note> {
    let label = service
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_ENDPOINT_CONTROLLER_NAME));
    (label.map(String::as_str) != Some(MANAGED_BY)).then(|| {
        warning(
            REASON_LABEL,
            format!(
                "set label {LABEL_ENDPOINT_CONTROLLER_NAME}: {MANAGED_BY} on this Service \
                 so that Kubernetes' EndpointSlice controller does not also publish its \
                 primary-network endpoints (KEP-4770); the secondary-network EndpointSlices \
                 are written anyway"
            ),
        )
    })
}

/// The NAD of `isim.dev/network`: `name` (in the Service's namespace) or `ns/name`.
fn isim_network(value: &str, service_namespace: &str) -> Result<Network, String> {
    let (namespace, name) = match value.split_once('/') {
        None => (service_namespace, value),
        Some((namespace, name)) => (namespace.trim(), name.trim()),
    };
    if !is_dns_label(namespace) {
        return Err(format!(
            "namespace {namespace:?} is not a valid namespace name (lower case alphanumeric characters or '-')"
        ));
    }
    if !is_dns_subdomain(name) {
        return Err(format!(
            "{name:?} is not a valid NetworkAttachmentDefinition name (lower case alphanumeric characters, '-' or '.'); write <name> or <namespace>/<name>"
        ));
    }
    Ok(Network {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        interface: None,
    })
}

/// ihcsim's pod filter: the Service's `app.kubernetes.io/name`, else `app`, else all pods.
fn app_filter(service: &Service) -> PodFilter {
    let labels = service.metadata.labels.as_ref();
    APP_LABELS
        .into_iter()
        .find_map(|key| {
            let value = labels?.get(key)?;
            Some(PodFilter::Label {
                key,
                value: value.clone(),
            })
        })
        .unwrap_or(PodFilter::All)
}

/// A DNS-1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
fn is_dns_label(text: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    text.len() <= 63
        && text.starts_with(alnum)
        && text.ends_with(alnum)
        && text.chars().all(|c| alnum(c) || c == '-')
}

/// A DNS-1123 subdomain: at most 253 characters of dot-separated labels.
fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ServiceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    fn service(
        annotations: &[(&str, &str)],
        labels: &[(&str, &str)],
        cluster_ip: &str,
        selector: &[(&str, &str)],
    ) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("svc".to_owned()),
                namespace: Some("default".to_owned()),
                annotations: map(annotations),
                labels: map(labels),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                cluster_ip: Some(cluster_ip.to_owned()),
                selector: map(selector),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    fn network(namespace: &str, name: &str, interface: Option<&str>) -> Network {
        Network {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            interface: interface.map(str::to_owned),
        }
    }

    fn served(opt_in: OptIn) -> Serve {
        match opt_in {
            OptIn::Serve(serve) => serve,
            other => panic!("not served: {other:?}"),
        }
    }

    #[test]
    fn isim_network_on_a_headless_selector_less_service() {
        // Seed 002's Service.
        let svc = service(
            &[(ANNOTATION_ISIM_NETWORK, "macvlan")],
            &[("app", "nginx-nad")],
            "None",
            &[],
        );
        let serve = served(opt_in(&svc));
        assert_eq!(serve.network, network("default", "macvlan", None));
        assert_eq!(
            serve.pods,
            PodFilter::Label {
                key: "app",
                value: "nginx-nad".to_owned()
            }
        );
        assert!(serve.warnings.is_empty());
        // app.kubernetes.io/name wins over app; neither means every pod; ns/name as given.
        let svc = service(
            &[(ANNOTATION_ISIM_NETWORK, "other/macvlan")],
            &[("app", "a"), ("app.kubernetes.io/name", "b")],
            "None",
            &[],
        );
        let serve = served(opt_in(&svc));
        assert_eq!(serve.network, network("other", "macvlan", None));
        assert_eq!(
            serve.pods,
            PodFilter::Label {
                key: "app.kubernetes.io/name",
                value: "b".to_owned()
            }
        );
        let svc = service(&[(ANNOTATION_ISIM_NETWORK, " macvlan ")], &[], "None", &[]);
        assert_eq!(served(opt_in(&svc)).pods, PodFilter::All);
    }

    #[test]
    fn isim_network_on_other_services_is_unsupported_and_malformed_is_invalid() {
        let cluster_ip = service(
            &[(ANNOTATION_ISIM_NETWORK, "macvlan")],
            &[],
            "10.96.0.1",
            &[],
        );
        let OptIn::Unsupported(note) = opt_in(&cluster_ip) else {
            panic!("supported");
        };
        assert!(note.warning && note.text.contains("headless"), "{note:?}");
        let selector = service(
            &[(ANNOTATION_ISIM_NETWORK, "macvlan")],
            &[],
            "None",
            &[("app", "x")],
        );
        let OptIn::Unsupported(note) = opt_in(&selector) else {
            panic!("supported");
        };
        assert!(note.text.contains("no selector"), "{note:?}");
        for bad in ["a/b/c", "Macvlan", "ns/", "-x", "a_b"] {
            let svc = service(&[(ANNOTATION_ISIM_NETWORK, bad)], &[], "None", &[]);
            let OptIn::Invalid(note) = opt_in(&svc) else {
                panic!("{bad} accepted");
            };
            assert_eq!(note.reason, REASON_INVALID);
            assert!(note.text.contains(ANNOTATION_ISIM_NETWORK), "{note:?}");
        }
    }

    #[test]
    fn networks_selection_on_a_selector_service() {
        // Seed 003's Service: a bare name means the Service's namespace.
        let svc = service(
            &[(ANNOTATION_NETWORKS, "br0")],
            &[],
            "10.96.0.9",
            &[("app", "hostnames")],
        );
        let serve = served(opt_in(&svc));
        assert_eq!(serve.network, network("default", "br0", None));
        assert_eq!(
            serve.pods,
            PodFilter::Selector(map(&[("app", "hostnames")]).unwrap())
        );
        // Without the KEP-4770 label: served, with a Warning telling what to set.
        assert_eq!(serve.warnings.len(), 1);
        assert!(serve.warnings[0].text.contains(MANAGED_BY));
        let labelled = service(
            &[(
                ANNOTATION_NETWORKS,
                r#"[{"name": "br0", "namespace": "net", "interface": "net1"}]"#,
            )],
            &[(LABEL_ENDPOINT_CONTROLLER_NAME, MANAGED_BY)],
            "10.96.0.9",
            &[("app", "hostnames")],
        );
        let serve = served(opt_in(&labelled));
        assert_eq!(serve.network, network("net", "br0", Some("net1")));
        assert!(serve.warnings.is_empty());
        assert_eq!(
            served(opt_in(&service(
                &[(ANNOTATION_NETWORKS, "net/br0@net2")],
                &[],
                "None",
                &[("a", "b")]
            )))
            .network,
            network("net", "br0", Some("net2"))
        );
    }

    #[test]
    fn networks_selection_errors() {
        let selector = &[("app", "hostnames")];
        for (value, expected) in [
            (r#"[{"name": }"#, ANNOTATION_NETWORKS),
            ("a/b/c", ANNOTATION_NETWORKS),
            ("br0, br1", "names 2 networks (default/br0, default/br1)"),
            ("[]", "names no network"),
        ] {
            let svc = service(&[(ANNOTATION_NETWORKS, value)], &[], "10.96.0.9", selector);
            let OptIn::Invalid(note) = opt_in(&svc) else {
                panic!("{value} accepted");
            };
            assert_eq!(note.reason, REASON_INVALID);
            assert!(note.text.contains(expected), "{value}: {note:?}");
            assert!(note.text.contains(ANNOTATION_NETWORKS), "{value}: {note:?}");
        }
        let no_selector = service(&[(ANNOTATION_NETWORKS, "br0")], &[], "None", &[]);
        assert!(matches!(opt_in(&no_selector), OptIn::Unsupported(_)));
        let both = service(
            &[
                (ANNOTATION_NETWORKS, "br0"),
                (ANNOTATION_ISIM_NETWORK, "br0"),
            ],
            &[],
            "None",
            &[],
        );
        let OptIn::Invalid(note) = opt_in(&both) else {
            panic!("accepted");
        };
        assert_eq!(note.reason, REASON_CONFLICT);
        let empty = service(
            &[(ANNOTATION_NETWORKS, " "), (ANNOTATION_ISIM_NETWORK, "")],
            &[],
            "None",
            &[],
        );
        assert_eq!(opt_in(&empty), OptIn::None);
    }

    #[test]
    fn pod_filters() {
        let labels = map(&[("app", "x"), ("tier", "web")]);
        assert!(PodFilter::All.matches(None));
        let app = PodFilter::Label {
            key: "app",
            value: "x".to_owned(),
        };
        assert!(app.matches(labels.as_ref()));
        assert!(!app.matches(None));
        let selector = PodFilter::Selector(map(&[("app", "x"), ("tier", "db")]).unwrap());
        assert!(!selector.matches(labels.as_ref()));
        let selector = PodFilter::Selector(map(&[("tier", "web")]).unwrap());
        assert!(selector.matches(labels.as_ref()));
    }
}
