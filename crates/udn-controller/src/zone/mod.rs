//! The zone reconciler: the imperative shell around the pure parts. One task runs passes:
//! read the caches ([`crate::snapshot`]), allocate and annotate local pods' addresses,
//! tear down networks that are gone or changed incompatibly, reconcile every network's
//! units through its engine (one per network controller, as upstream's
//! `<network>-network-controller` owner), write the rows without `external_ids` by name,
//! and the remote chassis and remote port bindings into the Southbound database.
//!
//! Passes run after changes (Kubernetes watch events, debounced) and periodically: an
//! unchanged zone costs one comparison per converged unit and sends nothing.

mod annotate;
mod clients;
mod jobs;
mod pass;
mod shared;
mod teardown;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube::runtime::events::Reporter;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::{info, warn};
use udn_ovsdb::client::{Client, ClientError};
use udn_ovsdb::engine::{ApplyPolicy, Engine};

pub use clients::{NB_TABLES, WRITTEN_TABLES, connect_nb, connect_sb};
pub use pass::PassReport;

use crate::config::Config;
use crate::events::{Events, Publisher};
use crate::ipam::ZoneIpam;
use crate::metrics::Metrics;
use crate::networks::NetworkIdentity;
use crate::watch::{self, Change, Stores};

/// After a change, wait this long for more before a pass (a burst of events is one pass).
const DEBOUNCE: Duration = Duration::from_millis(20);
/// A pass at least this often, also without changes (drift in the databases, retries).
const RESYNC: Duration = Duration::from_secs(30);
/// After a pass that left work (a failed write, unbound remote ports), the next one after
/// this long.
const RETRY: Duration = Duration::from_millis(500);

/// Why the controller stopped.
#[derive(Debug, thiserror::Error)]
pub enum ZoneError {
    /// The Kubernetes watches did not start.
    #[error(transparent)]
    Watch(#[from] watch::WatchError),
    /// A database connection failed.
    #[error("connect to the {database} database")]
    Connect {
        /// `Northbound` or `Southbound`.
        database: &'static str,
        /// Why.
        #[source]
        source: ClientError,
    },
}

/// A network as last reconciled: tearing it down and building again is needed when this
/// changes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Running {
    id: u32,
    identity: Option<NetworkIdentity>,
    /// When the network was first seen (for the programmed-duration metric), until its first
    /// complete reconcile.
    pending_since: Option<Instant>,
}

/// The zone reconciler's state.
pub struct Zone {
    config: Config,
    kube: kube::Client,
    stores: Stores,
    nb: Client,
    sb: Client,
    engines: BTreeMap<String, Engine>,
    /// Per network controller, the units its last pass rendered (see `pass.rs`).
    unit_keys: BTreeMap<String, std::collections::BTreeSet<udn_ovsdb::engine::UnitKey>>,
    /// The next pass plans every network with its whole scope.
    sweep: bool,
    /// Per network controller, what its last fully applied render was made from (see
    /// `pass.rs`: a network whose inputs are the same is not rendered again).
    rendered: BTreeMap<String, pass::Rendered>,
    /// The nodes those renders saw.
    rendered_nodes: Vec<crate::model::Node>,
    /// The allowed default-network Services of the last pass's renders.
    rendered_udn_enabled_services: Vec<crate::topology::UdnEnabledService>,
    /// The Northbound replica's generation those renders were applied to: a reconnect (a
    /// restarted or restored server) may have lost them.
    rendered_generation: u64,
    /// Whether the last pass had a failure: the next one renders everything.
    last_pass_failed: bool,
    running: BTreeMap<String, Running>,
    ipam: ZoneIpam,
    restored: bool,
    swept: bool,
    /// Controllers whose teardown did not complete: retried every pass until it does (their
    /// networks are not built meanwhile).
    teardown_failed: BTreeSet<String>,
    events: Events,
    metrics: Metrics,
    policy: ApplyPolicy,
    reports: tokio::sync::watch::Sender<(u64, PassReport)>,
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zone")
            .field("zone", &self.config.zone.zone)
            .field("networks", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Zone {
    /// Connects to the databases and starts the watches (on `tasks`; changes arrive on the
    /// returned receiver).
    pub async fn start(
        config: Config,
        kube: kube::Client,
        metrics: Metrics,
        tasks: &mut JoinSet<()>,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Change>), ZoneError> {
        let nb = connect_nb(config.nb.clone())
            .await
            .map_err(|source| ZoneError::Connect {
                database: "Northbound",
                source,
            })?;
        let sb = connect_sb(config.sb.clone())
            .await
            .map_err(|source| ZoneError::Connect {
                database: "Southbound",
                source,
            })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let stores = watch::start(&kube, tasks, tx).await?;
        let reporter = Reporter {
            controller: "udn-controller".to_owned(),
            instance: Some(config.zone.zone.clone()),
        };
        let events = Events::new(Some(Publisher {
            client: kube.clone(),
            reporter,
        }));
        info!(zone = %config.zone.zone, "zone controller started");
        Ok((
            Self {
                config,
                kube,
                stores,
                nb,
                sb,
                engines: BTreeMap::new(),
                unit_keys: BTreeMap::new(),
                rendered: BTreeMap::new(),
                rendered_nodes: Vec::new(),
                rendered_udn_enabled_services: Vec::new(),
                rendered_generation: 0,
                last_pass_failed: false,
                sweep: true,
                running: BTreeMap::new(),
                ipam: ZoneIpam::default(),
                restored: false,
                swept: false,
                teardown_failed: BTreeSet::new(),
                events,
                metrics,
                policy: ApplyPolicy::default(),
                reports: tokio::sync::watch::Sender::new((0, PassReport::default())),
            },
            rx,
        ))
    }

    /// The number of passes done and the last one's report (tests and benchmarks wait on
    /// it).
    pub fn reports(&self) -> tokio::sync::watch::Receiver<(u64, PassReport)> {
        self.reports.subscribe()
    }

    /// Runs passes until `stop` resolves.
    pub async fn run(
        mut self,
        mut changes: mpsc::UnboundedReceiver<Change>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let mut stop = std::pin::pin!(stop);
        let mut next = Duration::ZERO;
        // Southbound changes matter too: ovn-northd creates the port bindings of our remote
        // ports after our writes, and we bind them.
        let mut sb_changes = self.sb.changes();
        loop {
            tokio::select! {
                () = &mut stop => return,
                changed = sb_changes.changed() => {
                    if changed.is_err() {
                        warn!("southbound client ended");
                        return;
                    }
                    tokio::time::sleep(DEBOUNCE).await;
                    sb_changes.borrow_and_update();
                }
                change = changes.recv() => {
                    if change.is_none() {
                        warn!("watches ended");
                        return;
                    }
                    // Collect the burst.
                    tokio::time::sleep(DEBOUNCE).await;
                    while changes.try_recv().is_ok() {}
                }
                () = tokio::time::sleep(next) => {
                    // A resync (not a retry) sweeps: see `pass.rs`.
                    self.sweep |= next == RESYNC;
                }
            }
            let report = self.pass().await;
            next = if report.needs_retry() { RETRY } else { RESYNC };
            self.reports.send_modify(|(count, last)| {
                *count += 1;
                *last = report;
            });
        }
    }
}
