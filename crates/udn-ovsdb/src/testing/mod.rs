//! A private `ovsdb-server` per test: a temp dir, a fresh database from a schema, a unix socket
//! (and optionally a TCP listener on an ephemeral port), no fixed ports and no sleeps.
//!
//! `ovsdb-server --detach` returns only once the daemon listens, so the server is ready when
//! [`OvsdbServer::start`] returns. The daemon holds a POSIX lock on its pidfile for its whole
//! life; [`OvsdbServer::kill`] sends SIGKILL and then waits for that lock, so it returns once
//! the process has released its memory and files (a daemon that nobody reaps stays a zombie).
//!
//! Needs `ovsdb-tool`, `ovsdb-server`, `ovs-appctl` and, for [`OvsdbServer::nbctl`] and
//! [`OvsdbServer::sbctl`], `ovn-nbctl` and `ovn-sbctl` on `PATH` (Debian: `ovn-central`);
//! [`OvsdbServer::vsctl`] needs `ovs-vsctl` (Debian: `openvswitch-switch`).

mod sample;

pub use sample::sample_network;

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rustix::fs::{FlockOperation, fcntl_lock};
use rustix::process::{Pid, Signal, kill_process};
use serde_json::json;

use crate::client::Endpoint;
use crate::{nb, sb, vswitch};

/// A vendored database a server can be started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendored {
    /// `OVN_Northbound` ([`crate::nb`]).
    Nb,
    /// `OVN_Southbound` ([`crate::sb`]).
    Sb,
    /// `Open_vSwitch` ([`crate::vswitch`]).
    Vswitch,
}

impl Vendored {
    /// The vendored schema text.
    pub fn schema_json(self) -> &'static str {
        match self {
            Self::Nb => nb::SCHEMA_JSON,
            Self::Sb => sb::SCHEMA_JSON,
            Self::Vswitch => vswitch::SCHEMA_JSON,
        }
    }

    /// The database name.
    pub fn database(self) -> &'static str {
        match self {
            Self::Nb => nb::DATABASE,
            Self::Sb => sb::DATABASE,
            Self::Vswitch => vswitch::DATABASE,
        }
    }
}

/// A harness step that failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A program could not be started.
    #[error("cannot run {program} (is it installed? Debian: ovn-central)")]
    Spawn {
        /// The program.
        program: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A program exited unsuccessfully.
    #[error("{command} failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard error.
        stderr: String,
    },
    /// A file in the server's directory could not be used.
    #[error("cannot {action} {path}")]
    File {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The pidfile does not hold a process id.
    #[error("pidfile {path} holds {content:?}, not a process id")]
    Pidfile {
        /// The pidfile.
        path: PathBuf,
        /// Its content.
        content: String,
    },
    /// The server's log does not say which TCP port it listens on.
    #[error("ovsdb-server log {path} names no TCP listening port")]
    NoTcpPort {
        /// The log file.
        path: PathBuf,
    },
    /// The server process could not be signalled or its status read.
    #[error("cannot {action} ovsdb-server process {pid}")]
    Process {
        /// What was being done.
        action: &'static str,
        /// The process id.
        pid: u32,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// A private `ovsdb-server` serving one database from a temp dir.
#[derive(Debug)]
pub struct OvsdbServer {
    dir: tempfile::TempDir,
    db: PathBuf,
    socket: PathBuf,
    ctl: PathBuf,
    pidfile: PathBuf,
    log: PathBuf,
    pid: Option<u32>,
    /// Whether the server listens on TCP as configured in the database's `Connection` table.
    tcp: bool,
    tcp_port: Option<u16>,
}

fn run(program: &str, args: &[&str]) -> Result<Output, HarnessError> {
    let output = Command::new(program)
        .args(args)
        .env_remove("OVN_NB_DAEMON")
        .env_remove("OVN_SB_DAEMON")
        .output()
        .map_err(|source| HarnessError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(HarnessError::Failed {
            command: format!("{program} {}", args.join(" ")),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

fn temp_dir() -> Result<tempfile::TempDir, HarnessError> {
    tempfile::Builder::new()
        .prefix("udn-ovsdb-")
        .tempdir()
        .map_err(|source| HarnessError::File {
            action: "create a temp dir in",
            path: std::env::temp_dir(),
            source,
        })
}

fn write_file(path: &Path, content: &str) -> Result<(), HarnessError> {
    std::fs::write(path, content).map_err(|source| HarnessError::File {
        action: "write",
        path: path.to_owned(),
        source,
    })
}

fn path_str(path: &Path) -> String {
    path.display().to_string()
}

impl OvsdbServer {
    /// Starts a server with a fresh database created from the schema file `schema`.
    pub fn start(schema: &Path) -> Result<Self, HarnessError> {
        let mut server = Self::create(schema)?;
        server.launch()?;
        Ok(server)
    }

    /// Starts a server with a fresh, empty database from the vendored Northbound schema.
    pub fn start_nb() -> Result<Self, HarnessError> {
        Self::start_vendored(Vendored::Nb)
    }

    /// Starts a server with a fresh, empty database from the vendored Southbound schema.
    pub fn start_sb() -> Result<Self, HarnessError> {
        Self::start_vendored(Vendored::Sb)
    }

    /// Starts a server with a fresh database from the vendored Open vSwitch schema, holding
    /// the one `Open_vSwitch` row (empty) that `ovs-vsctl init` creates on a host, so that
    /// `ovs-vsctl` and writers of that row find it as on a node.
    pub fn start_vswitch() -> Result<Self, HarnessError> {
        let mut server = Self::create_from_text(vswitch::SCHEMA_JSON)?;
        let txn = json!([vswitch::DATABASE,
            {"op": "insert", "table": vswitch::open_vswitch::TABLE, "row": {}}]);
        run(
            "ovsdb-tool",
            &["transact", &path_str(&server.db), &txn.to_string()],
        )?;
        server.launch()?;
        Ok(server)
    }

    /// Starts a server with a fresh, empty database from a vendored schema.
    pub fn start_vendored(database: Vendored) -> Result<Self, HarnessError> {
        Self::start_schema_text(database.schema_json())
    }

    /// Starts a server with a fresh database from schema text (e.g. a modified schema).
    pub fn start_schema_text(schema: &str) -> Result<Self, HarnessError> {
        let mut server = Self::create_from_text(schema)?;
        server.launch()?;
        Ok(server)
    }

    /// Starts a Northbound server on a single-server clustered (raft) database, which keeps
    /// transaction ids: `monitor_cond_since` can then resume after a reconnect, even across a
    /// restart.
    pub fn start_nb_clustered() -> Result<Self, HarnessError> {
        let dir = temp_dir()?;
        let schema = dir.path().join("schema.ovsschema");
        write_file(&schema, nb::SCHEMA_JSON)?;
        let mut server = Self::in_dir(dir);
        let raft = format!("unix:{}", path_str(&server.dir.path().join("raft.sock")));
        run(
            "ovsdb-tool",
            &[
                "create-cluster",
                &path_str(&server.db),
                &path_str(&schema),
                &raft,
            ],
        )?;
        server.launch()?;
        Ok(server)
    }

    /// Starts a Northbound server that also listens on TCP (127.0.0.1, an ephemeral port), with
    /// the server's inactivity probe on that connection set to `inactivity_probe` (at least
    /// 1 s, the server's minimum). The listener is configured through the database's
    /// `NB_Global.connections`, as in OVN deployments.
    pub fn start_nb_tcp(inactivity_probe: Duration) -> Result<Self, HarnessError> {
        let mut server = Self::create_from_text(nb::SCHEMA_JSON)?;
        let probe_ms = u64::try_from(inactivity_probe.as_millis()).unwrap_or(u64::MAX);
        let txn = json!([nb::DATABASE,
            {"op": "insert", "table": "Connection", "uuid-name": "tcp",
             "row": {"target": "ptcp:0:127.0.0.1", "inactivity_probe": probe_ms}},
            {"op": "insert", "table": "NB_Global", "row": {"connections": ["named-uuid", "tcp"]}}]);
        run(
            "ovsdb-tool",
            &["transact", &path_str(&server.db), &txn.to_string()],
        )?;
        server.tcp = true;
        server.launch()?;
        Ok(server)
    }

    fn create_from_text(schema: &str) -> Result<Self, HarnessError> {
        let dir = temp_dir()?;
        let path = dir.path().join("schema.ovsschema");
        write_file(&path, schema)?;
        Self::create_in(dir, &path)
    }

    fn create(schema: &Path) -> Result<Self, HarnessError> {
        Self::create_in(temp_dir()?, schema)
    }

    fn in_dir(dir: tempfile::TempDir) -> Self {
        let at = |name: &str| dir.path().join(name);
        Self {
            db: at("db"),
            socket: at("db.sock"),
            ctl: at("ctl"),
            pidfile: at("pid"),
            log: at("log"),
            pid: None,
            tcp: false,
            tcp_port: None,
            dir,
        }
    }

    fn create_in(dir: tempfile::TempDir, schema: &Path) -> Result<Self, HarnessError> {
        let server = Self::in_dir(dir);
        run(
            "ovsdb-tool",
            &["create", &path_str(&server.db), &path_str(schema)],
        )?;
        Ok(server)
    }

    /// Runs the daemon; returns once it listens.
    fn launch(&mut self) -> Result<(), HarnessError> {
        let mut args = vec![
            format!("--remote=punix:{}", path_str(&self.socket)),
            format!("--unixctl={}", path_str(&self.ctl)),
            format!("--pidfile={}", path_str(&self.pidfile)),
            format!("--log-file={}", path_str(&self.log)),
            "--detach".to_owned(),
            "--no-chdir".to_owned(),
        ];
        if self.tcp {
            args.push(format!(
                "--remote=db:{},NB_Global,connections",
                nb::DATABASE
            ));
        }
        args.push(path_str(&self.db));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run("ovsdb-server", &args)?;
        self.pid = Some(self.read_pid()?);
        if self.tcp {
            self.tcp_port = Some(self.listening_port()?);
        }
        Ok(())
    }

    fn read_pid(&self) -> Result<u32, HarnessError> {
        let content =
            std::fs::read_to_string(&self.pidfile).map_err(|source| HarnessError::File {
                action: "read",
                path: self.pidfile.clone(),
                source,
            })?;
        content.trim().parse().map_err(|_| HarnessError::Pidfile {
            path: self.pidfile.clone(),
            content,
        })
    }

    /// The port of the latest "listening on port N" line of the log (written before the
    /// daemon detaches).
    fn listening_port(&self) -> Result<u16, HarnessError> {
        let log = self.log_text()?;
        log.lines()
            .rev()
            .find_map(|line| {
                line.rsplit_once("listening on port ")?
                    .1
                    .trim()
                    .parse()
                    .ok()
            })
            .ok_or_else(|| HarnessError::NoTcpPort {
                path: self.log.clone(),
            })
    }

    /// The server's log so far.
    pub fn log_text(&self) -> Result<String, HarnessError> {
        std::fs::read_to_string(&self.log).map_err(|source| HarnessError::File {
            action: "read",
            path: self.log.clone(),
            source,
        })
    }

    /// The unix socket endpoint.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::Unix(self.socket.clone())
    }

    /// The TCP endpoint, for servers started with [`OvsdbServer::start_nb_tcp`]. The port may
    /// change across [`OvsdbServer::restart`].
    pub fn tcp_endpoint(&self) -> Option<Endpoint> {
        self.tcp_port
            .map(|port| Endpoint::Tcp(format!("127.0.0.1:{port}")))
    }

    /// The unix socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The server's temp dir.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The daemon's process id (0 when killed).
    pub fn pid(&self) -> u32 {
        self.pid.unwrap_or(0)
    }

    /// Whether the daemon is running: its process exists, is not a zombie (nobody may reap it)
    /// and still has its memory (a process that is exiting releases its memory before its
    /// files, so once [`OvsdbServer::kill`] has seen the pidfile lock go this is false).
    pub fn is_running(&self) -> bool {
        self.pid.is_some_and(process_alive)
    }

    /// Kills the daemon with SIGKILL and returns once it is dead. The database file and socket
    /// path stay for [`OvsdbServer::restart`].
    pub fn kill(&mut self) -> Result<(), HarnessError> {
        let Some(pid) = self.pid.take() else {
            return Ok(());
        };
        let process = |action, source| HarnessError::Process {
            action,
            pid,
            source,
        };
        let pidfile = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.pidfile)
            .map_err(|source| HarnessError::File {
                action: "open",
                path: self.pidfile.clone(),
                source,
            })?;
        let raw = i32::try_from(pid).ok().and_then(Pid::from_raw);
        if let Some(target) = raw {
            match kill_process(target, Signal::KILL) {
                Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                Err(errno) => return Err(process("signal", errno.into())),
            }
        }
        // The daemon's lock on its pidfile goes when it exits: taking it waits for that.
        wait_for_lock(&pidfile).map_err(|source| process("wait for the exit of", source))?;
        // Its lock on the database (`.<db>.~lock~`) goes in the same exit, but the kernel may
        // release it a moment after the pidfile's: wait for it too, or a restart right away
        // can fail with "failed to lock lockfile".
        let db_lock = self.db.with_file_name(format!(
            ".{}.~lock~",
            self.db
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        if let Ok(lock) = OpenOptions::new().read(true).write(true).open(&db_lock) {
            wait_for_lock(&lock)
                .map_err(|source| process("wait for the database lock of", source))?;
        }
        Ok(())
    }

    /// Starts the daemon again on the same database file and socket path (after
    /// [`OvsdbServer::kill`]; kills it first if it is still running).
    pub fn restart(&mut self) -> Result<(), HarnessError> {
        self.kill()?;
        self.launch()
    }

    /// The daemon's resident set size in KiB (`VmRSS`).
    pub fn rss_kib(&self) -> Result<u64, HarnessError> {
        let pid = self.pid();
        let path = PathBuf::from(format!("/proc/{pid}/status"));
        let status = std::fs::read_to_string(&path).map_err(|source| HarnessError::File {
            action: "read",
            path: path.clone(),
            source,
        })?;
        status
            .lines()
            .find_map(|line| {
                line.strip_prefix("VmRSS:")?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
            .ok_or_else(|| HarnessError::Process {
                action: "read VmRSS of",
                pid,
                source: std::io::ErrorKind::InvalidData.into(),
            })
    }

    /// Runs `ovn-nbctl --db=unix:<socket> --no-leader-only --timeout=10 <args>` and returns its
    /// standard output.
    pub fn nbctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        self.ctl("ovn-nbctl", &["--no-leader-only", "--timeout=10"], args)
    }

    /// Runs `ovn-sbctl --db=unix:<socket> --no-leader-only --timeout=10 <args>` (a server
    /// started with [`OvsdbServer::start_sb`]) and returns its standard output.
    pub fn sbctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        self.ctl("ovn-sbctl", &["--no-leader-only", "--timeout=10"], args)
    }

    /// Runs `ovs-vsctl --db=unix:<socket> --no-wait --timeout=10 <args>` (a server started
    /// with [`OvsdbServer::start_vswitch`]; `--no-wait`: no `ovs-vswitchd` applies the
    /// changes here) and returns its standard output.
    pub fn vsctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        self.ctl("ovs-vsctl", &["--no-wait", "--timeout=10"], args)
    }

    /// Runs a database client `program` on this server's socket.
    fn ctl(&self, program: &str, options: &[&str], args: &[&str]) -> Result<String, HarnessError> {
        let db = format!("--db=unix:{}", path_str(&self.socket));
        let mut all = vec![db.as_str()];
        all.extend_from_slice(options);
        all.extend_from_slice(args);
        let output = run(program, &all)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Runs `ovs-appctl -t <ctl> <args>` against the daemon and returns its standard output.
    pub fn appctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        let ctl = path_str(&self.ctl);
        let mut all = vec!["-t", ctl.as_str()];
        all.extend_from_slice(args);
        let output = run("ovs-appctl", &all)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// Whether process `pid` exists, is not a zombie and has an address space.
pub fn process_alive(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let zombie = status
        .lines()
        .any(|line| line.starts_with("State:") && line.contains('Z'));
    !zombie && status.lines().any(|line| line.starts_with("VmRSS:"))
}

fn wait_for_lock(file: &File) -> std::io::Result<()> {
    loop {
        match fcntl_lock(file, FlockOperation::LockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

impl Drop for OvsdbServer {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
