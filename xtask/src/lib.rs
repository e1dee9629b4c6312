//! Project automation behind `cargo xtask` (alias in `.cargo/config.toml`).
//!
//! Each subcommand lives in its own module; `main.rs` only parses the command line.

pub mod bench;
pub mod codegen;
pub mod codegen_ovsdb;
pub mod codegen_protobuf;
pub mod go_types;

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
    /// Write udn-kube-sim's protobuf field tables from the Go API types of a Kubernetes
    /// release (checkouts of k8s.io/api, apimachinery and apiextensions-apiserver).
    ProtobufTables {
        /// Directory holding `api/`, `apimachinery/` and `apiextensions-apiserver/`.
        #[arg(long)]
        src: std::path::PathBuf,
        /// The release the checkouts are of (`v1.35.7`), named in the generated file.
        #[arg(long)]
        version: String,
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
    /// The cluster-manager: time until N UDNs and M nodes converge, reconciles/s, RSS,
    /// node-subnets writes.
    ClusterManager {
        /// UDNs, one per namespace; several sizes (`1000,2000,5000`) run one after another.
        #[arg(long, value_delimiter = ',', default_value = "1000")]
        udns: Vec<usize>,
        /// Nodes.
        #[arg(long, default_value_t = 100)]
        nodes: usize,
    },
    /// CNI ADD latency on a lab node (the whole stack, release binaries): N pods one at a
    /// time, N more 8 at a time; the plugin's run, OVN's bind time (insert to
    /// `ovn-installed`) and ours (the rest).
    Cni {
        /// Pods per mode.
        #[arg(long, default_value_t = 100)]
        pods: usize,
    },
    /// Pod-ready latency in a 2-node sandbox (release binaries): N primary Layer3 UDNs,
    /// P agnhost pods over them; created to Ready p50/p99/max and UDN to its first Ready pod.
    Sandbox {
        /// Primary Layer3 UDNs, one namespace each.
        #[arg(long, default_value_t = 50)]
        networks: usize,
        /// Pods over all networks, created once every network has its first pod Ready.
        #[arg(long, default_value_t = 400)]
        pods: usize,
        /// Their creation rate, pods per second (10: upstream's UDN density CI,
        /// `contrib/perf/workloads/udn-density-l2-pods.yml`); 0 creates them back to back.
        #[arg(long, default_value_t = 10.0)]
        qps: f64,
    },
    /// The NB controller (release binary) against udn-kube-sim and a real OVN zone: time to
    /// NB converged, sb_cfg and hv_cfg; per-network SB logical flows, OpenFlow flows and
    /// daemon RSS; NB time vs the same rows written raw; operations of a restarted controller.
    Controller {
        /// Primary Layer3 networks (one NAD each, in its own namespace).
        #[arg(long, default_value_t = 100)]
        networks: usize,
        /// Nodes: node1 is the zone's, the others remote.
        #[arg(long, default_value_t = 20)]
        nodes: usize,
        /// Pods on node1, round-robin over the networks (default: one per network).
        #[arg(long)]
        pods: Option<usize>,
        /// The longest to wait for the zone to converge, seconds.
        #[arg(long, default_value_t = 1800)]
        timeout_s: u64,
    },
    /// Services on one primary UDN (release udn-controller, udn-kube-sim, a real OVN zone):
    /// S Services with E endpoints each to their load balancers in NB, then endpoint changes.
    Services {
        /// Services.
        #[arg(long, default_value_t = 1000)]
        services: usize,
        /// Ready endpoints per Service.
        #[arg(long, default_value_t = 10)]
        endpoints: usize,
        /// Endpoint changes measured, one after the other.
        #[arg(long, default_value_t = 100)]
        updates: usize,
    },
    /// The control plane at scale with Dynamic UDN on (release udn-kube-sim and
    /// udn-cluster-manager: N primary UDNs, M nodes, pods of at most A networks per node) and
    /// node1's real zone (release udn-controller) run default and upstream-shaped: converge
    /// time and RSS, time to flows installed, lflows / OpenFlow flows / RSS per network and
    /// their ratios, a new network's first pod to Ready.
    Scale {
        /// Primary Layer3 UDNs, one namespace each.
        #[arg(long, default_value_t = 10_000)]
        networks: usize,
        /// Nodes: node1 is the real zone's, the others API objects and remote nodes.
        #[arg(long, default_value_t = 100)]
        nodes: usize,
        /// The most networks a node hosts pods of (node1 hosts that many).
        #[arg(long, default_value_t = 200)]
        active_per_node: usize,
        /// The longest any phase may take, seconds.
        #[arg(long, default_value_t = 900)]
        timeout_s: u64,
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
            Command::ProtobufTables { src, version } => {
                codegen_protobuf::write(&root, &src, &version)
            }
            // Figures from a debug build would be meaningless: re-run optimised.
            Command::Bench { .. } if cfg!(debug_assertions) => bench::rerun_release(&root),
            Command::Bench {
                target: BenchTarget::KubeSim { objects, watchers },
            } => bench::kube_sim::run_and_record(&root, objects, watchers),
            Command::Bench {
                target: BenchTarget::ClusterManager { udns, nodes },
            } => bench::cluster_manager::run_and_record(&root, &udns, nodes),
            Command::Bench {
                target:
                    BenchTarget::Sandbox {
                        networks,
                        pods,
                        qps,
                    },
            } => bench::sandbox::run_and_record(
                &root,
                bench::sandbox::Options {
                    networks,
                    pods,
                    qps,
                },
            ),
            Command::Bench {
                target:
                    BenchTarget::Services {
                        services,
                        endpoints,
                        updates,
                    },
            } => bench::services::run_and_record(
                &root,
                bench::services::Options {
                    services,
                    endpoints,
                    updates,
                },
            ),
            Command::Bench {
                target: BenchTarget::Cni { pods },
            } => bench::cni::run_and_record(
                &root,
                &bench::cni::Options {
                    pods,
                    concurrency: 8,
                },
            ),
            Command::Bench {
                target:
                    BenchTarget::Controller {
                        networks,
                        nodes,
                        pods,
                        timeout_s,
                    },
            } => {
                let options = bench::controller::Options {
                    shape: bench::controller_objects::Shape::new(
                        networks,
                        nodes,
                        pods.unwrap_or(networks),
                    )?,
                    deadline: std::time::Duration::from_secs(timeout_s),
                };
                bench::controller::run_and_record(&root, &options)
            }
            Command::Bench {
                target:
                    BenchTarget::Scale {
                        networks,
                        nodes,
                        active_per_node,
                        timeout_s,
                    },
            } => bench::scale::run_and_record(
                &root,
                &bench::scale::Options {
                    plan: bench::scale_objects::Plan::new(networks, nodes, active_per_node)?,
                    deadline: std::time::Duration::from_secs(timeout_s),
                },
            ),
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
