//! Per-node load balancers (upstream `buildPerNodeLBs`, the mode without load balancer
//! templates): for each node, protocol and Service, the switch rules and the gateway-router
//! rules of the per-node configs. They differ where a Local traffic policy keeps only the
//! node's endpoints, or where an endpoint is the node itself (reached from the gateway
//! router through the host masquerade IP). Identical rule sets make one
//! `node_router+switch_<node>` load balancer; otherwise `node_router_<node>`,
//! `node_local_router_<node>` (ETP=Local, `skip_snat=true`) and `node_switch_<node>`. Load
//! balancers of several nodes with the same rules are merged (`_merged`).

use std::net::IpAddr;

use super::config::{LbConfig, Vip};
use super::endpoints::{Target, eligible, join_host_port, of_family};
use super::lbs::{LbAttach, LbSpec, NetLbContext, Rule, by_protocol};
use super::view::{ServiceView, SliceView};

/// What a node's per-node load balancers need of it, for one network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbNode {
    /// Node name.
    pub name: String,
    /// Its addresses (`k8s.ovn.org/host-cidrs`): the NodePort VIPs, and the endpoints that
    /// are the node itself.
    pub host_addresses: Vec<IpAddr>,
    /// `node-port-enable` of its gateway config.
    pub node_port_enabled: bool,
    /// Whether it has a gateway router for the network.
    pub gateway_router: bool,
}

fn host_masquerade(ctx: &NetLbContext<'_>, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(ctx.host_masquerade.1)
    } else {
        IpAddr::V4(ctx.host_masquerade.0)
    }
}

fn etp_masquerade(ctx: &NetLbContext<'_>, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(ctx.etp_local_masquerade.1)
    } else {
        IpAddr::V4(ctx.etp_local_masquerade.0)
    }
}

/// The rules of one node and protocol: (switch, router, router without SNAT).
fn node_rules(
    ctx: &NetLbContext<'_>,
    node: &LbNode,
    slices: &[&SliceView],
    configs: &[&LbConfig],
) -> (Vec<Rule>, Vec<Rule>, Vec<Rule>) {
    let mut switch = Vec::new();
    let mut router = Vec::new();
    let mut no_snat = Vec::new();
    for config in configs {
        // The node's own endpoints, when a Local traffic policy needs them.
        let local = (config.external_traffic_local || config.internal_traffic_local).then(|| {
            eligible(
                slices,
                &config.port_name,
                &config.protocol,
                Some(&node.name),
            )
        });
        let switch_local: &[Target] = local.as_deref().unwrap_or(&config.cluster_targets);
        let mut router_targets: Vec<Target> = if config.external_traffic_local {
            switch_local.to_vec()
        } else {
            config.cluster_targets.clone()
        };
        // The node itself as an endpoint: its gateway router reaches it through the host
        // masquerade IP (upstream `makeNodeRouterTargetIPs`).
        for (ip, _) in &mut router_targets {
            if node.host_addresses.contains(ip) {
                *ip = host_masquerade(ctx, ip.is_ipv6());
            }
        }
        let mut vips = Vec::new();
        for vip in &config.vips {
            match vip {
                Vip::Ip(ip) => vips.push(*ip),
                Vip::NodeIps if node.node_port_enabled => {
                    vips.extend(node.host_addresses.iter().copied());
                }
                Vip::NodeIps => {}
            }
        }
        for vip in vips {
            let v6 = vip.is_ipv6();
            let source = join_host_port(vip, config.inport);
            if config.external_traffic_local && config.has_node_port {
                switch.push((
                    join_host_port(etp_masquerade(ctx, v6), config.inport),
                    of_family(switch_local, v6),
                ));
            }
            if config.internal_traffic_local && ctx.is_cluster_ip(vip) {
                switch.push((source.clone(), of_family(switch_local, v6)));
            } else {
                switch.push((source.clone(), of_family(&config.cluster_targets, v6)));
            }
            let targets = of_family(&router_targets, v6);
            if config.external_traffic_local && !targets.is_empty() {
                no_snat.push((source, targets));
            } else {
                router.push((source, targets));
            }
        }
    }
    (switch, router, no_snat)
}

/// The per-node load balancers of `service` from its per-node `configs`.
pub(crate) fn per_node_lbs(
    ctx: &NetLbContext<'_>,
    service: &ServiceView,
    slices: &[&SliceView],
    configs: &[LbConfig],
) -> Vec<LbSpec> {
    if configs.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(Vec<Rule>, LbSpec)> = Vec::new();
    let attach = |switch: bool, router: bool, node: &str| LbAttach::Nodes {
        switches: if switch {
            vec![node.to_owned()]
        } else {
            vec![]
        },
        routers: if router {
            vec![node.to_owned()]
        } else {
            vec![]
        },
    };
    for node in ctx.nodes {
        for (protocol, configs) in by_protocol(configs) {
            let (switch, router, no_snat) = node_rules(ctx, node, slices, &configs);
            let name = &node.name;
            let mut add = |scope: String, rules: Vec<Rule>, skip_snat, attach| {
                let lb = ctx.lb(service, protocol, &scope, &rules, skip_snat, attach);
                out.push((rules, lb));
            };
            if switch == router && !switch.is_empty() && node.gateway_router {
                add(
                    format!("node_router+switch_{name}"),
                    router,
                    false,
                    attach(true, true, name),
                );
                continue;
            }
            if !router.is_empty() && node.gateway_router {
                add(
                    format!("node_router_{name}"),
                    router,
                    false,
                    attach(false, true, name),
                );
            }
            if !no_snat.is_empty() && node.gateway_router {
                add(
                    format!("node_local_router_{name}"),
                    no_snat,
                    true,
                    attach(false, true, name),
                );
            }
            if !switch.is_empty() {
                add(
                    format!("node_switch_{name}"),
                    switch,
                    false,
                    attach(true, false, name),
                );
            }
        }
    }
    merge(out)
}

/// Joins load balancers with the same protocol, options and rules (upstream `mergeLBs`):
/// the first keeps its name with `_merged` and takes the others' switches and routers.
fn merge(lbs: Vec<(Vec<Rule>, LbSpec)>) -> Vec<LbSpec> {
    if lbs.len() == 1 {
        return lbs.into_iter().map(|(_, lb)| lb).collect();
    }
    let mut out: Vec<(Vec<Rule>, LbSpec)> = Vec::new();
    'outer: for (rules, lb) in lbs {
        for (kept_rules, kept) in &mut out {
            if kept.protocol == lb.protocol
                && kept.options == lb.options
                && kept.selection_fields == lb.selection_fields
                && *kept_rules == rules
            {
                if let (
                    LbAttach::Nodes { switches, routers },
                    LbAttach::Nodes {
                        switches: more_switches,
                        routers: more_routers,
                    },
                ) = (&mut kept.attach, &lb.attach)
                {
                    switches.extend(more_switches.iter().cloned());
                    routers.extend(more_routers.iter().cloned());
                }
                if !kept.name.ends_with("_merged") {
                    kept.name.push_str("_merged");
                }
                continue 'outer;
            }
        }
        out.push((rules, lb));
    }
    out.into_iter().map(|(_, lb)| lb).collect()
}
