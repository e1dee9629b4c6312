//! `udn-controller`: see the crate docs and docs/controller.md.

use anyhow::Context as _;
use clap::Parser;
use tokio::task::JoinSet;
use udn_api::cluster_args::ClusterArgs;
use udn_controller::config::{Config, ControllerArgs};
use udn_controller::metrics::Metrics;
use udn_controller::zone::Zone;
use udn_runtime::RuntimeArgs;

// A pass builds and diffs many small rows and parses the server's updates: with glibc's
// malloc, allocation was about 40% of the controller's CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// udn NB controller (upstream: ovnkube-controller): every network's OVN logical topology
/// for one zone, pods, UDN isolation ACLs and interconnect.
#[derive(Debug, Parser)]
#[command(name = "udn-controller", version, about)]
struct Args {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    controller: ControllerArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.runtime
        .init_telemetry()
        .context("setting up logging")?;
    let config =
        Config::from_args(&args.controller, &args.cluster).context("invalid configuration")?;
    let (started, metrics) = args
        .runtime
        .start(Metrics::register)
        .await
        .context("starting")?;
    let (shutdown, readiness) = (started.shutdown.clone(), started.readiness.clone());
    // One zone, one controller: no leader election (upstream's ovnkube-controller in
    // interconnect mode does not elect either).
    let mut tasks = JoinSet::new();
    let zone_started = tokio::select! {
        () = shutdown.wait() => None,
        zone = Zone::start(config, started.client.clone(), metrics, &mut tasks) => Some(zone),
    };
    if let Some(zone) = zone_started {
        let (zone, changes) = zone.context("starting the zone controller")?;
        readiness.set_ready(true);
        let stop = {
            let shutdown = shutdown.clone();
            async move { shutdown.wait().await }
        };
        zone.run(changes, stop).await;
    }
    shutdown.trigger();
    tasks.shutdown().await;
    started.stop().await;
    Ok(())
}
