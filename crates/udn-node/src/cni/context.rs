//! What the CNI commands share: the configuration, the caches, OVS's database and the
//! metrics.

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::netlink::TxChecksumOffload;
use crate::ovs::Ovs;
use crate::watch::Stores;

/// The CNI server's state.
#[derive(Debug)]
pub struct CniContext {
    /// The agent's configuration.
    pub config: Arc<Config>,
    /// Pods, the Node, NADs.
    pub stores: Stores,
    /// OVS's database.
    pub ovs: Ovs,
    /// Metrics.
    pub metrics: Metrics,
    /// Pod-side TX checksum offload (off on OVS's userspace datapath).
    pub tx_offload: TxChecksumOffload,
}

/// How long a waiter for a pod's end looks before giving up (longer than any request).
const FOREVER: Duration = Duration::from_secs(24 * 3600);

impl CniContext {
    /// Resolves once the pod `namespace/name` with `uid` is gone or was recreated (upstream
    /// `checkCancelSandbox`), with the reason; never while it stays.
    pub async fn pod_gone(&self, namespace: &str, name: &str, uid: &str) -> String {
        let found = self
            .stores
            .wait_for(FOREVER, |stores| match stores.pod(namespace, name) {
                None => Some("pod deleted".to_owned()),
                Some(pod) if pod.metadata.uid.as_deref() != Some(uid) => {
                    Some("canceled old pod sandbox".to_owned())
                }
                Some(_) => None,
            })
            .await;
        match found {
            Some(reason) => reason,
            None => std::future::pending().await,
        }
    }
}
