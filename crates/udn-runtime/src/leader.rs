//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's record semantics
//! (`holderIdentity`, `leaseDurationSeconds`, `acquireTime`, `renewTime`,
//! `leaseTransitions`), so that at most one replica of a binary does the work.
//!
//! Every write carries the `resourceVersion` that was read, so when two candidates race for
//! the same lease the API server accepts one write and answers `409 Conflict` to the other:
//! two candidates never both win.

use std::future::Future;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use tokio::time::Instant;

use crate::signals::Shutdown;

/// Settings of one candidate in one election.
///
/// The lease is free when it has no holder, or when its `renewTime` plus
/// `leaseDurationSeconds` is in the past (clocks of the candidates are assumed to agree to
/// well under `lease_duration - renew_deadline`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElection {
    /// Namespace of the Lease (it must exist).
    pub namespace: String,
    /// Name of the Lease: one per binary (the election id).
    pub name: String,
    /// This candidate's identity, written as `holderIdentity`; unique per process.
    pub identity: String,
    /// How long a lease stays valid after its last renewal; written (rounded up to whole
    /// seconds, at least 1) as `leaseDurationSeconds`. Must exceed `renew_deadline`.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal before it steps
    /// down. Must exceed `retry_period`.
    pub renew_deadline: Duration,
    /// Interval between acquisition attempts (standby) and renewals (leader).
    pub retry_period: Duration,
}

/// Why [`LeaderElection::run`] returned. In every case the `lead` future has been dropped
/// and, if this candidate was still the lease holder, the lease has been released.
#[derive(Debug, PartialEq, Eq)]
pub enum LeaderOutcome<T> {
    /// The shutdown token fired (while standing by or while leading).
    Shutdown,
    /// Leadership was lost: the lease was taken by another holder, deleted, or could not
    /// be renewed within the renew deadline. Binaries should exit (and be restarted) as
    /// client-go based controllers do.
    Lost,
    /// The `lead` future finished on its own with this output.
    Completed(T),
}

/// The election settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum LeaderElectionError {
    /// A name or identity is empty.
    #[error("leader election {field} must not be empty")]
    Empty {
        /// `namespace`, `name` or `identity`.
        field: &'static str,
    },
    /// The durations are not ordered `lease_duration > renew_deadline > retry_period > 0`.
    #[error(
        "leader election durations must satisfy lease duration > renew deadline > retry period > 0, got lease duration {lease_duration:?}, renew deadline {renew_deadline:?}, retry period {retry_period:?}"
    )]
    Durations {
        /// The lease duration.
        lease_duration: Duration,
        /// The renew deadline.
        renew_deadline: Duration,
        /// The retry period.
        retry_period: Duration,
    },
}

/// Result of one acquisition attempt.
#[derive(Debug)]
enum Acquire {
    /// The lease is ours.
    Acquired,
    /// Another candidate holds a valid lease.
    HeldBy(String),
    /// Another write won the race; try again later.
    Conflict,
}

/// Result of one renewal attempt.
#[derive(Debug)]
enum Renew {
    /// The lease's `renewTime` is now.
    Renewed,
    /// The lease is gone or has another holder.
    Lost(Option<String>),
    /// Another write won the race; read again next time.
    Conflict,
}

impl LeaderElection {
    /// Check `namespace`, `name` and `identity` are set and
    /// `lease_duration > renew_deadline > retry_period > 0`.
    pub fn validate(&self) -> Result<(), LeaderElectionError> {
        for (field, value) in [
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("identity", &self.identity),
        ] {
            if value.is_empty() {
                return Err(LeaderElectionError::Empty { field });
            }
        }
        let ordered = self.lease_duration > self.renew_deadline
            && self.renew_deadline > self.retry_period
            && !self.retry_period.is_zero();
        if !ordered {
            return Err(LeaderElectionError::Durations {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        Ok(())
    }

    /// Take part in the election until shutdown, loss of leadership, or the end of `lead`.
    ///
    /// Stands by, trying to acquire the lease every `retry_period`. Once acquired, calls
    /// `lead()` once and polls its future (in this task: spawn heavy work from it, and tie
    /// spawned tasks to its drop) while renewing every `retry_period`. Leading stops, and
    /// the `lead` future is dropped, when `shutdown` fires, the lease is seen with another
    /// holder, or no renewal has succeeded for `renew_deadline`. The lease is then released
    /// (`holderIdentity` cleared) if this candidate still holds it, so a successor takes
    /// over at its next retry instead of waiting for expiry.
    ///
    /// API errors are logged and retried; only invalid settings return `Err`.
    pub async fn run<F, Fut>(
        self,
        client: kube::Client,
        shutdown: Shutdown,
        lead: F,
    ) -> Result<LeaderOutcome<Fut::Output>, LeaderElectionError>
    where
        F: FnOnce() -> Fut,
        Fut: Future,
    {
        self.validate()?;
        let api: Api<Lease> = Api::namespaced(client, &self.namespace);
        let acquired = tokio::select! {
            biased;
            () = shutdown.wait() => None,
            attempted = self.acquire(&api) => Some(attempted),
        };
        let Some(attempted) = acquired else {
            // An acquisition may have been in flight when shutdown fired.
            self.release(&api).await;
            return Ok(LeaderOutcome::Shutdown);
        };
        tracing::info!(lease = %self.lease_key(), identity = %self.identity, "acquired leadership");
        let outcome = tokio::select! {
            biased;
            () = shutdown.wait() => LeaderOutcome::Shutdown,
            () = self.keep_renewing(&api, attempted) => LeaderOutcome::Lost,
            output = lead() => LeaderOutcome::Completed(output),
        };
        match outcome {
            LeaderOutcome::Lost => tracing::warn!(
                lease = %self.lease_key(), identity = %self.identity, "lost leadership"
            ),
            LeaderOutcome::Shutdown | LeaderOutcome::Completed(_) => tracing::info!(
                lease = %self.lease_key(), identity = %self.identity, "stopped leading"
            ),
        }
        self.release(&api).await;
        Ok(outcome)
    }

    /// Try every `retry_period` until the lease is ours; returns when the successful
    /// attempt started (no later than the `renewTime` it wrote).
    async fn acquire(&self, api: &Api<Lease>) -> Instant {
        let mut observed_leader: Option<String> = None;
        loop {
            let started = Instant::now();
            let attempt = tokio::time::timeout(self.renew_deadline, self.try_acquire(api)).await;
            match attempt {
                Ok(Ok(Acquire::Acquired)) => return started,
                Ok(Ok(Acquire::HeldBy(holder))) => {
                    if observed_leader.as_deref() != Some(holder.as_str()) {
                        tracing::info!(
                            lease = %self.lease_key(), identity = %self.identity, leader = %holder, "lease held by another candidate; standing by"
                        );
                        observed_leader = Some(holder);
                    }
                }
                Ok(Ok(Acquire::Conflict)) => {
                    tracing::debug!(lease = %self.lease_key(), "lease changed during acquisition");
                }
                Ok(Err(error)) => {
                    tracing::warn!(lease = %self.lease_key(), %error, "acquiring lease failed");
                }
                Err(_) => tracing::warn!(lease = %self.lease_key(), "acquiring lease timed out"),
            }
            tokio::time::sleep(self.retry_period).await;
        }
    }

    /// Renew every `retry_period`; returns when leadership is lost. `last_renewed` is when
    /// the acquiring write started; each deadline counts from the start of the last
    /// successful write, so this candidate stops before any other can see the lease expire.
    async fn keep_renewing(&self, api: &Api<Lease>, mut last_renewed: Instant) {
        loop {
            tokio::time::sleep(self.retry_period).await;
            let started = Instant::now();
            let deadline = last_renewed + self.renew_deadline;
            match tokio::time::timeout_at(deadline, self.try_renew(api)).await {
                Ok(Ok(Renew::Renewed)) => last_renewed = started,
                Ok(Ok(Renew::Lost(holder))) => {
                    tracing::warn!(
                        lease = %self.lease_key(),
                        holder = holder.as_deref().unwrap_or(""),
                        "lease is held by another candidate or was deleted"
                    );
                    return;
                }
                Ok(Ok(Renew::Conflict)) => {
                    tracing::debug!(lease = %self.lease_key(), "lease changed during renewal");
                }
                Ok(Err(error)) => {
                    tracing::warn!(lease = %self.lease_key(), %error, "renewing lease failed");
                }
                Err(_) => {}
            }
            if Instant::now() >= last_renewed + self.renew_deadline {
                tracing::warn!(
                    lease = %self.lease_key(),
                    renew_deadline = ?self.renew_deadline,
                    "no successful lease renewal within the renew deadline"
                );
                return;
            }
        }
    }

    /// One acquisition attempt: create the lease, or take it over when free.
    async fn try_acquire(&self, api: &Api<Lease>) -> Result<Acquire, kube::Error> {
        let now = Timestamp::now();
        let Some(mut lease) = api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.held_spec(now, 0)),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Acquire::Acquired),
                Err(kube::Error::Api(status)) if status.is_already_exists() => {
                    Ok(Acquire::Conflict)
                }
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.take().unwrap_or_default();
        let holder = holder(&spec);
        let new_spec = if holder == Some(self.identity.as_str()) {
            // Ours already (a restart with the same identity): keep acquireTime and count.
            LeaseSpec {
                renew_time: Some(MicroTime(now)),
                lease_duration_seconds: Some(self.lease_duration_seconds()),
                ..spec
            }
        } else {
            if let Some(holder) = holder
                && !expired(&spec, now)
            {
                return Ok(Acquire::HeldBy(holder.to_owned()));
            }
            let transitions = spec.lease_transitions.unwrap_or(0).saturating_add(1);
            LeaseSpec {
                preferred_holder: spec.preferred_holder,
                strategy: spec.strategy,
                ..self.held_spec(now, transitions)
            }
        };
        lease.spec = Some(new_spec);
        match api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Acquire::Acquired),
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(Acquire::Conflict),
            Err(error) => Err(error),
        }
    }

    /// One renewal attempt: move `renewTime` to now if the lease is still ours.
    async fn try_renew(&self, api: &Api<Lease>) -> Result<Renew, kube::Error> {
        let Some(mut lease) = api.get_opt(&self.name).await? else {
            return Ok(Renew::Lost(None));
        };
        let spec = lease.spec.take().unwrap_or_default();
        if holder(&spec) != Some(self.identity.as_str()) {
            return Ok(Renew::Lost(holder(&spec).map(str::to_owned)));
        }
        lease.spec = Some(LeaseSpec {
            renew_time: Some(MicroTime(Timestamp::now())),
            lease_duration_seconds: Some(self.lease_duration_seconds()),
            ..spec
        });
        match api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Renew::Renewed),
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(Renew::Conflict),
            Err(error) => Err(error),
        }
    }

    /// Clear `holderIdentity` if this candidate holds the lease (bounded by the renew
    /// deadline; failures are logged, the lease then simply expires).
    async fn release(&self, api: &Api<Lease>) {
        match tokio::time::timeout(self.renew_deadline, self.try_release(api)).await {
            Ok(Ok(true)) => {
                tracing::info!(lease = %self.lease_key(), identity = %self.identity, "released lease");
            }
            Ok(Ok(false)) => {}
            Ok(Err(error)) => {
                tracing::warn!(lease = %self.lease_key(), %error, "releasing lease failed");
            }
            Err(_) => tracing::warn!(lease = %self.lease_key(), "releasing lease timed out"),
        }
    }

    /// As client-go's release: no holder, a 1 s duration, times set to now, the
    /// transition count kept. Returns whether the lease was ours and is now released.
    async fn try_release(&self, api: &Api<Lease>) -> Result<bool, kube::Error> {
        let Some(mut lease) = api.get_opt(&self.name).await? else {
            return Ok(false);
        };
        let spec = lease.spec.take().unwrap_or_default();
        if holder(&spec) != Some(self.identity.as_str()) {
            return Ok(false);
        }
        let now = MicroTime(Timestamp::now());
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..spec
        });
        api.replace(&self.name, &PostParams::default(), &lease)
            .await
            .map(|_| true)
    }

    /// The spec of a lease this candidate has just acquired.
    fn held_spec(&self, now: Timestamp, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds()),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// `lease_duration` in whole seconds, rounded up, at least 1.
    fn lease_duration_seconds(&self) -> i32 {
        let seconds =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(seconds.max(1)).unwrap_or(i32::MAX)
    }

    /// `namespace/name`, for logs.
    fn lease_key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The holder, if any (client-go writes `""` on release).
fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity
        .as_deref()
        .filter(|holder| !holder.is_empty())
}

/// Whether `renewTime + leaseDurationSeconds` is at or before `now` (a lease without a
/// renew time is expired).
fn expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(renewed) = &spec.renew_time else {
        return true;
    };
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    match renewed.0.checked_add(duration) {
        Ok(expiry) => expiry <= now,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn election() -> LeaderElection {
        LeaderElection {
            namespace: "ovn-kubernetes".to_owned(),
            name: "udn-cluster-manager".to_owned(),
            identity: "a".to_owned(),
            lease_duration: Duration::from_millis(1500),
            renew_deadline: Duration::from_secs(1),
            retry_period: Duration::from_millis(200),
        }
    }

    #[test]
    fn lease_duration_rounds_up_to_whole_seconds() {
        let mut e = election();
        assert_eq!(e.lease_duration_seconds(), 2);
        e.lease_duration = Duration::from_millis(300);
        assert_eq!(e.lease_duration_seconds(), 1);
        e.lease_duration = Duration::from_secs(137);
        assert_eq!(e.lease_duration_seconds(), 137);
    }

    #[test]
    fn validate_orders_durations() {
        assert!(election().validate().is_ok());
        let mut e = election();
        e.renew_deadline = e.lease_duration;
        assert_eq!(
            e.validate().unwrap_err().to_string(),
            "leader election durations must satisfy lease duration > renew deadline > retry period > 0, got lease duration 1.5s, renew deadline 1.5s, retry period 200ms"
        );
        let mut e = election();
        e.retry_period = Duration::ZERO;
        assert!(e.validate().is_err());
        let mut e = election();
        e.identity.clear();
        assert_eq!(
            e.validate().unwrap_err().to_string(),
            "leader election identity must not be empty"
        );
    }

    #[test]
    fn expiry_is_renew_time_plus_duration() {
        let renewed: Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
        let spec = LeaseSpec {
            renew_time: Some(MicroTime(renewed)),
            lease_duration_seconds: Some(10),
            ..LeaseSpec::default()
        };
        assert!(!expired(
            &spec,
            "2025-01-01T00:00:09.999999Z".parse().unwrap()
        ));
        assert!(expired(&spec, "2025-01-01T00:00:10Z".parse().unwrap()));
        assert!(expired(&LeaseSpec::default(), renewed));
    }

    #[test]
    fn empty_holder_is_no_holder() {
        let spec = LeaseSpec {
            holder_identity: Some(String::new()),
            ..LeaseSpec::default()
        };
        assert_eq!(holder(&spec), None);
    }
}
