//! Observing the NIC and its bridge, and performing the plan.

use std::time::Duration;

use tracing::{debug, info};
use udn_api::annotations::MacAddress;

use super::kernel;
use super::{NicBridgeOp, NicToBridge, ObservedBridge, ObservedNic, plan_nic_to_bridge};
use crate::netlink::address::list_addresses;
use crate::netlink::link::{LinkOp, apply_link};
use crate::netlink::{LinkInfo, Netlink, NetlinkError, link_by_name};
use crate::ovs::{Attachment, Ovs, OvsError};

/// How long the bridge's netdev may take to appear with the NIC's MAC (upstream's 10 s).
const NETDEV_WAIT: Duration = Duration::from_secs(10);
/// How often the bridge's netdev is looked for.
const NETDEV_POLL: Duration = Duration::from_millis(50);
/// How long ovs-vswitchd may take to open the NIC.
const ATTACH_WAIT: Duration = Duration::from_secs(10);

/// Why the NIC could not be moved into its bridge.
#[derive(Debug, thiserror::Error)]
pub enum NicToBridgeError {
    /// The NIC does not exist.
    #[error("gateway interface {nic}: no such network interface")]
    NoNic {
        /// The NIC.
        nic: String,
    },
    /// The NIC has no Ethernet address for the bridge to take.
    #[error("gateway interface {nic}: no MAC address for bridge {bridge}")]
    NoMac {
        /// The NIC.
        nic: String,
        /// The bridge.
        bridge: String,
    },
    /// An OVS database step failed.
    #[error("moving gateway interface {nic} into bridge {bridge}: OVS database")]
    Ovs {
        /// The NIC.
        nic: String,
        /// The bridge.
        bridge: String,
        /// The underlying error.
        #[source]
        source: OvsError,
    },
    /// A netlink step failed.
    #[error("moving gateway interface {nic} into bridge {bridge}: {step}")]
    Netlink {
        /// The NIC.
        nic: String,
        /// The bridge.
        bridge: String,
        /// What was being done, e.g. `copy the addresses`.
        step: &'static str,
        /// The underlying error.
        #[source]
        source: NetlinkError,
    },
    /// ovs-vswitchd did not make the bridge's netdev with the NIC's MAC in time.
    #[error(
        "bridge {bridge}: its netdev did not appear with MAC {mac} of {nic} within {seconds} s"
    )]
    NoNetdev {
        /// The bridge.
        bridge: String,
        /// The NIC.
        nic: String,
        /// The NIC's MAC.
        mac: MacAddress,
        /// How long it waited.
        seconds: u64,
    },
    /// The bridge's netdev is gone.
    #[error("bridge {bridge}: no such network interface")]
    NoBridgeNetdev {
        /// The bridge.
        bridge: String,
    },
    /// ovs-vswitchd could not open the NIC.
    #[error("bridge {bridge}: ovs-vswitchd cannot add {nic}: {reason}")]
    Attach {
        /// The bridge.
        bridge: String,
        /// The NIC.
        nic: String,
        /// The interface's `error`, or that it timed out.
        reason: String,
    },
}

/// Where one run stands: the names for errors, the bridge's netdev once known.
struct Run<'a> {
    ovs: &'a Ovs,
    netlink: &'a Netlink,
    spec: &'a NicToBridge,
    nic_index: u32,
    bridge_index: Option<u32>,
}

fn netlink_error(
    spec: &NicToBridge,
    step: &'static str,
) -> impl FnOnce(NetlinkError) -> NicToBridgeError + use<> {
    let (nic, bridge) = (spec.nic.clone(), spec.bridge.clone());
    move |source| NicToBridgeError::Netlink {
        nic,
        bridge,
        step,
        source,
    }
}

fn ovs_error(spec: &NicToBridge) -> impl FnOnce(OvsError) -> NicToBridgeError + use<> {
    let (nic, bridge) = (spec.nic.clone(), spec.bridge.clone());
    move |source| NicToBridgeError::Ovs {
        nic,
        bridge,
        source,
    }
}

impl Run<'_> {
    fn netlink_error(
        &self,
        step: &'static str,
    ) -> impl FnOnce(NetlinkError) -> NicToBridgeError + use<> {
        netlink_error(self.spec, step)
    }

    fn ovs_error(&self) -> impl FnOnce(OvsError) -> NicToBridgeError + use<> {
        ovs_error(self.spec)
    }

    /// The bridge's ifindex (looked up if no step found it yet).
    async fn bridge_index(&mut self) -> Result<u32, NicToBridgeError> {
        if let Some(index) = self.bridge_index {
            return Ok(index);
        }
        let link = link_by_name(self.netlink, &self.spec.bridge)
            .await
            .map_err(self.netlink_error("look up the bridge's netdev"))?
            .ok_or_else(|| NicToBridgeError::NoBridgeNetdev {
                bridge: self.spec.bridge.clone(),
            })?;
        self.bridge_index = Some(link.index);
        Ok(link.index)
    }

    async fn wait_netdev(&mut self, mac: MacAddress) -> Result<(), NicToBridgeError> {
        let deadline = tokio::time::Instant::now() + NETDEV_WAIT;
        loop {
            let link = link_by_name(self.netlink, &self.spec.bridge)
                .await
                .map_err(self.netlink_error("look up the bridge's netdev"))?;
            if let Some(link) = link.filter(|link| link.mac == Some(mac)) {
                self.bridge_index = Some(link.index);
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(NicToBridgeError::NoNetdev {
                    bridge: self.spec.bridge.clone(),
                    nic: self.spec.nic.clone(),
                    mac,
                    seconds: NETDEV_WAIT.as_secs(),
                });
            }
            // ovs-vswitchd makes the netdev and sets its MAC after our commit; netlink has
            // no wait for that short of a link monitor: look again.
            tokio::time::sleep(NETDEV_POLL).await;
        }
    }

    async fn attach(&self, bridge: &crate::ovs::NicBridge) -> Result<(), NicToBridgeError> {
        self.ovs
            .ensure_nic_bridge(bridge, true)
            .await
            .map_err(self.ovs_error())?;
        let reason = match self
            .ovs
            .wait_attached(&self.spec.nic, ATTACH_WAIT)
            .await
            .map_err(self.ovs_error())?
        {
            Attachment::Attached(_) => return Ok(()),
            Attachment::Failed(error) => error,
            Attachment::Pending => format!("no ofport after {} s", ATTACH_WAIT.as_secs()),
        };
        Err(NicToBridgeError::Attach {
            bridge: self.spec.bridge.clone(),
            nic: self.spec.nic.clone(),
            reason,
        })
    }

    async fn apply(&mut self, op: &NicBridgeOp) -> Result<(), NicToBridgeError> {
        let (nic, bridge) = (&self.spec.nic, &self.spec.bridge);
        match op {
            NicBridgeOp::EnsureBridge(desired) => {
                self.ovs
                    .ensure_nic_bridge(desired, false)
                    .await
                    .map_err(self.ovs_error())?;
            }
            NicBridgeOp::WaitNetdev(mac) => self.wait_netdev(*mac).await?,
            NicBridgeOp::AddAddress(address) => {
                let index = self.bridge_index().await?;
                kernel::add_address(self.netlink, index, bridge, address)
                    .await
                    .map_err(self.netlink_error("copy an address"))?;
            }
            NicBridgeOp::BridgeUp => {
                let index = self.bridge_index().await?;
                apply_link(self.netlink, index, bridge, &[LinkOp::SetUp])
                    .await
                    .map_err(self.netlink_error("bring the bridge up"))?;
            }
            NicBridgeOp::AttachNic(desired) => self.attach(desired).await?,
            NicBridgeOp::AddRoute(route) => {
                let index = self.bridge_index().await?;
                kernel::add_route(self.netlink, index, bridge, route)
                    .await
                    .map_err(self.netlink_error("copy a route"))?;
            }
            NicBridgeOp::RemoveRoute(route) => kernel::remove_route(self.netlink, nic, route)
                .await
                .map_err(self.netlink_error("remove a route from the NIC"))?,
            NicBridgeOp::RemoveAddress(address) => {
                kernel::remove_address(self.netlink, self.nic_index, nic, address)
                    .await
                    .map_err(self.netlink_error("remove an address from the NIC"))?;
            }
        }
        Ok(())
    }
}

/// What the kernel and OVS say about the NIC and the bridge; the NIC's link.
async fn observe(
    ovs: &Ovs,
    netlink: &Netlink,
    spec: &NicToBridge,
) -> Result<(LinkInfo, ObservedNic, ObservedBridge, Option<u32>), NicToBridgeError> {
    let netlink_error = |step| netlink_error(spec, step);
    let link = link_by_name(netlink, &spec.nic)
        .await
        .map_err(netlink_error("look up the NIC"))?
        .ok_or_else(|| NicToBridgeError::NoNic {
            nic: spec.nic.clone(),
        })?;
    let mac = link.mac.ok_or_else(|| NicToBridgeError::NoMac {
        nic: spec.nic.clone(),
        bridge: spec.bridge.clone(),
    })?;
    let nic = ObservedNic {
        mac,
        mtu: link.mtu,
        addresses: kernel::addresses(netlink, link.index)
            .await
            .map_err(netlink_error("list the NIC's addresses"))?,
        routes: kernel::routes(netlink, link.index)
            .await
            .map_err(netlink_error("list the NIC's routes"))?,
    };
    let state = ovs.state().map_err(ovs_error(spec))?;
    let exists = state.bridge(&spec.bridge).is_some();
    let nic_attached = state
        .port(&spec.nic)
        .and_then(|(uuid, _)| state.bridge_of_port(uuid))
        .is_some_and(|(_, holder)| holder.name == spec.bridge);
    let bridge_link = link_by_name(netlink, &spec.bridge)
        .await
        .map_err(netlink_error("look up the bridge's netdev"))?;
    let addresses = match &bridge_link {
        Some(bridge) => list_addresses(netlink, bridge.index)
            .await
            .map_err(netlink_error("list the bridge's addresses"))?,
        None => Vec::new(),
    };
    let bridge = ObservedBridge {
        exists,
        nic_attached,
        netdev: bridge_link.is_some(),
        up: bridge_link.as_ref().is_some_and(|link| link.up),
        addresses,
    };
    Ok((link, nic, bridge, bridge_link.map(|link| link.index)))
}

/// Moves `spec.nic` into `spec.bridge` (creating the bridge), or finishes a move a crash
/// cut short; returns the steps taken (none when the move is complete). The agent runs in
/// `netlink`'s netns and ovs-vswitchd makes the bridge's netdev there.
pub async fn ensure(
    ovs: &Ovs,
    netlink: &Netlink,
    spec: &NicToBridge,
) -> Result<Vec<NicBridgeOp>, NicToBridgeError> {
    let (link, nic, bridge, bridge_index) = observe(ovs, netlink, spec).await?;
    let plan = plan_nic_to_bridge(spec, &nic, &bridge);
    if plan.is_empty() {
        return Ok(plan);
    }
    info!(
        nic = %spec.nic,
        bridge = %spec.bridge,
        steps = plan.len(),
        bridge_exists = bridge.exists,
        nic_attached = bridge.nic_attached,
        "moving the gateway interface into its bridge"
    );
    let mut run = Run {
        ovs,
        netlink,
        spec,
        nic_index: link.index,
        bridge_index,
    };
    for op in &plan {
        debug!(nic = %spec.nic, bridge = %spec.bridge, op = ?op, "gateway bridge step");
        run.apply(op).await?;
    }
    info!(nic = %spec.nic, bridge = %spec.bridge, "gateway interface moved into its bridge");
    Ok(plan)
}
