//! A network's load balancers from its Services and EndpointSlices (upstream
//! `buildClusterLBs`, `buildPerNodeLBs` and `buildLB`): one cluster-wide load balancer per
//! Service and protocol in the network's `clusterLBGroup`, and per-node ones attached to the
//! node's switch and gateway router directly.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;

use super::config::{LbConfig, Vip, service_configs};
use super::endpoints::{join_host_port, of_family};
use super::per_node::{LbNode, per_node_lbs};
use super::view::{ServiceView, SliceView};

/// Upstream's `MaxClientIPServiceAffinitySeconds`: with this timeout the load balancer selects
/// by source and destination IP instead of an `affinity_timeout`.
const MAX_AFFINITY_TIMEOUT: u32 = 86_400;

/// Protocols in upstream's order.
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];

/// Where a load balancer is attached.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LbAttach {
    /// The network's `clusterLBGroup` (every node switch and gateway router).
    ClusterGroup,
    /// These nodes' switches and gateway routers, directly (node names).
    Nodes {
        /// Nodes whose switch holds it.
        switches: Vec<String>,
        /// Nodes whose gateway router holds it.
        routers: Vec<String>,
    },
}

/// One `Load_Balancer` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbSpec {
    /// `[<prefix>]Service_<ns>/<name>_<PROTO>_<scope>`.
    pub name: String,
    /// `ns/name` of the Service (the unit that owns the row).
    pub service: String,
    /// `tcp`, `udp` or `sctp`.
    pub protocol: String,
    /// VIP (`ip:port`, `[ip6]:port`) to backends (`ip:port,...`, empty: rejected).
    pub vips: BTreeMap<String, String>,
    /// `options`.
    pub options: BTreeMap<String, String>,
    /// `selection_fields` (`ip_src`, `ip_dst` for the longest session affinity).
    pub selection_fields: Vec<String>,
    /// `external_ids` besides the engine's ownership stamps.
    pub external_ids: BTreeMap<String, String>,
    /// Where it is attached.
    pub attach: LbAttach,
}

/// One VIP and its targets (upstream `LBRule`).
pub(crate) type Rule = (String, Vec<String>);

/// What a network's load balancers are built from besides its Services and slices.
#[derive(Clone, Debug)]
pub struct NetLbContext<'a> {
    /// The network (`None`: the default network).
    pub network: Option<&'a str>,
    /// Name prefix (`<network>_` on a UDN, empty for the default network).
    pub prefix: &'a str,
    /// Upstream's `"<v4> <v6>"` service hairpin masquerade IPs (`options:hairpin_snat_ip`).
    pub hairpin_snat_ip: &'a str,
    /// The network's cluster subnets: an endpoint outside them is host-networked.
    pub subnets: &'a [IpNetwork],
    /// The cluster's service CIDRs (which VIPs are cluster IPs).
    pub service_cidrs: &'a [IpNetwork],
    /// The zone's local nodes with what their per-node load balancers need.
    pub nodes: &'a [LbNode],
    /// The host masquerade IPs (`169.254.0.2`, `fd69::2`): a host-network endpoint on the
    /// node itself is reached through them from its gateway router.
    pub host_masquerade: (Ipv4Addr, Ipv6Addr),
    /// The `externalTrafficPolicy: Local` masquerade IPs (`169.254.0.3`, `fd69::3`).
    pub etp_local_masquerade: (Ipv4Addr, Ipv6Addr),
}

impl NetLbContext<'_> {
    pub(crate) fn name(&self, service: &ServiceView, protocol: &str, scope: &str) -> String {
        format!(
            "{}Service_{}/{}_{protocol}_{scope}",
            self.prefix, service.namespace, service.name
        )
    }

    pub(crate) fn is_cluster_ip(&self, ip: IpAddr) -> bool {
        self.service_cidrs
            .iter()
            .any(|c| c.is_ipv6() == ip.is_ipv6() && c.contains(ip))
    }

    pub(crate) fn external_ids(&self) -> BTreeMap<String, String> {
        let mut ids = BTreeMap::from([("k8s.ovn.org/kind".to_owned(), "Service".to_owned())]);
        if let Some(network) = self.network {
            ids.insert("k8s.ovn.org/network".to_owned(), network.to_owned());
            ids.insert("k8s.ovn.org/role".to_owned(), "primary".to_owned());
        }
        ids
    }

    /// `options` and `selection_fields` of `service`'s load balancers (upstream `lbOpts`
    /// and `buildLB`).
    pub(crate) fn options(
        &self,
        service: &ServiceView,
        skip_snat: bool,
    ) -> (BTreeMap<String, String>, Vec<String>) {
        let mut options = BTreeMap::from([
            ("event".to_owned(), "false".to_owned()),
            ("reject".to_owned(), "true".to_owned()),
            ("skip_snat".to_owned(), skip_snat.to_string()),
            ("neighbor_responder".to_owned(), "none".to_owned()),
            (
                "hairpin_snat_ip".to_owned(),
                self.hairpin_snat_ip.to_owned(),
            ),
        ]);
        let mut selection = Vec::new();
        match service.affinity_timeout {
            Some(MAX_AFFINITY_TIMEOUT) => {
                selection = vec!["ip_src".to_owned(), "ip_dst".to_owned()];
            }
            Some(timeout) if timeout > 0 => {
                options.insert("affinity_timeout".to_owned(), timeout.to_string());
            }
            _ => {}
        }
        (options, selection)
    }

    /// A load balancer of `service` with `rules`.
    pub(crate) fn lb(
        &self,
        service: &ServiceView,
        protocol: &str,
        scope: &str,
        rules: &[Rule],
        skip_snat: bool,
        attach: LbAttach,
    ) -> LbSpec {
        let (options, selection_fields) = self.options(service, skip_snat);
        LbSpec {
            name: self.name(service, protocol, scope),
            service: service.key(),
            protocol: protocol.to_ascii_lowercase(),
            vips: vip_map(rules),
            options,
            selection_fields,
            external_ids: self.external_ids(),
            attach,
        }
    }
}

/// The VIPs column: targets of rules with the same VIP are joined (upstream `buildVipMap`).
pub(crate) fn vip_map(rules: &[Rule]) -> BTreeMap<String, String> {
    let mut joined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (vip, targets) in rules {
        joined
            .entry(vip.clone())
            .or_default()
            .extend(targets.iter().cloned());
    }
    joined
        .into_iter()
        .map(|(vip, targets)| (vip, targets.join(",")))
        .collect()
}

/// The configs by protocol, in upstream's protocol order.
pub(crate) fn by_protocol(configs: &[LbConfig]) -> Vec<(&'static str, Vec<&LbConfig>)> {
    PROTOCOLS
        .iter()
        .filter_map(|proto| {
            let of: Vec<&LbConfig> = configs.iter().filter(|c| c.protocol == *proto).collect();
            (!of.is_empty()).then_some((*proto, of))
        })
        .collect()
}

fn cluster_lbs(ctx: &NetLbContext<'_>, service: &ServiceView, configs: &[LbConfig]) -> Vec<LbSpec> {
    let mut out = Vec::new();
    for (protocol, configs) in by_protocol(configs) {
        let mut rules = Vec::new();
        for config in configs {
            for vip in &config.vips {
                let Vip::Ip(ip) = vip else { continue };
                rules.push((
                    join_host_port(*ip, config.inport),
                    of_family(&config.cluster_targets, ip.is_ipv6()),
                ));
            }
        }
        out.push(ctx.lb(
            service,
            protocol,
            "cluster",
            &rules,
            false,
            LbAttach::ClusterGroup,
        ));
    }
    out
}

/// The load balancers of `ctx`'s network: its Services are `services` (the caller chose
/// them); `slices` may hold other networks' slices too. Sorted by name.
pub fn network_lbs(
    ctx: &NetLbContext<'_>,
    services: &[ServiceView],
    slices: &[SliceView],
) -> Vec<LbSpec> {
    let mut by_service: BTreeMap<(&str, &str), Vec<&SliceView>> = BTreeMap::new();
    for slice in slices {
        if slice.network.as_deref() == ctx.network {
            by_service
                .entry((slice.namespace.as_str(), slice.service.as_str()))
                .or_default()
                .push(slice);
        }
    }
    let mut lbs = Vec::new();
    for service in services {
        if service.cluster_ips.is_empty() {
            continue;
        }
        let slices = by_service
            .get(&(service.namespace.as_str(), service.name.as_str()))
            .cloned()
            .unwrap_or_default();
        let (per_node, cluster) = service_configs(service, &slices, ctx.subnets);
        lbs.extend(cluster_lbs(ctx, service, &cluster));
        lbs.extend(per_node_lbs(ctx, service, &slices, &per_node));
    }
    lbs.sort_by(|a, b| a.name.cmp(&b.name));
    lbs
}

#[cfg(test)]
mod tests;
