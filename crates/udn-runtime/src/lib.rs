//! Shared plumbing of udn's binaries (cluster-manager, NB controller, node agent): their start
//! ([`process`]), tracing setup ([`telemetry`]), shutdown on signals ([`signals`]), the admin
//! server with `/metrics`, `/healthz` and `/readyz` ([`admin`]), the Kubernetes client
//! ([`client`]), Lease leader election ([`leader`]), Warning Events published once
//! ([`events`]) and the shared flags ([`args`]).
//!
//! A binary's `main` typically does:
//!
//! ```no_run
//! # async fn example(args: udn_runtime::RuntimeArgs) -> Result<(), Box<dyn std::error::Error>> {
//! use udn_runtime::LeaderOutcome;
//!
//! args.init_telemetry()?;
//! // Signal handlers, the Kubernetes client, and the admin server serving the metrics the
//! // closure registers.
//! let (started, _metrics) = args
//!     .start(|registry| {
//!         // ... components register their metrics in `registry` ...
//!     })
//!     .await?;
//! let work = async {
//!     started.readiness.set_ready(true);
//!     // ... run the controllers until dropped ...
//!     std::future::pending::<()>().await
//! };
//! match args.leader_election("udn-cluster-manager")? {
//!     Some(election) => {
//!         match election.run(started.client.clone(), started.shutdown.clone(), || work).await? {
//!             LeaderOutcome::Lost => return Err("lost leadership".into()),
//!             LeaderOutcome::Shutdown | LeaderOutcome::Completed(()) => {}
//!         }
//!     }
//!     None => tokio::select! { () = started.shutdown.wait() => {}, () = work => {} },
//! }
//! started.stop().await;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod args;
pub mod client;
pub mod events;
pub mod leader;
pub mod process;
pub mod signals;
pub mod telemetry;
pub mod watch;

pub use admin::{AdminError, AdminServer, METRICS_CONTENT_TYPE, Readiness};
pub use args::RuntimeArgs;
pub use client::{ClientError, kube_client};
pub use leader::{LeaderElection, LeaderElectionError, LeaderOutcome};
pub use process::{StartError, Started};
pub use signals::{Shutdown, SignalError, shutdown_signal};
pub use telemetry::{LogFormat, TelemetryError};
