//! `udnctl sandbox ...`: the whole system on one machine. The hidden subcommands are the
//! sandbox's own daemons (`up` starts them as `udnctl sandbox <daemon> ...`), so the
//! sandbox needs no binary besides udnctl and the components'.

mod daemons;
mod lifecycle;

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

pub(crate) use daemons::run_daemon;
pub(crate) use lifecycle::run;

/// `udnctl sandbox` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Bring the sandbox up (root): the OVN lab, the API server, the cluster-manager and per
    /// node udn-controller, udn-node and a simulated kubelet. A no-op when it already runs;
    /// cleans up the leftovers of a crashed one first.
    Up(UpArgs),
    /// `up`, then the seed guide's blue/green namespaces and networks and a few pods, then the
    /// connectivity matrix (who reaches whom over which interface, expected vs seen). The
    /// sandbox stays up for kubectl.
    Demo(UpArgs),
    /// Stop everything the sandbox started and remove every netns, process, cgroup and file
    /// it made.
    Down(DirArgs),
    /// Each component, up or not, with the reason.
    Status(DirArgs),
    /// Run a command in a pod's network namespace: `exec POD [-n NS] -- CMD...`.
    Exec(ExecArgs),
    /// `ovn-nbctl` on a node's zone: `nbctl NODE -- ARGS...`.
    Nbctl(CtlArgs),
    /// `ovn-sbctl` on a node's zone: `sbctl NODE -- ARGS...`.
    Sbctl(CtlArgs),
    /// Print a component's log (names as `status` shows them).
    Logs(LogsArgs),
    /// Stop one of the sandbox's components and start it again with the same command line
    /// (names as `status` shows them, e.g. `udn-node node1`): what a node's service manager
    /// does on a crash or an upgrade. Running pods keep their network.
    Restart(LogsArgs),
    /// The simulated kubelet of one node (started by `up`).
    #[command(hide = true)]
    Kubelet(KubeletArgs),
    /// Runs a built-in test image: `udnctl sandbox image <image> [args...]` (started by the
    /// simulated kubelet).
    #[command(hide = true)]
    Image(ImageArgs),
    /// A node's way to the API server (started by `up`).
    #[command(hide = true)]
    Forward(ForwardArgs),
    /// kube-controller-manager's EndpointSlice controller (started by `up`).
    #[command(hide = true)]
    Endpoints(EndpointsArgs),
}

/// The sandbox directory.
#[derive(Debug, Args)]
pub(crate) struct DirArgs {
    /// The sandbox's directory (state, logs, kubeconfig).
    #[arg(long, default_value = udn_sandbox::layout::DEFAULT_DIR)]
    pub(crate) dir: PathBuf,
}

/// `udnctl sandbox up`.
#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 2)]
    pub(crate) nodes: usize,
    #[command(flatten)]
    pub(crate) dir: DirArgs,
    /// Where udn's binaries are (default: udnctl's own directory).
    #[arg(long)]
    pub(crate) bin_dir: Option<PathBuf>,
    /// The components' log filter.
    #[arg(long, default_value = "udn=debug,info")]
    pub(crate) log_filter: String,
    /// Fail instead of installing missing Debian packages.
    #[arg(long)]
    pub(crate) no_install: bool,
    /// Dynamic UDN, given to every udn component.
    #[command(flatten)]
    pub(crate) dynamic_udn: udn_api::dynamic_udn_args::DynamicUdnArgs,
}

/// `udnctl sandbox exec`.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The pod.
    pub(crate) pod: String,
    /// Its namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub(crate) namespace: String,
    #[command(flatten)]
    pub(crate) dir: DirArgs,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub(crate) command: Vec<String>,
}

/// `udnctl sandbox nbctl|sbctl`.
#[derive(Debug, Args)]
pub(crate) struct CtlArgs {
    /// The node whose zone's database is used.
    pub(crate) node: String,
    #[command(flatten)]
    pub(crate) dir: DirArgs,
    /// The arguments.
    #[arg(last = true)]
    pub(crate) args: Vec<String>,
}

/// `udnctl sandbox logs`.
#[derive(Debug, Args)]
pub(crate) struct LogsArgs {
    /// The component (e.g. `udn-node node1`, `udn-node-node1`, `kube-sim`).
    pub(crate) component: String,
    #[command(flatten)]
    pub(crate) dir: DirArgs,
}

/// `udnctl sandbox kubelet`.
#[derive(Debug, Args)]
pub(crate) struct KubeletArgs {
    /// The kubelet's configuration (JSON `KubeletConfig`).
    #[arg(long)]
    pub(crate) config: PathBuf,
}

/// `udnctl sandbox endpoints`.
#[derive(Debug, Args)]
pub(crate) struct EndpointsArgs {
    /// The API server.
    #[arg(long)]
    pub(crate) kubeconfig: PathBuf,
}

/// `udnctl sandbox image`.
#[derive(Debug, Args)]
pub(crate) struct ImageArgs {
    /// The image, then its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub(crate) args: Vec<String>,
}

/// `udnctl sandbox forward`.
#[derive(Debug, Args)]
pub(crate) struct ForwardArgs {
    /// The network namespace to listen in.
    #[arg(long)]
    pub(crate) netns: String,
    /// The address to listen on there.
    #[arg(long)]
    pub(crate) listen: SocketAddr,
    /// Where to forward to (from this process's namespace).
    #[arg(long)]
    pub(crate) to: SocketAddr,
}
