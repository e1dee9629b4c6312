//! Shared plumbing of udn's binaries (cluster-manager now; NB controller and node agent
//! later): tracing setup ([`telemetry`]), shutdown on signals ([`signals`]), the admin
//! server with `/metrics`, `/healthz` and `/readyz` ([`admin`]), the Kubernetes client
//! ([`client`]), Lease leader election ([`leader`]), Warning Events published once
//! ([`events`]) and the shared flags ([`args`]).
//!
//! A binary's `main` typically does:
//!
//! ```no_run
//! # async fn example(args: udn_runtime::RuntimeArgs) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use udn_runtime::{AdminServer, LeaderOutcome, Readiness, Shutdown};
//!
//! args.init_telemetry()?;
//! let shutdown = Shutdown::new();
//! shutdown.trigger_on_signal()?;
//! let client = args.kube_client().await?;
//! let mut registry = prometheus_client::registry::Registry::default();
//! // ... components register their metrics in `registry` ...
//! let readiness = Readiness::new();
//! let (admin, _addr) = AdminServer::bind(args.admin_bind_address).await?;
//! let admin = tokio::spawn(admin.serve(Arc::new(registry), readiness.clone(), shutdown.clone()));
//! let work = async {
//!     readiness.set_ready(true);
//!     // ... run the controllers until dropped ...
//!     std::future::pending::<()>().await
//! };
//! match args.leader_election("udn-cluster-manager")? {
//!     Some(election) => match election.run(client, shutdown.clone(), || work).await? {
//!         LeaderOutcome::Lost => return Err("lost leadership".into()),
//!         LeaderOutcome::Shutdown | LeaderOutcome::Completed(()) => {}
//!     },
//!     None => tokio::select! { () = shutdown.wait() => {}, () = work => {} },
//! }
//! shutdown.trigger();
//! admin.await?;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod args;
pub mod client;
pub mod events;
pub mod leader;
pub mod signals;
pub mod telemetry;

pub use admin::{AdminError, AdminServer, METRICS_CONTENT_TYPE, Readiness};
pub use args::RuntimeArgs;
pub use client::{ClientError, kube_client};
pub use leader::{LeaderElection, LeaderElectionError, LeaderOutcome};
pub use signals::{Shutdown, SignalError, shutdown_signal};
pub use telemetry::{LogFormat, TelemetryError};
