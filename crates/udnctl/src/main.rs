//! `udnctl`: the udn user CLI.
//!
//! `udnctl render -f FILE...` validates Namespace / UserDefinedNetwork /
//! ClusterUserDefinedNetwork YAML the way the API server and the cluster-manager would, and
//! prints the NetworkAttachmentDefinitions, network IDs and node host subnets that would
//! result. Nothing is sent anywhere.

mod cli;
mod input;
mod objects;
mod output;
mod pipeline;
mod sandbox;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Render(args) => match cli::run_render(&args) {
            Ok(text) => {
                let mut stdout = std::io::stdout().lock();
                if let Err(err) = stdout.write_all(text.as_bytes()) {
                    eprintln!("error: writing output: {err}");
                    return ExitCode::FAILURE;
                }
                ExitCode::SUCCESS
            }
            Err(problems) => {
                for problem in problems {
                    eprintln!("{problem}");
                }
                ExitCode::FAILURE
            }
        },
        Command::Sandbox(command) => match sandbox::run(&command)
            .unwrap_or_else(|| sandbox::run_daemon(command).map(|()| ExitCode::SUCCESS))
        {
            Ok(code) => code,
            Err(err) => {
                eprintln!("error: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}
