//! `k8s.ovn.org/pod-networks`: per NAD key, the pod's IPs, MAC, gateways, routes, tunnel ID
//! and role (upstream `util/pod_annotation.go`).
//!
//! The value is a JSON object keyed by NAD key (`"default"`, `"<ns>/<nad>"`, or
//! `"<ns>/<nad>/<index>"` for a repeated attachment). Each entry is written with the fields in
//! this order: `ip_addresses` (always, `null` when there are none), `mac_address` (always),
//! `gateway_ips`, `routes`, `ip_address`, `gateway_ip`, `ipv6_lla_gateway_ip`, `tunnel_id`,
//! `role` (each omitted when empty). `ip_address` / `gateway_ip` are the deprecated
//! single-value forms: written only when there is exactly one IP (and one gateway).

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};

use super::{AnnotationError, MacAddress, from_json, masked, null_as_default, parse_cidr};
use crate::names::ANNOTATION_POD_NETWORKS;

/// The whole annotation: NAD key -> that attachment's network details.
pub type PodNetworks = BTreeMap<String, PodNetworkAnnotation>;

/// One attachment's network details (upstream `PodAnnotation`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodNetworkAnnotation {
    /// Pod IPs with the host-subnet / network prefix length (e.g. `10.132.2.5/24`).
    pub ip_addresses: Vec<IpNetwork>,
    /// Pod interface MAC.
    pub mac_address: MacAddress,
    /// Default gateways; empty unless this attachment provides the default route.
    pub gateway_ips: Vec<IpAddr>,
    /// Extra routes into the pod. A default-route destination is not allowed here.
    pub routes: Vec<PodRoute>,
    /// IPv6 link-local gateway (primary Layer2 with IPv6).
    pub ipv6_lla_gateway_ip: Option<Ipv6Addr>,
    /// Logical port tunnel key (Layer2 only); 0 means none and is not written.
    pub tunnel_id: u32,
    /// The network's role for this pod; `None` is not written.
    pub role: Option<PodNetworkRole>,
}

/// A route added to the pod's network namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodRoute {
    /// Destination network (written with host bits cleared).
    pub dest: IpNetwork,
    /// Next hop; `None` is written as `""`.
    pub next_hop: Option<IpAddr>,
}

/// The role a network plays for a pod (`role` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodNetworkRole {
    /// `primary`: the pod's primary network.
    Primary,
    /// `secondary`: an additional attachment.
    Secondary,
    /// `infrastructure-locked`: the default network of a pod whose primary network is a UDN.
    InfrastructureLocked,
}

impl PodNetworkRole {
    /// The annotation spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Secondary => "secondary",
            Self::InfrastructureLocked => "infrastructure-locked",
        }
    }
}

impl fmt::Display for PodNetworkRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PodNetworkRole {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "primary" => Ok(Self::Primary),
            "secondary" => Ok(Self::Secondary),
            "infrastructure-locked" => Ok(Self::InfrastructureLocked),
            _ => Err(()),
        }
    }
}

/// The entry as written on the wire (upstream `podAnnotation`), field order significant.
#[derive(Debug, Default, Serialize, Deserialize)]
struct WireEntry {
    #[serde(default)]
    ip_addresses: Option<Vec<String>>,
    #[serde(default, deserialize_with = "null_as_default")]
    mac_address: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    gateway_ips: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    routes: Vec<WireRoute>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    ip_address: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    gateway_ip: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    ipv6_lla_gateway_ip: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    tunnel_id: i64,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    role: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct WireRoute {
    #[serde(default, deserialize_with = "null_as_default")]
    dest: String,
    #[serde(rename = "nextHop", default, deserialize_with = "null_as_default")]
    next_hop: String,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

fn entry_name(nad_key: &str) -> String {
    format!("NAD key {nad_key:?}")
}

fn field_error(
    nad_key: &str,
    field: &'static str,
    value: impl Into<String>,
    reason: impl Into<String>,
) -> AnnotationError {
    AnnotationError::field(
        ANNOTATION_POD_NETWORKS,
        entry_name(nad_key),
        field,
        value,
        reason,
    )
}

/// Parses the annotation value. JSON `null` is an empty map (as Go's decoder treats it).
/// Validates every entry as upstream `UnmarshalPodAnnotation` does, and additionally rejects
/// a single IP with more than one gateway (which upstream refuses to write).
pub fn parse_pod_networks(value: &str) -> Result<PodNetworks, AnnotationError> {
    let wire: Option<BTreeMap<String, WireEntry>> = from_json(ANNOTATION_POD_NETWORKS, value)?;
    wire.unwrap_or_default()
        .into_iter()
        .map(|(key, entry)| {
            let parsed = entry_from_wire(&key, entry)?;
            Ok((key, parsed))
        })
        .collect()
}

fn entry_from_wire(key: &str, wire: WireEntry) -> Result<PodNetworkAnnotation, AnnotationError> {
    let mac_address = wire
        .mac_address
        .parse::<MacAddress>()
        .map_err(|_| field_error(key, "mac_address", &wire.mac_address, "not a MAC address"))?;
    let ip_texts = with_legacy(
        key,
        wire.ip_addresses.unwrap_or_default(),
        wire.ip_address,
        ("ip_address", "ip_addresses"),
    )?;
    let ip_addresses = ip_texts
        .iter()
        .map(|text| {
            parse_cidr(text)
                .ok_or_else(|| field_error(key, "ip_addresses", text, "not an IP in CIDR notation"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let gateway_texts = with_legacy(
        key,
        wire.gateway_ips,
        wire.gateway_ip,
        ("gateway_ip", "gateway_ips"),
    )?;
    let gateway_ips = gateway_texts
        .iter()
        .map(|text| {
            text.parse::<IpAddr>()
                .map_err(|_| field_error(key, "gateway_ips", text, "not an IP address"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_single_stack_gateways(key, &ip_addresses, &gateway_ips)?;
    let routes = wire
        .routes
        .iter()
        .map(|route| route_from_wire(key, route))
        .collect::<Result<Vec<_>, _>>()?;
    let ipv6_lla_gateway_ip = if wire.ipv6_lla_gateway_ip.is_empty() {
        None
    } else {
        let lla = wire.ipv6_lla_gateway_ip.parse::<Ipv6Addr>().ok();
        match lla {
            Some(ip) if ip.is_unicast_link_local() => Some(ip),
            _ => {
                return Err(field_error(
                    key,
                    "ipv6_lla_gateway_ip",
                    wire.ipv6_lla_gateway_ip,
                    "not an IPv6 link-local address",
                ));
            }
        }
    };
    let tunnel_id = u32::try_from(wire.tunnel_id).map_err(|_| {
        field_error(
            key,
            "tunnel_id",
            wire.tunnel_id.to_string(),
            "not a tunnel key (0..=4294967295)",
        )
    })?;
    let role = if wire.role.is_empty() {
        None
    } else {
        Some(wire.role.parse::<PodNetworkRole>().map_err(|()| {
            field_error(
                key,
                "role",
                &wire.role,
                "not one of primary, secondary, infrastructure-locked",
            )
        })?)
    };
    Ok(PodNetworkAnnotation {
        ip_addresses,
        mac_address,
        gateway_ips,
        routes,
        ipv6_lla_gateway_ip,
        tunnel_id,
        role,
    })
}

/// Merges a deprecated single-value field into its list: the list wins when non-empty, and
/// then the single value (if any) must equal its first element.
fn with_legacy(
    key: &str,
    mut list: Vec<String>,
    single: String,
    (single_name, list_name): (&'static str, &'static str),
) -> Result<Vec<String>, AnnotationError> {
    match list.first() {
        None if !single.is_empty() => list.push(single),
        Some(first) if !single.is_empty() && *first != single => {
            return Err(field_error(
                key,
                single_name,
                single,
                format!("conflicts with {list_name}[0] {first:?}"),
            ));
        }
        _ => {}
    }
    Ok(list)
}

fn route_from_wire(key: &str, route: &WireRoute) -> Result<PodRoute, AnnotationError> {
    let dest = parse_cidr(&route.dest)
        .map(masked)
        .ok_or_else(|| field_error(key, "routes.dest", &route.dest, "not a CIDR"))?;
    let next_hop = if route.next_hop.is_empty() {
        None
    } else {
        Some(route.next_hop.parse::<IpAddr>().map_err(|_| {
            field_error(key, "routes.nextHop", &route.next_hop, "not an IP address")
        })?)
    };
    let parsed = PodRoute { dest, next_hop };
    check_route(key, &parsed)?;
    Ok(parsed)
}

fn check_route(key: &str, route: &PodRoute) -> Result<(), AnnotationError> {
    let dest = masked(route.dest);
    if dest.network().is_unspecified() {
        return Err(field_error(
            key,
            "routes.dest",
            dest.to_string(),
            "a default route must be given as a gateway, not a route",
        ));
    }
    if let Some(next_hop) = route.next_hop
        && next_hop.is_ipv6() != dest.is_ipv6()
    {
        return Err(field_error(
            key,
            "routes.nextHop",
            next_hop.to_string(),
            format!("next hop is of a different IP family than destination {dest}"),
        ));
    }
    Ok(())
}

fn check_single_stack_gateways(
    key: &str,
    ips: &[IpNetwork],
    gateways: &[IpAddr],
) -> Result<(), AnnotationError> {
    if ips.len() == 1 && gateways.len() > 1 {
        let joined: Vec<String> = gateways.iter().map(ToString::to_string).collect();
        return Err(field_error(
            key,
            "gateway_ips",
            joined.join(","),
            "a single-stack network can only have a single gateway",
        ));
    }
    Ok(())
}

fn entry_to_wire(key: &str, entry: &PodNetworkAnnotation) -> Result<WireEntry, AnnotationError> {
    check_single_stack_gateways(key, &entry.ip_addresses, &entry.gateway_ips)?;
    for route in &entry.routes {
        check_route(key, route)?;
    }
    if let Some(lla) = entry.ipv6_lla_gateway_ip
        && !lla.is_unicast_link_local()
    {
        return Err(field_error(
            key,
            "ipv6_lla_gateway_ip",
            lla.to_string(),
            "not an IPv6 link-local address",
        ));
    }
    let ip_addresses: Vec<String> = entry.ip_addresses.iter().map(ToString::to_string).collect();
    let gateway_ips: Vec<String> = entry.gateway_ips.iter().map(ToString::to_string).collect();
    let (ip_address, gateway_ip) = match (ip_addresses.as_slice(), gateway_ips.as_slice()) {
        ([ip], [gateway]) => (ip.clone(), gateway.clone()),
        ([ip], _) => (ip.clone(), String::new()),
        _ => (String::new(), String::new()),
    };
    Ok(WireEntry {
        ip_addresses: (!ip_addresses.is_empty()).then_some(ip_addresses),
        mac_address: entry.mac_address.to_string(),
        gateway_ips,
        routes: entry
            .routes
            .iter()
            .map(|route| WireRoute {
                dest: masked(route.dest).to_string(),
                next_hop: route.next_hop.map(|ip| ip.to_string()).unwrap_or_default(),
            })
            .collect(),
        ip_address,
        gateway_ip,
        ipv6_lla_gateway_ip: entry
            .ipv6_lla_gateway_ip
            .map(|ip| ip.to_string())
            .unwrap_or_default(),
        tunnel_id: i64::from(entry.tunnel_id),
        role: entry
            .role
            .map(|role| role.as_str().to_owned())
            .unwrap_or_default(),
    })
}

/// Formats the annotation value as upstream `MarshalPodAnnotation` writes it, filling the
/// deprecated `ip_address` / `gateway_ip`. Fails (naming the NAD key and field) on a single
/// IP with several gateways, a default-route destination, a next hop of the other family, or
/// a non-link-local `ipv6_lla_gateway_ip`.
pub fn format_pod_networks(networks: &PodNetworks) -> Result<String, AnnotationError> {
    let wire = networks
        .iter()
        .map(|(key, entry)| Ok((key.as_str(), entry_to_wire(key, entry)?)))
        .collect::<Result<BTreeMap<&str, WireEntry>, AnnotationError>>()?;
    super::to_go_json(ANNOTATION_POD_NETWORKS, &wire)
}

/// Sets the entry for `nad_key` in an existing annotation value (`None` when the pod has no
/// such annotation yet) and returns the new value. As upstream, an existing entry's IPs are
/// never changed: a different IP set for an existing key is an error.
pub fn update_pod_networks(
    existing: Option<&str>,
    nad_key: &str,
    entry: PodNetworkAnnotation,
) -> Result<String, AnnotationError> {
    let mut networks = existing
        .map(parse_pod_networks)
        .transpose()?
        .unwrap_or_default();
    if let Some(current) = networks.get(nad_key) {
        let same_ips = current.ip_addresses.len() == entry.ip_addresses.len()
            && entry
                .ip_addresses
                .iter()
                .all(|ip| current.ip_addresses.contains(ip));
        if !same_ips {
            let joined: Vec<String> = entry.ip_addresses.iter().map(ToString::to_string).collect();
            return Err(field_error(
                nad_key,
                "ip_addresses",
                joined.join(","),
                "requested pod IPs would override the IPs already in the annotation",
            ));
        }
    }
    networks.insert(nad_key.to_owned(), entry);
    format_pod_networks(&networks)
}

#[cfg(test)]
mod tests;
