//! A kube-runtime `Controller` runs unchanged against the server: it adds a finalizer,
//! writes status, cleans up on deletion, shuts down gracefully, and recovers (relists)
//! when the server's watch history is compacted under it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod http_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tower::ServiceExt;
use udn_kube_sim::http::SimService;
use udn_kube_sim::{Sim, SimConfig};

use http_support::{create_namespace, eventually, over_http_with};

const FINALIZER: &str = "example.udn.io/cleanup";

/// A small custom resource reconciled by the test controller.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.udn.io",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// Desired size.
    pub size: u32,
}

/// What the controller observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// The size last reconciled.
    pub observed_size: u32,
}

struct Context {
    client: Client,
    cleaned: Mutex<Vec<String>>,
}

async fn reconcile(
    widget: Arc<Widget>,
    ctx: Arc<Context>,
) -> Result<Action, finalizer::Error<kube::Error>> {
    let namespace = widget.metadata.namespace.clone().unwrap();
    let api: Api<Widget> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, widget, |event| async {
        match event {
            finalizer::Event::Apply(widget) => {
                let name = widget.metadata.name.clone().unwrap();
                let status = json!({"status": {"observedSize": widget.spec.size}});
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await?;
                Ok(Action::await_change())
            }
            finalizer::Event::Cleanup(widget) => {
                ctx.cleaned
                    .lock()
                    .unwrap()
                    .push(widget.metadata.name.clone().unwrap());
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn error_policy(_: Arc<Widget>, _: &finalizer::Error<kube::Error>, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

fn widget(name: &str, size: u32) -> Widget {
    let mut widget = Widget::new(name, WidgetSpec { size });
    widget.metadata.namespace = Some("apps".to_owned());
    widget
}

async fn observed(api: &Api<Widget>, name: &str, size: u32) -> bool {
    match api.get_opt(name).await.unwrap() {
        Some(w) => {
            w.status.map(|s| s.observed_size) == Some(size)
                && w.metadata
                    .finalizers
                    .unwrap_or_default()
                    .contains(&FINALIZER.to_owned())
        }
        None => false,
    }
}

/// The scenario; `lists` counts the LIST requests of widgets when the transport can.
async fn run_scenario(name: &str, client: Client, sim: Sim, lists: Option<Arc<AtomicUsize>>) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Widget::crd())
        .await
        .unwrap();
    create_namespace(&client, "apps").await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), "apps");
    eventually("widgets served", || {
        let widgets = widgets.clone();
        async move { widgets.list(&Default::default()).await.is_ok() }
    })
    .await;

    let ctx = Arc::new(Context {
        client: client.clone(),
        cleaned: Mutex::new(Vec::new()),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // Each watch lasts one second, so the watcher resumes (and meets compaction) soon.
    let controller = Controller::new(
        Api::<Widget>::all(client.clone()),
        watcher::Config::default().timeout(1),
    )
    .graceful_shutdown_on(async move {
        let _ = stopped.await;
    })
    .run(reconcile, error_policy, Arc::clone(&ctx))
    .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    widgets
        .create(&PostParams::default(), &widget("a", 3))
        .await
        .unwrap();
    eventually(&format!("{name}: a reconciled"), || {
        observed(&widgets, "a", 3)
    })
    .await;
    let patch = Patch::Merge(json!({"spec": {"size": 5}}));
    widgets
        .patch("a", &PatchParams::default(), &patch)
        .await
        .unwrap();
    eventually(&format!("{name}: a re-reconciled"), || {
        observed(&widgets, "a", 5)
    })
    .await;

    // A write the controller does not watch, then compaction: the watcher's resume point
    // is now too old, it gets 410 and relists.
    let lists_before = lists.as_ref().map(|l| l.load(Ordering::SeqCst));
    create_namespace(&client, "unrelated").await;
    sim.compact();
    if let (Some(lists), Some(before)) = (&lists, lists_before) {
        eventually(&format!("{name}: relist after 410"), || {
            let count = lists.load(Ordering::SeqCst);
            async move { count > before }
        })
        .await;
    }
    widgets
        .create(&PostParams::default(), &widget("b", 7))
        .await
        .unwrap();
    eventually(&format!("{name}: b reconciled after compaction"), || {
        observed(&widgets, "b", 7)
    })
    .await;

    widgets.delete("a", &DeleteParams::default()).await.unwrap();
    eventually(&format!("{name}: a finalized and gone"), || {
        let widgets = widgets.clone();
        async move { widgets.get_opt("a").await.unwrap().is_none() }
    })
    .await;
    assert_eq!(*ctx.cleaned.lock().unwrap(), ["a"], "{name}");
    assert!(observed(&widgets, "b", 7).await);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), controller)
        .await
        .expect("the controller shuts down")
        .unwrap();
}

fn quiet_config() -> SimConfig {
    // No bookmarks during the test: a bookmark would move the watcher past compaction.
    SimConfig {
        bookmark_interval: Duration::from_secs(3600),
        ..SimConfig::default()
    }
}

#[tokio::test]
async fn controller_with_finalizer_and_status_recovers_from_compaction_in_process() {
    let sim = Sim::new(quiet_config());
    let lists = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&lists);
    let service = SimService::new(sim.clone()).map_request(
        move |request: http::Request<kube::client::Body>| {
            let query = request.uri().query().unwrap_or("");
            if request.method() == http::Method::GET
                && request.uri().path().ends_with("/widgets")
                && !query.contains("watch=true")
            {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            request
        },
    );
    let client = Client::new(service, "default");
    run_scenario("in-process", client, sim, Some(lists)).await;
}

#[tokio::test]
async fn controller_with_finalizer_and_status_recovers_from_compaction_over_http() {
    let t = over_http_with(Sim::new(quiet_config())).await;
    run_scenario("http", t.client, t.sim, None).await;
}
