//! Project automation behind `cargo xtask` (alias in `.cargo/config.toml`).
//!
//! Each subcommand lives in its own module; `main.rs` only parses the command line.

pub mod codegen;

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
    /// Write the generated files (CRD manifests under manifests/crds/).
    Codegen {
        /// Do not write; fail if any generated file is missing or stale.
        #[arg(long)]
        check: bool,
    },
}

impl Cli {
    /// Run the chosen task from the workspace root.
    pub fn run(self) -> anyhow::Result<()> {
        let root = codegen::workspace_root();
        match self.command {
            Command::Codegen { check: true } => codegen::check(&root),
            Command::Codegen { check: false } => codegen::write(&root),
        }
    }
}
