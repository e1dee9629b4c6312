//! Pods as kubelet's runtime makes them: a network namespace, and the real CNI plugin
//! executed with the runtime's environment and the node's config on stdin.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Stack;

/// The CNI config file every agent writes in its `--cni-conf-dir`.
pub const CNI_CONF_FILE: &str = "10-ovn-kubernetes.conf";

/// What the CNI plugin is called for.
#[derive(Debug, Clone)]
pub struct CniPod<'a> {
    /// `K8S_POD_NAMESPACE`.
    pub namespace: &'a str,
    /// `K8S_POD_NAME`.
    pub name: &'a str,
    /// `K8S_POD_UID`.
    pub uid: String,
    /// `CNI_CONTAINERID` and `K8S_POD_INFRA_CONTAINER_ID`.
    pub sandbox: &'a str,
    /// The pod's netns name (under /run/netns).
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: &'a str,
    /// Variables to set (`Some`) or remove (`None`).
    pub extra_env: Vec<(&'a str, Option<&'a str>)>,
}

/// One execution of the plugin.
#[derive(Debug)]
pub struct CniRun {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// What it printed on stdout (the result or a CNI error).
    pub stdout: String,
    /// Its log lines.
    pub stderr: String,
    /// From starting the process to reaping it.
    pub elapsed: Duration,
}

impl CniRun {
    /// Stdout as JSON; panics when it is none.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is no JSON ({e}): {:?} / {}",
                self.stdout, self.stderr
            )
        })
    }
}

impl Stack {
    /// A fresh pod netns (deleted with the stack).
    pub fn pod_netns(&mut self, name: &str) -> String {
        let netns = format!("{}-e2e-{name}", self.lab.prefix());
        let status = Command::new("ip")
            .args(["netns", "add", &netns])
            .status()
            .unwrap_or_else(|e| panic!("running ip netns add {netns}: {e}"));
        assert!(status.success(), "ip netns add {netns}: {status}");
        self.netns.push(netns.clone());
        netns
    }

    /// Executes the CNI plugin as kubelet does for `pod` on `node`, with `stdin` or else
    /// the node's CNI config.
    pub fn cni(&self, node: &str, command: &str, pod: &CniPod<'_>, stdin: Option<&str>) -> CniRun {
        let agent = self.agent(node);
        let conf = match stdin {
            Some(text) => text.to_owned(),
            None => {
                let path = agent.conf_dir.join(CNI_CONF_FILE);
                std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
            }
        };
        let mut env: BTreeMap<String, String> = BTreeMap::from([
            ("CNI_COMMAND".into(), command.into()),
            ("CNI_CONTAINERID".into(), pod.sandbox.into()),
            ("CNI_NETNS".into(), format!("/run/netns/{}", pod.netns)),
            ("CNI_IFNAME".into(), pod.ifname.into()),
            ("CNI_PATH".into(), "/opt/cni/bin".into()),
            (
                "CNI_ARGS".into(),
                format!(
                    "IgnoreUnknown=1;K8S_POD_NAMESPACE={};K8S_POD_NAME={};K8S_POD_INFRA_CONTAINER_ID={};K8S_POD_UID={}",
                    pod.namespace, pod.name, pod.sandbox, pod.uid
                ),
            ),
            ("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into()),
            (
                "UDN_CNI_SERVER_SOCKET".into(),
                agent.socket.display().to_string(),
            ),
        ]);
        for (key, value) in &pod.extra_env {
            match value {
                Some(value) => env.insert((*key).to_owned(), (*value).to_owned()),
                None => env.remove(*key),
            };
        }
        run_cni(&self.cni, &env, &conf)
    }
}

/// Runs the plugin binary with exactly `env` and `stdin`.
pub fn run_cni(binary: &Path, env: &BTreeMap<String, String>, stdin: &str) -> CniRun {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let mut input = child.stdin.take().expect("the plugin's stdin is piped");
    // Commands that do not read stdin (VERSION) may exit before it is written.
    if let Err(error) = input.write_all(stdin.as_bytes()) {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    drop(input);
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for {}: {e}", binary.display()));
    CniRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Runs `argv` inside netns `netns`.
pub fn in_netns(netns: &str, argv: &[&str]) -> std::process::Output {
    Command::new("nsenter")
        .arg(format!("--net=/run/netns/{netns}"))
        .arg("--")
        .args(argv)
        .output()
        .unwrap_or_else(|e| panic!("running {argv:?} in {netns}: {e}"))
}
