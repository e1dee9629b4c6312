//! The e2e harness: one udn sandbox per test binary (`udnctl sandbox up` in a directory of
//! its own), driven as a user drives a cluster: `kubectl apply`, the API for waiting on
//! objects, `udnctl sandbox exec` for running commands in pods. Each test binary has its own
//! harness (`harness = false`, libtest-mimic): the sandbox comes up once, every scenario runs
//! against it, and it goes down at the end whatever happened.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod audit;
pub mod leftovers;
mod pods;
mod reach;
mod sandbox;

pub use pods::{PodSpec, network_status_ips, pod_ready, restarts};
pub use reach::{HTTP_PORT, PodRef, UDP_PORT, all, hostname_url, url};
pub use sandbox::{Sandbox, Scenario, WAIT, build_binaries, run_suite, run_suite_with};
