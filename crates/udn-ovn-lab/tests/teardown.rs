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
