//! What the host isolation tests share: a throwaway "host" network namespace (where the
//! nft table goes) with a veth to a "pod" namespace holding the pod's default-network IPs,
//! a control IP that is never isolated, and TCP listeners; real cgroups under this host's
//! cgroup v2 root; probes run by real processes moved into a cgroup before they open a
//! socket; and a stand-in systemd (a D-Bus peer on a unix socket).
//!
//! Every name is unique per process and call, so copies of the tests run side by side;
//! everything is torn down on drop, also when a test panics.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

pub mod systemd;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use udn_node::isolation::CgroupFs;

/// A name no other test (in this or another process) uses.
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}{}-{}-{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        nanos & 0xffff
    )
}

/// Runs a command, panicking with its output when it fails.
pub fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    assert!(
        output.status.success(),
        "{program} {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Polls `check` until it holds or `within` passed.
pub fn wait_until(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        // Each check runs a process, which paces the loop.
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {within:?}"
        );
    }
}

/// A named network namespace, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn create(name: String) -> Self {
        run("ip", &["netns", "add", &name]);
        let netns = Self { name };
        netns.ip(&["link", "set", "lo", "up"]);
        netns
    }

    pub fn path(&self) -> String {
        format!("/run/netns/{}", self.name)
    }

    /// `ip -n NAME ...`.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// `nsenter --net=... program args` (the mount namespace, so /sys/fs/cgroup, stays).
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--net={}", self.path()))
            .arg(program)
            .args(args);
        command
    }

    /// `nft ...` in this namespace.
    pub fn nft(&self, args: &[&str]) -> String {
        let output = self.command("nft", args).output().unwrap();
        assert!(
            output.status.success(),
            "nft {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// A child process killed (and reaped) on drop.
#[derive(Debug)]
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The pod's default-network IPs, a control IP never put in a set, the ports listened on.
pub const POD_V4: &str = "10.77.0.2";
pub const CONTROL_V4: &str = "10.77.0.3";
pub const POD_V6: &str = "fd00:77::2";
pub const CONTROL_V6: &str = "fd00:77::3";
/// A port the pod does not open, and one it does.
pub const CLOSED_PORT: u16 = 8080;
pub const OPEN_PORT: u16 = 8081;

/// The host and pod namespaces, joined by a veth, with listeners in the pod.
#[derive(Debug)]
pub struct PodNet {
    // Listeners first: they go before their namespace.
    _listeners: Vec<Process>,
    pub pod: Netns,
    pub host: Netns,
}

impl PodNet {
    pub fn start() -> Self {
        let base = unique("udniso");
        let host = Netns::create(format!("{base}-h"));
        let pod = Netns::create(format!("{base}-p"));
        host.ip(&[
            "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", &pod.name,
        ]);
        host.ip(&["addr", "add", "10.77.0.1/24", "dev", "eth0"]);
        host.ip(&["addr", "add", "fd00:77::1/64", "dev", "eth0", "nodad"]);
        for ip in [POD_V4, CONTROL_V4] {
            pod.ip(&["addr", "add", &format!("{ip}/24"), "dev", "eth0"]);
        }
        for ip in [POD_V6, CONTROL_V6] {
            pod.ip(&["addr", "add", &format!("{ip}/64"), "dev", "eth0", "nodad"]);
        }
        pod.ip(&["link", "set", "eth0", "up"]);
        host.ip(&["link", "set", "eth0", "up"]);
        // The host's unicast neighbour probes to an isolated IPv6 address have no socket and
        // would be dropped; a permanent entry keeps IPv6 from depending on them.
        let pod_mac = link_mac(&pod, "eth0");
        for ip in [POD_V6, CONTROL_V6] {
            host.ip(&[
                "-6",
                "neigh",
                "replace",
                ip,
                "lladdr",
                &pod_mac,
                "dev",
                "eth0",
                "nud",
                "permanent",
            ]);
        }
        let mut listeners = Vec::new();
        for port in [CLOSED_PORT, OPEN_PORT] {
            for family in ["-4", "-6"] {
                let child = pod
                    .command("nc", &[family, "-lk", &port.to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                listeners.push(Process(child));
            }
        }
        let net = Self {
            _listeners: listeners,
            pod,
            host,
        };
        for ip in [POD_V4, POD_V6] {
            for port in [CLOSED_PORT, OPEN_PORT] {
                wait_until(
                    &format!("a listener on {ip} port {port}"),
                    Duration::from_secs(10),
                    || net.tcp_from(None, ip.parse().unwrap(), port),
                );
            }
        }
        net
    }

    fn spawn_probe(&self, cgroup: Option<&Path>, program: &str, args: &[&str]) -> Child {
        // The process joins the cgroup before it execs the prober, so the socket it opens
        // belongs to that cgroup.
        let join = match cgroup {
            Some(dir) => format!("echo $$ > '{}/cgroup.procs' && ", dir.display()),
            None => String::new(),
        };
        let script = format!("{join}exec nsenter --net={} \"$@\"", self.host.path());
        let mut argv = vec!["-c", script.as_str(), "probe", program];
        argv.extend_from_slice(args);
        Command::new("sh")
            .args(&argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// A TCP connection attempt from a process in `cgroup` (None: this process's) in the
    /// host namespace, given `seconds` to connect.
    pub fn spawn_tcp(&self, cgroup: Option<&Path>, ip: IpAddr, port: u16, seconds: u32) -> Child {
        self.spawn_probe(
            cgroup,
            "nc",
            &[
                "-z",
                "-w",
                &seconds.to_string(),
                &ip.to_string(),
                &port.to_string(),
            ],
        )
    }

    /// One ping from a process in `cgroup`, given `seconds` for the answer.
    pub fn spawn_ping(&self, cgroup: Option<&Path>, ip: IpAddr, seconds: u32) -> Child {
        self.spawn_probe(
            cgroup,
            "ping",
            &["-c", "1", "-W", &seconds.to_string(), "-q", &ip.to_string()],
        )
    }

    /// Whether a process in `cgroup` connects to `ip`:`port`.
    pub fn tcp_from(&self, cgroup: Option<&Path>, ip: IpAddr, port: u16) -> bool {
        succeeded(self.spawn_tcp(cgroup, ip, port, REACH_SECONDS))
    }

    /// Whether a process in `cgroup` gets an answer to a ping.
    pub fn ping_from(&self, cgroup: Option<&Path>, ip: IpAddr) -> bool {
        succeeded(self.spawn_ping(cgroup, ip, REACH_SECONDS))
    }
}

/// How long a probe that should get through is given (a veth answers in microseconds;
/// this is for a loaded machine).
pub const REACH_SECONDS: u32 = 5;
/// How long a probe that should be dropped is given before it counts as dropped (a dropped
/// SYN or echo request just times out).
pub const DROP_SECONDS: u32 = 1;

fn succeeded(mut child: Child) -> bool {
    child.wait().is_ok_and(|status| status.success())
}

/// Probes run at once (a dropped one costs its whole timeout), then checked together.
#[derive(Debug, Default)]
pub struct Probes {
    running: Vec<(String, bool, Process)>,
}

impl Probes {
    /// `what` must get through (`true`) or be dropped (`false`).
    pub fn tcp(
        &mut self,
        net: &PodNet,
        cgroup: Option<&Path>,
        ip: IpAddr,
        port: u16,
        through: bool,
    ) {
        let seconds = if through { REACH_SECONDS } else { DROP_SECONDS };
        let child = net.spawn_tcp(cgroup, ip, port, seconds);
        self.running.push((
            format!("tcp {ip}:{port} from {cgroup:?}"),
            through,
            Process(child),
        ));
    }

    pub fn ping(&mut self, net: &PodNet, cgroup: Option<&Path>, ip: IpAddr, through: bool) {
        let seconds = if through { REACH_SECONDS } else { DROP_SECONDS };
        let child = net.spawn_ping(cgroup, ip, seconds);
        self.running.push((
            format!("ping {ip} from {cgroup:?}"),
            through,
            Process(child),
        ));
    }

    /// Waits for every probe and asserts each got through or was dropped as expected.
    pub fn check(self) {
        let mut wrong = Vec::new();
        for (what, through, mut process) in self.running {
            let got = process.0.wait().is_ok_and(|status| status.success());
            if got != through {
                wrong.push(format!(
                    "{what}: expected {}",
                    if through { "through" } else { "dropped" }
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}

fn link_mac(netns: &Netns, link: &str) -> String {
    let text = netns.ip(&["-o", "link", "show", link]);
    text.split_whitespace()
        .skip_while(|word| *word != "link/ether")
        .nth(1)
        .unwrap_or_else(|| panic!("no MAC in {text}"))
        .to_owned()
}

/// Cgroups under a unique directory of this host's cgroup v2 root; processes in them are
/// killed and the directories removed on drop.
#[derive(Debug)]
pub struct TestCgroups {
    /// The unique directory.
    pub base: PathBuf,
    /// Its path as nft names it (relative to /sys/fs/cgroup: `unified/...` on a hybrid host).
    pub nft_base: String,
}

impl TestCgroups {
    pub fn create(dirs: &[&str]) -> Self {
        let fs = CgroupFs::system();
        let v2_root = fs.v2_root().expect("these tests need a cgroup v2 tree");
        let name = unique("udniso");
        let base = v2_root.join(&name);
        let relative = base
            .strip_prefix(&fs.root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let cgroups = Self {
            base,
            nft_base: relative,
        };
        for dir in dirs {
            std::fs::create_dir_all(cgroups.base.join(dir)).unwrap();
        }
        cgroups
    }

    pub fn dir(&self, relative: &str) -> PathBuf {
        self.base.join(relative)
    }

    pub fn nft_path(&self, relative: &str) -> String {
        format!("{}/{relative}", self.nft_base)
    }

    /// Removes `relative` and creates it again: the same path, a new cgroup id.
    pub fn recreate(&self, relative: &str) {
        let dir = self.dir(relative);
        remove_tree(&dir);
        std::fs::create_dir(&dir).unwrap();
    }
}

fn cgroup_dirs_deepest_first(dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    let mut index = 0;
    while index < dirs.len() {
        if let Ok(entries) = std::fs::read_dir(&dirs[index]) {
            dirs.extend(
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
        index += 1;
    }
    dirs.reverse();
    dirs
}

fn remove_tree(dir: &Path) {
    // cgroup.kill takes every process of the subtree (probes normally are gone already).
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    for dir in cgroup_dirs_deepest_first(dir) {
        let deadline = Instant::now() + Duration::from_secs(10);
        // A killed process leaves its cgroup as soon as it is reaped: moments.
        while std::fs::remove_dir(&dir).is_err() && dir.exists() && Instant::now() < deadline {
            std::thread::yield_now();
        }
    }
}

impl Drop for TestCgroups {
    fn drop(&mut self) {
        remove_tree(&self.base);
    }
}

/// How long the real tests may wait for a process's answer.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(10);
