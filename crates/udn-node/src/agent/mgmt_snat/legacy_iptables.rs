//! Upstream's clean-up of the chain the management port's SNAT used before nftables
//! (`DelLegacyMgtPortIptRules`): the jump from `nat POSTROUTING` and the chain
//! `OVN-KUBE-SNAT-MGMTPORT`, in IPv4 and IPv6. Only where `iptables` / `ip6tables` are
//! installed; a missing chain is nothing to do.

use std::path::Path;
use std::time::Duration;

use crate::command::{self, Program};

/// The legacy chain (table `nat`).
pub const LEGACY_CHAIN: &str = "OVN-KUBE-SNAT-MGMTPORT";

/// How long one iptables command may take (it waits up to 5 s for the xtables lock).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(15);

/// What the clean-up found for one program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LegacyOutcome {
    /// The program is not on `PATH`.
    NotInstalled,
    /// No such chain.
    Absent,
    /// The chain (and the jump to it) was deleted.
    Deleted,
    /// The chain is still there: why it could not be deleted.
    Failed(String),
}

/// Runs `iptables` and `ip6tables`, in this network namespace unless a wrapper is given.
#[derive(Clone, Debug)]
pub struct LegacyIptables {
    wrapper: Vec<String>,
    programs: Vec<String>,
}

impl Default for LegacyIptables {
    fn default() -> Self {
        Self::new()
    }
}

impl LegacyIptables {
    /// `iptables` and `ip6tables` from `PATH`, in this network namespace.
    pub fn new() -> Self {
        Self {
            wrapper: Vec::new(),
            programs: vec!["iptables".to_owned(), "ip6tables".to_owned()],
        }
    }

    /// The same in the named network namespace `/run/netns/<name>` (`nsenter --net`).
    pub fn in_named_netns(name: &str) -> Self {
        Self {
            wrapper: vec!["nsenter".to_owned(), format!("--net=/run/netns/{name}")],
            ..Self::new()
        }
    }

    /// These programs instead of `iptables` and `ip6tables`.
    pub fn with_programs<I, S>(mut self, programs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.programs = programs.into_iter().map(Into::into).collect();
        self
    }

    /// Deletes the jump `-o <interface> -j OVN-KUBE-SNAT-MGMTPORT` from `nat POSTROUTING`
    /// and the chain, per program; what each program found, in order.
    pub async fn delete_chain(&self, interface: &str) -> Vec<(String, LegacyOutcome)> {
        let mut outcomes = Vec::new();
        for program in &self.programs {
            let outcome = self.delete_with(program, interface).await;
            match &outcome {
                LegacyOutcome::Deleted => {
                    tracing::info!(program = %program, chain = LEGACY_CHAIN, "legacy iptables chain deleted");
                }
                LegacyOutcome::Failed(reason) => {
                    tracing::warn!(program = %program, chain = LEGACY_CHAIN, reason = %reason, "legacy iptables chain not deleted");
                }
                LegacyOutcome::NotInstalled | LegacyOutcome::Absent => {}
            }
            outcomes.push((program.clone(), outcome));
        }
        outcomes
    }

    async fn delete_with(&self, program: &str, interface: &str) -> LegacyOutcome {
        if !on_path(program) {
            return LegacyOutcome::NotInstalled;
        }
        // Listing first keeps the usual case (no chain) to one command.
        if self
            .iptables(program, &["-n", "-L", LEGACY_CHAIN])
            .await
            .is_err()
        {
            return LegacyOutcome::Absent;
        }
        // As upstream, failures of the first two are ignored: the jump may be gone already.
        let _ = self
            .iptables(
                program,
                &["-D", "POSTROUTING", "-o", interface, "-j", LEGACY_CHAIN],
            )
            .await;
        let _ = self.iptables(program, &["-F", LEGACY_CHAIN]).await;
        match self.iptables(program, &["-X", LEGACY_CHAIN]).await {
            Ok(()) => LegacyOutcome::Deleted,
            Err(reason) => LegacyOutcome::Failed(reason),
        }
    }

    /// `<program> -w 5 -t nat <args>`; the error is its standard error (or why it did not run).
    async fn iptables(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let mut argv: Vec<String> = self.wrapper.clone();
        argv.push(program.to_owned());
        argv.extend(["-w", "5", "-t", "nat"].map(str::to_owned));
        argv.extend(args.iter().map(|arg| (*arg).to_owned()));
        let done = command::run(Program {
            argv: &argv,
            env: &[],
            stdin: None,
            timeout: COMMAND_TIMEOUT,
        })
        .await
        .map_err(|error| error.to_string())?;
        if done.status.success() {
            Ok(())
        } else {
            Err(done.stderr.trim().to_owned())
        }
    }
}

/// Whether `program` is an executable file in a `PATH` directory (or, with a `/`, that path).
fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return is_executable(Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_program_not_installed_is_skipped() {
        let legacy = LegacyIptables::new().with_programs(["udn-no-such-iptables"]);
        assert_eq!(
            legacy.delete_chain("ovn-k8s-mp0").await,
            vec![(
                "udn-no-such-iptables".to_owned(),
                LegacyOutcome::NotInstalled
            )]
        );
        assert!(on_path("sh"));
        assert!(!on_path("/nonexistent/iptables"));
    }
}
