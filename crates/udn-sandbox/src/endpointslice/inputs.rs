//! What one sync of a Service reads: the Service, the pods its selector picks in its
//! namespace, and the Nodes (whether each exists, and its zone).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, Service};

use super::LABEL_ZONE;

/// The snapshot one Service is synced from.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// The Service.
    pub service: Service,
    /// The pods its selector picks in its namespace, by name (none without a selector).
    pub pods: Vec<Pod>,
    /// Every Node by name, with its `topology.kubernetes.io/zone` label when it has one.
    pub nodes: BTreeMap<String, Option<String>>,
}

/// `namespace/name`, the work queue's key of an object.
pub fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// Whether `selector` picks an object with `labels` (every pair present; an empty selector
/// picks everything, as `labels.Set(selector).AsSelector()` does).
pub fn selects(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

impl Inputs {
    /// The inputs of `service` from everything known.
    pub fn gather<'a>(
        service: &Service,
        pods: impl IntoIterator<Item = &'a Pod>,
        nodes: impl IntoIterator<Item = &'a Node>,
    ) -> Self {
        let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
        let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
        let mut picked: Vec<Pod> = match selector {
            None => Vec::new(),
            Some(selector) => pods
                .into_iter()
                .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
                .filter(|p| selects(selector, p.metadata.labels.as_ref()))
                .cloned()
                .collect(),
        };
        picked.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let nodes = nodes
            .into_iter()
            .map(|n| {
                let zone = n
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(LABEL_ZONE))
                    .filter(|z| !z.is_empty())
                    .cloned();
                (n.metadata.name.clone().unwrap_or_default(), zone)
            })
            .collect();
        Self {
            service: service.clone(),
            pods: picked,
            nodes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_selector_picks_pods_of_the_namespace_with_every_label() {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"selector": {"app": "web"}},
        }))
        .unwrap();
        let pod = |ns: &str, name: &str, labels: serde_json::Value| -> Pod {
            serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": ns, "labels": labels}}),
            )
            .unwrap()
        };
        let pods = [
            pod("a", "z", json!({"app": "web", "x": "y"})),
            pod("a", "b", json!({"app": "web"})),
            pod("a", "c", json!({"app": "db"})),
            pod("other", "d", json!({"app": "web"})),
        ];
        let node: Node = serde_json::from_value(
            json!({"metadata": {"name": "n1", "labels": {LABEL_ZONE: "z1"}}}),
        )
        .unwrap();
        let inputs = Inputs::gather(&service, &pods, [&node]);
        let names: Vec<_> = inputs
            .pods
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["b", "z"]);
        assert_eq!(inputs.nodes["n1"].as_deref(), Some("z1"));
        assert!(selects(&BTreeMap::new(), None));
    }
}
