//! Bad invocations and an absent server: each is a CNI error JSON on stdout with the
//! spec's code and a message naming the cause, exit code 1, and nothing sent to a server
//! for problems found before a command runs.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;

use serde_json::Value;
use support::{FakeServer, default_conf, http, kubelet_env, run_plugin};

fn never_asked() -> FakeServer {
    FakeServer::start(http(
        "500 Internal Server Error",
        "text/plain",
        b"must not be asked\n",
    ))
}

/// Runs with `env` edited by `edit` against a server that must not be asked.
fn refused(
    command: &str,
    edit: impl FnOnce(&mut BTreeMap<String, String>),
    stdin: &str,
) -> (Value, String) {
    let server = never_asked();
    let mut env = kubelet_env(command, server.socket());
    edit(&mut env);
    let run = run_plugin(&env, stdin.as_bytes());
    let err = run.error();
    assert_eq!(
        server.requests().len(),
        0,
        "nothing may reach the server: {err}"
    );
    (err, run.stderr)
}

fn code_and_msg(err: &Value) -> (u64, &str) {
    (err["code"].as_u64().unwrap(), err["msg"].as_str().unwrap())
}

#[test]
fn missing_cni_command() {
    let (err, stderr) = refused(
        "ADD",
        |env| drop(env.remove("CNI_COMMAND")),
        &default_conf("1.1.0"),
    );
    assert_eq!(
        code_and_msg(&err),
        (4, "required env variables [CNI_COMMAND] missing")
    );
    assert_eq!(err["cniVersion"], "1.1.0");
    assert!(
        stderr.contains("CNI protocol versions supported: 0.4.0, 1.0.0, 1.1.0"),
        "{stderr}"
    );
}

#[test]
fn missing_container_id_and_netns() {
    let conf = default_conf("1.1.0");
    let (err, _) = refused("ADD", |env| drop(env.remove("CNI_CONTAINERID")), &conf);
    assert_eq!(
        code_and_msg(&err),
        (4, "required env variables [CNI_CONTAINERID] missing")
    );
    let (err, _) = refused(
        "ADD",
        |env| {
            env.remove("CNI_NETNS");
            env.insert("CNI_CONTAINERID".into(), String::new());
        },
        &conf,
    );
    assert_eq!(
        code_and_msg(&err),
        (
            4,
            "required env variables [CNI_CONTAINERID,CNI_NETNS] missing"
        )
    );
    let (err, _) = refused("CHECK", |env| drop(env.remove("CNI_NETNS")), &conf);
    assert_eq!(
        code_and_msg(&err),
        (4, "required env variables [CNI_NETNS] missing")
    );
}

#[test]
fn unknown_command() {
    let (err, _) = refused("FROB", |_| {}, &default_conf("1.1.0"));
    assert_eq!(code_and_msg(&err), (4, "unknown CNI_COMMAND: FROB"));
}

#[test]
fn missing_pod_arguments_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent.sock");
    let conf = default_conf("1.1.0");
    let mut env = kubelet_env("ADD", &absent);
    env.remove("CNI_ARGS");
    assert_eq!(
        code_and_msg(&run_plugin(&env, conf.as_bytes()).error()),
        (4, "required env variables [CNI_ARGS] missing")
    );
    env.insert(
        "CNI_ARGS".into(),
        "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns".into(),
    );
    assert_eq!(
        code_and_msg(&run_plugin(&env, conf.as_bytes()).error()),
        (4, "CNI_ARGS has no K8S_POD_NAME")
    );
    env.insert("CNI_COMMAND".into(), "DEL".into());
    assert_eq!(
        code_and_msg(&run_plugin(&env, conf.as_bytes()).error()),
        (4, "CNI_ARGS has no K8S_POD_NAME")
    );
}

#[test]
fn malformed_truncated_and_empty_stdin() {
    let conf = default_conf("1.1.0");
    for stdin in ["{not json", &conf[..conf.len() - 10], "", "[]"] {
        let (err, _) = refused("ADD", |_| {}, stdin);
        let (code, msg) = code_and_msg(&err);
        assert_eq!(code, 6, "{stdin:?}: {err}");
        assert!(
            msg.starts_with("error unmarshall network config: "),
            "{msg}"
        );
    }
    let (err, _) = refused(
        "ADD",
        |_| {},
        r#"{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay"}"#,
    );
    assert_eq!(code_and_msg(&err), (7, "missing network name"));
}

#[test]
fn unsupported_versions_name_both_sides() {
    for version in ["0.3.1", "2.0.0"] {
        let (err, _) = refused("ADD", |_| {}, &default_conf(version));
        assert_eq!(code_and_msg(&err), (1, "incompatible CNI versions"));
        assert_eq!(
            err["details"],
            format!(r#"config is "{version}", plugin supports ["0.4.0" "1.0.0" "1.1.0"]"#)
        );
    }
    let (err, _) = refused("GC", |_| {}, &default_conf("1.0.0"));
    assert_eq!(code_and_msg(&err), (1, "config version does not allow GC"));
}

#[test]
fn a_foreign_plugin_type_is_an_invalid_config() {
    let server = never_asked();
    let conf = r#"{"cniVersion":"1.1.0","name":"mynet","type":"bridge"}"#;
    let run = run_plugin(&kubelet_env("ADD", server.socket()), conf.as_bytes());
    assert_eq!(
        code_and_msg(&run.error()),
        (7, "invalid stdin args net-attach-def not managed by OVN")
    );
    // Refused inside the command, so the failure is still counted, as upstream.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path(), "/metrics");
    assert_eq!(requests[0].json()["hasErr"], true);
}

#[test]
fn no_server_socket() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("ovn-cni-server.sock");
    let conf = default_conf("1.1.0");
    for command in ["ADD", "DEL"] {
        let err = run_plugin(&kubelet_env(command, &absent), conf.as_bytes()).error();
        let (code, msg) = code_and_msg(&err);
        assert_eq!(code, 11, "{command}: {err}");
        assert!(
            msg.starts_with(&format!(
                "failed to connect to the CNI server socket {}",
                absent.display()
            )),
            "{msg}"
        );
        assert!(
            err["details"]
                .as_str()
                .unwrap()
                .contains("UDN_CNI_SERVER_SOCKET"),
            "{err}"
        );
    }
    let env = [
        ("CNI_COMMAND", "STATUS"),
        ("UDN_CNI_SERVER_SOCKET", absent.to_str().unwrap()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let err = run_plugin(&env, conf.as_bytes()).error();
    assert_eq!(err["code"], 50, "{err}");
    assert!(
        err["msg"].as_str().unwrap().contains("failed to connect"),
        "{err}"
    );
}

#[test]
fn stdout_carries_only_the_error_json() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_plugin(
        &kubelet_env("ADD", &dir.path().join("absent.sock")),
        default_conf("0.4.0").as_bytes(),
    );
    let err = run.error();
    assert_eq!(err["cniVersion"], "0.4.0");
    assert!(
        run.stdout
            .starts_with("{\n    \"cniVersion\": \"0.4.0\",\n    \"code\": 11,"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(" E ovn-k8s-cni-overlay["),
        "the cause is logged on stderr: {}",
        run.stderr
    );
}
