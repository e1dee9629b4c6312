//! The sandbox's daemons, each run by a hidden `udnctl sandbox` subcommand.

use anyhow::Context;

use super::SandboxCommand;

/// Runs one of the hidden daemon subcommands to its end.
pub(crate) fn run_daemon(command: SandboxCommand) -> anyhow::Result<()> {
    match command {
        SandboxCommand::Image(args) => {
            udn_sandbox::images::run(&args.args).context("running the image")
        }
        SandboxCommand::Kubelet(args) => {
            init_logging();
            let text = std::fs::read_to_string(&args.config)
                .with_context(|| format!("reading {}", args.config.display()))?;
            let config: udn_sandbox::kubelet::KubeletConfig = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", args.config.display()))?;
            runtime()?
                .block_on(udn_sandbox::kubelet::run(config))
                .context("the simulated kubelet")
        }
        SandboxCommand::Endpoints(args) => {
            init_logging();
            runtime()?.block_on(async {
                let client = udn_sandbox::client::client(&args.kubeconfig)
                    .await
                    .context("the API client")?;
                udn_sandbox::endpointslice::run(client, stopped())
                    .await
                    .context("the EndpointSlice controller")
            })
        }
        SandboxCommand::Forward(args) => {
            init_logging();
            udn_sandbox::forward::Forwarder::serve_forever(&args.netns, args.listen, args.to)
                .context("forwarding")
        }
        other => anyhow::bail!("{other:?} is no daemon"),
    }
}

/// The daemons log to stderr (their log file, see `udnctl sandbox logs`), filtered by
/// `RUST_LOG` when set, else at debug for udn's own modules.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("udn=debug,info"));
    // A second subscriber cannot be set; the first one stays, which is what we want.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Completes on SIGTERM or SIGINT (`down` stops the daemons with SIGTERM).
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}
