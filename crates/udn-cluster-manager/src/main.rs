//! `udn-cluster-manager`: see the crate docs and docs/cluster-manager.md.

use anyhow::{Context as _, bail};
use clap::Parser;
use udn_api::cluster_args::ClusterArgs;
use udn_api::dynamic_udn_args::DynamicUdnArgs;
use udn_cluster_manager::config::{Config, FeatureArgs};
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_cluster_manager::run::run_controllers;
use udn_runtime::{LeaderOutcome, RuntimeArgs, Shutdown};

/// udn cluster-manager: UDN/CUDN -> NetworkAttachmentDefinitions, network IDs, node host
/// subnets and Layer2 pod IPs.
#[derive(Debug, Parser)]
#[command(name = "udn-cluster-manager", version, about)]
struct Args {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    features: FeatureArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    dynamic_udn: DynamicUdnArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.runtime
        .init_telemetry()
        .context("setting up logging")?;
    let config = Config::from_args(&args.cluster, &args.features, &args.dynamic_udn)
        .context("invalid configuration")?;
    let (started, metrics) = args
        .runtime
        .start(Metrics::register)
        .await
        .context("starting")?;
    let (shutdown, readiness, client) = (
        started.shutdown.clone(),
        started.readiness.clone(),
        started.client.clone(),
    );
    let ctx = Context::new(
        client.clone(),
        config,
        metrics,
        Some(args.runtime.identity()),
    );
    let work = {
        let shutdown = shutdown.clone();
        let readiness = readiness.clone();
        async move {
            readiness.set_ready(true);
            Box::pin(run_controllers(ctx, shutdown)).await
        }
    };
    let outcome = match args.runtime.leader_election("udn-cluster-manager")? {
        Some(election) => match election.run(client, shutdown.clone(), || work).await? {
            LeaderOutcome::Lost => Err(anyhow::anyhow!("lost leadership")),
            LeaderOutcome::Shutdown => Ok(()),
            LeaderOutcome::Completed(result) => result.context("controllers stopped"),
        },
        None => run_controllers_unelected(work, &shutdown).await,
    };
    started.stop().await;
    if let Err(err) = outcome {
        bail!("{err:#}");
    }
    Ok(())
}

async fn run_controllers_unelected(
    work: impl std::future::Future<Output = Result<(), udn_cluster_manager::run::RunError>>,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    tokio::select! {
        () = shutdown.wait() => Ok(()),
        result = work => result.context("controllers stopped"),
    }
}
