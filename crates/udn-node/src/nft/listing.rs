//! Reading back what `nft list` prints: a chain's rules, and the `socket cgroupv2` matches
//! in them.
//!
//! nft resolves a `socket cgroupv2` path to the cgroup's id (the directory's inode) when it
//! loads the rule, and back to a path when it lists it, by looking for a directory with that
//! inode under `/sys/fs/cgroup`. When none has it any more (the cgroup was removed, or
//! removed and created again: a new id), it prints the bare number.

/// The argument of a `socket cgroupv2 level N ...` match as nft listed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupTarget {
    /// A path relative to `/sys/fs/cgroup`: the cgroup nft found for the loaded id.
    Path(String),
    /// A bare number: no cgroup has the loaded id any more.
    Unresolved(u64),
}

/// One `socket cgroupv2` match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMatch {
    /// `level N`.
    pub level: u32,
    /// What follows it.
    pub target: CgroupTarget,
}

const CGROUP_MATCH: &str = "socket cgroupv2 level ";

/// Every `socket cgroupv2 level N X` match in `listing`, in order.
pub fn cgroupv2_matches(listing: &str) -> Vec<CgroupMatch> {
    let mut matches = Vec::new();
    for line in listing.lines() {
        let mut rest = line;
        while let Some(start) = rest.find(CGROUP_MATCH) {
            rest = &rest[start + CGROUP_MATCH.len()..];
            if let Some((found, after)) = parse_match(rest) {
                matches.push(found);
                rest = after;
            }
        }
    }
    matches
}

fn parse_match(text: &str) -> Option<(CgroupMatch, &str)> {
    let (level, rest) = text.split_once(' ')?;
    let level = level.parse().ok()?;
    let (argument, rest) = if let Some(quoted) = rest.strip_prefix('"') {
        let (inside, after) = quoted.split_once('"')?;
        (inside, after)
    } else {
        rest.split_once(' ').unwrap_or((rest, ""))
    };
    let target = if !argument.is_empty() && argument.bytes().all(|b| b.is_ascii_digit()) {
        CgroupTarget::Unresolved(argument.parse().ok()?)
    } else {
        CgroupTarget::Path(argument.to_owned())
    };
    Some((CgroupMatch { level, target }, rest))
}

/// The rule lines of chain `chain` in an `nft list table` or `nft list chain` listing,
/// trimmed, without the chain's own `type ...`, `policy` and `comment` lines. `None` when
/// the listing has no such chain.
pub fn chain_rules(listing: &str, chain: &str) -> Option<Vec<String>> {
    let header = format!("chain {chain} {{");
    let mut lines = listing.lines().map(str::trim);
    lines.find(|line| *line == header)?;
    let mut rules = Vec::new();
    for line in lines {
        if line == "}" {
            return Some(rules);
        }
        let chain_property = line.is_empty()
            || line.starts_with("type ")
            || line.starts_with("policy ")
            || line.starts_with("comment \"");
        if !chain_property {
            rules.push(line.to_owned());
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "table inet ovn-kubernetes {\n\
        \tset udn-pod-default-ips-v4 {\n\t\ttype ipv4_addr\n\t\tcomment \"x\"\n\t}\n\n\
        \tchain udn-isolation {\n\
        \t\tcomment \"Host isolation for user defined networks\"\n\
        \t\ttype filter hook output priority filter; policy accept;\n\
        \t\tip daddr . meta l4proto . th dport @udn-open-ports-v4 accept\n\
        \t\tsocket cgroupv2 level 2 \"unified/x/kubelet.service\" ip daddr @udn-pod-default-ips-v4 accept\n\
        \t\tsocket cgroupv2 level 2 669 ip6 daddr @udn-pod-default-ips-v6 accept\n\
        \t\tip daddr @udn-pod-default-ips-v4 drop\n\
        \t}\n}\n";

    #[test]
    fn finds_resolved_and_unresolved_cgroup_matches() {
        assert_eq!(
            cgroupv2_matches(LISTING),
            vec![
                CgroupMatch {
                    level: 2,
                    target: CgroupTarget::Path("unified/x/kubelet.service".to_owned())
                },
                CgroupMatch {
                    level: 2,
                    target: CgroupTarget::Unresolved(669)
                },
            ]
        );
        assert_eq!(
            cgroupv2_matches("socket cgroupv2 level 1 kubelet.slice accept"),
            vec![CgroupMatch {
                level: 1,
                target: CgroupTarget::Path("kubelet.slice".to_owned())
            }]
        );
    }

    #[test]
    fn chain_rules_skip_the_chain_properties() {
        let rules = chain_rules(LISTING, "udn-isolation").unwrap();
        assert_eq!(rules.len(), 4);
        assert_eq!(
            rules[0],
            "ip daddr . meta l4proto . th dport @udn-open-ports-v4 accept"
        );
        assert_eq!(rules[3], "ip daddr @udn-pod-default-ips-v4 drop");
        assert_eq!(chain_rules(LISTING, "other"), None);
    }
}
