//! Project automation behind `cargo xtask` (alias in `.cargo/config.toml`).
//!
//! Each subcommand lives in its own module; `main.rs` only parses the command line.

pub mod bench;
pub mod codegen;
pub mod codegen_ovsdb;

use clap::{Parser, Subcommand};

/// `cargo xtask`: project automation.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "udn project automation")]
pub struct Cli {
    /// The task to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The tasks.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write the generated files (CRD manifests under manifests/crds/, typed OVSDB tables in
    /// crates/udn-ovsdb/src/{nb,sb,vswitch}/generated/).
    Codegen {
        /// Do not write; fail if any generated file is missing or stale.
        #[arg(long)]
        check: bool,
    },
    /// Run a benchmark; prints its figures and records them in docs/benchmarks.md.
    Bench {
        /// What to measure.
        #[command(subcommand)]
        target: BenchTarget,
    },
}

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchTarget {
    /// The in-memory API server: objects/s written, watch events/s delivered.
    KubeSim {
        /// Objects to write.
        #[arg(long, default_value_t = 10_000)]
        objects: usize,
        /// Concurrent watchers.
        #[arg(long, default_value_t = 10)]
        watchers: usize,
    },
    /// The cluster-manager: time until N UDNs and M nodes converge, reconciles/s, RSS.
    ClusterManager {
        /// UDNs, one per namespace.
        #[arg(long, default_value_t = 1000)]
        udns: usize,
        /// Nodes.
        #[arg(long, default_value_t = 100)]
        nodes: usize,
    },
    /// The Northbound reconcile engine: N Layer3 UDNs x M nodes written through the engine
    /// vs raw `transact` requests on a private ovsdb-server, re-apply, replica memory.
    Nb {
        /// Layer3 primary UDNs.
        #[arg(long, default_value_t = 200)]
        networks: usize,
        /// Nodes.
        #[arg(long, default_value_t = 20)]
        nodes: usize,
        /// Engine batching: operations per transaction (default: the engine's own policy).
        #[arg(long)]
        max_ops: Option<usize>,
        /// Engine batching: transactions in flight (default: the engine's own policy).
        #[arg(long)]
        in_flight: Option<usize>,
    },
}

impl Cli {
    /// Run the chosen task from the workspace root.
    pub fn run(self) -> anyhow::Result<()> {
        let root = codegen::workspace_root();
        match self.command {
            Command::Codegen { check: true } => codegen::check(&root),
            Command::Codegen { check: false } => codegen::write(&root),
            // Figures from a debug build would be meaningless: re-run optimised.
            Command::Bench { .. } if cfg!(debug_assertions) => bench::rerun_release(&root),
            Command::Bench {
                target: BenchTarget::KubeSim { objects, watchers },
            } => bench::kube_sim::run_and_record(&root, objects, watchers),
            Command::Bench {
                target: BenchTarget::ClusterManager { udns, nodes },
            } => bench::cluster_manager::run_and_record(&root, udns, nodes),
            Command::Bench {
                target:
                    BenchTarget::Nb {
                        networks,
                        nodes,
                        max_ops,
                        in_flight,
                    },
            } => {
                let default = udn_ovsdb::engine::ApplyPolicy::default();
                let options = bench::nb::Options {
                    topology: bench::nb_topology::Topology::new(networks, nodes)?,
                    policy: udn_ovsdb::engine::ApplyPolicy {
                        max_ops: max_ops.unwrap_or(default.max_ops),
                        in_flight: in_flight.unwrap_or(default.in_flight),
                    },
                };
                bench::nb::run_and_record(&root, &options)
            }
        }
    }
}
