//! Making the bridge what the inputs say: desired flows -> plan (`diff-flows` against the
//! bridge) -> apply (one `--bundle replace-flows`, only when the plan is not empty), the
//! no-flood bit of UDN patch ports, and the neighbour entries; once on demand, or as a loop
//! that also re-applies every [`RESYNC_PERIOD`](super::RESYNC_PERIOD) as upstream does (flows
//! someone else added or deleted are put right).

use std::time::Duration;

use tokio::sync::watch;

use super::desired::desired_flows;
use super::exec::OfctlError;
use super::flow::Flow;
use super::inputs::{BridgeInputs, OfPort};
use super::neighbors::{NeighborPlan, NeighborSyncError, sync_neighbors};
use super::ofctl::{FlowDiff, Ofctl};
use super::render::DesiredError;
use crate::netlink::Netlink;

/// A gateway sync that failed.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The desired state cannot be computed from the inputs.
    #[error(transparent)]
    Desired(#[from] DesiredError),
    /// ovs-ofctl failed.
    #[error("bridge {bridge}: {action}")]
    Ofctl {
        /// The bridge.
        bridge: String,
        /// What was being done.
        action: &'static str,
        /// The failure, with ovs-ofctl's standard error.
        #[source]
        source: OfctlError,
    },
    /// A neighbour entry could not be read or written.
    #[error("bridge {bridge}: masquerade neighbours")]
    Neighbors {
        /// The bridge.
        bridge: String,
        /// The failure.
        #[source]
        source: NeighborSyncError,
    },
}

/// What a flow sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowSync {
    /// The number of desired flows.
    pub desired: usize,
    /// The differences found (empty: nothing was sent).
    pub diff: FlowDiff,
    /// UDN patch ports that got `NO_FLOOD`.
    pub no_flood_set: Vec<OfPort>,
}

impl FlowSync {
    /// Whether anything on the bridge changed.
    pub fn changed(&self) -> bool {
        !self.diff.is_empty() || !self.no_flood_set.is_empty()
    }
}

/// What a full sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewaySyncReport {
    /// Flows and port flags.
    pub flows: FlowSync,
    /// Neighbour entries (empty when no netlink handle was given).
    pub neighbors: NeighborPlan,
}

impl GatewaySyncReport {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.flows.changed() || !self.neighbors.is_empty()
    }
}

/// The plan for `flows` on `bridge`: what `replace-flows` would change.
pub async fn plan_flows(
    ofctl: &Ofctl,
    bridge: &str,
    flows: &[Flow],
) -> Result<FlowDiff, GatewayError> {
    ofctl
        .diff_flows(bridge, flows)
        .await
        .map_err(|source| GatewayError::Ofctl {
            bridge: bridge.to_owned(),
            action: "compare the flow table",
            source,
        })
}

/// Makes the bridge's flow table exactly `desired_flows(inputs)`, sending it only when it
/// differs, and sets `NO_FLOOD` on every patched UDN's port first (so the ARP fan-out filter
/// never runs without it).
pub async fn sync_flows(ofctl: &Ofctl, inputs: &BridgeInputs) -> Result<FlowSync, GatewayError> {
    let bridge = &inputs.bridge;
    let flows = desired_flows(inputs)?;
    let ofctl_error = |action| {
        move |source| GatewayError::Ofctl {
            bridge: bridge.clone(),
            action,
            source,
        }
    };
    let mut no_flood_set = Vec::new();
    if inputs.cluster.network_segmentation {
        let already = ofctl
            .no_flood_ports(bridge)
            .await
            .map_err(ofctl_error("read the ports' config"))?;
        for port in inputs.udns.iter().filter_map(|udn| udn.ofport.as_ref()) {
            if matches!(port, OfPort::Number(number) if already.contains(number)) {
                continue;
            }
            ofctl
                .set_no_flood(bridge, port)
                .await
                .map_err(ofctl_error("set no-flood on a UDN patch port"))?;
            no_flood_set.push(port.clone());
        }
    }
    let diff = plan_flows(ofctl, bridge, &flows).await?;
    if !diff.is_empty() {
        ofctl
            .replace_flows(bridge, &flows)
            .await
            .map_err(ofctl_error("replace the flow table"))?;
        tracing::info!(
            bridge = %bridge,
            flows = flows.len(),
            added = diff.add.len(),
            removed = diff.remove.len(),
            "gateway bridge flows replaced"
        );
    }
    Ok(FlowSync {
        desired: flows.len(),
        diff,
        no_flood_set,
    })
}

/// Syncs the bridge's flows, its UDN ports' no-flood bit and (given a [`Netlink`] bound to
/// the bridge's netns) its masquerade neighbours.
#[derive(Debug, Clone)]
pub struct GatewaySync {
    ofctl: Ofctl,
    netlink: Option<Netlink>,
}

impl GatewaySync {
    /// A syncer; without `netlink` the neighbour entries are left alone.
    pub fn new(ofctl: Ofctl, netlink: Option<Netlink>) -> Self {
        Self { ofctl, netlink }
    }

    /// One sync: neighbours (so the kernel never has to resolve a masquerade IP), then flows.
    pub async fn sync(&self, inputs: &BridgeInputs) -> Result<GatewaySyncReport, GatewayError> {
        let neighbors =
            match &self.netlink {
                Some(netlink) => sync_neighbors(netlink, inputs).await.map_err(|source| {
                    GatewayError::Neighbors {
                        bridge: inputs.bridge.clone(),
                        source,
                    }
                })?,
                None => NeighborPlan::default(),
            };
        let flows = sync_flows(&self.ofctl, inputs).await?;
        Ok(GatewaySyncReport { flows, neighbors })
    }

    /// Syncs whenever `inputs` changes and every `period` otherwise (nothing while it holds
    /// `None`); a failed sync is logged and retried at the next change or tick. Returns when
    /// the sender is dropped.
    pub async fn run(self, mut inputs: watch::Receiver<Option<BridgeInputs>>, period: Duration) {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = inputs.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = ticker.tick() => {}
            }
            let current = inputs.borrow_and_update().clone();
            let Some(current) = current else { continue };
            match self.sync(&current).await {
                Ok(report) if report.changed() => tracing::info!(
                    bridge = %current.bridge,
                    flows_added = report.flows.diff.add.len(),
                    flows_removed = report.flows.diff.remove.len(),
                    neighbors_set = report.neighbors.replace.len(),
                    neighbors_removed = report.neighbors.remove.len(),
                    "gateway bridge synced"
                ),
                Ok(_) => tracing::debug!(bridge = %current.bridge, "gateway bridge in sync"),
                Err(error) => tracing::warn!(
                    bridge = %current.bridge,
                    error = format!("{:#}", anyhow::Error::from(error)),
                    "gateway bridge sync failed"
                ),
            }
        }
    }
}
