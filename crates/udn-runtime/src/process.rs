//! What every udn binary sets up between parsing its flags and running its work: shutdown on
//! signals, the Kubernetes client, and the admin server serving the registry the component's
//! metrics were registered in ([`RuntimeArgs::start`]).

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;

use crate::admin::{AdminError, AdminServer, Readiness};
use crate::args::RuntimeArgs;
use crate::client::ClientError;
use crate::signals::{Shutdown, SignalError};

/// Why a binary could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The signal handlers could not be installed.
    #[error("installing signal handlers")]
    Signals(#[from] SignalError),
    /// The Kubernetes client could not be built.
    #[error("connecting to the API server")]
    Client(#[from] ClientError),
    /// The admin server could not be bound.
    #[error("starting the admin server")]
    Admin(#[from] AdminError),
}

/// A started binary's shared parts.
pub struct Started {
    /// Triggered on SIGTERM/SIGINT (and by [`Started::stop`]).
    pub shutdown: Shutdown,
    /// The Kubernetes client.
    pub client: kube::Client,
    /// What `/readyz` answers; not ready until the component says so.
    pub readiness: Readiness,
    /// Where the admin server listens.
    pub admin_addr: SocketAddr,
    admin: JoinHandle<()>,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("admin_addr", &self.admin_addr)
            .finish_non_exhaustive()
    }
}

impl Started {
    /// Triggers shutdown and waits for the admin server to stop.
    pub async fn stop(self) {
        self.shutdown.trigger();
        if let Err(error) = self.admin.await {
            tracing::warn!(%error, "admin server task failed");
        }
    }
}

impl RuntimeArgs {
    /// Installs the signal handlers, builds the Kubernetes client, lets `register` put the
    /// component's metrics in the registry, and serves it on the admin server
    /// (`--admin-bind-address`). Telemetry is set up before (its errors are the caller's to
    /// report first).
    pub async fn start<M>(
        &self,
        register: impl FnOnce(&mut Registry) -> M,
    ) -> Result<(Started, M), StartError> {
        let shutdown = Shutdown::new();
        shutdown.trigger_on_signal()?;
        let client = self.kube_client().await?;
        let mut registry = Registry::default();
        let metrics = register(&mut registry);
        let readiness = Readiness::new();
        let (admin, admin_addr) = AdminServer::bind(self.admin_bind_address).await?;
        let admin =
            tokio::spawn(admin.serve(Arc::new(registry), readiness.clone(), shutdown.clone()));
        Ok((
            Started {
                shutdown,
                client,
                readiness,
                admin_addr,
                admin,
            },
            metrics,
        ))
    }
}
