//! Running transactions and listings: the [`NftExecutor`] seam, and [`NftCli`], which runs
//! the `nft` program.

use std::future::Future;
use std::time::Duration;

use crate::command::{self, Program};

use super::error::{NftError, NftFailure, first_error};
use super::object::TableId;
use super::transaction::Transaction;

/// What to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListTarget {
    /// `nft list table <family> <name>`.
    Table(TableId),
    /// `nft list chain <family> <table> <chain>`.
    Chain(TableId, String),
}

impl ListTarget {
    fn args(&self) -> Vec<String> {
        match self {
            Self::Table(table) => vec![
                "list".to_owned(),
                "table".to_owned(),
                table.family.as_str().to_owned(),
                table.name.clone(),
            ],
            Self::Chain(table, chain) => vec![
                "list".to_owned(),
                "chain".to_owned(),
                table.family.as_str().to_owned(),
                table.name.clone(),
                chain.clone(),
            ],
        }
    }
}

/// Runs nft transactions and listings. The real one is [`NftCli`]; tests use
/// [`RecordingNft`](super::RecordingNft).
pub trait NftExecutor: Send + Sync {
    /// Applies `tx` atomically. An empty transaction is not sent.
    fn run(&self, tx: &Transaction) -> impl Future<Output = Result<(), NftError>> + Send;

    /// Checks `tx` against the kernel without applying it (`nft -c`).
    fn check(&self, tx: &Transaction) -> impl Future<Output = Result<(), NftError>> + Send;

    /// `nft list ...` text; `None` when the table or chain does not exist.
    fn list(
        &self,
        target: &ListTarget,
    ) -> impl Future<Output = Result<Option<String>, NftError>> + Send;
}

/// How long one nft invocation may take before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the `nft` program, in this process's network namespace unless a wrapper (such as
/// `nsenter --net=/run/netns/NS`) is given. Transactions go to `nft -f -` on standard input;
/// nft's standard error becomes a typed [`NftError::Failed`].
#[derive(Clone, Debug)]
pub struct NftCli {
    argv: Vec<String>,
    timeout: Duration,
}

impl Default for NftCli {
    fn default() -> Self {
        Self::new()
    }
}

impl NftCli {
    /// `nft` from `PATH`, in this network namespace.
    pub fn new() -> Self {
        Self {
            argv: vec!["nft".to_owned()],
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// `nft` run through `wrapper` (for example `["nsenter", "--net=/run/netns/NS"]`: only
    /// the network namespace changes, so nft still sees this host's `/sys/fs/cgroup`, which
    /// `ip netns exec` would hide).
    pub fn with_wrapper<I, S>(wrapper: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut argv: Vec<String> = wrapper.into_iter().map(Into::into).collect();
        argv.push("nft".to_owned());
        Self {
            argv,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// `nft` in the named network namespace `/run/netns/<name>`, through `nsenter --net`.
    pub fn in_named_netns(name: &str) -> Self {
        Self::with_wrapper(["nsenter".to_owned(), format!("--net=/run/netns/{name}")])
    }

    /// This executor with another per-invocation timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn invoke(&self, args: &[String], stdin: Option<&str>) -> Result<String, NftError> {
        let mut argv = self.argv.clone();
        argv.extend(args.iter().cloned());
        let done = command::run(Program {
            argv: &argv,
            env: &[],
            stdin,
            timeout: self.timeout,
        })
        .await?;
        if done.status.success() {
            return Ok(done.stdout);
        }
        let (line, message) = first_error(&done.stderr, stdin);
        Err(NftError::Failed(Box::new(NftFailure {
            command: done.command,
            status: done.status.to_string(),
            line,
            message,
            stderr: done.stderr,
        })))
    }

    async fn apply(&self, tx: &Transaction, check: bool) -> Result<(), NftError> {
        if tx.is_empty() {
            return Ok(());
        }
        let text = tx.render()?;
        let mut args = Vec::new();
        if check {
            args.push("-c".to_owned());
        }
        args.extend(["-f".to_owned(), "-".to_owned()]);
        let started = std::time::Instant::now();
        self.invoke(&args, Some(&text)).await?;
        tracing::debug!(
            table = %tx.table(),
            operations = tx.len(),
            check,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "nft transaction applied"
        );
        Ok(())
    }
}

impl NftExecutor for NftCli {
    async fn run(&self, tx: &Transaction) -> Result<(), NftError> {
        self.apply(tx, false).await
    }

    async fn check(&self, tx: &Transaction) -> Result<(), NftError> {
        self.apply(tx, true).await
    }

    async fn list(&self, target: &ListTarget) -> Result<Option<String>, NftError> {
        match self.invoke(&target.args(), None).await {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }
}
