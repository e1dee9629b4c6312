//! Running the programs the lab drives (`ip`, `ovs-vsctl`, `ovn-nbctl`, ...), in the root
//! network namespace or in one of the lab's, with errors that name the step, the command line,
//! its stderr and, for a missing program, the Debian package that provides it.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};

use crate::error::LabError;

/// The Debian package that provides `program` (Debian 12).
pub(crate) fn package_of(program: &str) -> &'static str {
    match program {
        "ovsdb-server" | "ovsdb-tool" | "ovs-appctl" | "ovs-ofctl" => "openvswitch-common",
        "ovs-vsctl" | "ovs-vswitchd" => "openvswitch-switch",
        "ovn-northd" => "ovn-central",
        "ovn-controller" => "ovn-host",
        "ovn-nbctl" | "ovn-sbctl" | "ovn-appctl" => "ovn-common",
        "ip" | "bridge" => "iproute2",
        "ethtool" => "ethtool",
        "ping" => "iputils-ping",
        "nc" => "netcat-openbsd",
        "tcpdump" => "tcpdump",
        "nsenter" => "util-linux",
        "nft" => "nftables",
        _ => "unknown",
    }
}

/// Whether `program` is an executable file in a `PATH` directory.
pub(crate) fn on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Fails with [`LabError::MissingProgram`] for the first of `programs` that is not installed.
pub(crate) fn require(step: &str, programs: &[&str]) -> Result<(), LabError> {
    match programs.iter().find(|program| !on_path(program)) {
        Some(program) => Err(missing(step, program)),
        None => Ok(()),
    }
}

fn missing(step: &str, program: &str) -> LabError {
    LabError::MissingProgram {
        step: step.to_owned(),
        program: program.to_owned(),
        package: package_of(program),
    }
}

/// How a command enters a lab network namespace.
#[derive(Debug, Clone, Copy)]
enum Enter {
    /// `nsenter --net=/run/netns/NAME`: only the network namespace changes, so `/sys` (and the
    /// cgroup file system under it) stays the host's.
    Nsenter,
    /// `ip netns exec NAME`: also remounts `/sys` for the namespace, which daemons that read
    /// `/sys/class/net` (ovs-vswitchd) want.
    IpNetnsExec,
}

/// A command line to run, possibly inside a network namespace.
#[derive(Debug)]
pub(crate) struct Cmd {
    program: String,
    args: Vec<OsString>,
    env: Vec<(&'static str, PathBuf)>,
    netns: Option<(String, Enter)>,
    stdin: Option<Vec<u8>>,
}

/// What a finished command printed, and how it exited.
#[derive(Debug, Clone)]
pub struct ExecOutput {
    /// The exit status.
    pub status: ExitStatus,
    /// Standard output (lossy UTF-8).
    pub stdout: String,
    /// Standard error (lossy UTF-8).
    pub stderr: String,
}

impl ExecOutput {
    /// Whether the command exited with status 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

impl Cmd {
    pub(crate) fn new(program: &str) -> Self {
        Self {
            program: program.to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            netns: None,
            stdin: None,
        }
    }

    /// Runs in network namespace `netns` (through `nsenter`).
    pub(crate) fn netns(mut self, netns: &str) -> Self {
        self.netns = Some((netns.to_owned(), Enter::Nsenter));
        self
    }

    /// Runs in network namespace `netns` through `ip netns exec` (for daemons).
    pub(crate) fn netns_exec(mut self, netns: &str) -> Self {
        self.netns = Some((netns.to_owned(), Enter::IpNetnsExec));
        self
    }

    pub(crate) fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets `OVS_RUNDIR` and `OVN_RUNDIR` to `dir`: where ovs-vswitchd puts `<bridge>.mgmt`,
    /// ovn-controller its control socket, and where ovs-ofctl looks for them.
    pub(crate) fn rundir(mut self, dir: &Path) -> Self {
        self.env.push(("OVS_RUNDIR", dir.to_owned()));
        self.env.push(("OVN_RUNDIR", dir.to_owned()));
        self
    }

    pub(crate) fn stdin(mut self, data: Vec<u8>) -> Self {
        self.stdin = Some(data);
        self
    }

    /// The command line as a user would type it.
    pub(crate) fn line(&self) -> String {
        let mut line = String::new();
        if let Some((netns, enter)) = &self.netns {
            match enter {
                Enter::Nsenter => line.push_str(&format!("nsenter --net=/run/netns/{netns} ")),
                Enter::IpNetnsExec => line.push_str(&format!("ip netns exec {netns} ")),
            }
        }
        line.push_str(&self.program);
        for arg in &self.args {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }

    fn command(&self) -> Command {
        let mut command = match &self.netns {
            None => Command::new(&self.program),
            Some((netns, Enter::Nsenter)) => {
                let mut command = Command::new("nsenter");
                command
                    .arg(format!("--net=/run/netns/{netns}"))
                    .arg("--")
                    .arg(&self.program);
                command
            }
            Some((netns, Enter::IpNetnsExec)) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", netns, &self.program]);
                command
            }
        };
        command.args(&self.args);
        // The lab's tools always get explicit database and socket arguments.
        for var in [
            "OVN_NB_DAEMON",
            "OVN_NB_DB",
            "OVN_SB_DB",
            "OVS_RUNDIR",
            "OVN_RUNDIR",
        ] {
            command.env_remove(var);
        }
        for (var, value) in &self.env {
            command.env(var, value);
        }
        command
    }

    /// The error for a failed start: a missing program names its package.
    fn spawn_error(&self, step: &str, source: std::io::Error) -> LabError {
        let launcher = match self.netns {
            None => None,
            Some((_, Enter::Nsenter)) => Some("nsenter"),
            Some((_, Enter::IpNetnsExec)) => Some("ip"),
        };
        if let Some(program) = launcher
            .into_iter()
            .chain([self.program.as_str()])
            .find(|p| !on_path(p))
        {
            return missing(step, program);
        }
        LabError::Spawn {
            step: step.to_owned(),
            command: self.line(),
            source,
        }
    }

    /// Runs to completion; a non-zero exit is not an error.
    pub(crate) fn output(&self, step: &str) -> Result<ExecOutput, LabError> {
        let mut command = self.command();
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        command.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = command
            .spawn()
            .map_err(|source| self.spawn_error(step, source))?;
        if let (Some(data), Some(mut pipe)) = (&self.stdin, child.stdin.take()) {
            // The program may exit without reading everything; its status tells.
            let _ = pipe.write_all(data);
        }
        let output = child
            .wait_with_output()
            .map_err(|source| self.spawn_error(step, source))?;
        let output = to_exec_output(output);
        if output.status.code() == Some(127) && !on_path(&self.program) {
            return Err(missing(step, &self.program));
        }
        Ok(output)
    }

    /// Runs to completion and returns standard output; a non-zero exit is an error.
    pub(crate) fn run(&self, step: &str) -> Result<String, LabError> {
        let output = self.output(step)?;
        if output.success() {
            Ok(output.stdout)
        } else {
            Err(LabError::Command {
                step: step.to_owned(),
                command: self.line(),
                status: output.status.to_string(),
                stderr: output.stderr.trim().to_owned(),
            })
        }
    }

    /// Starts the command with piped stdout and stderr and a null stdin.
    pub(crate) fn spawn(&self, step: &str) -> Result<Child, LabError> {
        let mut command = self.command();
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
            .spawn()
            .map_err(|source| self.spawn_error(step, source))
    }
}

fn to_exec_output(output: Output) -> ExecOutput {
    ExecOutput {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_programs_name_their_package() {
        assert_eq!(package_of("ovn-controller"), "ovn-host");
        assert_eq!(package_of("ovs-vswitchd"), "openvswitch-switch");
        assert_eq!(package_of("nc"), "netcat-openbsd");
        let error = require("test", &["sh", "no-such-program-here"]).unwrap_err();
        assert!(
            matches!(error, LabError::MissingProgram { .. }),
            "{error:?}"
        );
        require("test", &["sh"]).unwrap();
    }

    #[test]
    fn command_lines_show_the_namespace() {
        let cmd = Cmd::new("ping").netns("ns1").args(["-c", "1"]);
        assert_eq!(cmd.line(), "nsenter --net=/run/netns/ns1 ping -c 1");
        let cmd = Cmd::new("ovs-vswitchd").netns_exec("ns1");
        assert_eq!(cmd.line(), "ip netns exec ns1 ovs-vswitchd");
    }
}
