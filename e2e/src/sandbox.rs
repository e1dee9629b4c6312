//! One sandbox for a test binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use udn_test_support::workspace_binary;

/// How long a scenario waits for anything to converge.
pub const WAIT: Duration = Duration::from_secs(120);

/// A running sandbox.
pub struct Sandbox {
    /// Its directory.
    pub dir: PathBuf,
    /// `udnctl`.
    pub udnctl: PathBuf,
    /// Its kubeconfig.
    pub kubeconfig: PathBuf,
    /// A client.
    pub client: kube::Client,
    /// The runtime the client's futures run on.
    pub runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Every binary the sandbox runs, built with this test's profile; their directory.
pub fn build_binaries() -> PathBuf {
    let mut dir = None;
    for (package, binary) in [
        ("udn-kube-sim", "udn-kube-sim"),
        ("udn-cluster-manager", "udn-cluster-manager"),
        ("udn-controller", "udn-controller"),
        ("udn-node", "udn-node"),
        ("udn-cni", "ovn-k8s-cni-overlay"),
        ("udnctl", "udnctl"),
    ] {
        let path = workspace_binary(package, binary);
        dir = path.parent().map(Path::to_path_buf);
    }
    dir.expect("a binary directory")
}

impl Sandbox {
    /// `udnctl sandbox up --nodes <nodes>` in `/tmp/udn-e2e-<name>` (a fixed directory, so
    /// the leftovers of a killed run are cleaned up by the next `up`).
    pub fn up(name: &str, nodes: usize) -> Self {
        Self::up_with(name, nodes, &[])
    }

    /// [`Sandbox::up`] with more `udnctl sandbox up` flags (e.g. Dynamic UDN's).
    pub fn up_with(name: &str, nodes: usize, up_flags: &[&str]) -> Self {
        let bin_dir = build_binaries();
        let udnctl = bin_dir.join("udnctl");
        let dir = std::env::temp_dir().join(format!("udn-e2e-{name}"));
        let out = Command::new(&udnctl)
            .args(["sandbox", "up", "--no-install", "--nodes"])
            .arg(nodes.to_string())
            .arg("--dir")
            .arg(&dir)
            .arg("--bin-dir")
            .arg(&bin_dir)
            .args(up_flags)
            .output()
            .expect("running udnctl sandbox up");
        assert!(
            out.status.success(),
            "udnctl sandbox up: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let kubeconfig = dir.join("kubeconfig");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let client = runtime.block_on(udn_test_support::stack::client_for(&kubeconfig));
        Self {
            dir,
            udnctl,
            kubeconfig,
            client,
            runtime,
        }
    }

    /// `udnctl sandbox <args>` on this sandbox.
    pub fn udnctl(&self, args: &[&str]) -> Output {
        let (sub, rest) = args.split_first().expect("a subcommand");
        Command::new(&self.udnctl)
            .args(["sandbox", sub, "--dir"])
            .arg(&self.dir)
            .args(rest)
            .output()
            .expect("running udnctl")
    }

    /// `kubectl <args>` with the sandbox's kubeconfig, as it ended.
    pub fn kubectl_output(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .env("KUBECONFIG", &self.kubeconfig)
            .args(args)
            .output()
            .expect("running kubectl")
    }

    /// `kubectl <args>` with the sandbox's kubeconfig; panics when it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args);
        assert!(
            out.status.success(),
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply -f -` of `yaml`.
    pub fn apply(&self, yaml: &str) {
        use std::io::Write as _;
        let mut child = Command::new("kubectl")
            .env("KUBECONFIG", &self.kubeconfig)
            .args(["apply", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("running kubectl apply");
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(yaml.as_bytes())
            .expect("writing the YAML");
        let out = child.wait_with_output().expect("kubectl apply");
        assert!(
            out.status.success(),
            "kubectl apply: {}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `command` in pod `namespace/pod`'s netns (`udnctl sandbox exec`).
    pub fn exec(&self, namespace: &str, pod: &str, command: &[&str]) -> Output {
        let mut args = vec!["exec", pod, "-n", namespace, "--"];
        args.extend_from_slice(command);
        self.udnctl(&args)
    }

    /// Whether an HTTP GET of `url` from pod `namespace/pod` answers within `timeout_s`;
    /// the body when it does.
    pub fn http_get(
        &self,
        namespace: &str,
        pod: &str,
        url: &str,
        timeout_s: u32,
    ) -> Option<String> {
        let timeout = timeout_s.to_string();
        let out = self.exec(
            namespace,
            pod,
            &["curl", "-sS", "--max-time", &timeout, url],
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The last lines of every component's log, for failure messages.
    pub fn logs(&self) -> String {
        let out = self.udnctl(&["status"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls `check` every 200 ms until it gives `Some`, up to [`WAIT`].
    pub fn eventually<T>(
        &self,
        what: &str,
        mut check: impl FnMut() -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(found) = check() {
                return Ok(found);
            }
            if Instant::now() > deadline {
                return Err(format!("{what}: not so after {WAIT:?}\n{}", self.logs()));
            }
            std::thread::park_timeout(Duration::from_millis(200));
        }
    }

    /// The sandbox's state file as JSON.
    pub fn state(&self) -> serde_json::Value {
        let path = self.dir.join("state.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        serde_json::from_str(&text).expect("the state file is JSON")
    }

    /// Runs `command` in node `node`'s host network namespace, as a process of the node that
    /// is not the kubelet (this test's own cgroup).
    pub fn node_exec(&self, node: &str, command: &[&str]) -> Output {
        let state = self.state();
        let netns = state["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| n["name"] == node)
            .and_then(|n| n["netns"].as_str())
            .unwrap_or_else(|| panic!("no node {node} in the sandbox"))
            .to_owned();
        Command::new("nsenter")
            .arg(format!("--net=/run/netns/{netns}"))
            .arg("--")
            .args(command)
            .output()
            .expect("running nsenter")
    }

    /// Runs `command` in the lab's external host (a netns on the underlay, outside the
    /// cluster).
    pub fn external_command(&self, command: &[&str]) -> Command {
        let prefix = self.state()["prefix"]
            .as_str()
            .expect("the state names its prefix")
            .to_owned();
        let mut nsenter = Command::new("nsenter");
        nsenter
            .arg(format!("--net=/run/netns/{prefix}-ext"))
            .arg("--")
            .args(command);
        nsenter
    }

    /// Stops component `name` (as `status` names it) without starting it again: a crash.
    pub fn kill_component(&self, name: &str) -> Result<(), String> {
        let state = self.state();
        let daemon = state["daemons"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["name"] == name)
            .ok_or_else(|| format!("no component {name} in the sandbox"))?;
        let pid = daemon["pid"].as_u64().unwrap_or(0);
        let start = daemon["startTime"].as_u64().unwrap_or(0);
        let out = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .output()
            .expect("running kill");
        if !out.status.success() {
            return Err(format!(
                "kill {pid} ({name}): {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        self.eventually(&format!("{name} (pid {pid}) gone"), || {
            (!crate::leftovers::process_running(pid, start)).then_some(())
        })
    }

    /// `udnctl sandbox restart <name>`.
    pub fn restart_component(&self, name: &str) -> Result<(), String> {
        let out = self.udnctl(&["restart", name]);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "udnctl sandbox restart {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// `ovs-vsctl <args>` on node `node`'s OVS database: its output, or the error.
    pub fn vsctl(&self, node: &str, args: &[&str]) -> Result<String, String> {
        let state = self.state();
        let remote = state["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| n["name"] == node)
            .and_then(|n| n["ovsRemote"].as_str())
            .ok_or_else(|| format!("no node {node} in the sandbox"))?
            .to_owned();
        let out = Command::new("ovs-vsctl")
            .arg(format!("--db={remote}"))
            .args(args)
            .output()
            .map_err(|e| format!("running ovs-vsctl: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "ovs-vsctl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// `udnctl sandbox nbctl <node> -- <args>`: its output, or the error.
    pub fn nbctl(&self, node: &str, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["nbctl", node, "--"];
        all.extend_from_slice(args);
        let out = self.udnctl(&all);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "ovn-nbctl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Copies the sandbox's logs (components and the lab's OVN daemons) to
    /// `<tmp>/<dir name>-logs` before `down` removes them, and says where.
    pub fn keep_logs(&self) {
        let name = self
            .dir
            .file_name()
            .map_or_else(|| "udn-e2e".into(), |n| n.to_string_lossy().into_owned());
        let kept = self.dir.with_file_name(format!("{name}-logs"));
        let _ = std::fs::remove_dir_all(&kept);
        // The logs only: the directory also holds sockets, which cp cannot copy.
        let copied = std::fs::create_dir_all(&kept).is_ok()
            && Command::new("sh")
                .arg("-c")
                .arg(r#"cd "$1" && find . -name '*.log' -exec cp --parents {} "$2" \;"#)
                .arg("sh")
                .arg(&self.dir)
                .arg(&kept)
                .status()
                .is_ok_and(|s| s.success());
        if copied {
            eprintln!("the sandbox's logs are kept in {}", kept.display());
        }
    }

    /// `udnctl sandbox down`; panics when it fails.
    pub fn down(&self) {
        let out = self.udnctl(&["down"]);
        assert!(
            out.status.success(),
            "udnctl sandbox down: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A scenario: a name and its check (an `Err` fails it).
pub type Scenario = (&'static str, fn(&Sandbox) -> Result<(), String>);

/// Brings a sandbox up as `name` with `nodes` nodes, runs `setup` and then `scenarios` (in
/// order, one after the other: they share the sandbox), takes it down, and exits with the
/// harness's verdict. A failed setup fails every scenario with its message.
pub fn run_suite(
    name: &str,
    nodes: usize,
    setup: fn(&Sandbox) -> Result<(), String>,
    scenarios: &[Scenario],
) -> std::process::ExitCode {
    run_suite_with(name, nodes, &[], setup, scenarios)
}

/// [`run_suite`] on a sandbox brought up with more `udnctl sandbox up` flags.
pub fn run_suite_with(
    name: &str,
    nodes: usize,
    up_flags: &[&str],
    setup: fn(&Sandbox) -> Result<(), String>,
    scenarios: &[Scenario],
) -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    // Listing the tests must not start anything.
    if args.list {
        let trials = scenarios
            .iter()
            .map(|(name, _)| libtest_mimic::Trial::test(*name, || Ok(())))
            .collect();
        return libtest_mimic::run(&args, trials).exit_code();
    }
    let sandbox = std::sync::Arc::new(Sandbox::up_with(name, nodes, up_flags));
    let setup = std::sync::Arc::new(setup(&sandbox));
    let trials = scenarios
        .iter()
        .map(|(name, scenario)| {
            let sandbox = std::sync::Arc::clone(&sandbox);
            let setup = std::sync::Arc::clone(&setup);
            let scenario = *scenario;
            libtest_mimic::Trial::test(*name, move || {
                if let Err(error) = setup.as_ref() {
                    return Err(format!("setup failed: {error}").into());
                }
                scenario(&sandbox).map_err(Into::into)
            })
        })
        .collect();
    let mut args = args;
    // One sandbox: the scenarios run one at a time.
    args.test_threads = Some(1);
    let conclusion = libtest_mimic::run(&args, trials);
    let forbidden = crate::audit::forbidden_lines(&sandbox.dir);
    for line in &forbidden {
        eprintln!("forbidden log line: {line}");
    }
    let failed = conclusion.has_failed() || !forbidden.is_empty();
    if failed {
        sandbox.keep_logs();
    }
    sandbox.down();
    if forbidden.is_empty() {
        conclusion.exit_code()
    } else {
        eprintln!(
            "{} forbidden log lines: the suite fails even though its scenarios passed",
            forbidden.len()
        );
        std::process::ExitCode::FAILURE
    }
}
