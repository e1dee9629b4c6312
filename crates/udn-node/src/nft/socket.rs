//! The `socket cgroupv2` match: its text, and whether this nft and kernel can load it.

use super::error::NftError;
use super::exec::NftExecutor;
use super::object::{BaseChain, Chain, ChainType, Family, Hook, Priority, Rule, Table, TableId};
use super::transaction::Transaction;

/// `socket cgroupv2 level <level> <path>`: matches sockets whose cgroup's ancestor at depth
/// `level` of the cgroup v2 tree is `path` (relative to `/sys/fs/cgroup`, where nft looks it
/// up). The path is written bare when nft's scanner reads it as one word (as upstream writes
/// `kubelet.slice/kubelet.service`), quoted otherwise.
pub fn socket_cgroupv2(level: u32, path: &str) -> String {
    format!("socket cgroupv2 level {level} {}", cgroup_path_token(path))
}

/// A bare word is a letter, `_` or `.` then letters, digits, `/`, `-`, `_`, `.`; it must
/// also contain a `/`, so it cannot be taken for a keyword.
fn cgroup_path_token(path: &str) -> String {
    let mut chars = path.chars();
    let bare = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "_.".contains(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || "/-_.".contains(c))
        && path.contains('/');
    if bare {
        path.to_owned()
    } else {
        format!("\"{path}\"")
    }
}

/// The scratch table [`probe_socket_cgroupv2`] checks against.
pub const PROBE_TABLE: &str = "udn-probe-socket";

/// The transaction [`probe_socket_cgroupv2`] checks: a scratch table with an output chain
/// holding one `socket cgroupv2` rule.
pub fn socket_cgroupv2_probe(level: u32, path: &str) -> Transaction {
    let mut tx = Transaction::new(TableId::new(Family::Inet, PROBE_TABLE));
    tx.add(Table::default())
        .add(Chain::base(
            "probe",
            BaseChain::new(ChainType::Filter, Hook::Output, Priority::FILTER),
        ))
        .add(Rule::new(
            "probe",
            format!("{} accept", socket_cgroupv2(level, path)),
        ));
    tx
}

/// Whether a `socket cgroupv2` rule for `path` loads, checked with `nft -c` (nothing is
/// applied). An error carries nft's reason: no `socket` expression in the kernel
/// (`CONFIG_NFT_SOCKET`), an nft too old for `cgroupv2`, or a path nft cannot resolve
/// (`cgroupv2 path fails`).
pub async fn probe_socket_cgroupv2(
    exec: &impl NftExecutor,
    level: u32,
    path: &str,
) -> Result<(), NftError> {
    exec.check(&socket_cgroupv2_probe(level, path)).await
}

/// Whether nft's refusal says it could not resolve the cgroup path (rather than not knowing
/// the match).
pub fn is_unresolved_cgroup_path(error: &NftError) -> bool {
    error
        .nft_message()
        .is_some_and(|message| message.starts_with("cgroupv2 path fails"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_bare_when_nft_reads_them_as_one_word() {
        assert_eq!(
            socket_cgroupv2(2, "kubelet.slice/kubelet.service"),
            "socket cgroupv2 level 2 kubelet.slice/kubelet.service"
        );
        assert_eq!(
            socket_cgroupv2(3, "unified/x-1/kubelet.service"),
            "socket cgroupv2 level 3 unified/x-1/kubelet.service"
        );
        assert_eq!(
            socket_cgroupv2(1, "podruntime"),
            "socket cgroupv2 level 1 \"podruntime\""
        );
        assert_eq!(
            socket_cgroupv2(2, "system.slice/kubelet\\x2dx.service"),
            "socket cgroupv2 level 2 \"system.slice/kubelet\\x2dx.service\""
        );
        assert_eq!(
            socket_cgroupv2(2, "0abc/kubelet"),
            "socket cgroupv2 level 2 \"0abc/kubelet\""
        );
    }

    #[test]
    fn probe_is_a_scratch_table() {
        insta::assert_snapshot!(
            socket_cgroupv2_probe(2, "kubelet.slice/kubelet.service").render().unwrap(),
            @r"
        add table inet udn-probe-socket
        add chain inet udn-probe-socket probe { type filter hook output priority 0 ; }
        add rule inet udn-probe-socket probe socket cgroupv2 level 2 kubelet.slice/kubelet.service accept
        "
        );
    }
}
