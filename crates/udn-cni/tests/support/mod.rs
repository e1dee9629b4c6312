//! Test support: a fake CNI server on a unix socket in a private tempdir, and a runner
//! that executes the real plugin binary the way kubelet's runtime does.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// One request the fake server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub request_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn path(&self) -> &str {
        self.request_line.split(' ').nth(1).unwrap_or_default()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A fake server: answers `POST /` with canned raw bytes (then closes the connection),
/// `POST /metrics` with an empty 200, and records every request before answering it.
pub struct FakeServer {
    dir: tempfile::TempDir,
    socket: PathBuf,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

pub const METRICS_OK: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n";

impl FakeServer {
    /// Starts a server answering `POST /` with `answer`.
    pub fn start(answer: Vec<u8>) -> FakeServer {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("ovn-cni-server.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (recorded, stop) = (recorded.clone(), stop.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    serve(stream, &answer, &recorded);
                }
            })
        };
        FakeServer {
            dir,
            socket,
            recorded,
            stop,
            thread: Some(thread),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// A path in this server's private directory (for log files and such).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: UnixStream, answer: &[u8], recorded: &Mutex<Vec<Recorded>>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let reply = if request.path() == "/metrics" {
        METRICS_OK
    } else {
        answer
    };
    recorded.lock().unwrap().push(request);
    let mut stream = stream;
    let _ = stream.write_all(reply);
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn read_request(stream: &UnixStream) -> Option<Recorded> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    if request_line.is_empty() {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body,
    })
}

/// A raw HTTP answer with `Content-Length`.
pub fn http(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A raw HTTP answer with a chunked body, split into `chunk`-byte pieces.
pub fn http_chunked(status: &str, body: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for piece in body.chunks(chunk) {
        out.extend(format!("{:x}\r\n", piece.len()).into_bytes());
        out.extend_from_slice(piece);
        out.extend(b"\r\n");
    }
    out.extend(b"0\r\n\r\n");
    out
}

/// What one plugin execution produced.
#[derive(Debug)]
pub struct PluginRun {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

impl PluginRun {
    /// The CNI error printed on stdout (asserts exit code 1).
    pub fn error(&self) -> serde_json::Value {
        assert_eq!(
            self.code,
            Some(1),
            "stdout: {} stderr: {}",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }

    pub fn assert_success(&self) {
        assert_eq!(
            self.code,
            Some(0),
            "stdout: {} stderr: {}",
            self.stdout,
            self.stderr
        );
    }
}

/// Runs the built plugin with exactly `env` (a clean environment) and `stdin`, as a
/// runtime does, and waits (at most a minute) for it to exit.
pub fn run_plugin(env: &BTreeMap<String, String>, stdin: &[u8]) -> PluginRun {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ovn-k8s-cni-overlay"))
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    // A plugin that never reads stdin (VERSION) must not block the test on a full pipe.
    let writer = thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    let err_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    // Wait on the exit in a thread so a hung plugin fails the test instead of hanging it.
    let pid = child.id();
    let (done, exited) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = match exited.recv_timeout(Duration::from_secs(60)) {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("plugin did not exit within a minute");
        }
    };
    let _ = writer.join();
    PluginRun {
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
        code: status.code(),
    }
}

/// Kubelet's environment for `command` of pod `ns/p`, talking to `socket`.
pub fn kubelet_env(command: &str, socket: &Path) -> BTreeMap<String, String> {
    [
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", "3f1b2c4d5e6f7a8b9c0d"),
        ("CNI_NETNS", "/var/run/netns/cni-5c1f0c9e"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=3f1b2c4d5e6f7a8b9c0d;K8S_POD_UID=0f3c2b1a-1111-2222-3333-444455556666"),
        ("CNI_PATH", "/opt/cni/bin"),
        ("UDN_CNI_SERVER_SOCKET", socket.to_str().unwrap()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The default-network config kubelet passes (upstream's 10-ovn-kubernetes.conf) in
/// `version`.
pub fn default_conf(version: &str) -> String {
    format!(
        r#"{{"cniVersion":"{version}","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{{}},"dns":{{}},"logLevel":"4","logfile-maxsize":100,"logfile-maxbackups":5,"logfile-maxage":5,"runtimeConfig":{{}}}}"#
    )
}
