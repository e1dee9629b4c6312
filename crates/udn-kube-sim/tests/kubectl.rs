//! The `udn-kube-sim` binary driven by the installed kubectl (1.32, from the machine
//! image; `.ci/run` makes sure it is there): the seed guide's CRDs, namespaces and
//! UserDefinedNetworks applied with the default `--validate=strict`, listed, shown as
//! YAML, deleted, watched, an invalid UDN rejected with its CEL message, typed creates in
//! protobuf both ways, NodePort and LoadBalancer Services' node ports (shown, refused when
//! taken, freed with the type), and the state file kept across a SIGTERM restart.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_udn-kube-sim");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/crds");

/// True when kubectl can run; otherwise says why the test is skipped.
fn have_kubectl() -> bool {
    match Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    {
        Ok(_) => true,
        Err(e) => {
            eprintln!(
                "SKIPPED: kubectl is not on PATH ({e}); install the machine image's kubectl 1.32 (.ci/run requires it)"
            );
            false
        }
    }
}

/// Runs `f` on a thread and waits at most `limit` for its result.
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// A running `udn-kube-sim serve` with its kubeconfig and kubectl cache in a temp dir.
struct Server {
    child: Option<Child>,
    dir: PathBuf,
    url: String,
}

impl Server {
    fn start(dir: &Path, state: Option<&Path>) -> Self {
        let kubeconfig = dir.join("kubeconfig");
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(state) = state {
            command.arg("--state").arg(state);
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let line = within(
            Duration::from_secs(30),
            "the server's first line",
            move || {
                let mut line = String::new();
                BufReader::new(stdout).read_line(&mut line).unwrap();
                line
            },
        );
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        let config = std::fs::read_to_string(&kubeconfig).unwrap();
        assert!(config.contains(&format!("server: {url}")), "{config}");
        Self {
            child: Some(child),
            dir: dir.to_owned(),
            url,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .env("KUBECONFIG", self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join("kubectl-cache"))
            .args(args);
        command
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        let mut command = self.command(args);
        within(Duration::from_secs(60), "kubectl", move || {
            command.output().unwrap()
        })
    }

    /// Runs kubectl and requires success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "kubectl {args:?} failed: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// SIGTERM, then wait for the exit; returns whether it exited successfully.
    fn terminate(mut self) -> bool {
        let mut child = self.child.take().unwrap();
        let pid = child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        within(Duration::from_secs(30), "the server to exit", move || {
            child.wait().unwrap()
        })
        .success()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn the_fixture_is_the_docs_example() {
    let docs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/blue-green.yaml"
    );
    assert_eq!(
        std::fs::read_to_string(fixture("blue-green.yaml")).unwrap(),
        std::fs::read_to_string(docs).unwrap()
    );
}

#[test]
fn kubectl_applies_lists_shows_deletes_watches_and_validates() {
    if !have_kubectl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), None);

    let crds = server.ok(&["apply", "-f", CRDS]);
    for crd in [
        "userdefinednetworks.k8s.ovn.org",
        "clusteruserdefinednetworks.k8s.ovn.org",
        "network-attachment-definitions.k8s.cni.cncf.io",
    ] {
        assert!(
            crds.contains(&format!(
                "customresourcedefinition.apiextensions.k8s.io/{crd} created"
            )),
            "{crds}"
        );
    }
    let applied = server.ok(&["apply", "-f", &fixture("blue-green.yaml")]);
    for line in [
        "namespace/blue created",
        "namespace/green created",
        "userdefinednetwork.k8s.ovn.org/blue-network created",
        "userdefinednetwork.k8s.ovn.org/green-network created",
    ] {
        assert!(applied.contains(line), "{applied}");
    }
    // kubectl's typed create sends a protobuf body and reads the protobuf answer.
    let created = server.ok(&["create", "namespace", "purple"]);
    assert_eq!(created.trim(), "namespace/purple created");
    let service = server.ok(&[
        "create",
        "service",
        "clusterip",
        "web",
        "--tcp=80:8080",
        "-n",
        "purple",
        "-o",
        "jsonpath={.spec.ports[0].targetPort} {.spec.clusterIP} {.metadata.uid}",
    ]);
    let fields: Vec<&str> = service.split(' ').collect();
    assert_eq!(fields.len(), 3, "{service}");
    assert_eq!(fields[0], "8080", "{service}");
    assert!(fields[1].starts_with("10.96."), "{service}");
    assert_eq!(
        fields[2].len(),
        36,
        "the server's uid, read from protobuf: {service}"
    );
    let configmap = server.ok(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=fast",
        "--from-literal=empty=",
        "-n",
        "purple",
    ]);
    assert_eq!(configmap.trim(), "configmap/settings created");
    let configmaps = server.ok(&["get", "cm", "-n", "purple"]);
    let rows: Vec<&str> = configmaps.lines().collect();
    assert_eq!(words(rows[0]), ["NAME", "DATA", "AGE"], "{configmaps}");
    assert_eq!(words(rows[1])[..2], ["settings", "2"], "{configmaps}");
    let data = server.ok(&[
        "get",
        "cm",
        "settings",
        "-n",
        "purple",
        "-o",
        "jsonpath={.data}",
    ]);
    assert_eq!(data, r#"{"empty":"","mode":"fast"}"#);
    // Applying again is a no-op.
    let again = server.ok(&["apply", "-f", &fixture("blue-green.yaml")]);
    assert!(
        again.contains("userdefinednetwork.k8s.ovn.org/blue-network unchanged"),
        "{again}"
    );

    let listed = server.ok(&["get", "udn", "-A"]);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(
        words(lines[0]),
        ["NAMESPACE", "NAME", "TOPOLOGY", "ROLE", "CREATED", "AGE"],
        "{listed}"
    );
    assert_eq!(
        words(lines[1])[..4],
        ["blue", "blue-network", "Layer3", "Primary"],
        "{listed}"
    );
    assert_eq!(
        words(lines[2])[..4],
        ["green", "green-network", "Layer3", "Primary"],
        "{listed}"
    );

    let yaml = server.ok(&[
        "get",
        "userdefinednetworks.k8s.ovn.org",
        "-n",
        "blue",
        "-o",
        "yaml",
    ]);
    for expected in [
        "kind: List",
        "kind: UserDefinedNetwork",
        "name: blue-network",
        "namespace: blue",
        "cidr: 103.103.0.0/16",
        "topology: Layer3",
        "uid: ",
    ] {
        assert!(yaml.contains(expected), "{expected} in {yaml}");
    }

    let rejected = server.kubectl(&["apply", "-f", &fixture("overlapping-udn.yaml")]);
    assert_eq!(rejected.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&rejected.stderr);
    assert!(
        stderr.contains(r#"The UserDefinedNetwork "overlapping" is invalid: spec.layer3: Invalid value: Subnets must not overlap or contain each other"#),
        "{stderr}"
    );

    let deleted = server.ok(&["delete", "udn", "blue-network", "-n", "blue"]);
    assert!(
        deleted.contains(r#"userdefinednetwork.k8s.ovn.org "blue-network" deleted"#),
        "{deleted}"
    );
    let none = server.kubectl(&["get", "udn", "-n", "blue"]);
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("No resources found in blue namespace.")
    );

    // A watch lists the namespaces, then shows one created once the watch request is
    // open (kubectl -v=6 logs it); the request timeout ends the watch.
    let mut watch = server.command(&["get", "ns", "-w", "--request-timeout=3s", "-v=6"]);
    let mut watch = watch
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let stderr = watch.stderr.take().unwrap();
    let (opened, watching) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("watch=true") && line.contains("200 OK") {
                let _ = opened.send(());
            }
        }
    });
    let printed = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    watching
        .recv_timeout(Duration::from_secs(30))
        .expect("kubectl opened the watch");
    server.ok(&["apply", "-f", &fixture("red-namespace.yaml")]);
    let status = within(
        Duration::from_secs(30),
        "kubectl get -w to end",
        move || watch.wait().unwrap(),
    );
    assert!(
        status.success(),
        "kubectl get -w ends cleanly at its request timeout"
    );
    let out = printed.join().unwrap();
    let rows: Vec<Vec<&str>> = out.lines().map(words).collect();
    assert_eq!(rows[0], ["NAME", "STATUS", "AGE"], "{out}");
    for ns in ["blue", "green", "default"] {
        assert!(
            rows.iter().any(|r| r[..2] == [ns, "Active"]),
            "{ns} listed in {out}"
        );
    }
    assert!(
        rows.iter().any(|r| r[..2] == ["red", "Active"]),
        "red seen by the watch in {out}"
    );
    assert!(server.url.starts_with("http://"));
}

#[test]
fn kubectl_node_port_services_get_free_node_ports() {
    if !have_kubectl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), None);

    let created = server.ok(&["create", "service", "nodeport", "web", "--tcp=80:8080"]);
    assert_eq!(created.trim(), "service/web created");
    let listed = server.ok(&["get", "svc", "web"]);
    let rows: Vec<&str> = listed.lines().collect();
    assert_eq!(
        words(rows[0]),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ],
        "{listed}"
    );
    let row = words(rows[1]);
    assert_eq!(
        [row[0], row[1], row[3], row[4]],
        ["web", "NodePort", "<none>", "80:30086/TCP"],
        "{listed}"
    );
    let policy = server.ok(&[
        "get",
        "svc",
        "web",
        "-o",
        "jsonpath={.spec.externalTrafficPolicy}",
    ]);
    assert_eq!(policy, "Cluster");

    let taken = server.kubectl(&[
        "create",
        "service",
        "nodeport",
        "other",
        "--tcp=81:8081",
        "--node-port=30086",
    ]);
    assert_eq!(taken.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&taken.stderr);
    assert!(
        stderr.contains(r#"Service "other" is invalid: spec.ports[0].nodePort: Invalid value: 30086: provided port is already allocated"#),
        "{stderr}"
    );

    // Back to ClusterIP: the node port goes and is free for another Service.
    server.ok(&[
        "patch",
        "svc",
        "web",
        "-p",
        r#"{"spec":{"type":"ClusterIP"}}"#,
    ]);
    let ports = server.ok(&["get", "svc", "web", "-o", "jsonpath={.spec.ports[0]}"]);
    assert!(!ports.contains("nodePort"), "{ports}");
    server.ok(&[
        "create",
        "service",
        "nodeport",
        "other",
        "--tcp=81:8081",
        "--node-port=30086",
    ]);

    server.ok(&["create", "service", "loadbalancer", "lb", "--tcp=443"]);
    let lb = server.ok(&[
        "get",
        "svc",
        "lb",
        "-o",
        "jsonpath={.spec.ports[0].nodePort} {.spec.allocateLoadBalancerNodePorts} {.spec.externalTrafficPolicy}",
    ]);
    assert_eq!(lb, "30087 true Cluster");
}

#[test]
fn state_file_survives_a_sigterm_restart() {
    if !have_kubectl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let server = Server::start(dir.path(), Some(&state));
    server.ok(&["apply", "-f", CRDS]);
    server.ok(&["apply", "-f", &fixture("blue-green.yaml")]);
    let before = server.ok(&[
        "get",
        "udn",
        "-A",
        "-o",
        "jsonpath={.items[*].metadata.uid}",
    ]);
    assert!(server.terminate(), "a clean exit on SIGTERM");
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("\"blue-network\""), "{saved}");

    let server = Server::start(dir.path(), Some(&state));
    let after = server.ok(&[
        "get",
        "udn",
        "-A",
        "-o",
        "jsonpath={.items[*].metadata.uid}",
    ]);
    assert_eq!(after, before, "same objects, same uids");
    let names = server.ok(&["get", "udn", "-A", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        [
            "userdefinednetwork.k8s.ovn.org/blue-network",
            "userdefinednetwork.k8s.ovn.org/green-network"
        ]
    );
    assert!(server.terminate());
}

#[test]
fn serve_refuses_non_loopback_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0", "--kubeconfig"])
        .arg(dir.path().join("kubeconfig"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0: udn-kube-sim has no authentication and serves loopback addresses only"),
        "{stderr}"
    );
    assert!(!dir.path().join("kubeconfig").exists());
}
