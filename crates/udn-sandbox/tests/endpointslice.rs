//! The EndpointSlice controller against the in-memory API server: slices appear for a
//! Service with a selector, follow pod readiness and deletion, resolve named ports, come per
//! address family, go with their Service, and never appear for a Service without selector.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use udn_kube_sim::http::SimService;
use udn_kube_sim::{Sim, SimConfig};
use udn_sandbox::endpointslice::{ANNOTATION_TRIGGER_TIME, LABEL_MANAGED_BY, LABEL_SERVICE_NAME};

/// How long a change may take to show (the controller reacts to watch events at once).
const WAIT: Duration = Duration::from_secs(20);

struct Running {
    client: Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn start() -> Self {
        let sim = Sim::new(SimConfig::default());
        let client = Client::new(SimService::new(sim), "default");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let controller = client.clone();
        let task = tokio::spawn(async move {
            udn_sandbox::endpointslice::run(controller, async {
                let _ = stopped.await;
            })
            .await
            .expect("the controller runs");
        });
        let running = Self {
            client,
            stop: Some(stop),
            task,
        };
        running
            .create_cluster::<Namespace>(json!({"metadata": {"name": "ns"}}))
            .await;
        running
            .create_cluster::<Node>(json!({"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}}}))
            .await;
        running
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap();
    }

    async fn create<K>(&self, object: Value) -> K
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let object: K = serde_json::from_value(object).unwrap();
        Api::namespaced(self.client.clone(), "ns")
            .create(&PostParams::default(), &object)
            .await
            .unwrap()
    }

    async fn create_cluster<K>(&self, object: Value) -> K
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let object: K = serde_json::from_value(object).unwrap();
        Api::all(self.client.clone())
            .create(&PostParams::default(), &object)
            .await
            .unwrap()
    }

    /// A running pod with `ips`, Ready or not, named port `http` = `port`.
    async fn pod(&self, name: &str, ips: &[&str], ready: bool, port: i32) {
        self.create::<Pod>(json!({
            "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "agnhost",
                     "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}]}]},
        }))
        .await;
        self.set_ready(name, ips, ready).await;
    }

    async fn set_ready(&self, name: &str, ips: &[&str], ready: bool) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "ns");
        let status = json!({"status": {"phase": "Running", "podIP": ips.first(),
            "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                            "lastTransitionTime": "2025-01-01T00:01:00Z"}]}});
        pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }

    async fn slices(&self, service: &str) -> Vec<EndpointSlice> {
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), "ns");
        let mut items = api
            .list(&ListParams::default().labels(&format!("{LABEL_SERVICE_NAME}={service}")))
            .await
            .unwrap()
            .items;
        items.sort_by(|a, b| a.address_type.cmp(&b.address_type));
        items
    }

    /// Waits until `check` holds for the slices of `service`; returns them.
    async fn wait_slices(
        &self,
        service: &str,
        what: &str,
        check: impl Fn(&[EndpointSlice]) -> bool,
    ) -> Vec<EndpointSlice> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let slices = self.slices(service).await;
            if check(&slices) {
                return slices;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: slices are {slices:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn ready_of(slice: &EndpointSlice) -> Vec<(String, bool, bool, bool)> {
    slice
        .endpoints
        .iter()
        .map(|e| {
            let c = e.conditions.clone().unwrap();
            (
                e.addresses.join(","),
                c.ready.unwrap(),
                c.serving.unwrap(),
                c.terminating.unwrap(),
            )
        })
        .collect()
}

fn service(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "labels": {"team": "a"}}, "spec": spec})
}

#[tokio::test]
async fn slices_follow_creation_readiness_deletion_and_the_service() {
    let running = Running::start().await;
    running.pod("a", &["10.0.0.1"], true, 8080).await;
    running.pod("b", &["10.0.0.2"], false, 8080).await;
    let created: Service = running
        .create(service(
            "web",
            json!({"selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}),
        ))
        .await;
    let slices = running
        .wait_slices("web", "two endpoints", |s| {
            s.len() == 1 && s[0].endpoints.len() == 2
        })
        .await;
    let slice = &slices[0];
    assert!(slice.metadata.name.as_deref().unwrap().starts_with("web-"));
    assert_eq!(
        slice.metadata.name.as_deref().unwrap().len(),
        "web-".len() + 5
    );
    assert_eq!(slice.address_type, "IPv4");
    let labels = slice.metadata.labels.clone().unwrap();
    assert_eq!(labels[LABEL_MANAGED_BY], "endpointslice-controller.k8s.io");
    assert_eq!(labels["team"], "a");
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.uid, created.metadata.uid.clone().unwrap());
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        slice.metadata.annotations.as_ref().unwrap()[ANNOTATION_TRIGGER_TIME],
        created
            .metadata
            .creation_timestamp
            .as_ref()
            .unwrap()
            .0
            .to_string()
    );
    assert_eq!(
        ready_of(slice),
        [
            ("10.0.0.1".to_owned(), true, true, false),
            ("10.0.0.2".to_owned(), false, false, false)
        ]
    );
    let endpoint = &slice.endpoints[0];
    assert_eq!(endpoint.zone.as_deref(), Some("z1"));
    assert_eq!(endpoint.node_name.as_deref(), Some("n1"));
    assert_eq!(
        endpoint.target_ref.as_ref().unwrap().name.as_deref(),
        Some("a")
    );
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(8080));
    let name = slice.metadata.name.clone();

    // b becomes Ready: the same slice is updated.
    running.set_ready("b", &["10.0.0.2"], true).await;
    let slices = running
        .wait_slices("web", "b ready", |s| {
            s.len() == 1 && ready_of(&s[0]).iter().all(|e| e.1)
        })
        .await;
    assert_eq!(slices[0].metadata.name, name);

    // Both pods go: the slice becomes the placeholder (no endpoints, no ports).
    let pods: Api<Pod> = Api::namespaced(running.client.clone(), "ns");
    for pod in ["a", "b"] {
        pods.delete(
            pod,
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap();
    }
    let slices = running
        .wait_slices("web", "the placeholder", |s| {
            s.len() == 1 && s[0].endpoints.is_empty()
        })
        .await;
    assert_eq!(slices[0].ports, Some(vec![]));
    assert_eq!(slices[0].metadata.name, name);

    // The Service goes: the garbage collector takes its slices.
    let services: Api<Service> = Api::namespaced(running.client.clone(), "ns");
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    running
        .wait_slices("web", "no slice", <[EndpointSlice]>::is_empty)
        .await;
    running.stop().await;
}

#[tokio::test]
async fn named_ports_dual_stack_and_services_without_selector() {
    let running = Running::start().await;
    running.pod("a", &["10.0.0.1", "fd00::1"], true, 8080).await;
    running.pod("b", &["10.0.0.2", "fd00::2"], true, 9090).await;
    running
        .create::<Service>(service("a-manual", json!({"ports": [{"port": 80}]})))
        .await;
    running
        .create::<Service>(service("b-named", json!({"selector": {"app": "web"},
            "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack", "clusterIP": "None",
            "ports": [{"name": "web", "port": 80, "targetPort": "http", "appProtocol": "http"}]})))
        .await;
    // Per family, one slice per port the name resolves to (8080 for a, 9090 for b).
    let slices = running
        .wait_slices("b-named", "two slices per family", |s| s.len() == 4)
        .await;
    let mut seen: Vec<(String, i32, Vec<String>)> = slices
        .iter()
        .map(|s| {
            let port = s.ports.as_ref().unwrap()[0].clone();
            assert_eq!(port.app_protocol.as_deref(), Some("http"));
            assert_eq!(port.name.as_deref(), Some("web"));
            assert_eq!(port.protocol.as_deref(), Some("TCP"));
            assert_eq!(
                s.metadata.labels.as_ref().unwrap()["service.kubernetes.io/headless"],
                ""
            );
            (
                s.address_type.clone(),
                port.port.unwrap(),
                s.endpoints
                    .iter()
                    .flat_map(|e| e.addresses.clone())
                    .collect(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("IPv4".to_owned(), 8080, vec!["10.0.0.1".to_owned()]),
            ("IPv4".to_owned(), 9090, vec!["10.0.0.2".to_owned()]),
            ("IPv6".to_owned(), 8080, vec!["fd00::1".to_owned()]),
            ("IPv6".to_owned(), 9090, vec!["fd00::2".to_owned()]),
        ]
    );
    // The Service without selector was synced first (its key sorts first) and got nothing.
    assert!(running.slices("a-manual").await.is_empty());
    running.stop().await;
}
