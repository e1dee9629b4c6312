//! `cargo xtask <command>`: see [`xtask::Cli`].

use clap::Parser;

fn main() -> anyhow::Result<()> {
    xtask::Cli::parse().run()
}
