//! CNI CHECK (the spec: the attachment is as ADD left it): the pod interface (name, MAC,
//! MTU, addresses, routes) and its `br-int` port (iface-id, installed by ovn-controller);
//! for a primary-UDN pod `ovn-udn1` too.

use udn_cni_protocol::PodRequest;

use super::add::PRIMARY_UDN_IFNAME;
use super::context::CniContext;
use super::network::{Attachment, pod_interface, primary_attachment};
use super::wire::{Target, interface_spec};
use crate::netlink::{NetnsPath, check_pod_interface, inspect_pod_interface};
use crate::ovs::{BR_INT, pod_iface_id};

/// What CHECK found wrong.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The pod is not known.
    #[error("pod {0} not found")]
    PodNotFound(String),
    /// The annotation has no entry for the attachment.
    #[error("pod has no k8s.ovn.org/pod-networks entry for {0}")]
    NoAnnotation(String),
    /// Reading the pod netns failed.
    #[error("reading the pod interface: {0}")]
    Netlink(#[from] crate::netlink::NetlinkError),
    /// Reading OVS failed.
    #[error("reading OVS: {0}")]
    Ovs(#[from] crate::ovs::OvsError),
    /// Differences.
    #[error("{0}")]
    Mismatch(String),
}

/// Runs CHECK for `request`.
pub async fn check(ctx: &CniContext, request: &PodRequest<Attachment>) -> Result<(), CheckError> {
    let (ns, name) = (request.pod_namespace.as_str(), request.pod_name.as_str());
    let pod = ctx
        .stores
        .pod(ns, name)
        .ok_or_else(|| CheckError::PodNotFound(format!("{ns}/{name}")))?;
    let mut attachments = vec![(request.if_name.clone(), request.config.clone())];
    if request.config.is_default() && ctx.config.segmentation {
        let nads = ctx.stores.nads.state();
        if let Some(primary) =
            primary_attachment(nads.iter().map(|nad| &**nad), ns, &ctx.config.cluster)
        {
            attachments.push((PRIMARY_UDN_IFNAME.to_owned(), primary));
        }
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let ports = ctx.ovs.pod_ports(BR_INT)?;
    let mut problems = Vec::new();
    for (ifname, attachment) in &attachments {
        let iface = pod_interface(&pod, attachment)
            .ok_or_else(|| CheckError::NoAnnotation(attachment.nad_key.clone()))?;
        let target = Target {
            namespace: ns,
            pod: name,
            pod_uid: &uid,
            sandbox: &request.sandbox_id,
            netns: &request.netns,
            ifname,
        };
        let spec = interface_spec(&target, &iface, ctx.tx_offload);
        match inspect_pod_interface(&NetnsPath::new(&request.netns), ifname).await? {
            None => problems.push(format!("{ifname}: no such interface in {}", request.netns)),
            Some(observed) => problems.extend(
                check_pod_interface(&spec, &observed)
                    .into_iter()
                    .map(|problem| format!("{ifname}: {problem}")),
            ),
        }
        let nad = (!attachment.is_default()).then_some(attachment.nad_key.as_str());
        let iface_id = pod_iface_id(ns, name, nad);
        match ports.iter().find(|port| {
            port.sandbox == request.sandbox_id
                && port.pod_if_name.as_deref() == Some(ifname.as_str())
        }) {
            None => problems.push(format!(
                "{ifname}: no br-int port for sandbox {}",
                request.sandbox_id
            )),
            Some(port) if port.iface_id != iface_id => problems.push(format!(
                "{ifname}: port {} has iface-id {}, expected {iface_id}",
                port.name, port.iface_id
            )),
            Some(port) if !port.ovn_installed => {
                problems.push(format!("{ifname}: port {} is not ovn-installed", port.name));
            }
            Some(_) => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CheckError::Mismatch(problems.join("; ")))
    }
}
