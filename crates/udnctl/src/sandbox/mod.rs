//! `udnctl sandbox ...`: the whole system on one machine. The hidden subcommands are the
//! sandbox's own daemons (`up` starts them as `udnctl sandbox <daemon> ...`), so the
//! sandbox needs no binary besides udnctl and the components'.

mod daemons;

use std::path::PathBuf;

use clap::{Args, Subcommand};

pub(crate) use daemons::run_daemon;

/// `udnctl sandbox` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// The simulated kubelet of one node (started by `up`).
    #[command(hide = true)]
    Kubelet(KubeletArgs),
    /// Runs a built-in test image: `udnctl sandbox image <image> [args...]` (started by the
    /// simulated kubelet).
    #[command(hide = true)]
    Image(ImageArgs),
    /// The EndpointSlice controller the sandbox plays for kube-controller-manager
    /// (started by `up`).
    #[command(hide = true)]
    Endpoints(EndpointsArgs),
}

/// `udnctl sandbox kubelet`.
#[derive(Debug, Args)]
pub(crate) struct KubeletArgs {
    /// The kubelet's configuration (JSON `KubeletConfig`).
    #[arg(long)]
    pub(crate) config: PathBuf,
}

/// `udnctl sandbox image`.
#[derive(Debug, Args)]
pub(crate) struct ImageArgs {
    /// The image, then its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub(crate) args: Vec<String>,
}

/// `udnctl sandbox endpoints`.
#[derive(Debug, Args)]
pub(crate) struct EndpointsArgs {
    /// The API server.
    #[arg(long)]
    pub(crate) kubeconfig: PathBuf,
}
