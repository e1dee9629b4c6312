//! The inputs resolved into what the flow texts interpolate: port and MAC strings, the
//! networks in rendering order with their marks and masquerade addresses, the node IP and the
//! global masquerade addresses per family.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::cluster::GatewayMode;
use udn_ipam::{GlobalMasqueradeIps, MasqueradeError, MasqueradeIps, udn_masquerade_ips};

use super::flow::{CT_MARK_OVN, CT_MARK_UDN_BASE, PKT_MARK_BASE};
use super::inputs::BridgeInputs;

/// Why the flows of a bridge cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesiredError {
    /// Local gateway mode sends egress through the host; its flows are not implemented.
    #[error("bridge {bridge}: gateway mode local is not supported (only shared)")]
    LocalGatewayMode {
        /// The bridge.
        bridge: String,
    },
    /// A family is enabled but the bridge has no address of it (upstream: "unable to
    /// determine IPv4 physical IP of host").
    #[error(
        "bridge {bridge}: unable to determine the {family} physical IP of the host (no {family} bridge IP)"
    )]
    NoNodeIp {
        /// The bridge.
        bridge: String,
        /// `IPv4` or `IPv6`.
        family: &'static str,
    },
    /// The masquerade subnet cannot hold a global masquerade address.
    #[error("bridge {bridge}: masquerade subnet")]
    GlobalMasquerade {
        /// The bridge.
        bridge: String,
        /// What udn-ipam said.
        #[source]
        source: Box<MasqueradeError>,
    },
    /// A UDN's masquerade addresses cannot be derived from its network ID.
    #[error("bridge {bridge}: network {network}: masquerade addresses")]
    UdnMasquerade {
        /// The bridge.
        bridge: String,
        /// The network.
        network: String,
        /// What udn-ipam said.
        #[source]
        source: Box<MasqueradeError>,
    },
}

/// VLAN fragments, empty when the gateway is untagged (upstream `match_vlan`, `strip_vlan`,
/// `mod_vlan_id`).
pub(super) struct Vlan {
    pub(super) matching: String,
    pub(super) strip: String,
    pub(super) modify: String,
}

/// One family's node IP, protocol prefix and global masquerade addresses.
pub(super) struct Family {
    /// `ip` or `ipv6`.
    pub(super) proto: &'static str,
    /// The node IP (upstream's "physical IP").
    pub(super) node_ip: IpAddr,
}

/// The global masquerade addresses and subnet text of one family.
pub(super) struct Masquerade {
    /// Offset 1: OVN masquerade.
    pub(super) ovn: IpAddr,
    /// Offset 2: host masquerade.
    pub(super) host: IpAddr,
    /// The subnet, `169.254.0.0/17`.
    pub(super) subnet: String,
}

/// A network on the bridge with a patch port.
pub(super) struct Net {
    pub(super) patch: String,
    pub(super) ct_mark: String,
    pub(super) udn: Option<Udn>,
}

/// What a UDN adds to [`Net`].
pub(super) struct Udn {
    pub(super) pkt_mark: String,
    pub(super) v4: Option<MasqueradeIps>,
    pub(super) v6: Option<MasqueradeIps>,
}

/// The conntrack zones (`config.Default.*ConntrackZone`).
pub(super) struct Zones {
    pub(super) conntrack: u32,
    pub(super) host_masq: u32,
    pub(super) ovn_masq: u32,
    pub(super) reassembly: u32,
}

/// Everything flow texts interpolate.
pub(super) struct Render {
    pub(super) mac: String,
    pub(super) phys: Option<String>,
    pub(super) host: String,
    pub(super) default_patch: String,
    pub(super) vlan: Vlan,
    /// The default network first, then the patched UDNs by network ID.
    pub(super) nets: Vec<Net>,
    pub(super) zones: Zones,
    pub(super) encap_port: u16,
    pub(super) network_segmentation: bool,
    /// `Some` when the family is enabled.
    pub(super) v4: Option<Family>,
    pub(super) v6: Option<Family>,
    pub(super) masq_v4: Masquerade,
    pub(super) masq_v6: Masquerade,
    /// Service CIDRs as text, in configuration order.
    pub(super) service_cidrs: Vec<IpNetwork>,
    /// The bridge IPs (each family's node IP).
    pub(super) bridge_ips: Vec<IpAddr>,
    /// Host addresses' networks and IPs, sorted by the address text as upstream's address
    /// manager lists them.
    pub(super) host_subnets: Vec<IpNetwork>,
    pub(super) host_ips: Vec<IpAddr>,
}

impl Render {
    /// Resolves `inputs`.
    pub(super) fn new(inputs: &BridgeInputs) -> Result<Self, DesiredError> {
        let cluster = &inputs.cluster;
        let bridge = || inputs.bridge.clone();
        if cluster.mode == GatewayMode::Local {
            return Err(DesiredError::LocalGatewayMode { bridge: bridge() });
        }
        let family = |v6: bool| -> Result<Option<Family>, DesiredError> {
            let enabled = if v6 { cluster.ipv6 } else { cluster.ipv4 };
            if !enabled {
                return Ok(None);
            }
            let node_ip = inputs.node_ip(v6).ok_or_else(|| DesiredError::NoNodeIp {
                bridge: bridge(),
                family: if v6 { "IPv6" } else { "IPv4" },
            })?;
            Ok(Some(Family {
                proto: if v6 { "ipv6" } else { "ip" },
                node_ip,
            }))
        };
        let masquerade = |subnet: IpNetwork| -> Result<Masquerade, DesiredError> {
            let subnet = canonical(subnet);
            let global = GlobalMasqueradeIps::from_subnet(subnet).map_err(|source| {
                DesiredError::GlobalMasquerade {
                    bridge: bridge(),
                    source: Box::new(source),
                }
            })?;
            Ok(Masquerade {
                ovn: global.ovn,
                host: global.host,
                subnet: subnet.to_string(),
            })
        };
        let masq_subnet_v4 = IpNetwork::V4(cluster.masquerade_subnet_v4);
        let masq_subnet_v6 = IpNetwork::V6(cluster.masquerade_subnet_v6);

        let mut udns: Vec<_> = inputs
            .udns
            .iter()
            .filter_map(|udn| udn.ofport.as_ref().map(|ofport| (udn, ofport)))
            .collect();
        udns.sort_by(|(a, _), (b, _)| (a.network_id, &a.network).cmp(&(b.network_id, &b.network)));
        let mut nets = vec![Net {
            patch: inputs.default_patch.to_string(),
            ct_mark: CT_MARK_OVN.to_owned(),
            udn: None,
        }];
        for (udn, ofport) in udns {
            let masq = |enabled: bool, subnet: IpNetwork| {
                enabled
                    .then(|| udn_masquerade_ips(subnet, udn.network_id))
                    .transpose()
                    .map_err(|source| DesiredError::UdnMasquerade {
                        bridge: bridge(),
                        network: udn.network.clone(),
                        source: Box::new(source),
                    })
            };
            nets.push(Net {
                patch: ofport.to_string(),
                ct_mark: format!("0x{:x}", CT_MARK_UDN_BASE + udn.network_id),
                udn: Some(Udn {
                    pkt_mark: format!("0x{:x}", PKT_MARK_BASE + udn.network_id),
                    v4: masq(cluster.ipv4, masq_subnet_v4)?,
                    v6: masq(cluster.ipv6, masq_subnet_v6)?,
                }),
            });
        }

        let mut host_addresses: Vec<(String, IpNetwork)> = inputs
            .host_addresses
            .iter()
            .map(|address| (address.to_string(), *address))
            .collect();
        host_addresses.sort();
        host_addresses.dedup();

        let vlan = match cluster.vlan_id {
            Some(id) if id != 0 => Vlan {
                matching: format!("dl_vlan={id},"),
                strip: "strip_vlan,".to_owned(),
                modify: format!("mod_vlan_vid:{id},"),
            },
            _ => Vlan {
                matching: String::new(),
                strip: String::new(),
                modify: String::new(),
            },
        };
        let zone = u32::from(cluster.conntrack_zone);
        Ok(Self {
            mac: inputs.mac.to_string(),
            phys: inputs.ofport_phys.as_ref().map(ToString::to_string),
            host: inputs.ofport_host.to_string(),
            default_patch: inputs.default_patch.to_string(),
            vlan,
            nets,
            zones: Zones {
                conntrack: zone,
                host_masq: zone + 1,
                ovn_masq: zone + 2,
                reassembly: zone + 4,
            },
            encap_port: cluster.encap_port,
            network_segmentation: cluster.network_segmentation,
            v4: family(false)?,
            v6: family(true)?,
            masq_v4: masquerade(masq_subnet_v4)?,
            masq_v6: masquerade(masq_subnet_v6)?,
            service_cidrs: cluster
                .service_cidrs
                .iter()
                .copied()
                .map(canonical)
                .collect(),
            bridge_ips: inputs.bridge_ips.iter().map(IpNetwork::ip).collect(),
            host_subnets: host_addresses
                .iter()
                .map(|(_, address)| canonical(*address))
                .collect(),
            host_ips: host_addresses
                .iter()
                .map(|(_, address)| address.ip())
                .collect(),
        })
    }

    /// The UDNs among [`Self::nets`].
    pub(super) fn udns(&self) -> impl Iterator<Item = (&Net, &Udn)> {
        self.nets
            .iter()
            .filter_map(|net| net.udn.as_ref().map(|udn| (net, udn)))
    }

    /// The global masquerade addresses of `cidr`'s family.
    pub(super) fn masquerade_of(&self, cidr: &IpNetwork) -> (&'static str, &Masquerade) {
        if cidr.is_ipv4() {
            ("ip", &self.masq_v4)
        } else {
            ("ipv6", &self.masq_v6)
        }
    }

    /// `output:<patch>,` for every network (`udns_only`: every UDN), upstream
    /// `patchOutputActions`.
    pub(super) fn patch_outputs(&self, udns_only: bool) -> String {
        self.nets
            .iter()
            .filter(|net| !udns_only || net.udn.is_some())
            .map(|net| format!("output:{},", net.patch))
            .collect()
    }
}

/// `net` with host bits cleared, as Go prints an `*net.IPNet`.
fn canonical(net: IpNetwork) -> IpNetwork {
    IpNetwork::new(net.network(), net.prefix()).unwrap_or(net)
}
