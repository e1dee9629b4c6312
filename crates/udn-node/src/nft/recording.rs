//! [`RecordingNft`]: an executor without nft, for tests of code that plans transactions. It
//! keeps the rendered text of every transaction it is given, refuses the ones matching a
//! configured failure (as nft would: the line and a message), and answers listings with
//! configured text.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::error::{FailedLine, NftError, NftFailure};
use super::exec::{ListTarget, NftExecutor};
use super::transaction::Transaction;

/// Which calls a configured failure applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// [`NftExecutor::run`].
    Run,
    /// [`NftExecutor::check`].
    Check,
}

#[derive(Debug)]
struct Failure {
    on: FailOn,
    needle: String,
    message: String,
}

#[derive(Debug, Default)]
struct State {
    runs: Vec<String>,
    checks: Vec<String>,
    failures: Vec<Failure>,
    listings: BTreeMap<String, Option<String>>,
}

/// A recording executor; clones share their record.
#[derive(Clone, Debug, Default)]
pub struct RecordingNft {
    state: Arc<Mutex<State>>,
}

impl RecordingNft {
    /// Records everything, refuses nothing, lists nothing.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// From now on, `on` calls whose text has a line containing `needle` fail with
    /// `message`, naming that line.
    pub fn fail_when(&self, on: FailOn, needle: impl Into<String>, message: impl Into<String>) {
        self.state().failures.push(Failure {
            on,
            needle: needle.into(),
            message: message.into(),
        });
    }

    /// Forgets every configured failure.
    pub fn clear_failures(&self) {
        self.state().failures.clear();
    }

    /// What listing `target` returns (`None`: no such table or chain).
    pub fn set_listing(&self, target: &ListTarget, text: Option<String>) {
        self.state().listings.insert(format!("{target:?}"), text);
    }

    /// The text of every transaction run, successful or not, in order.
    pub fn runs(&self) -> Vec<String> {
        self.state().runs.clone()
    }

    /// The text of every transaction checked, in order.
    pub fn checks(&self) -> Vec<String> {
        self.state().checks.clone()
    }

    /// Returns and forgets the runs so far.
    pub fn take_runs(&self) -> Vec<String> {
        std::mem::take(&mut self.state().runs)
    }

    fn record(&self, on: FailOn, tx: &Transaction) -> Result<(), NftError> {
        if tx.is_empty() {
            return Ok(());
        }
        let text = tx.render()?;
        let mut state = self.state();
        match on {
            FailOn::Run => state.runs.push(text.clone()),
            FailOn::Check => state.checks.push(text.clone()),
        }
        for failure in state.failures.iter().filter(|failure| failure.on == on) {
            let found = text
                .lines()
                .enumerate()
                .find(|(_, line)| line.contains(&failure.needle));
            if let Some((index, line)) = found {
                return Err(NftError::Failed(Box::new(NftFailure {
                    command: "nft -f - (recorded)".to_owned(),
                    status: "exit status: 1".to_owned(),
                    line: Some(FailedLine {
                        number: index + 1,
                        text: line.to_owned(),
                    }),
                    message: failure.message.clone(),
                    stderr: failure.message.clone(),
                })));
            }
        }
        Ok(())
    }
}

impl NftExecutor for RecordingNft {
    async fn run(&self, tx: &Transaction) -> Result<(), NftError> {
        self.record(FailOn::Run, tx)
    }

    async fn check(&self, tx: &Transaction) -> Result<(), NftError> {
        self.record(FailOn::Check, tx)
    }

    async fn list(&self, target: &ListTarget) -> Result<Option<String>, NftError> {
        Ok(self
            .state()
            .listings
            .get(&format!("{target:?}"))
            .cloned()
            .flatten())
    }
}
