//! Policy routing rules (`ip rule`): the desired rules of a set of priorities, the plan
//! against what the kernel has at those priorities, and its apply.
//!
//! Rules are owned by priority: the scope is the priorities given (upstream's UDN rules all
//! sit at 2000, the node-port rule at 30), and a rule at one of them that is not desired is
//! removed. Rules at other priorities (the kernel's 0/32766/32767 among them) are never
//! touched.

use std::collections::BTreeSet;
use std::net::IpAddr;

use futures::TryStreamExt;
use ipnetwork::IpNetwork;
use rtnetlink::IpVersion;
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};

use super::error::{EEXIST, ENOENT, NetlinkError, errno};
use super::netns::Netlink;

/// `RT_TABLE_COMPAT`: the header's table when the real id does not fit a byte.
const TABLE_COMPAT: u8 = 252;
/// The mask the kernel reports for a `fwmark` rule given without one.
const FULL_MASK: u32 = u32::MAX;

/// An IP family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
    /// The family of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        if ip.is_ipv4() { Self::V4 } else { Self::V6 }
    }
}

/// One `lookup <table>` rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rule {
    /// The family.
    pub family: IpFamily,
    /// `priority`.
    pub priority: u32,
    /// `fwmark` (matched with the full mask).
    pub fwmark: Option<u32>,
    /// `from` prefix.
    pub from: Option<IpNetwork>,
    /// `to` prefix.
    pub to: Option<IpNetwork>,
    /// `lookup` table id.
    pub table: u32,
}

impl Rule {
    /// `fwmark <mark> lookup <table> prio <priority>`.
    pub fn fwmark(family: IpFamily, priority: u32, mark: u32, table: u32) -> Self {
        Self {
            family,
            priority,
            fwmark: Some(mark),
            from: None,
            to: None,
            table,
        }
    }

    /// `to <prefix> lookup <table> prio <priority>`.
    pub fn to(priority: u32, prefix: IpNetwork, table: u32) -> Self {
        Self {
            family: IpFamily::of(prefix.ip()),
            priority,
            fwmark: None,
            from: None,
            to: Some(prefix),
            table,
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "prio {}", self.priority)?;
        if let Some(mark) = self.fwmark {
            write!(f, " fwmark {mark:#x}")?;
        }
        if let Some(from) = self.from {
            write!(f, " from {from}")?;
        }
        if let Some(to) = self.to {
            write!(f, " to {to}")?;
        }
        write!(f, " lookup {}", self.table)
    }
}

/// The rules the priorities in `priorities` should hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DesiredRules {
    /// The priorities this set owns.
    pub priorities: BTreeSet<u32>,
    /// The rules (each at one of `priorities`).
    pub rules: BTreeSet<Rule>,
}

/// One rule change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleOp {
    /// Remove a rule that should not be there.
    Remove(Rule),
    /// Add a missing rule.
    Add(Rule),
}

/// The changes that make the owned priorities hold exactly the desired rules (removals
/// first); empty when converged.
pub fn diff_rules(desired: &DesiredRules, observed: &[Rule]) -> Vec<RuleOp> {
    let present: BTreeSet<Rule> = observed
        .iter()
        .filter(|rule| desired.priorities.contains(&rule.priority))
        .cloned()
        .collect();
    let mut ops: Vec<RuleOp> = present
        .difference(&desired.rules)
        .cloned()
        .map(RuleOp::Remove)
        .collect();
    ops.extend(desired.rules.difference(&present).cloned().map(RuleOp::Add));
    ops
}

/// Every `lookup` rule of both families.
pub async fn list_rules(netlink: &Netlink) -> Result<Vec<Rule>, NetlinkError> {
    let mut rules = Vec::new();
    for version in [IpVersion::V4, IpVersion::V6] {
        let messages: Vec<RuleMessage> = netlink
            .handle()
            .rule()
            .get(version.clone())
            .execute()
            .try_collect()
            .await
            .map_err(|error| netlink.request_error("dump rules", format!("{version:?}"), error))?;
        rules.extend(messages.iter().filter_map(rule_of));
    }
    Ok(rules)
}

fn rule_of(message: &RuleMessage) -> Option<Rule> {
    let header = &message.header;
    if header.action != RuleAction::ToTable {
        return None;
    }
    let family = match header.family {
        AddressFamily::Inet => IpFamily::V4,
        AddressFamily::Inet6 => IpFamily::V6,
        _ => return None,
    };
    let mut rule = Rule {
        family,
        priority: 0,
        fwmark: None,
        from: None,
        to: None,
        table: u32::from(header.table),
    };
    let mut mask = FULL_MASK;
    for attribute in &message.attributes {
        match attribute {
            RuleAttribute::Priority(priority) => rule.priority = *priority,
            RuleAttribute::FwMark(mark) => rule.fwmark = Some(*mark),
            RuleAttribute::FwMask(value) => mask = *value,
            RuleAttribute::Table(table) => rule.table = *table,
            RuleAttribute::Source(ip) => rule.from = IpNetwork::new(*ip, header.src_len).ok(),
            RuleAttribute::Destination(ip) => rule.to = IpNetwork::new(*ip, header.dst_len).ok(),
            _ => {}
        }
    }
    // A partial mask is not something this module writes: such a rule is never ours.
    (mask == FULL_MASK || rule.fwmark.is_none()).then_some(rule)
}

/// The netlink message for `rule`.
pub(crate) fn rule_message(rule: &Rule) -> RuleMessage {
    let mut message = RuleMessage::default();
    let header = &mut message.header;
    header.family = match rule.family {
        IpFamily::V4 => AddressFamily::Inet,
        IpFamily::V6 => AddressFamily::Inet6,
    };
    header.action = RuleAction::ToTable;
    header.table = u8::try_from(rule.table).unwrap_or(TABLE_COMPAT);
    let attributes = &mut message.attributes;
    attributes.push(RuleAttribute::Priority(rule.priority));
    if let Some(mark) = rule.fwmark {
        attributes.push(RuleAttribute::FwMark(mark));
    }
    if let Some(from) = rule.from {
        header.src_len = from.prefix();
        attributes.push(RuleAttribute::Source(from.network()));
    }
    if let Some(to) = rule.to {
        header.dst_len = to.prefix();
        attributes.push(RuleAttribute::Destination(to.network()));
    }
    attributes.push(RuleAttribute::Table(rule.table));
    message
}

/// Adds `rule`; an identical rule already there is not an error.
pub async fn add_rule(netlink: &Netlink, rule: &Rule) -> Result<(), NetlinkError> {
    let mut request = netlink.handle().rule().add();
    *request.message_mut() = rule_message(rule);
    match request.execute().await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EEXIST) => Ok(()),
        Err(error) => Err(netlink.request_error("add rule", rule, error)),
    }
}

/// Removes `rule`; a missing one is not an error.
pub async fn remove_rule(netlink: &Netlink, rule: &Rule) -> Result<(), NetlinkError> {
    match netlink
        .handle()
        .rule()
        .del(rule_message(rule))
        .execute()
        .await
    {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(ENOENT) => Ok(()),
        Err(error) => Err(netlink.request_error("remove rule", rule, error)),
    }
}

/// Applies rule changes in order.
pub async fn apply_rules(netlink: &Netlink, ops: &[RuleOp]) -> Result<(), NetlinkError> {
    for op in ops {
        match op {
            RuleOp::Remove(rule) => remove_rule(netlink, rule).await?,
            RuleOp::Add(rule) => add_rule(netlink, rule).await?,
        }
    }
    Ok(())
}

/// Lists, diffs and applies; returns what was done.
pub async fn reconcile_rules(
    netlink: &Netlink,
    desired: &DesiredRules,
) -> Result<Vec<RuleOp>, NetlinkError> {
    let observed = list_rules(netlink).await?;
    let ops = diff_rules(desired, &observed);
    apply_rules(netlink, &ops).await?;
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    #[test]
    fn diff_owns_only_its_priorities() {
        let udn = Rule::fwmark(IpFamily::V4, 2000, 0x1001, 1005);
        let masq = Rule::to(2000, net("169.254.169.12/32"), 1005);
        let stale = Rule::to(2000, net("169.254.169.13/32"), 1006);
        let main = Rule {
            family: IpFamily::V4,
            priority: 32766,
            fwmark: None,
            from: None,
            to: None,
            table: 254,
        };
        let desired = DesiredRules {
            priorities: BTreeSet::from([2000]),
            rules: BTreeSet::from([udn.clone(), masq.clone()]),
        };
        let observed = [main.clone(), udn.clone(), stale.clone()];
        assert_eq!(
            diff_rules(&desired, &observed),
            [RuleOp::Remove(stale), RuleOp::Add(masq.clone())]
        );
        assert!(diff_rules(&desired, &[main, masq, udn]).is_empty());
    }

    #[test]
    fn messages_round_trip_through_the_parser() {
        for rule in [
            Rule::fwmark(IpFamily::V4, 30, 0x1745ec, 7),
            Rule::to(2000, net("fd69::12/128"), 1005),
            Rule {
                from: Some(net("10.128.0.5/32")),
                ..Rule::to(100, net("10.0.0.0/8"), 300)
            },
        ] {
            assert_eq!(rule_of(&rule_message(&rule)), Some(rule));
        }
    }

    #[test]
    fn display_reads_like_ip_rule() {
        assert_eq!(
            Rule::fwmark(IpFamily::V4, 30, 0x1745ec, 7).to_string(),
            "prio 30 fwmark 0x1745ec lookup 7"
        );
    }
}
