//! [`RuntimeArgs`]: the command-line flags every udn binary shares (client, logging, admin
//! server, leader election). Binaries `#[command(flatten)]` it into their own arguments.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args};

use crate::client::{ClientError, kube_client};
use crate::leader::{LeaderElection, LeaderElectionError};
use crate::telemetry::{self, LogFormat, TelemetryError};

/// Default of `--admin-bind-address`: all interfaces, so that kubelet probes and
/// Prometheus reach it in a pod.
pub const DEFAULT_ADMIN_BIND_ADDRESS: &str = "0.0.0.0:9410";

/// Default of `--leader-election-namespace` (upstream's `ovn-kubernetes` config namespace).
pub const DEFAULT_LEADER_ELECTION_NAMESPACE: &str = "ovn-kubernetes";

/// Flags shared by udn's binaries.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct RuntimeArgs {
    /// Kubeconfig file to use (its current context). Without it: KUBECONFIG (which may list
    /// several files), ~/.kube/config, then the in-cluster service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Log line format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Plain)]
    pub log_format: LogFormat,

    /// Log filter directives (tracing EnvFilter syntax, e.g. `udn=debug,kube=info`).
    /// Default: RUST_LOG if set, else `udn=info,warn`.
    #[arg(long, value_name = "DIRECTIVES")]
    pub log_filter: Option<String>,

    /// Address of the admin HTTP server serving /metrics, /healthz and /readyz (port 0
    /// picks a free port).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_ADMIN_BIND_ADDRESS)]
    pub admin_bind_address: SocketAddr,

    /// Take part in Lease leader election before doing any work (`--leader-elect=false`
    /// to run unconditionally, e.g. a single replica or local runs).
    #[arg(
        long,
        value_name = "BOOL",
        default_value_t = true,
        action = ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub leader_elect: bool,

    /// Namespace of the leader election Lease.
    #[arg(long, value_name = "NAMESPACE", default_value = DEFAULT_LEADER_ELECTION_NAMESPACE)]
    pub leader_election_namespace: String,

    /// Name of the leader election Lease (default: the binary's own election id).
    #[arg(long, value_name = "NAME")]
    pub leader_election_id: Option<String>,

    /// Seconds a lease stays valid after its last renewal (must exceed the renew deadline).
    #[arg(long, value_name = "SECONDS", default_value_t = 137)]
    pub leader_election_lease_duration: u64,

    /// Seconds the leader keeps leading without a successful renewal (must exceed the
    /// retry period).
    #[arg(long, value_name = "SECONDS", default_value_t = 107)]
    pub leader_election_renew_deadline: u64,

    /// Seconds between acquisition attempts and between renewals.
    #[arg(long, value_name = "SECONDS", default_value_t = 26)]
    pub leader_election_retry_period: u64,

    /// This process's identity in leader election (default: `$HOSTNAME_<random uuid>`).
    #[arg(long, value_name = "ID")]
    pub identity: Option<String>,
}

impl RuntimeArgs {
    /// Install logging from `--log-format` and `--log-filter` ([`telemetry::init`]).
    pub fn init_telemetry(&self) -> Result<(), TelemetryError> {
        telemetry::init(self.log_format, self.log_filter.as_deref())
    }

    /// A Kubernetes client from `--kubeconfig` or the environment ([`kube_client`]).
    pub async fn kube_client(&self) -> Result<kube::Client, ClientError> {
        kube_client(self.kubeconfig.as_deref()).await
    }

    /// The election settings, or `None` with `--leader-elect=false`. `default_id` names the
    /// Lease unless `--leader-election-id` is given. The identity is computed here: call
    /// once per process.
    pub fn leader_election(
        &self,
        default_id: &str,
    ) -> Result<Option<LeaderElection>, LeaderElectionError> {
        if !self.leader_elect {
            return Ok(None);
        }
        let election = LeaderElection {
            namespace: self.leader_election_namespace.clone(),
            name: self
                .leader_election_id
                .clone()
                .unwrap_or_else(|| default_id.to_owned()),
            identity: self.identity(),
            lease_duration: Duration::from_secs(self.leader_election_lease_duration),
            renew_deadline: Duration::from_secs(self.leader_election_renew_deadline),
            retry_period: Duration::from_secs(self.leader_election_retry_period),
        };
        election.validate()?;
        Ok(Some(election))
    }

    /// `--identity`, else `$HOSTNAME` (the pod name in a pod) joined to a random UUID, as
    /// kube-controller-manager does, so that two processes on one host never share an
    /// identity; without `HOSTNAME` just the UUID.
    pub fn identity(&self) -> String {
        if let Some(identity) = &self.identity {
            return identity.clone();
        }
        let id = uuid::Uuid::new_v4();
        match std::env::var("HOSTNAME") {
            Ok(host) if !host.is_empty() => format!("{host}_{id}"),
            _ => id.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        runtime: RuntimeArgs,
    }

    fn parse(args: &[&str]) -> Result<RuntimeArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bin").chain(args.iter().copied())).map(|c| c.runtime)
    }

    #[test]
    fn defaults() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.kubeconfig, None);
        assert_eq!(args.log_format, LogFormat::Plain);
        assert_eq!(args.log_filter, None);
        assert_eq!(args.admin_bind_address, "0.0.0.0:9410".parse().unwrap());
        assert!(args.leader_elect);
        let election = args
            .leader_election("udn-cluster-manager")
            .unwrap()
            .unwrap();
        assert_eq!(election.namespace, "ovn-kubernetes");
        assert_eq!(election.name, "udn-cluster-manager");
        assert_eq!(election.lease_duration, Duration::from_secs(137));
        assert_eq!(election.renew_deadline, Duration::from_secs(107));
        assert_eq!(election.retry_period, Duration::from_secs(26));
        assert!(!election.identity.is_empty());
        // Two processes never share a default identity.
        assert_ne!(args.identity(), args.identity());
    }

    #[test]
    fn explicit_values() {
        let args = parse(&[
            "--kubeconfig",
            "/tmp/kc",
            "--log-format",
            "json",
            "--log-filter",
            "udn=debug",
            "--admin-bind-address",
            "127.0.0.1:0",
            "--leader-election-namespace",
            "kube-system",
            "--leader-election-id",
            "cm",
            "--identity",
            "pod-a",
            "--leader-election-lease-duration",
            "15",
            "--leader-election-renew-deadline",
            "10",
            "--leader-election-retry-period",
            "2",
        ])
        .unwrap();
        assert_eq!(args.kubeconfig, Some(PathBuf::from("/tmp/kc")));
        assert_eq!(args.log_format, LogFormat::Json);
        assert_eq!(args.log_filter.as_deref(), Some("udn=debug"));
        assert_eq!(args.admin_bind_address, "127.0.0.1:0".parse().unwrap());
        let election = args.leader_election("ignored").unwrap().unwrap();
        assert_eq!(
            election,
            LeaderElection {
                namespace: "kube-system".to_owned(),
                name: "cm".to_owned(),
                identity: "pod-a".to_owned(),
                lease_duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            }
        );
    }

    #[test]
    fn leader_elect_takes_an_optional_bool() {
        assert!(!parse(&["--leader-elect=false"]).unwrap().leader_elect);
        assert!(parse(&["--leader-elect"]).unwrap().leader_elect);
        assert!(parse(&["--leader-elect=true"]).unwrap().leader_elect);
        assert!(parse(&["--leader-elect=maybe"]).is_err());
        let args = parse(&["--leader-elect=false"]).unwrap();
        assert_eq!(args.leader_election("cm").unwrap(), None);
    }

    #[test]
    fn bad_durations_are_rejected() {
        let args = parse(&[
            "--leader-election-lease-duration",
            "10",
            "--leader-election-renew-deadline",
            "10",
        ])
        .unwrap();
        assert!(matches!(
            args.leader_election("cm"),
            Err(LeaderElectionError::Durations { .. })
        ));
    }

    #[test]
    fn log_format_values() {
        assert!(parse(&["--log-format", "xml"]).is_err());
    }
}
