//! The management port's SNAT chain (upstream `managementport/port_linux.go`,
//! `setupManagementPortNFTSets` and `setupManagementPortNFTChain`; `node-and-interconnect.md`
//! §5.4): host traffic leaving through `ovn-k8s-mp0` gets the port's own address as its
//! source, so the pods' replies come back through the port, except traffic whose source must
//! stay (`externalTrafficPolicy: Local` NodePorts and load balancer IPs, excluded subnets).
//!
//! Base chain `mgmtport-snat` (nat, postrouting, srcnat) and five sets in the shared table
//! `inet ovn-kubernetes`, with upstream's names, types, flags, comments and rule text, in
//! upstream's order. Inputs ([`MgmtSnatInputs`]) -> desired ([`desired`]: the rules and the
//! sets' elements) -> one transaction ([`transaction`]: adds the table, the sets and the
//! chain, flushes only this chain and these five sets, writes them again) -> [`apply`].
//! Nothing else in the table is touched: host isolation's `udn-isolation` chain and its
//! sets live there too.
//!
//! The sets' elements are plain input ([`NoSnatElements`]): after an apply the sets hold
//! exactly those. The agent fills `mgmtport-no-snat-nodeports` from the NodePorts of
//! `externalTrafficPolicy: Local` Services ([`no_snat_nodeports`]).

mod legacy_iptables;

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;

use crate::isolation::table_id;
use crate::nft::{
    BaseChain, Chain, ChainType, Element, Hook, ListTarget, NftError, NftExecutor, Priority, Rule,
    Set, SetFlag, Table, Transaction,
};

pub use legacy_iptables::{LEGACY_CHAIN, LegacyIptables, LegacyOutcome};

/// The base chain.
pub const CHAIN: &str = "mgmtport-snat";
/// Its comment.
pub const CHAIN_COMMENT: &str = "OVN SNAT to Management Port";

/// One of the five sets the chain looks up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoSnatSet {
    /// `mgmtport-no-snat-nodeports`: `protocol . port` of ETP=Local NodePorts.
    NodePorts,
    /// `mgmtport-no-snat-services-v4`: `address . protocol . port` of ETP=Local load
    /// balancer IPs (IPv4).
    ServicesV4,
    /// `mgmtport-no-snat-services-v6`: the same, IPv6.
    ServicesV6,
    /// `mgmtport-no-snat-subnets-v4`: source subnets never SNATed (IPv4).
    SubnetsV4,
    /// `mgmtport-no-snat-subnets-v6`: the same, IPv6.
    SubnetsV6,
}

impl NoSnatSet {
    /// The five sets, in the order upstream creates them.
    pub const ALL: [Self; 5] = [
        Self::NodePorts,
        Self::ServicesV4,
        Self::ServicesV6,
        Self::SubnetsV4,
        Self::SubnetsV6,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::NodePorts => "mgmtport-no-snat-nodeports",
            Self::ServicesV4 => "mgmtport-no-snat-services-v4",
            Self::ServicesV6 => "mgmtport-no-snat-services-v6",
            Self::SubnetsV4 => "mgmtport-no-snat-subnets-v4",
            Self::SubnetsV6 => "mgmtport-no-snat-subnets-v6",
        }
    }

    /// Its key type.
    pub fn key_type(self) -> &'static str {
        match self {
            Self::NodePorts => "inet_proto . inet_service",
            Self::ServicesV4 => "ipv4_addr . inet_proto . inet_service",
            Self::ServicesV6 => "ipv6_addr . inet_proto . inet_service",
            Self::SubnetsV4 => "ipv4_addr",
            Self::SubnetsV6 => "ipv6_addr",
        }
    }

    /// Its comment.
    pub fn comment(self) -> &'static str {
        match self {
            Self::NodePorts => "NodePorts not subject to management port SNAT",
            Self::ServicesV4 => {
                "eTP:Local short-circuit not subject to management port SNAT (IPv4)"
            }
            Self::ServicesV6 => {
                "eTP:Local short-circuit not subject to management port SNAT (IPv6)"
            }
            Self::SubnetsV4 => "subnets not subject to management port SNAT (IPv4)",
            Self::SubnetsV6 => "subnets not subject to management port SNAT (IPv6)",
        }
    }

    /// The set as upstream declares it (the subnet sets are interval sets).
    pub fn set(self) -> Set {
        let set = Set::new(self.name(), self.key_type()).with_comment(self.comment());
        match self {
            Self::SubnetsV4 | Self::SubnetsV6 => set.with_flags([SetFlag::Interval]),
            Self::NodePorts | Self::ServicesV4 | Self::ServicesV6 => set,
        }
    }
}

/// A transport protocol of a no-SNAT element (`inet_proto`): a Service port's.
pub use crate::services::Protocol;

/// A NodePort whose traffic keeps its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodePort {
    /// Its protocol.
    pub protocol: Protocol,
    /// The node port.
    pub port: u16,
}

/// An address, protocol and port whose traffic keeps its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePort {
    /// The destination address (its family picks the set).
    pub ip: IpAddr,
    /// Its protocol.
    pub protocol: Protocol,
    /// The destination port.
    pub port: u16,
}

/// What the five sets hold. Upstream fills them from Services (ETP=Local NodePorts and load
/// balancer IPs) and the node's `k8s.ovn.org/node-ingress-snat-exclude-subnets`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoSnatElements {
    /// `mgmtport-no-snat-nodeports`.
    pub nodeports: BTreeSet<NodePort>,
    /// `mgmtport-no-snat-services-v4` and `-v6`, by the address's family.
    pub services: BTreeSet<ServicePort>,
    /// `mgmtport-no-snat-subnets-v4` and `-v6`, by family.
    pub subnets: BTreeSet<IpNetwork>,
}

/// The `mgmtport-no-snat-nodeports` elements of `services` (upstream `getGatewayNFTRules`
/// with `getNoSNATNodePortRules`): every NodePort of an `externalTrafficPolicy: Local`
/// Service, so the client's source survives the management port. Upstream adds them only
/// while the Service has no host-network endpoint on this node; udn does not read
/// endpoints and never DNATs to a local host-network endpoint (docs/gateway.md), so that
/// is always the case here. `services` are those of networks active on this node.
pub fn no_snat_nodeports<'a>(
    services: impl IntoIterator<Item = &'a crate::services::ServiceView>,
) -> BTreeSet<NodePort> {
    services
        .into_iter()
        .filter(|service| service.external_traffic_local && !service.cluster_ips.is_empty())
        .flat_map(|service| &service.ports)
        .filter_map(|port| {
            Some(NodePort {
                protocol: port.protocol,
                port: port.node_port?,
            })
        })
        .collect()
}

/// What the chain is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MgmtSnatInputs {
    /// The management port (`ovn-k8s-mp0`).
    pub interface: String,
    /// Its IPv4 address (the `.2` of the IPv4 host subnet), if the node has one.
    pub ipv4: Option<Ipv4Addr>,
    /// Its IPv6 address, if the node has an IPv6 host subnet.
    pub ipv6: Option<Ipv6Addr>,
    /// The sets' elements.
    pub no_snat: NoSnatElements,
}

/// The chain's rules and the sets' elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredMgmtSnat {
    /// What it was built from (to build it again with other elements).
    pub inputs: MgmtSnatInputs,
    /// The rule texts, in upstream's order.
    pub rules: Vec<String>,
    /// Every set's elements, set by set in [`NoSnatSet::ALL`] order.
    pub elements: Vec<Element>,
}

/// Why the chain could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum MgmtSnatError {
    /// The transaction failed (nothing of it was applied).
    #[error(
        "nft chain {chain} and its sets in table inet ovn-kubernetes could not be applied: {source}"
    )]
    Apply {
        /// The chain.
        chain: &'static str,
        /// nft's error.
        #[source]
        source: NftError,
    },
}

/// The chain as upstream declares it.
pub fn chain() -> Chain {
    Chain::base(
        CHAIN,
        BaseChain::new(ChainType::Nat, Hook::Postrouting, Priority::SRCNAT),
    )
    .with_comment(CHAIN_COMMENT)
}

/// The rules and elements for `inputs` (pure).
///
/// Upstream's rules for a pod network advertised by route advertisement
/// (`meta nfproto ipv4 fib saddr type != local return`) are never written: udn has no route
/// advertisement. Neither are upstream's debug counters (its log level above 4).
pub fn desired(inputs: &MgmtSnatInputs) -> DesiredMgmtSnat {
    let mut rules = vec![
        format!("oifname != {} return", interface_token(&inputs.interface)),
        format!(
            "meta l4proto . th dport @{} return",
            NoSnatSet::NodePorts.name()
        ),
    ];
    if let Some(ip) = inputs.ipv4 {
        rules.extend(family_rules(
            "ipv4",
            "ip",
            &ip.to_string(),
            NoSnatSet::ServicesV4,
            NoSnatSet::SubnetsV4,
        ));
    }
    if let Some(ip) = inputs.ipv6 {
        rules.extend(family_rules(
            "ipv6",
            "ip6",
            &ip.to_string(),
            NoSnatSet::ServicesV6,
            NoSnatSet::SubnetsV6,
        ));
    }
    DesiredMgmtSnat {
        inputs: inputs.clone(),
        rules,
        elements: elements(&inputs.no_snat),
    }
}

/// One family's rules: keep the port's own address, the excluded services and subnets, SNAT
/// the rest to the port's address.
fn family_rules(
    nfproto: &str,
    payload: &str,
    address: &str,
    services: NoSnatSet,
    subnets: NoSnatSet,
) -> [String; 4] {
    [
        format!("meta nfproto {nfproto} {payload} saddr {address} return"),
        format!(
            "{payload} daddr . meta l4proto . th dport @{} return",
            services.name()
        ),
        format!("{payload} saddr @{} return", subnets.name()),
        format!("snat {payload} to {address}"),
    ]
}

/// Upstream writes the interface name bare; a name nft would not read as one word (a
/// digit first, say) is quoted, which nft loads the same.
fn interface_token(name: &str) -> String {
    let mut chars = name.chars();
    let bare = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if bare {
        name.to_owned()
    } else {
        format!("\"{name}\"")
    }
}

fn elements(no_snat: &NoSnatElements) -> Vec<Element> {
    let mut out: Vec<Element> = no_snat
        .nodeports
        .iter()
        .map(|nodeport| {
            Element::set(
                NoSnatSet::NodePorts.name(),
                vec![
                    nodeport.protocol.as_str().to_owned(),
                    nodeport.port.to_string(),
                ],
            )
        })
        .collect();
    for (set, v4) in [
        (NoSnatSet::ServicesV4, true),
        (NoSnatSet::ServicesV6, false),
    ] {
        out.extend(
            no_snat
                .services
                .iter()
                .filter(|service| service.ip.is_ipv4() == v4)
                .map(|service| {
                    Element::set(
                        set.name(),
                        vec![
                            service.ip.to_string(),
                            service.protocol.as_str().to_owned(),
                            service.port.to_string(),
                        ],
                    )
                }),
        );
    }
    for (set, v4) in [(NoSnatSet::SubnetsV4, true), (NoSnatSet::SubnetsV6, false)] {
        out.extend(
            outermost(&no_snat.subnets, v4)
                .into_iter()
                .map(|subnet| Element::set(set.name(), vec![subnet.to_string()])),
        );
    }
    out
}

/// The family's subnets as networks (host bits cleared), without those inside another
/// one: nft refuses overlapping intervals in one transaction, and the union is the same.
fn outermost(subnets: &BTreeSet<IpNetwork>, v4: bool) -> Vec<IpNetwork> {
    let mut networks: Vec<IpNetwork> = subnets
        .iter()
        .filter(|subnet| subnet.is_ipv4() == v4)
        .filter_map(|subnet| IpNetwork::new(subnet.network(), subnet.prefix()).ok())
        .collect();
    networks.sort_by_key(|subnet| (subnet.prefix(), subnet.network()));
    let mut kept: Vec<IpNetwork> = Vec::new();
    for subnet in networks {
        if !kept.iter().any(|outer| outer.contains(subnet.network())) {
            kept.push(subnet);
        }
    }
    kept.sort_by_key(|subnet| (subnet.network(), subnet.prefix()));
    kept
}

/// The one transaction that sets the chain and its sets to `desired`: the table, the five
/// sets and the chain are added (a no-op when they exist), then only this chain and these
/// five sets are flushed and written again. Nothing else in the table is flushed or deleted.
pub fn transaction(desired: &DesiredMgmtSnat) -> Transaction {
    let mut tx = Transaction::new(table_id());
    tx.add(Table::default());
    for set in NoSnatSet::ALL {
        tx.add(set.set());
    }
    tx.add(chain()).flush(Chain::named(CHAIN));
    for rule in &desired.rules {
        tx.add(Rule::new(CHAIN, rule.clone()));
    }
    for set in NoSnatSet::ALL {
        tx.flush(set.set());
    }
    for element in &desired.elements {
        tx.add(element.clone());
    }
    tx
}

/// Applies `desired` in one nft transaction. Idempotent: applying it again leaves the same
/// chain and sets (established connections keep their NAT bindings across a re-apply).
pub async fn apply(
    exec: &impl NftExecutor,
    desired: &DesiredMgmtSnat,
) -> Result<(), MgmtSnatError> {
    exec.run(&transaction(desired))
        .await
        .map_err(|source| MgmtSnatError::Apply {
            chain: CHAIN,
            source,
        })?;
    tracing::debug!(
        chain = CHAIN,
        rules = desired.rules.len(),
        elements = desired.elements.len(),
        "management port SNAT chain applied"
    );
    Ok(())
}

/// What the last apply left: the desired state and nft's listing of the chain right after
/// it, so a periodic re-apply with nothing changed sends nothing.
#[derive(Debug, Default)]
pub struct SnatMemory {
    last: Option<(DesiredMgmtSnat, Option<String>)>,
}

/// [`apply`] unless `desired` is what the last apply through `memory` wrote and the chain
/// still lists as it did then (one `nft list chain`); whether it applied. Drift in the
/// chain (flushed, a rule changed) is repaired; the sets' elements are compared with what
/// was written, not listed.
pub async fn ensure(
    exec: &impl NftExecutor,
    desired: &DesiredMgmtSnat,
    memory: &mut SnatMemory,
) -> Result<bool, MgmtSnatError> {
    let target = ListTarget::Chain(table_id(), CHAIN.to_owned());
    if let Some((last, listed)) = &memory.last
        && last == desired
    {
        match exec.list(&target).await {
            Ok(now) if now == *listed => return Ok(false),
            Ok(_) => tracing::info!(
                chain = CHAIN,
                "management port SNAT chain changed behind our back, applying again"
            ),
            Err(error) => tracing::debug!(%error, "cannot list the management port SNAT chain"),
        }
    }
    apply(exec, desired).await?;
    let listed = exec.list(&target).await.ok().flatten();
    memory.last = Some((desired.clone(), listed));
    Ok(true)
}

#[cfg(test)]
mod tests;
