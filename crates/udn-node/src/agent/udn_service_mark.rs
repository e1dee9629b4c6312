//! The packet mark of host-reached UDN Services (upstream `configureUDNServicesNFTables`,
//! `getUDNNFTRules`, `getUDNNodePortMarkNFTRule`, `getUDNExternalIPsMarkNFTRules`, and the
//! per-network `addMarkChain` of `gateway_udn.go`): a packet the host sends or receives for a
//! primary UDN's NodePort (on a local address) or external/ingress IP jumps to that UDN's
//! chain `udn-mark-0x<1000+ID>`, which sets the network's packet mark; the mark sends it
//! through the UDN's VRF table (fwmark rule) to breth0, whose table 2 priority 250 flow
//! sends it to the UDN's patch port.
//!
//! In the shared table `inet ovn-kubernetes`, with upstream's names, types, comments and
//! rule texts: the regular chain `udn-service-mark`, the base chains `udn-service-prerouting`
//! (not from `ovn-k8s-mp0`: the default network must not reach a UDN's NodePort) and
//! `udn-service-output`, the verdict maps `udn-mark-nodeports`, `udn-mark-external-ips-v4`
//! and `-v6`, and one chain per primary UDN on the node.
//!
//! Inputs ([`ServiceMarkInputs`], from the gateway's inputs) -> desired ([`desired`]) ->
//! plan: the first time (and after someone changed the mark chain) one full transaction
//! ([`full_transaction`]: the static chains and maps as upstream writes them, the three maps
//! flushed and filled, stale per-network chains deleted); then only the differences
//! ([`update_transaction`]: elements and per-network chains added or deleted), nothing at all
//! while nothing changed ([`ServiceMarkSync`]). No other owner's chain, set or map in the table
//! is touched.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::gateway::{BridgeInputs, PKT_MARK_BASE};
use crate::isolation::table_id;
use crate::nft::{
    BaseChain, Chain, ChainType, Element, Hook, ListTarget, Map, NftError, NftExecutor, Priority,
    Rule, Table, Transaction,
};
use crate::services::{ServiceNetwork, ServiceView};

/// The regular chain the base chains jump to.
pub const MARK_CHAIN: &str = "udn-service-mark";
/// The prerouting base chain.
pub const PREROUTING_CHAIN: &str = "udn-service-prerouting";
/// The output base chain.
pub const OUTPUT_CHAIN: &str = "udn-service-output";
/// Prefix of a network's mark chain (`udn-mark-0x1001`).
pub const NETWORK_CHAIN_PREFIX: &str = "udn-mark-";
/// The default network's management port: its traffic never gets a UDN mark.
const MGMT_PORT: &str = "ovn-k8s-mp0";

/// One of the three verdict maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MarkMap {
    /// `udn-mark-nodeports`: `protocol . port` of NodePorts.
    NodePorts,
    /// `udn-mark-external-ips-v4`: `address . protocol . port`.
    ExternalIpsV4,
    /// `udn-mark-external-ips-v6`.
    ExternalIpsV6,
}

impl MarkMap {
    /// The three, in upstream's order.
    pub const ALL: [Self; 3] = [Self::NodePorts, Self::ExternalIpsV4, Self::ExternalIpsV6];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::NodePorts => "udn-mark-nodeports",
            Self::ExternalIpsV4 => "udn-mark-external-ips-v4",
            Self::ExternalIpsV6 => "udn-mark-external-ips-v6",
        }
    }

    /// The map as upstream declares it.
    pub fn map(self) -> Map {
        let (key, comment) = match self {
            Self::NodePorts => ("inet_proto . inet_service", "UDN services NodePorts mark"),
            Self::ExternalIpsV4 => (
                "ipv4_addr . inet_proto . inet_service",
                "UDN services External IPs mark (IPv4)",
            ),
            Self::ExternalIpsV6 => (
                "ipv6_addr . inet_proto . inet_service",
                "UDN services External IPs mark (IPv6)",
            ),
        };
        Map::new(self.name(), key, "verdict").with_comment(comment)
    }
}

/// A primary UDN on the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedUdn {
    /// Its network name (the chain's comment).
    pub network: String,
    /// Its network ID (the mark is 0x1000 + ID).
    pub network_id: u32,
    /// Whether its patch port exists: only then do its Services get elements (upstream's
    /// `getActiveNetwork`), as they get flows.
    pub patched: bool,
}

/// What the chains and maps are computed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceMarkInputs {
    /// The primary UDNs on the node.
    pub udns: Vec<MarkedUdn>,
    /// The cluster's Services (those of a patched UDN count).
    pub services: Vec<ServiceView>,
}

impl ServiceMarkInputs {
    /// The inputs the gateway bridge's inputs imply.
    pub fn from_bridge(inputs: &BridgeInputs) -> Self {
        Self {
            udns: inputs
                .udns
                .iter()
                .map(|udn| MarkedUdn {
                    network: udn.network.clone(),
                    network_id: udn.network_id,
                    patched: udn.ofport.is_some(),
                })
                .collect(),
            services: inputs.services.clone(),
        }
    }
}

/// A network's mark chain.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NetworkChain {
    /// `0x1001`.
    pub mark: String,
    /// `<network>: UDN packet marking`.
    pub comment: String,
}

impl NetworkChain {
    /// `udn-mark-<mark>` (upstream `GetUDNMarkChain`).
    pub fn name(&self) -> String {
        format!("{NETWORK_CHAIN_PREFIX}{}", self.mark)
    }

    fn chain(&self) -> Chain {
        Chain::named(self.name()).with_comment(self.comment.clone())
    }
}

/// The chains and elements for the inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DesiredServiceMark {
    /// One chain per primary UDN, by name.
    pub chains: BTreeMap<String, NetworkChain>,
    /// `(map, key)` -> the chain to jump to.
    pub elements: BTreeMap<(MarkMap, Vec<String>), String>,
}

/// Why the chains could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ServiceMarkError {
    /// The transaction failed (nothing of it was applied).
    #[error(
        "nft chain {MARK_CHAIN} and its maps in table inet ovn-kubernetes could not be {action}"
    )]
    Apply {
        /// `set up` or `updated`.
        action: &'static str,
        /// nft's error.
        #[source]
        source: NftError,
    },
}

/// The chains and elements `inputs` want (pure). A key wanted twice (two Services on one
/// external IP and port) keeps the first Service's network, in input order.
pub fn desired(inputs: &ServiceMarkInputs) -> DesiredServiceMark {
    let mut out = DesiredServiceMark::default();
    let mut chain_of: BTreeMap<&str, String> = BTreeMap::new();
    for udn in &inputs.udns {
        let chain = NetworkChain {
            mark: format!("0x{:x}", PKT_MARK_BASE + udn.network_id),
            comment: format!("{}: UDN packet marking", udn.network),
        };
        if udn.patched {
            chain_of.insert(&udn.network, chain.name());
        }
        out.chains.insert(chain.name(), chain);
    }
    for service in &inputs.services {
        let ServiceNetwork::Udn(network) = &service.network else {
            continue;
        };
        let Some(chain) = chain_of.get(network.as_str()) else {
            continue;
        };
        for port in &service.ports {
            let proto = port.protocol.as_str().to_owned();
            if let Some(node_port) = port.node_port {
                out.elements
                    .entry((
                        MarkMap::NodePorts,
                        vec![proto.clone(), node_port.to_string()],
                    ))
                    .or_insert_with(|| chain.clone());
            }
            for ip in service.external_ips.iter().chain(&service.ingress_ips) {
                let map = match ip {
                    IpAddr::V4(_) => MarkMap::ExternalIpsV4,
                    IpAddr::V6(_) => MarkMap::ExternalIpsV6,
                };
                let key = vec![ip.to_string(), proto.clone(), port.port.to_string()];
                out.elements
                    .entry((map, key))
                    .or_insert_with(|| chain.clone());
            }
        }
    }
    out
}

fn element((map, key): &(MarkMap, Vec<String>), chain: &str) -> Element {
    Element::map(map.name(), key.clone(), vec![format!("jump {chain}")])
}

/// Adds the network chain with its one rule (upstream flushes and rewrites it).
fn add_network_chain(tx: &mut Transaction, chain: &NetworkChain) {
    tx.add(chain.chain()).flush(chain.chain());
    tx.add(Rule::new(
        chain.name(),
        format!("meta mark set {}", chain.mark),
    ));
}

/// The static chains and maps, as upstream's `configureUDNServicesNFTables` writes them.
fn add_static(tx: &mut Transaction) {
    let mark = Chain::named(MARK_CHAIN).with_comment("UDN services packet mark");
    tx.add(mark).flush(Chain::named(MARK_CHAIN));
    let prerouting = Chain::base(
        PREROUTING_CHAIN,
        BaseChain::new(ChainType::Filter, Hook::Prerouting, Priority::MANGLE),
    )
    .with_comment("UDN services packet mark - Prerouting");
    tx.add(prerouting).flush(Chain::named(PREROUTING_CHAIN));
    tx.add(Rule::new(
        PREROUTING_CHAIN,
        format!("iifname != {MGMT_PORT} jump {MARK_CHAIN}"),
    ));
    let output = Chain::base(
        OUTPUT_CHAIN,
        BaseChain::new(ChainType::Filter, Hook::Output, Priority::MANGLE),
    )
    .with_comment("UDN services packet mark - Output");
    tx.add(output).flush(Chain::named(OUTPUT_CHAIN));
    tx.add(Rule::new(OUTPUT_CHAIN, format!("jump {MARK_CHAIN}")));
    for map in MarkMap::ALL {
        tx.add(map.map());
    }
    for (family, map) in [
        ("fib daddr type local", MarkMap::NodePorts),
        ("ip daddr .", MarkMap::ExternalIpsV4),
        ("ip6 daddr .", MarkMap::ExternalIpsV6),
    ] {
        tx.add(Rule::new(
            MARK_CHAIN,
            format!("{family} meta l4proto . th dport vmap @{}", map.name()),
        ));
    }
}

/// Everything from scratch in one transaction: the static chains and maps, the network
/// chains, the maps flushed and filled, and the network chains in `stale` (found in the table,
/// not desired) deleted.
pub fn full_transaction(desired: &DesiredServiceMark, stale: &[String]) -> Transaction {
    let mut tx = Transaction::new(table_id());
    tx.add(Table::default());
    add_static(&mut tx);
    for chain in desired.chains.values() {
        add_network_chain(&mut tx, chain);
    }
    for map in MarkMap::ALL {
        tx.flush(map.map());
    }
    for (key, chain) in &desired.elements {
        tx.add(element(key, chain));
    }
    for name in stale {
        if !desired.chains.contains_key(name) {
            tx.add_then_delete(Chain::named(name.clone()));
        }
    }
    tx
}

/// Only what changed from `last` (what was applied) to `desired`: new network chains, then
/// element deletions and additions (a changed jump is a deletion and an addition), then the
/// deletion of network chains no longer wanted (nothing jumps to them any more). Empty when
/// nothing changed.
pub fn update_transaction(last: &DesiredServiceMark, desired: &DesiredServiceMark) -> Transaction {
    let mut tx = Transaction::new(table_id());
    for (name, chain) in &desired.chains {
        if last.chains.get(name) != Some(chain) {
            add_network_chain(&mut tx, chain);
        }
    }
    for (key, chain) in &last.elements {
        if desired.elements.get(key) != Some(chain) {
            tx.delete(element(key, chain));
        }
    }
    for (key, chain) in &desired.elements {
        if last.elements.get(key) != Some(chain) {
            tx.add(element(key, chain));
        }
    }
    for name in last.chains.keys() {
        if !desired.chains.contains_key(name) {
            tx.add_then_delete(Chain::named(name.clone()));
        }
    }
    tx
}

/// The network mark chains named in an `nft list table` text.
pub fn listed_network_chains(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.trim().strip_prefix("chain "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| name.starts_with(NETWORK_CHAIN_PREFIX) && name.contains("-0x"))
        .map(str::to_owned)
        .collect()
}

/// What was applied: the desired state, and how nft listed the mark chain right after.
#[derive(Debug, Default)]
pub struct ServiceMarkSync {
    last: Option<(DesiredServiceMark, Option<String>)>,
}

impl ServiceMarkSync {
    /// Makes nft hold `desired` and returns the number of operations sent (0: nothing was
    /// sent). The first call, and a call with `check_drift` that finds the mark chain listing
    /// differently from right after the last apply, send everything; other calls send only
    /// the differences from the last apply.
    pub async fn ensure(
        &mut self,
        exec: &impl NftExecutor,
        desired: &DesiredServiceMark,
        check_drift: bool,
    ) -> Result<usize, ServiceMarkError> {
        let target = ListTarget::Chain(table_id(), MARK_CHAIN.to_owned());
        let mut last = self.last.take();
        if check_drift && let Some((_, listed)) = &last {
            match exec.list(&target).await {
                Ok(now) if now == *listed => {}
                Ok(_) => {
                    tracing::info!(
                        chain = MARK_CHAIN,
                        "UDN service mark chain changed behind our back, applying again"
                    );
                    last = None;
                }
                Err(error) => {
                    tracing::debug!(%error, "cannot list the UDN service mark chain");
                }
            }
        }
        let (tx, action) = match &last {
            Some((applied, _)) => (update_transaction(applied, desired), "updated"),
            None => {
                let listing = exec
                    .list(&ListTarget::Table(table_id()))
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                let stale = listed_network_chains(&listing);
                (full_transaction(desired, &stale), "set up")
            }
        };
        if tx.is_empty() {
            self.last = last;
            return Ok(0);
        }
        if let Err(source) = exec.run(&tx).await {
            // Whatever nft holds now, the next call starts from scratch.
            return Err(ServiceMarkError::Apply { action, source });
        }
        let listed = match last {
            // Only network chains and elements changed: the mark chain lists as before.
            Some((_, listed)) => listed,
            None => exec.list(&target).await.ok().flatten(),
        };
        tracing::info!(
            operations = tx.len(),
            chains = desired.chains.len(),
            elements = desired.elements.len(),
            "UDN service mark chains and maps applied"
        );
        self.last = Some((desired.clone(), listed));
        Ok(tx.len())
    }
}

#[cfg(test)]
mod tests;
