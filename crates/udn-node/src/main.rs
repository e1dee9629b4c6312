//! `udn-node`: the node agent. See the crate docs and docs/node.md.

use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser;
use udn_api::cluster_args::ClusterArgs;
use udn_node::config::{Config, NodeArgs, file};
use udn_node::metrics::Metrics;
use udn_runtime::RuntimeArgs;

/// udn node agent (upstream: the node half of ovnkube-node): OVS bridges and ports, the
/// management port, host isolation of primary-UDN pods and the CNI server.
#[derive(Debug, Parser)]
#[command(name = "udn-node", version, about, args_override_self = true)]
struct Args {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Upstream's --config-file settings come first, so the command line wins.
    let (argv, ignored) = file::merged_args(std::env::args().collect())?;
    let args = Args::parse_from(argv);
    args.runtime
        .init_telemetry()
        .context("setting up logging")?;
    for setting in &ignored {
        tracing::warn!(setting = %setting, "config file setting not used by udn-node");
    }
    let config =
        Arc::new(Config::from_args(&args.node, &args.cluster).context("invalid configuration")?);
    let (started, metrics) = args
        .runtime
        .start(Metrics::register)
        .await
        .context("starting")?;
    let result = udn_node::agent::run(
        config,
        started.client.clone(),
        metrics,
        started.readiness.clone(),
        started.shutdown.clone(),
    )
    .await;
    started.stop().await;
    result.context("node agent")
}
