//! One plugin invocation: environment and stdin in, the CNI answer (stdout bytes and
//! success) out. Mirrors upstream's shim on the CNI library's `skel`.
//!
//! | command | what happens | stdout on success |
//! |---|---|---|
//! | VERSION | answered here, stdin not read | the version answer |
//! | ADD | forwarded; metrics posted | the result in the config's `cniVersion` |
//! | DEL | forwarded; metrics posted | nothing |
//! | STATUS | forwarded; metrics posted | nothing |
//! | CHECK | forwarded (the node agent verifies the pod's interface and port); metrics posted | nothing |
//! | GC | forwarded (the node agent removes its attachments of the network that are not in `cni.dev/valid-attachments`); metrics posted | nothing |
//!
//! Upstream's shim answers CHECK and GC itself without asking its server (which implements
//! neither); udn's node agent implements both as the CNI spec describes, so they go to it.
//!
//! Failure codes, besides the CNI library's for environment (4), stdin (5), config (6, 7)
//! and version (1) problems:
//! - the server's own CNI errors are printed as they came;
//! - a plain-text server error is 999 with upstream's `CNI request failed with status 400: '…'`
//!   (999 is what upstream's plugin prints for every non-CNI error);
//! - no server (socket missing, nobody listening) or no answer in time: 11, try again
//!   later, since the node agent is restarting or not up yet and the runtime retries;
//!   for STATUS it is 50, plugin not available, which is exactly what STATUS asks;
//! - a broken exchange (connection cut, not HTTP): 5, I/O failure (50 for STATUS);
//! - a 200 answer that is not upstream's Response JSON: 6.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::time::Instant;

use udn_cni_protocol::{
    CniError, CniVersion, DeviceInfo, ErrorCode, Request, RequestMetrics, Response,
    SUPPORTED_VERSIONS, SpecVersion, VersionInfo, go_json,
};

use crate::client::{ForwardError, Server};
use crate::environment::{PluginCommand, command_from_env};
use crate::http::HttpError;
use crate::log::Logger;
use crate::netconf::StdinConfig;

/// What to print and how to exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Bytes for stdout.
    pub(crate) stdout: Vec<u8>,
    /// Exit 0 when true, 1 otherwise.
    pub(crate) success: bool,
}

impl Outcome {
    fn ok(stdout: Vec<u8>) -> Outcome {
        Outcome {
            stdout,
            success: true,
        }
    }

    /// A CNI error as the CNI library prints it (indented), in `version`.
    fn failed(err: CniError, version: CniVersion, log: &mut Logger<'_>) -> Outcome {
        log.error(&err.to_string());
        let err = if err.cni_version.is_some() {
            err
        } else {
            err.with_version(version.as_str())
        };
        Outcome {
            stdout: go_json::to_vec_indented(&err).unwrap_or_default(),
            success: false,
        }
    }
}

/// Runs one invocation. `env` is the whole process environment.
pub(crate) fn run(
    env: &BTreeMap<String, String>,
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> Outcome {
    let mut log = Logger::new(stderr);
    let command = match command_from_env(env) {
        Ok(command) => command,
        Err(err) => {
            if env.get("CNI_COMMAND").is_none_or(String::is_empty) {
                log.stderr_text(&about());
            }
            return Outcome::failed(err, CniVersion::CURRENT, &mut log);
        }
    };
    if command == PluginCommand::Version {
        return Outcome::ok(go_json::to_vec_line(&VersionInfo::ours()).unwrap_or_default());
    }
    let mut config = Vec::new();
    if let Err(err) = stdin.read_to_end(&mut config) {
        let err = CniError::new(ErrorCode::Io, format!("error reading from stdin: {err}"));
        return Outcome::failed(err, CniVersion::CURRENT, &mut log);
    }
    let conf = match StdinConfig::parse(&config).and_then(|conf| allowed(command, conf)) {
        Ok(conf) => conf,
        Err(err) => return Outcome::failed(err, CniVersion::CURRENT, &mut log),
    };
    if let Some(path) = conf.log_file() {
        log.open_file(path);
    }

    let server = Server::from_env(env);
    let started = Instant::now();
    let answer = match command {
        PluginCommand::Add => add(&server, env, config, &conf),
        PluginCommand::Del => del(&server, env, config, &conf),
        PluginCommand::Status => silent(&server, env, config, &conf, true),
        PluginCommand::Check | PluginCommand::Gc => silent(&server, env, config, &conf, false),
        PluginCommand::Version => Ok(Vec::new()),
    };
    server.post_metrics(&RequestMetrics {
        command: command.protocol(),
        elapsed_time: started.elapsed().as_secs_f64(),
        has_err: answer.is_err(),
    });
    match answer {
        Ok(stdout) => Outcome::ok(stdout),
        Err(err) => Outcome::failed(err, conf.version, &mut log),
    }
}

/// The CNI library's per-command version floors (CHECK since 0.4.0, STATUS and GC
/// since 1.1.0).
fn allowed(command: PluginCommand, conf: StdinConfig) -> Result<StdinConfig, CniError> {
    let (floor, name) = match command {
        PluginCommand::Check => (CniVersion::V0_4_0, "CHECK"),
        PluginCommand::Status => (CniVersion::V1_1_0, "STATUS"),
        PluginCommand::Gc => (CniVersion::V1_1_0, "GC"),
        _ => return Ok(conf),
    };
    if SpecVersion::from(conf.version).at_least(SpecVersion::from(floor)) {
        return Ok(conf);
    }
    Err(CniError::new(
        ErrorCode::IncompatibleVersion,
        format!("config version does not allow {name}"),
    )
    .with_version(conf.version.as_str()))
}

fn add(
    server: &Server,
    env: &BTreeMap<String, String>,
    config: Vec<u8>,
    conf: &StdinConfig,
) -> Result<Vec<u8>, CniError> {
    conf.check_ours()
        .map_err(|msg| invalid_config(format!("invalid stdin args {msg}")))?;
    let device_info = match conf.device_info_file() {
        Some(path) => read_device_info(path)?,
        None => DeviceInfo::default(),
    };
    let request = Request::new(env.clone(), config, device_info);
    let body = server
        .request(&request)
        .map_err(|err| forward_error(err, server, false))?;
    let result = parse_response(&body)?.result.ok_or_else(unprivileged)?;
    Ok(result.to_version(conf.version).to_printed_json())
}

fn del(
    server: &Server,
    env: &BTreeMap<String, String>,
    config: Vec<u8>,
    conf: &StdinConfig,
) -> Result<Vec<u8>, CniError> {
    conf.check_ours().map_err(invalid_config)?;
    let request = Request::new(env.clone(), config, DeviceInfo::default());
    let body = server
        .request(&request)
        .map_err(|err| forward_error(err, server, false))?;
    parse_response(&body)?.result.ok_or_else(unprivileged)?;
    Ok(Vec::new())
}

/// STATUS, CHECK and GC: forwarded; a 200 answer means done (its body is not read, as
/// upstream's STATUS ignores it), anything else is the error. `for_status` picks STATUS's
/// codes for a server that cannot be reached (see the module table).
fn silent(
    server: &Server,
    env: &BTreeMap<String, String>,
    config: Vec<u8>,
    conf: &StdinConfig,
    for_status: bool,
) -> Result<Vec<u8>, CniError> {
    conf.check_ours().map_err(invalid_config)?;
    let request = Request::new(env.clone(), config, DeviceInfo::default());
    server
        .request(&request)
        .map_err(|err| forward_error(err, server, for_status))?;
    Ok(Vec::new())
}

fn invalid_config(msg: String) -> CniError {
    CniError::new(ErrorCode::InvalidNetworkConfig, msg)
}

fn read_device_info(path: &str) -> Result<DeviceInfo, CniError> {
    let bytes = fs::read(path).map_err(|err| {
        CniError::new(
            ErrorCode::Io,
            format!("failed to read device info file {path}: {err}"),
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|err| {
        CniError::new(
            ErrorCode::Decode,
            format!("failed to decode device info file {path}: {err}"),
        )
    })
}

fn parse_response(body: &[u8]) -> Result<Response, CniError> {
    Response::from_json(body).map_err(|err| {
        CniError::new(
            ErrorCode::Decode,
            format!(
                "failed to unmarshal response '{}': {err}",
                String::from_utf8_lossy(body)
            ),
        )
    })
}

/// A null `Result` means the server ran unprivileged and expects the plugin to plumb
/// the pod itself, which this plugin does not do.
fn unprivileged() -> CniError {
    CniError::new(
        ErrorCode::Internal,
        "the CNI server answered without a result (unprivileged mode), which this plugin does not support",
    )
}

/// The CNI error for a failed exchange (see the module table).
fn forward_error(err: ForwardError, server: &Server, for_status: bool) -> CniError {
    let (code, text) = match err {
        ForwardError::Reply(udn_cni_protocol::ReplyError::Cni(err)) => return err,
        ForwardError::Reply(other) => (ErrorCode::Internal, other.to_string()),
        ForwardError::Http(err) => {
            let code = match (&err, for_status) {
                (_, true) => ErrorCode::PluginNotAvailable,
                (HttpError::Connect { .. } | HttpError::TimedOut { .. }, false) => {
                    ErrorCode::TryAgainLater
                }
                (HttpError::Send { .. } | HttpError::Receive { .. }, false) => ErrorCode::Io,
            };
            (code, error_chain(&err))
        }
    };
    let err = CniError::new(code, text);
    match code {
        ErrorCode::TryAgainLater | ErrorCode::PluginNotAvailable => err.with_details(format!(
            "is the node agent running? (socket {}; {} overrides it)",
            server.socket().display(),
            crate::client::SOCKET_ENV
        )),
        _ => err,
    }
}

/// `outer: inner: innermost`.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What `skel` prints on stderr when run without `CNI_COMMAND`.
fn about() -> String {
    let versions: Vec<&str> = SUPPORTED_VERSIONS.iter().map(|v| v.as_str()).collect();
    format!(
        "CNI plugin ovn-k8s-cni-overlay (udn {})\nCNI protocol versions supported: {}\n",
        env!("CARGO_PKG_VERSION"),
        versions.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(pairs: &[(&str, &str)], stdin: &str) -> (Outcome, String) {
        let env: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut stderr = Vec::new();
        let outcome = run(&env, &mut stdin.as_bytes(), &mut stderr);
        (outcome, String::from_utf8(stderr).unwrap())
    }

    fn printed_error(outcome: &Outcome) -> CniError {
        assert!(!outcome.success);
        serde_json::from_slice(&outcome.stdout).unwrap()
    }

    #[test]
    fn version_is_answered_without_stdin() {
        let (outcome, _) = run_with(&[("CNI_COMMAND", "VERSION")], "not json");
        assert!(outcome.success);
        assert_eq!(
            outcome.stdout,
            b"{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
        );
    }

    #[test]
    fn no_command_prints_about_and_a_code_4_error() {
        let (outcome, stderr) = run_with(&[], "");
        let err = printed_error(&outcome);
        assert_eq!(err.code, ErrorCode::InvalidEnvironment);
        assert_eq!(err.cni_version.as_deref(), Some("1.1.0"));
        assert!(
            stderr.starts_with("CNI plugin ovn-k8s-cni-overlay"),
            "{stderr}"
        );
    }

    #[test]
    fn check_is_forwarded() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("none.sock");
        let socket = socket.to_str().unwrap();
        let env = [
            ("CNI_COMMAND", "CHECK"),
            ("CNI_CONTAINERID", "c"),
            ("CNI_NETNS", "/n"),
            ("CNI_IFNAME", "eth0"),
            (crate::client::SOCKET_ENV, socket),
        ];
        let (outcome, _) = run_with(
            &env,
            r#"{"cniVersion":"0.4.0","name":"n","type":"ovn-k8s-cni-overlay"}"#,
        );
        // Nobody listens: the plugin tried the server.
        assert!(!outcome.success);
        let error: serde_json::Value = serde_json::from_slice(&outcome.stdout).unwrap();
        assert_eq!(error["code"], 11, "{error}");
    }

    #[test]
    fn version_floors_per_command() {
        let env = [("CNI_COMMAND", "STATUS")];
        let (outcome, _) = run_with(
            &env,
            r#"{"cniVersion":"1.0.0","name":"n","type":"ovn-k8s-cni-overlay"}"#,
        );
        let err = printed_error(&outcome);
        assert_eq!(
            (err.code, err.msg.as_str()),
            (
                ErrorCode::IncompatibleVersion,
                "config version does not allow STATUS"
            )
        );
        assert_eq!(err.cni_version.as_deref(), Some("1.0.0"));
    }

    #[test]
    fn error_chain_joins_causes() {
        let err = HttpError::Connect {
            socket: "/x.sock".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(
            error_chain(&err),
            "failed to connect to the CNI server socket /x.sock: entity not found"
        );
    }
}
