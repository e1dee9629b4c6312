//! Lease leader election against the in-memory API server (udn-kube-sim), in-process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tower::ServiceExt;
use udn_kube_sim::http::SimService;
use udn_kube_sim::{ResourceKey, Sim, SimConfig, WriteOptions};
use udn_runtime::{LeaderElection, LeaderElectionError, LeaderOutcome, Shutdown};

const NAMESPACE: &str = "ovn-kubernetes";
const LEASE: &str = "udn-test";

/// A server with the `ovn-kubernetes` namespace.
fn sim() -> Sim {
    let sim = Sim::new(SimConfig::default());
    let namespaces = ResourceKey {
        group: String::new(),
        plural: "namespaces".to_owned(),
    };
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    sim.create(&namespaces, None, namespace, &WriteOptions::default())
        .unwrap();
    sim
}

fn client(sim: &Sim) -> kube::Client {
    kube::Client::new(SimService::new(sim.clone()), "default")
}

/// A client whose requests fail while `cut` is set, as during a network partition.
fn partitionable_client(sim: &Sim, cut: Arc<AtomicBool>) -> kube::Client {
    let service = SimService::new(sim.clone());
    let partitioned = tower::service_fn(move |request| {
        let service = service.clone();
        let cut = Arc::clone(&cut);
        async move {
            if cut.load(Ordering::SeqCst) {
                return Err::<_, tower::BoxError>("network partition".into());
            }
            Ok(service.oneshot(request).await?)
        }
    });
    kube::Client::new(partitioned, "default")
}

fn leases(sim: &Sim) -> Api<Lease> {
    Api::namespaced(client(sim), NAMESPACE)
}

/// Short durations: a 1 s lease (the smallest `leaseDurationSeconds`), 600 ms deadline.
fn election(identity: &str) -> LeaderElection {
    LeaderElection {
        namespace: NAMESPACE.to_owned(),
        name: LEASE.to_owned(),
        identity: identity.to_owned(),
        lease_duration: Duration::from_secs(1),
        renew_deadline: Duration::from_millis(600),
        retry_period: Duration::from_millis(100),
    }
}

async fn lease_spec(sim: &Sim) -> LeaseSpec {
    leases(sim).get(LEASE).await.unwrap().spec.unwrap()
}

/// Poll `condition` every 20 ms until it holds, failing after `within`.
async fn eventually<F, Fut>(within: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Records when it is dropped: proves the lead future was cancelled, and when.
struct DropFlag(Arc<Mutex<Option<Instant>>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(Instant::now());
    }
}

/// A candidate whose lead future announces its identity, then runs until dropped.
struct Candidate {
    identity: String,
    shutdown: Shutdown,
    dropped: Arc<Mutex<Option<Instant>>>,
    task: JoinHandle<Result<LeaderOutcome<()>, LeaderElectionError>>,
}

fn spawn_candidate(
    election: LeaderElection,
    client: kube::Client,
    started: mpsc::UnboundedSender<(String, Instant)>,
) -> Candidate {
    let shutdown = Shutdown::new();
    let dropped = Arc::new(Mutex::new(None));
    let identity = election.identity.clone();
    let (flag, token, announced) = (Arc::clone(&dropped), shutdown.clone(), identity.clone());
    let task = tokio::spawn(election.run(client, token, move || async move {
        let _guard = DropFlag(flag);
        let _ = started.send((announced, Instant::now()));
        std::future::pending::<()>().await
    }));
    Candidate {
        identity,
        shutdown,
        dropped,
        task,
    }
}

async fn finish(candidate: Candidate) -> LeaderOutcome<()> {
    tokio::time::timeout(Duration::from_secs(5), candidate.task)
        .await
        .expect("run returns")
        .expect("run does not panic")
        .expect("settings are valid")
}

/// The identity of the next candidate to start leading.
async fn next_leader(
    started: &mut mpsc::UnboundedReceiver<(String, Instant)>,
    within: Duration,
) -> String {
    next_start(started, within).await.0
}

/// The identity of the next candidate to start leading, and when it started.
async fn next_start(
    started: &mut mpsc::UnboundedReceiver<(String, Instant)>,
    within: Duration,
) -> (String, Instant) {
    tokio::time::timeout(within, started.recv())
        .await
        .expect("a candidate starts leading in time")
        .expect("senders are alive")
}

/// When the candidate's lead future was dropped (fails if it was not).
fn dropped_at(dropped: &Mutex<Option<Instant>>) -> Instant {
    dropped
        .lock()
        .unwrap()
        .expect("the lead future was dropped")
}

#[tokio::test]
async fn one_of_two_leads_and_hands_over_on_shutdown() {
    let sim = sim();
    let (tx, mut started) = mpsc::unbounded_channel();
    let mut election_b = election("b");
    // A long lease: the hand-over below can only be this fast because of the release.
    election_b.lease_duration = Duration::from_secs(30);
    let mut election_a = election("a");
    election_a.lease_duration = Duration::from_secs(30);
    let a = spawn_candidate(election_a, client(&sim), tx.clone());
    let b = spawn_candidate(election_b, client(&sim), tx);

    let first = next_leader(&mut started, Duration::from_secs(5)).await;
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(first.as_str()));
    assert_eq!(spec.lease_duration_seconds, Some(30));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.acquire_time, spec.renew_time);

    // The other stands by through several retry periods, while the leader renews.
    let renewed = spec.renew_time.clone().unwrap();
    eventually(Duration::from_secs(5), "a renewal", || async {
        lease_spec(&sim).await.renew_time.unwrap() > renewed
    })
    .await;
    let standby = tokio::time::timeout(Duration::from_millis(500), started.recv()).await;
    assert!(standby.is_err(), "a second leader started: {standby:?}");
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(first.as_str()));
    assert_eq!(
        spec.acquire_time.unwrap(),
        renewed,
        "acquireTime is kept on renewal"
    );

    let (leader, other) = if first == a.identity { (a, b) } else { (b, a) };
    leader.shutdown.trigger();
    let dropped = Arc::clone(&leader.dropped);
    assert_eq!(finish(leader).await, LeaderOutcome::Shutdown);
    dropped_at(&dropped);

    let second = next_leader(&mut started, Duration::from_secs(3)).await;
    assert_eq!(second, other.identity);
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(second.as_str()));
    assert_eq!(spec.lease_transitions, Some(1));

    // The last one leaves: the lease stays, released.
    other.shutdown.trigger();
    assert_eq!(finish(other).await, LeaderOutcome::Shutdown);
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(1));
}

#[tokio::test]
async fn a_lease_taken_by_another_holder_cancels_the_leader() {
    let sim = sim();
    let (tx, mut started) = mpsc::unbounded_channel();
    let a = spawn_candidate(election("a"), client(&sim), tx);
    assert_eq!(next_leader(&mut started, Duration::from_secs(5)).await, "a");

    // Someone else writes the lease (a split brain the leader must notice).
    let api = leases(&sim);
    let mut lease = api.get(LEASE).await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("intruder".to_owned());
    spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
    spec.lease_duration_seconds = Some(60);
    api.replace(LEASE, &PostParams::default(), &lease)
        .await
        .unwrap();

    let dropped = Arc::clone(&a.dropped);
    assert_eq!(finish(a).await, LeaderOutcome::Lost);
    dropped_at(&dropped);
    // Not ours any more: left alone.
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("intruder"));
}

#[tokio::test]
async fn a_partitioned_leader_steps_down_before_the_successor_starts() {
    let sim = sim();
    let (tx, mut started) = mpsc::unbounded_channel();
    let cut = Arc::new(AtomicBool::new(false));
    let a = spawn_candidate(
        election("a"),
        partitionable_client(&sim, Arc::clone(&cut)),
        tx.clone(),
    );
    assert_eq!(next_leader(&mut started, Duration::from_secs(5)).await, "a");
    let b = spawn_candidate(election("b"), client(&sim), tx);

    cut.store(true, Ordering::SeqCst);
    let partitioned_at = Instant::now();
    let a_dropped = Arc::clone(&a.dropped);
    assert_eq!(finish(a).await, LeaderOutcome::Lost);
    let a_stopped_at = dropped_at(&a_dropped);
    // No renewal for the renew deadline (600 ms, less the time since the last renewal).
    assert!(a_stopped_at - partitioned_at <= Duration::from_millis(1500));

    // b takes over once renewTime + 1 s has passed, which is after a stopped leading.
    let (b_identity, b_started_at) = next_start(&mut started, Duration::from_secs(5)).await;
    assert_eq!(b_identity, "b");
    assert!(b_started_at > a_stopped_at, "b started while a still led");
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));

    b.shutdown.trigger();
    assert_eq!(finish(b).await, LeaderOutcome::Shutdown);
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_and_a_valid_one_is_not() {
    let sim = sim();
    let api = leases(&sim);
    let now = jiff::Timestamp::now();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(LEASE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("ghost".to_owned()),
            lease_duration_seconds: Some(60),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(4),
            ..LeaseSpec::default()
        }),
    };
    api.create(&PostParams::default(), &lease).await.unwrap();

    // Valid for a minute: the candidate stands by, and on shutdown leaves it untouched.
    let (tx, mut started) = mpsc::unbounded_channel();
    let a = spawn_candidate(election("a"), client(&sim), tx.clone());
    let standby = tokio::time::timeout(Duration::from_millis(500), started.recv()).await;
    assert!(standby.is_err(), "took a valid lease: {standby:?}");
    a.shutdown.trigger();
    assert_eq!(finish(a).await, LeaderOutcome::Shutdown);
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("ghost"));
    assert_eq!(spec.lease_transitions, Some(4));

    // Renewed an hour ago: expired, taken over at once.
    let mut lease = api.get(LEASE).await.unwrap();
    let an_hour_ago = now - jiff::SignedDuration::from_hours(1);
    lease.spec.as_mut().unwrap().renew_time = Some(MicroTime(an_hour_ago));
    api.replace(LEASE, &PostParams::default(), &lease)
        .await
        .unwrap();
    let b = spawn_candidate(election("b"), client(&sim), tx);
    assert_eq!(next_leader(&mut started, Duration::from_secs(2)).await, "b");
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(5));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert!(spec.acquire_time.unwrap().0 > now);
    b.shutdown.trigger();
    assert_eq!(finish(b).await, LeaderOutcome::Shutdown);
}

#[tokio::test]
async fn a_finished_lead_releases_the_lease_and_returns_its_output() {
    let sim = sim();
    let outcome = election("a")
        .run(client(&sim), Shutdown::new(), || async { 42 })
        .await
        .unwrap();
    assert_eq!(outcome, LeaderOutcome::Completed(42));
    let spec = lease_spec(&sim).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_transitions, Some(0));
}

#[tokio::test]
async fn shutdown_before_acquiring_returns_without_leading() {
    let sim = sim();
    let shutdown = Shutdown::new();
    shutdown.trigger();
    let led = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&led);
    let outcome = election("a")
        .run(client(&sim), shutdown, move || async move {
            flag.store(true, Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert_eq!(outcome, LeaderOutcome::Shutdown);
    assert!(!led.load(Ordering::SeqCst));
}

#[tokio::test]
async fn invalid_settings_are_refused() {
    let sim = sim();
    let mut settings = election("a");
    settings.renew_deadline = Duration::from_secs(2);
    let error = settings
        .run(client(&sim), Shutdown::new(), || async {})
        .await
        .unwrap_err();
    assert!(
        matches!(error, LeaderElectionError::Durations { .. }),
        "{error}"
    );
}

/// Four candidates that each lead for 150 ms and then, after a pause, stand again: never
/// two leaders at once, and every acquisition after the first counts as a transition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contending_candidates_never_lead_together() {
    const ROUNDS: usize = 8;
    let sim = sim();
    let leading = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let acquisitions = Arc::new(AtomicUsize::new(0));
    let holders = Arc::new(Mutex::new(Vec::new()));
    let shutdown = Shutdown::new();
    let mut tasks = Vec::new();
    for index in 0..4 {
        let (sim, shutdown) = (sim.clone(), shutdown.clone());
        let (leading, most) = (Arc::clone(&leading), Arc::clone(&most));
        let (acquisitions, holders) = (Arc::clone(&acquisitions), Arc::clone(&holders));
        tasks.push(tokio::spawn(async move {
            let mut settings = election(&format!("c{index}"));
            settings.retry_period = Duration::from_millis(30);
            while !shutdown.is_triggered() {
                let (leading, most) = (Arc::clone(&leading), Arc::clone(&most));
                let (acquisitions, holders) = (Arc::clone(&acquisitions), Arc::clone(&holders));
                let identity = settings.identity.clone();
                settings
                    .clone()
                    .run(client(&sim), shutdown.clone(), move || async move {
                        let now = leading.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        acquisitions.fetch_add(1, Ordering::SeqCst);
                        holders.lock().unwrap().push(identity);
                        tokio::time::sleep(Duration::from_millis(150)).await;
                        leading.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                    .unwrap();
                // Rejoin later so that the others get their turn.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
    }
    eventually(Duration::from_secs(20), "enough hand-overs", || async {
        acquisitions.load(Ordering::SeqCst) >= ROUNDS
    })
    .await;
    shutdown.trigger();
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 1, "two candidates led at once");
    let count = acquisitions.load(Ordering::SeqCst);
    let spec = lease_spec(&sim).await;
    assert_eq!(
        spec.lease_transitions,
        Some(i32::try_from(count - 1).unwrap())
    );
    let distinct: std::collections::BTreeSet<_> = holders.lock().unwrap().iter().cloned().collect();
    assert!(distinct.len() > 1, "only {distinct:?} ever led");
}
