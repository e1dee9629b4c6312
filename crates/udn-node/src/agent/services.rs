//! The Services of the cluster as plain views with their network (upstream
//! `GetActiveNetworkForNamespace`): a Service in a namespace with a primary-UDN NAD belongs
//! to that UDN, any other to the default network. Without network segmentation every Service
//! is the default network's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

use super::primary_udns::{NamespaceUdn, primary_udn_namespaces};
use crate::config::Config;
use crate::gateway::BridgeInputs;
use crate::services::{ServiceNetwork, ServiceView};
use crate::watch::Stores;

/// The Services of `inputs` whose network is active on the node (upstream
/// `getActiveNetwork`): the default network's, and a primary UDN's once its patch port
/// exists.
pub fn active_services(inputs: &BridgeInputs) -> impl Iterator<Item = &ServiceView> {
    inputs
        .services
        .iter()
        .filter(|service| match &service.network {
            ServiceNetwork::Default => true,
            ServiceNetwork::Udn(name) => inputs
                .udns
                .iter()
                .any(|udn| &udn.network == name && udn.ofport.is_some()),
        })
}

/// Every Service with a cluster IP whose network is known, sorted by namespace and name.
pub fn service_views(stores: &Stores, config: &Config) -> Vec<ServiceView> {
    let namespaces = if config.segmentation {
        primary_udn_namespaces(stores, config)
    } else {
        BTreeMap::new()
    };
    let services = stores.services.state();
    views(services.iter().map(AsRef::as_ref), &namespaces)
}

/// The views of `services` given the namespaces' primary UDNs (pure).
fn views<'a>(
    services: impl Iterator<Item = &'a Service>,
    namespaces: &BTreeMap<String, NamespaceUdn>,
) -> Vec<ServiceView> {
    let mut out: Vec<ServiceView> = services
        .filter_map(|service| {
            let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
            let network = match namespaces.get(namespace) {
                None => ServiceNetwork::Default,
                Some(NamespaceUdn::Ready { network, .. }) => ServiceNetwork::Udn(network.clone()),
                // The namespace's network is not usable yet: neither network serves it.
                Some(NamespaceUdn::Pending) => return None,
            };
            ServiceView::from_service(service, network)
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::core::v1::ServiceSpec;
    use kube::api::ObjectMeta;

    use super::*;

    fn svc(namespace: &str, name: &str) -> Service {
        Service {
            metadata: ObjectMeta {
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                cluster_ip: Some("10.96.0.9".to_owned()),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn the_namespaces_primary_udn_decides_the_network() {
        let namespaces = BTreeMap::from([
            (
                "blue".to_owned(),
                NamespaceUdn::Ready {
                    network: "blue_net".to_owned(),
                    id: 1,
                },
            ),
            ("waiting".to_owned(), NamespaceUdn::Pending),
        ]);
        let services = [
            svc("waiting", "a"),
            svc("default", "kubernetes"),
            svc("blue", "web"),
            svc("blue", "api"),
        ];
        let got: Vec<(String, ServiceNetwork)> = views(services.iter(), &namespaces)
            .into_iter()
            .map(|view| (view.key(), view.network))
            .collect();
        let blue = ServiceNetwork::Udn("blue_net".to_owned());
        assert_eq!(
            got,
            [
                ("blue/api".to_owned(), blue.clone()),
                ("blue/web".to_owned(), blue),
                ("default/kubernetes".to_owned(), ServiceNetwork::Default),
            ]
        );
    }
}
