//! Labs never collide and never leave anything behind: two at once, drop, and a panicking test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use udn_ovn_lab::{InterfaceSpec, Lab, LabConfig, Ping, PodSpec, netns_with_prefix, process_alive};

/// What a lab had, to check it is all gone.
struct Footprint {
    prefix: String,
    pids: Vec<u32>,
    dirs: Vec<PathBuf>,
}

impl Footprint {
    fn of(lab: &Lab) -> Self {
        let mut dirs = vec![lab.run_dir().to_owned()];
        for node in lab.nodes() {
            dirs.extend(
                node.log_files()
                    .iter()
                    .filter_map(|log| Some(log.parent()?.to_owned())),
            );
        }
        assert!(!lab.netns_names().is_empty());
        let pids = lab.pids();
        assert!(pids.len() >= 6, "{pids:?}");
        assert!(pids.iter().all(|pid| process_alive(*pid)), "{pids:?}");
        Self {
            prefix: lab.prefix().to_owned(),
            pids,
            dirs,
        }
    }

    fn assert_gone(&self) {
        let left = netns_with_prefix(&format!("{}-", self.prefix));
        assert!(left.is_empty(), "netns left: {left:?}");
        let alive: Vec<_> = self
            .pids
            .iter()
            .filter(|pid| process_alive(**pid))
            .collect();
        assert!(alive.is_empty(), "daemons alive: {alive:?}");
        let dirs: Vec<_> = self.dirs.iter().filter(|dir| dir.exists()).collect();
        assert!(dirs.is_empty(), "dirs left: {dirs:?}");
    }
}

fn one_node() -> LabConfig {
    LabConfig::with_nodes(1)
}

#[test]
fn two_labs_at_once_do_not_collide() {
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| Lab::start(one_node()).unwrap());
        let second = scope.spawn(|| Lab::start(one_node()).unwrap());
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_ne!(first.prefix(), second.prefix());
    assert_ne!(first.run_dir(), second.run_dir());
    // Same addresses in both, each in its own namespaces.
    assert_eq!(first.external().ip(), second.external().ip());
    for lab in [&first, &second] {
        let node = &lab.nodes()[0];
        assert!(
            lab.ping(node.netns(), lab.external().ip().into(), Ping::default())
                .unwrap()
        );
    }
    let gone = Footprint::of(&first);
    drop(first);
    gone.assert_gone();
    let node = &second.nodes()[0];
    assert!(
        second
            .ping(node.netns(), second.external().ip().into(), Ping::default())
            .unwrap()
    );
    let gone = Footprint::of(&second);
    drop(second);
    gone.assert_gone();
}

#[test]
fn a_panicking_test_leaves_nothing_behind() {
    let (send, footprint) = std::sync::mpsc::channel();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let lab = Lab::start(one_node()).unwrap();
        let spec = PodSpec::new("p", "node1").interface(
            InterfaceSpec::new("eth0", "p", "0a:58:0a:00:00:05").ip("10.0.0.5/24".parse().unwrap()),
        );
        let pod = lab.add_pod(spec).unwrap();
        let listener = lab
            .listen_tcp(&pod.netns, 7000, Duration::from_secs(5))
            .unwrap();
        let capture = lab.capture_external("icmp").unwrap();
        let mut footprint = Footprint::of(&lab);
        footprint.pids.extend([listener.pid(), capture.pid()]);
        assert!(lab.netns_names().contains(&pod.netns));
        send.send(footprint).unwrap();
        panic!("the test fails while the lab is up");
    }));
    assert!(result.is_err());
    footprint.recv().unwrap().assert_gone();
}

/// Set in the child process of [`a_killed_test_process_is_cleaned_up_by_the_next_lab`].
const HOLD_ENV: &str = "UDN_OVN_LAB_HOLD";

#[test]
#[ignore = "helper: run as a child process by a_killed_test_process_is_cleaned_up_by_the_next_lab"]
fn hold_a_lab_until_killed() {
    if std::env::var_os(HOLD_ENV).is_none() {
        return;
    }
    let lab = Lab::start(one_node()).unwrap();
    let pids: Vec<String> = lab.pids().iter().map(u32::to_string).collect();
    println!("LAB {} {}", lab.prefix(), pids.join(" "));
    // Block until the parent kills this process; the lab is never dropped.
    let _ = std::io::stdin().read_line(&mut String::new());
    std::mem::forget(lab);
}

#[test]
fn a_killed_test_process_is_cleaned_up_by_the_next_lab() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "hold_a_lab_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(HOLD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find(|line| line.starts_with("LAB "))
        .expect("the child reports its lab");
    let mut words = line.split_whitespace().skip(1);
    let prefix = words.next().unwrap().to_owned();
    let pids: Vec<u32> = words.map(|pid| pid.parse().unwrap()).collect();
    assert!(pids.iter().all(|pid| process_alive(*pid)));
    assert!(!netns_with_prefix(&format!("{prefix}-")).is_empty());

    child.kill().unwrap();
    child.wait().unwrap();
    // The daemons outlive their test process...
    assert!(pids.iter().all(|pid| process_alive(*pid)));
    // ...until the next lab's start (here called directly) cleans up. Another test's lab may
    // have started meanwhile and done it already: then the run dir, removed last, is gone.
    let run_dir = std::env::temp_dir().join(format!("udn-ovn-lab-{prefix}"));
    let cleaned = udn_ovn_lab::clean_stale_labs();
    assert!(
        cleaned.contains(&prefix) || !run_dir.exists(),
        "{cleaned:?}"
    );
    Footprint {
        prefix,
        pids,
        dirs: vec![run_dir],
    }
    .assert_gone();
}

#[test]
fn a_detached_lab_outlives_its_value_until_torn_down() {
    let base = tempfile::tempdir().unwrap();
    let lab = Lab::start(one_node().run_base(base.path().to_owned())).unwrap();
    let footprint = Footprint::of(&lab);
    assert!(
        lab.run_dir().starts_with(base.path()),
        "{}",
        lab.run_dir().display()
    );
    let run_dir = lab.detach();
    // Nothing stopped when the value went: the daemons run, the netns exist.
    assert!(footprint.pids.iter().all(|pid| process_alive(*pid)));
    assert!(!netns_with_prefix(&format!("{}-", footprint.prefix)).is_empty());
    assert_eq!(udn_ovn_lab::tear_down(&run_dir).unwrap(), footprint.prefix);
    footprint.assert_gone();
}

#[test]
fn tear_down_refuses_a_directory_that_is_no_lab() {
    let dir = tempfile::tempdir().unwrap();
    let error = udn_ovn_lab::tear_down(dir.path()).unwrap_err();
    assert!(
        error.to_string().contains("no lab run directory"),
        "{error}"
    );
    assert!(dir.path().exists());
}
