//! Test support: an in-memory API server ([`udn_kube_sim`]) with udn's CRDs installed and a
//! `kube::Client` talking to it in-process, builders for the objects tests create, other
//! packages' binaries ([`workspace_binary`]), and the whole stack as users run it on an OVN
//! lab ([`stack`], also used by `cargo xtask bench cni`). Test code only: panics on setup
//! failures.

#![allow(clippy::expect_used)] // setup failures should fail the test loudly

pub mod binaries;
mod builders;
pub mod stack;

pub use binaries::workspace_binary;
pub use builders::{cudn, l2_udn, l3_udn, namespace, node, pod, pod_with_annotations};

use kube::Client;
use serde_json::Value;
use udn_kube_sim::http::SimService;
use udn_kube_sim::{ResourceKey, Sim, SimConfig, WriteOptions};

/// A running in-memory cluster: the server and a client for it.
#[derive(Clone, Debug)]
pub struct TestCluster {
    /// The server (direct access: compaction, export, fault injection).
    pub sim: Sim,
}

impl TestCluster {
    /// A server with the UDN, CUDN and NetworkAttachmentDefinition CRDs installed.
    pub fn new() -> Self {
        let sim = Sim::new(SimConfig::default());
        let crds = ResourceKey {
            group: "apiextensions.k8s.io".to_owned(),
            plural: "customresourcedefinitions".to_owned(),
        };
        for crd in udn_api::crd::manifests() {
            let json = udn_api::crd::to_manifest_json(&crd).expect("CRD serializes");
            sim.create(&crds, None, json, &WriteOptions::default())
                .expect("CRD is accepted");
        }
        Self { sim }
    }

    /// A new in-process client (needs a tokio runtime).
    pub fn client(&self) -> Client {
        Client::new(SimService::new(self.sim.clone()), "default")
    }

    /// Create an object directly in the store (no client), returning it as stored.
    pub fn create(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        object: Value,
    ) -> Value {
        let key = ResourceKey {
            group: group.to_owned(),
            plural: plural.to_owned(),
        };
        self.sim
            .create(&key, namespace, object, &WriteOptions::default())
            .expect("object is created")
    }
}

impl Default for TestCluster {
    fn default() -> Self {
        Self::new()
    }
}
