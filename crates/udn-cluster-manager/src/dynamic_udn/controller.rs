//! The imperative shell of Dynamic UDN: watches pods, NADs and nodes, keeps the
//! [`Rendering`] up to date (on every change, and when a grace period ends), publishes the
//! rendered nodes to the allocating controllers ([`NodeScope`]), and reports them as the
//! `NodesSelected` condition and the `udn_nodes_rendered` metric.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tracing::{info, warn};
use udn_api::dynamic_udn::networks_with_node_state;
use udn_api::nad::NetworkAttachmentDefinition;

use super::activity::{NadView, active_nodes, pod_view};
use super::rendering::{Rendered, Rendering};
use super::scope::NodeScope;
use super::status;
use crate::context::Context;
use crate::metrics::NetworkNameLabels;
use crate::node_subnets::networks::{OwnerKey, nad_entry, nad_key_of};
use crate::node_subnets::watch::pump;
use crate::owner_condition;

/// Controller name (logs, metrics).
const CONTROLLER: &str = "dynamic-udn";
/// Changes arriving within this interval are taken together.
const SETTLE: Duration = Duration::from_millis(50);

/// The NAD views and the owners of the gated networks.
fn nad_views(
    nads: &[Arc<NetworkAttachmentDefinition>],
    ctx: &Context,
) -> (Vec<NadView>, BTreeMap<String, BTreeSet<OwnerKey>>) {
    let mut views = Vec::new();
    let mut owners: BTreeMap<String, BTreeSet<OwnerKey>> = BTreeMap::new();
    for nad in nads {
        let Ok(Some(entry)) = nad_entry(nad, &ctx.config.cluster) else {
            continue;
        };
        if let Some(owner) = &entry.owner {
            owners
                .entry(entry.network.clone())
                .or_default()
                .insert(owner.key.clone());
        }
        views.push(NadView {
            key: nad_key_of(nad),
            network: entry.network,
            primary: entry.primary,
            gated: entry.owner.is_some(),
        });
    }
    (views, owners)
}

/// (network, node) pairs that already carry per-node state: Layer3 host subnets and Layer2
/// gateway router tunnel IDs found on the nodes.
fn allocated_pairs(nodes: &Store<Node>, gated: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for node in nodes.state() {
        let (Some(name), Some(annotations)) = (&node.metadata.name, &node.metadata.annotations)
        else {
            continue;
        };
        for network in networks_with_node_state(annotations) {
            if gated.contains(&network) {
                pairs.push((network, name.clone()));
            }
        }
    }
    pairs
}

struct Reporter {
    ctx: Context,
    /// The `NodesSelected` condition each owner carries (read once, then what was written).
    told: BTreeMap<OwnerKey, Condition>,
    /// Networks with a metric sample.
    sampled: BTreeSet<String>,
}

impl Reporter {
    async fn report(&mut self, rendered: &Rendered, owners: &BTreeMap<String, BTreeSet<OwnerKey>>) {
        let mut now_sampled = BTreeSet::new();
        for (network, owner_keys) in owners {
            let count = rendered.get(network).map_or(0, BTreeSet::len);
            self.ctx
                .metrics
                .udn_nodes_rendered
                .get_or_create(&NetworkNameLabels {
                    network_name: network.clone(),
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
            now_sampled.insert(network.clone());
            let (state, message) = status::nodes_selected(count);
            for owner in owner_keys {
                let observed = match self.told.get(owner) {
                    Some(told) => vec![told.clone()],
                    None => owner_condition::observed(&self.ctx.client, owner).await,
                };
                let current = observed.iter().any(|c| {
                    c.type_ == status::CONDITION_TYPE
                        && c.status == state
                        && c.reason == status::REASON
                        && c.message == message
                });
                let condition = owner_condition::condition(
                    &observed,
                    status::CONDITION_TYPE,
                    state,
                    status::REASON,
                    &message,
                );
                if !current
                    && let Err(error) = owner_condition::apply(
                        &self.ctx.client,
                        owner,
                        status::FIELD_MANAGER,
                        &condition,
                    )
                    .await
                {
                    warn!(controller = CONTROLLER, network = %network, error = %error, "writing NodesSelected failed");
                    continue;
                }
                self.told.insert(owner.clone(), condition);
            }
        }
        for gone in self.sampled.difference(&now_sampled) {
            self.ctx
                .metrics
                .udn_nodes_rendered
                .remove(&NetworkNameLabels {
                    network_name: gone.clone(),
                });
        }
        self.told
            .retain(|owner, _| owners.values().any(|keys| keys.contains(owner)));
        self.sampled = now_sampled;
    }
}

/// Runs Dynamic UDN until `shutdown` (nothing to do when it is off).
pub(crate) async fn run(
    ctx: Context,
    scope: watch::Sender<Option<NodeScope>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    if !ctx.config.dynamic_udn.enabled {
        shutdown.await;
        return;
    }
    let grace = ctx.config.dynamic_udn.grace_period;
    let client = ctx.client.clone();
    let changed = Arc::new(Notify::new());
    let (pods, pods_writer) = reflector::store::<Pod>();
    let (nads, nads_writer) = reflector::store::<NetworkAttachmentDefinition>();
    let (nodes, nodes_writer) = reflector::store::<Node>();
    let mut pumps = JoinSet::new();
    let on_pod = Arc::clone(&changed);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        pods_writer,
        move |_| {
            on_pod.notify_one();
        },
    ));
    let on_nad = Arc::clone(&changed);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        nads_writer,
        move |_| {
            on_nad.notify_one();
        },
    ));
    pumps.spawn(pump(CONTROLLER, Api::all(client), nodes_writer, |_| {}));
    let mut shutdown = pin!(shutdown);
    tokio::select! {
        () = &mut shutdown => return,
        ready = async {
            pods.wait_until_ready().await.is_ok()
                && nads.wait_until_ready().await.is_ok()
                && nodes.wait_until_ready().await.is_ok()
        } => if !ready { return; },
    }
    let mut rendering = Rendering::default();
    let (views, owners) = nad_views(&nads.state(), &ctx);
    let gated: BTreeSet<String> = owners.keys().cloned().collect();
    rendering.seed(allocated_pairs(&nodes, &gated), Instant::now(), grace);
    let mut reporter = Reporter {
        ctx: ctx.clone(),
        told: BTreeMap::new(),
        sampled: BTreeSet::new(),
    };
    let mut first = true;
    let mut views = views;
    let mut owners = owners;
    loop {
        let pod_views: Vec<_> = pods.state().iter().filter_map(|p| pod_view(p)).collect();
        let active = active_nodes(&views, &pod_views);
        let moved = rendering.update(&active, Instant::now(), grace);
        if moved || first {
            let rendered = rendering.rendered();
            info!(
                controller = CONTROLLER,
                networks = rendered.len(),
                pairs = rendered.values().map(BTreeSet::len).sum::<usize>(),
                "rendered nodes changed"
            );
            scope.send_replace(Some(NodeScope::Only(Arc::new(rendered.clone()))));
            reporter.report(&rendered, &owners).await;
            first = false;
        }
        let expiry = rendering.next_expiry();
        tokio::select! {
            () = &mut shutdown => break,
            () = changed.notified() => {
                tokio::time::sleep(SETTLE).await;
            }
            () = async {
                match expiry {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
        (views, owners) = nad_views(&nads.state(), &ctx);
    }
    pumps.shutdown().await;
}
