//! Process shutdown: the SIGINT/SIGTERM future and [`Shutdown`], the token every component
//! of a binary watches so that all of them stop together.

use std::future::Future;
use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// Installing a signal handler failed.
#[derive(Debug, thiserror::Error)]
#[error("installing the {signal} handler")]
pub struct SignalError {
    /// The signal (`SIGINT` or `SIGTERM`).
    pub signal: &'static str,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

/// A future that resolves on the first SIGINT or SIGTERM, logging which one arrived.
///
/// The handlers are installed by this call (not on first poll), so a signal that arrives
/// between the call and the first poll is not lost. Needs a tokio runtime.
pub fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static, SignalError> {
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|source| SignalError {
        signal: "SIGINT",
        source,
    })?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|source| SignalError {
        signal: "SIGTERM",
        source,
    })?;
    Ok(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        tracing::info!(signal = name, "shutdown signal received");
    })
}

/// A shutdown token shared by the components of one process.
///
/// Cheap to clone; every clone sees the same state. Once triggered it stays triggered,
/// and [`Shutdown::wait`] returns immediately from then on.
#[derive(Clone, Debug)]
pub struct Shutdown {
    sender: Arc<watch::Sender<bool>>,
}

impl Shutdown {
    /// A token that has not been triggered.
    pub fn new() -> Self {
        let (sender, _) = watch::channel(false);
        Self {
            sender: Arc::new(sender),
        }
    }

    /// Ask every holder of this token to stop. Idempotent.
    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }

    /// Whether [`Shutdown::trigger`] has been called.
    pub fn is_triggered(&self) -> bool {
        *self.sender.borrow()
    }

    /// Resolves once the token is triggered (immediately if it already is).
    pub async fn wait(&self) {
        let mut receiver = self.sender.subscribe();
        // The sender lives as long as `self`, so this cannot fail with a closed channel.
        let _ = receiver.wait_for(|triggered| *triggered).await;
    }

    /// Trigger this token on the first SIGINT or SIGTERM (spawns a task on the current
    /// tokio runtime). Errors if the signal handlers cannot be installed.
    pub fn trigger_on_signal(&self) -> Result<(), SignalError> {
        let signal = shutdown_signal()?;
        let token = self.clone();
        tokio::spawn(async move {
            signal.await;
            token.trigger();
        });
        Ok(())
    }
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn clones_share_the_trigger() {
        let shutdown = Shutdown::new();
        let waiter = shutdown.clone();
        let task = tokio::spawn(async move { waiter.wait().await });
        assert!(!shutdown.is_triggered());
        shutdown.clone().trigger();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("wait returns after trigger")
            .expect("task does not panic");
        assert!(shutdown.is_triggered());
        // Triggered stays triggered: a late wait returns at once.
        tokio::time::timeout(Duration::from_secs(5), shutdown.wait())
            .await
            .expect("late wait returns at once");
    }

    #[tokio::test]
    async fn sigterm_resolves_the_signal_future() {
        let shutdown = Shutdown::new();
        shutdown.trigger_on_signal().expect("handlers install");
        let pid = std::process::id().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(5), shutdown.wait())
            .await
            .expect("SIGTERM triggers the token");
    }
}
