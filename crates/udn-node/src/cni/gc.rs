//! CNI GC (spec 1.1): the runtime lists the attachments of a network that are still valid
//! (`cni.dev/valid-attachments`: container id and ifname); this agent's `br-int` ports of
//! that network which the list does not hold go, with their veths.

use std::collections::BTreeSet;

use serde::Deserialize;
use tracing::{info, warn};

use super::add::PRIMARY_UDN_IFNAME;
use super::context::CniContext;
use super::network::Attachment;
use super::wire::delete_host_veth;
use crate::ovs::{BR_INT, OvsError, PodPortRecord};

/// One valid attachment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct ValidAttachment {
    /// The container (sandbox) id.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// The pod-side interface.
    pub ifname: String,
}

#[derive(Deserialize)]
struct GcConfig {
    #[serde(rename = "cni.dev/valid-attachments", default)]
    valid: Vec<ValidAttachment>,
}

/// Why GC failed.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// The config's list does not parse.
    #[error("cni.dev/valid-attachments: {0}")]
    Config(#[from] serde_json::Error),
    /// OVS's database.
    #[error("failed to remove stale OVS ports: {0}")]
    Ovs(#[from] OvsError),
}

/// The valid attachments of a GC config.
pub fn valid_attachments(config: &[u8]) -> Result<BTreeSet<ValidAttachment>, GcError> {
    let config: GcConfig = serde_json::from_slice(config)?;
    Ok(config.valid.into_iter().collect())
}

/// The ports of `attachment`'s network among `ports` that `valid` does not hold. A primary
/// UDN's `ovn-udn1` belongs to the default network's attachment (the runtime only knows
/// that one): it stays while its sandbox's default attachment is valid.
pub fn stale_ports<'a>(
    ports: &'a [PodPortRecord],
    attachment: &Attachment,
    valid: &BTreeSet<ValidAttachment>,
) -> Vec<&'a PodPortRecord> {
    let sandboxes: BTreeSet<&str> = valid.iter().map(|v| v.container_id.as_str()).collect();
    ports
        .iter()
        .filter(|port| {
            let ifname = port.pod_if_name.as_deref().unwrap_or_default();
            if attachment.is_default() {
                let default = port.nad_key.is_none();
                let primary_udn = ifname == PRIMARY_UDN_IFNAME;
                if primary_udn {
                    return !sandboxes.contains(port.sandbox.as_str());
                }
                default
                    && !valid.contains(&ValidAttachment {
                        container_id: port.sandbox.clone(),
                        ifname: ifname.to_owned(),
                    })
            } else {
                port.nad_key.as_deref() == Some(attachment.nad_key.as_str())
                    && ifname != PRIMARY_UDN_IFNAME
                    && !valid.contains(&ValidAttachment {
                        container_id: port.sandbox.clone(),
                        ifname: ifname.to_owned(),
                    })
            }
        })
        .collect()
}

/// Runs GC for `attachment` with the request's `config`; the ports removed.
pub async fn gc(
    ctx: &CniContext,
    attachment: &Attachment,
    config: &[u8],
) -> Result<Vec<String>, GcError> {
    let valid = valid_attachments(config)?;
    let ports = ctx.ovs.pod_ports(BR_INT)?;
    let stale: Vec<String> = stale_ports(&ports, attachment, &valid)
        .into_iter()
        .map(|port| port.name.clone())
        .collect();
    for name in &stale {
        ctx.ovs.delete_port(BR_INT, name).await?;
        if let Err(error) = delete_host_veth(name).await {
            warn!(veth = %name, error = %error, "deleting a stale pod veth failed");
        }
        info!(port = %name, network = %attachment.net_name, "stale pod attachment removed");
    }
    Ok(stale)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;

    fn port(name: &str, sandbox: &str, ifname: &str, nad: Option<&str>) -> PodPortRecord {
        PodPortRecord {
            name: name.into(),
            iface_id: String::new(),
            sandbox: sandbox.into(),
            pod_if_name: Some(ifname.into()),
            network: nad.map(|_| "blue_net".into()),
            nad_key: nad.map(str::to_owned),
            ovn_installed: true,
            external_ids: BTreeMap::new(),
        }
    }

    #[test]
    fn only_the_networks_unlisted_ports_are_stale() {
        let ports = [
            port("a", "s1", "eth0", None),
            port("a_3", "s1", "ovn-udn1", Some("blue/net")),
            port("b", "s2", "eth0", None),
            port("b_3", "s2", "ovn-udn1", Some("blue/net")),
            port("c_4", "s1", "net1", Some("blue/sec")),
            port("d_4", "s3", "net1", Some("blue/sec")),
        ];
        let valid = valid_attachments(
            br#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","cni.dev/valid-attachments":[{"containerID":"s1","ifname":"eth0"}]}"#,
        )
        .unwrap();
        let names =
            |list: Vec<&PodPortRecord>| list.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        let default = Attachment::default_network(1400);
        assert_eq!(names(stale_ports(&ports, &default, &valid)), ["b", "b_3"]);
        let secondary = Attachment {
            net_name: "blue_sec".into(),
            nad_key: "blue/sec".into(),
            mtu: 1400,
            info: None,
        };
        // `info: None` would mean the default network: give it one through the key alone.
        let secondary = Attachment {
            info: Some(
                super::super::network::attachment_of_netconf(
                    r#"{"cniVersion":"1.0.0","name":"blue_sec","type":"ovn-k8s-cni-overlay","netAttachDefName":"blue/sec","topology":"layer2","subnets":"10.9.0.0/24"}"#,
                    &test_cluster(),
                )
                .unwrap()
                .info
                .unwrap(),
            ),
            ..secondary
        };
        let valid = valid_attachments(
            br#"{"cni.dev/valid-attachments":[{"containerID":"s1","ifname":"net1"}]}"#,
        )
        .unwrap();
        assert_eq!(names(stale_ports(&ports, &secondary, &valid)), ["d_4"]);
        assert!(valid_attachments(br#"{"cni.dev/valid-attachments":"x"}"#).is_err());
    }

    fn test_cluster() -> udn_api::cluster::ClusterConfig {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            cluster: udn_api::cluster_args::ClusterArgs,
        }
        Cli::parse_from(["x"]).cluster.cluster().unwrap()
    }
}
