//! The `udn-isolation` chain, its six sets and rules, as transactions.

use super::names::{CHAIN, CHAIN_COMMENT, IpFamily, SetId, SetKind, table_id};
use crate::nft::{BaseChain, Chain, ChainType, Hook, Priority, Rule, Set, Table, Transaction};

/// The rule that lets kubelet through: its cgroup as nft names it, and its depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletRule {
    /// `level`.
    pub level: u32,
    /// The path relative to `/sys/fs/cgroup`.
    pub path: String,
}

/// What the chain holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainSpec {
    /// IPv4 rules.
    pub ipv4: bool,
    /// IPv6 rules.
    pub ipv6: bool,
    /// The kubelet rule, when it can be installed.
    pub kubelet: Option<KubeletRule>,
}

impl ChainSpec {
    /// The enabled families, IPv4 first.
    pub fn families(&self) -> Vec<IpFamily> {
        [(self.ipv4, IpFamily::V4), (self.ipv6, IpFamily::V6)]
            .into_iter()
            .filter_map(|(enabled, family)| enabled.then_some(family))
            .collect()
    }

    /// The chain's rules, in upstream's order: per family, open ports, ICMP, kubelet, drop.
    pub fn rules(&self) -> Vec<String> {
        let mut rules = Vec::new();
        for family in self.families() {
            let ip = family.payload();
            let set = |kind| SetId::new(kind, family).name();
            rules.push(format!(
                "{ip} daddr . meta l4proto . th dport @{} accept",
                set(SetKind::OpenPorts)
            ));
            rules.push(format!(
                "{ip} daddr @{} meta l4proto {} accept",
                set(SetKind::OpenIcmp),
                family.icmp()
            ));
            if let Some(kubelet) = &self.kubelet {
                rules.push(format!(
                    "{} {ip} daddr @{} accept",
                    crate::nft::socket_cgroupv2(kubelet.level, &kubelet.path),
                    set(SetKind::PodIps)
                ));
            }
            rules.push(format!("{ip} daddr @{} drop", set(SetKind::PodIps)));
        }
        rules
    }
}

/// The base chain as upstream declares it.
pub fn isolation_chain() -> Chain {
    Chain::base(
        CHAIN,
        BaseChain::new(ChainType::Filter, Hook::Output, Priority::FILTER),
    )
    .with_comment(CHAIN_COMMENT)
}

/// Setting up (and reloading) the chain: the table, the chain flushed and refilled, the six
/// sets (adding an existing set keeps its elements). Idempotent.
pub fn chain_transaction(spec: &ChainSpec) -> Transaction {
    let mut tx = Transaction::new(table_id());
    tx.add(Table::default())
        .add(isolation_chain())
        .flush(Chain::named(CHAIN));
    for set in SetId::ALL {
        tx.add(Set::new(set.name(), set.key_type()).with_comment(set.comment()));
    }
    for rule in spec.rules() {
        tx.add(Rule::new(CHAIN, rule));
    }
    tx
}

/// Removing the chain and the six sets whether or not they exist (add-then-delete; the
/// chain is flushed first, as older kernels refuse to delete a chain that has rules). The
/// table stays: other parts of the agent use it.
pub fn cleanup_transaction() -> Transaction {
    let mut tx = Transaction::new(table_id());
    tx.add(Table::default())
        .add(Chain::named(CHAIN))
        .flush(Chain::named(CHAIN))
        .delete(Chain::named(CHAIN));
    for set in SetId::ALL {
        tx.add_then_delete(Set::new(set.name(), set.key_type()));
    }
    tx
}
