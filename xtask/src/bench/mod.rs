//! `cargo xtask bench <target>`: benchmarks that print their figures and record them in
//! `docs/benchmarks.md`. Figures come from these runs, never from timed tests.

pub mod cluster_manager;
pub mod cluster_manager_watch;
pub mod cni;
pub mod cni_clock;
pub mod cni_figures;
pub mod cni_report;
pub mod controller;
pub mod controller_diagnostics;
pub mod controller_figures;
pub mod controller_launch;
pub mod controller_objects;
pub mod controller_raw;
pub mod controller_report;
pub mod controller_watch;
pub mod controller_zone;
pub mod cpu;
pub mod kube_sim;
pub mod nb;
pub mod nb_alloc;
pub mod nb_raw;
pub mod nb_report;
pub mod nb_topology;
pub mod process;
mod report;
mod rss;
pub mod sandbox;
pub mod scale;
pub mod scale_cm;
pub mod scale_objects;
pub mod scale_pod;
pub mod scale_report;
pub mod scale_zone;
pub mod services;
pub mod sim_server;

pub use report::record;
pub use rss::peak_rss_mb;

/// Run this same `cargo xtask bench ...` command again from a release build of xtask.
pub fn rerun_release(root: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .args(["run", "--release", "--quiet", "--package", "xtask", "--"])
        .args(std::env::args().skip(1))
        .current_dir(root)
        .status()
        .context("running the release build of xtask")?;
    anyhow::ensure!(status.success(), "benchmark failed ({status})");
    Ok(())
}
