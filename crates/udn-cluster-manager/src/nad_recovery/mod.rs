//! NAD recovery (the k8s-net-attach-def-controller's, seed `003`): a
//! NetworkAttachmentDefinition deleted while pods still name it in
//! `k8s.v1.cni.cncf.io/networks` is created again from the last copy seen, with a log line
//! and a Normal Event `NetworkAttachmentDefinitionRecovered` on the new object. Once no pod
//! names it, a deletion stands.
//!
//! Differences from that controller, on purpose: every selection syntax `udn-api` parses
//! counts (not its own stricter parser); deletions missed while the watch was down are found
//! at the relist (it ignored tombstones); NADs of UDNs/CUDNs are left to the network
//! controller (their finalizer keeps them while in use); a NAD deleted again and again (its
//! owner gone, so the garbage collector deletes every copy) is left deleted after
//! [`LOOP_LIMIT`](controller) recoveries within 10 minutes, with a Warning Event on a pod
//! that uses it.

mod controller;
mod plan;

use std::future::Future;

use crate::context::Context;

/// Runs NAD recovery until `stop` resolves. Nothing stops it earlier: API errors are logged
/// and the watches retry.
pub async fn run(ctx: Context, stop: impl Future<Output = ()> + Send + Clone + 'static) {
    controller::run(ctx, stop).await;
}
