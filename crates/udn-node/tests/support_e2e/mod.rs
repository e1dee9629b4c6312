//! The whole stack as users run it, for the CNI end-to-end tests: `udn_test_support::stack`
//! (a real OVN lab, `udn-kube-sim serve`, `udn-cluster-manager`, per node `udn-controller`
//! and `udn-node`, pods wired by the real `ovn-k8s-cni-overlay`) with this package's own
//! `udn-node` build as the agent.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::path::PathBuf;

pub use udn_test_support::stack::*;

/// `Stack::start(nodes)`: the stack with the other packages' binaries of this test's
/// profile and the `udn-node` cargo built for this test.
pub trait StartStack {
    /// Starts `nodes` nodes with [`StackConfig::new`]'s settings.
    fn start(nodes: usize) -> impl Future<Output = Stack>;
}

impl StartStack for Stack {
    fn start(nodes: usize) -> impl Future<Output = Stack> {
        let agent = PathBuf::from(env!("CARGO_BIN_EXE_udn-node"));
        Stack::start_with(StackConfig::new(nodes, Binaries::workspace(agent)))
    }
}
