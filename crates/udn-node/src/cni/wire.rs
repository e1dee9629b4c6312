//! Wiring one pod interface (upstream `ConfigureInterface`): the veth in the pod netns,
//! its host end a `br-int` port with upstream's `external_ids`, then the wait for
//! ovn-controller's `ovn-installed`; and the CNI result of that interface. On any failure
//! the interface is unwired again, so nothing half-wired stays behind.

use std::net::IpAddr;
use std::time::Duration;

use udn_cni_protocol::{CniResult, Interface, IpCidr, IpConfig};

use super::context::CniContext;
use super::network::PodInterface;
use crate::netlink::{
    Netlink, NetlinkError, NetnsPath, PodInterfaceSpec, TxChecksumOffload, delete_link,
    setup_pod_interface,
};
use crate::ovs::{BR_INT, InstalledWait, OvsError, PodPort, PodPortNetwork, pod_iface_id};

/// Who the interface is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<'a> {
    /// Pod namespace.
    pub namespace: &'a str,
    /// Pod name.
    pub pod: &'a str,
    /// The pod UID (from the request, or the API when the runtime gave none).
    pub pod_uid: &'a str,
    /// `CNI_CONTAINERID`.
    pub sandbox: &'a str,
    /// `CNI_NETNS`.
    pub netns: &'a str,
    /// The pod-side name (`eth0`, `ovn-udn1`, `net1`).
    pub ifname: &'a str,
}

/// Why an interface could not be wired.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The veth or the pod's addresses and routes.
    #[error("failed to configure pod interface: {0}")]
    Netlink(#[from] NetlinkError),
    /// The OVS port, or the wait for ovn-controller.
    #[error("{0}")]
    Ovs(#[from] OvsError),
}

/// The spec of the pod interface for `iface` at `target`.
pub fn interface_spec(
    target: &Target<'_>,
    iface: &PodInterface,
    tx_offload: TxChecksumOffload,
) -> PodInterfaceSpec {
    PodInterfaceSpec {
        pod_netns: NetnsPath::new(target.netns),
        host_netns: NetnsPath::agent(),
        container_id: target.sandbox.to_owned(),
        ifname: target.ifname.to_owned(),
        default_network: iface.attachment.is_default(),
        mac: iface.mac,
        mtu: iface.mtu,
        routable_mtu: None,
        ips: iface.ips.clone(),
        gateways: iface.gateways.clone(),
        routes: iface.routes.clone(),
        skip_ip_config: false,
        tx_checksum_offload: tx_offload,
    }
}

/// The OVS port of `iface` whose host end is `host_veth`.
pub fn pod_port(target: &Target<'_>, iface: &PodInterface, host_veth: &str) -> PodPort {
    let attachment = &iface.attachment;
    let network = (!attachment.is_default()).then(|| PodPortNetwork {
        name: attachment.net_name.clone(),
        nad_key: attachment.nad_key.clone(),
    });
    PodPort {
        bridge: BR_INT.to_owned(),
        name: host_veth.to_owned(),
        iface_id: pod_iface_id(
            target.namespace,
            target.pod,
            network.as_ref().map(|n| n.nad_key.as_str()),
        ),
        pod_uid: target.pod_uid.to_owned(),
        sandbox: target.sandbox.to_owned(),
        pod_if_name: target.ifname.to_owned(),
        mac: iface.mac,
        ips: iface.ips.clone(),
        network,
    }
}

/// The CNI result of one wired interface (upstream `getCNIResult`): the host end, the pod
/// end in its sandbox, and each address on the pod end with the first gateway of its family.
pub fn interface_result(
    target: &Target<'_>,
    iface: &PodInterface,
    host_veth: &str,
    host_mac: Option<String>,
) -> CniResult {
    let gateway_of = |ip: IpAddr| {
        iface
            .gateways
            .iter()
            .copied()
            .find(|gw| gw.is_ipv4() == ip.is_ipv4())
    };
    CniResult {
        interfaces: vec![
            Interface::host(host_veth, host_mac.unwrap_or_default()),
            Interface::in_sandbox(target.ifname, iface.mac.to_string(), target.netns),
        ],
        ips: iface
            .ips
            .iter()
            .filter_map(|ip| {
                Some(IpConfig {
                    address: IpCidr::new(ip.ip(), ip.prefix())?,
                    gateway: gateway_of(ip.ip()),
                    interface: Some(1),
                })
            })
            .collect(),
        ..CniResult::default()
    }
}

/// Wires `iface` for `target`, waiting at most `wait` for `ovn-installed`; on failure
/// everything this call created is removed again.
pub async fn wire(
    ctx: &CniContext,
    target: &Target<'_>,
    iface: &PodInterface,
    wait: Duration,
) -> Result<CniResult, WireError> {
    let started = std::time::Instant::now();
    let spec = interface_spec(target, iface, ctx.tx_offload);
    let plumbed = setup_pod_interface(&spec).await?;
    let plumbed_at = started.elapsed();
    let host = plumbed.host.name.clone();
    let port = pod_port(target, iface, &host);
    let mut port_at = Duration::ZERO;
    let outcome = async {
        ctx.ovs.add_pod_port(&port).await?;
        port_at = started.elapsed();
        let installed = InstalledWait {
            port: host.clone(),
            iface_id: port.iface_id.clone(),
            mac: iface.mac,
            ips: iface.ips.clone(),
        };
        let cancel = ctx.pod_gone(target.namespace, target.pod, target.pod_uid);
        ctx.ovs.wait_ovn_installed(&installed, wait, cancel).await
    }
    .await;
    if let Err(error) = outcome {
        unwire_port(ctx, &host).await;
        return Err(error.into());
    }
    // Where an ADD's time goes: the veth and its addresses, the OVS port transaction,
    // and the wait for ovn-controller (the part that is OVN's, not ours).
    tracing::debug!(
        port = %host,
        veth_us = plumbed_at.as_micros(),
        port_us = (port_at - plumbed_at).as_micros(),
        installed_us = (started.elapsed() - port_at).as_micros(),
        "pod interface wired"
    );
    Ok(interface_result(
        target,
        iface,
        &host,
        plumbed.host.mac.map(|mac| mac.to_string()),
    ))
}

/// Removes the port `host_veth` from `br-int` and deletes the veth (both best effort:
/// this runs after another failure, which is what gets reported).
pub async fn unwire_port(ctx: &CniContext, host_veth: &str) {
    if let Err(error) = ctx.ovs.delete_port(BR_INT, host_veth).await {
        tracing::warn!(port = host_veth, error = %error, "removing a half-wired port failed");
    }
    if let Err(error) = delete_host_veth(host_veth).await {
        tracing::warn!(port = host_veth, error = %error, "removing a half-wired veth failed");
    }
}

/// Deletes the host veth `name` in the agent's netns; whether it existed.
pub async fn delete_host_veth(name: &str) -> Result<bool, NetlinkError> {
    let netlink = Netlink::connect_current("host")?;
    delete_link(&netlink, name).await
}
