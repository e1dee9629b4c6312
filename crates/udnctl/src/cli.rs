//! Command-line arguments and the cluster they describe.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use udn_api::cluster_args::ClusterArgs;

use crate::input::read_documents;
use crate::output::{render_json, render_yaml};
use crate::pipeline::{Problem, render};

/// udnctl: inspect and try out User Defined Networks.
#[derive(Debug, Parser)]
#[command(name = "udnctl", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Validate UDN/CUDN YAML offline and print the NADs, network IDs and node host
    /// subnets the cluster would get.
    Render(RenderArgs),
    /// The whole system on one machine: real OVN, the control plane, per node udn's
    /// components and a simulated kubelet.
    #[command(subcommand)]
    Sandbox(crate::sandbox::SandboxCommand),
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// NADs as YAML documents, IDs and subnets as a comment header.
    Yaml,
    /// One JSON document: `{"nads": [...], "networkIDs": {...}, "nodeSubnets": {...}}`.
    Json,
}

/// `udnctl render` arguments. Cluster flags use upstream ovnkube's names and default to
/// upstream's kind/helm dual-stack deployment.
#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// YAML file with Namespace, UserDefinedNetwork and ClusterUserDefinedNetwork objects
    /// (several documents allowed; `-` reads standard input). Repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Number of example nodes (`node-1` ... `node-N`) to allocate host subnets for.
    #[arg(long, default_value_t = 3)]
    pub(crate) nodes: u32,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    pub(crate) output: OutputFormat,
    /// The cluster the objects are rendered for.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// Run `udnctl render`: the text to print, or every problem found.
pub(crate) fn run_render(args: &RenderArgs) -> Result<String, Vec<Problem>> {
    let cluster = args
        .cluster
        .cluster()
        .map_err(|err| vec![Problem::new("flags".to_owned(), err.to_string())])?;
    let documents = read_documents(&args.files)?;
    let rendered = render(&documents, &cluster, args.nodes)?;
    match args.output {
        OutputFormat::Yaml => render_yaml(&rendered),
        OutputFormat::Json => render_json(&rendered),
    }
    .map_err(|p| vec![p])
}
