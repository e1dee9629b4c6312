//! The real plugin binary against a fake CNI server: what it sends, how it reads every
//! kind of answer, what it prints.

#![allow(clippy::unwrap_used)]

mod support;

use base64::Engine as _;
use serde_json::{Value, json};
use support::{FakeServer, default_conf, http, http_chunked, kubelet_env, run_plugin};

/// Upstream's answer for a pod whose namespace has a primary UDN (dual interface),
/// exactly as its server marshals it (a Result's keys sorted, no cniVersion).
const DUAL_INTERFACE_RESPONSE: &str = concat!(
    r#"{"Result":{"interfaces":[{"mac":"aa:bb:cc:dd:ee:01","name":"3f1b2c4d5e6f7a8"},"#,
    r#"{"mac":"0a:58:0a:f4:01:05","name":"eth0","sandbox":"/var/run/netns/cni-5c1f0c9e"},"#,
    r#"{"mac":"be:bb:cc:dd:ee:02","name":"3f1b2c4d5e6f7_3"},"#,
    r#"{"mac":"0a:58:0a:80:01:05","name":"ovn-udn1","sandbox":"/var/run/netns/cni-5c1f0c9e"}],"#,
    r#""ips":[{"address":"10.244.1.5/24","interface":1},{"address":"10.128.1.5/24","gateway":"10.128.1.1","interface":3}]},"#,
    r#""PodIFInfo":null,"PrimaryUDNPodInfo":null,"PrimaryUDNPodReq":null,"#,
    r#""KubeAuth":{"kube-api-server":"https://10.96.0.1:443","kube-api-token":"secret-token"}}"#
);

/// What the CNI library prints for that result in 1.1.0.
const PRINTED_1_1: &str = r#"{
    "cniVersion": "1.1.0",
    "interfaces": [
        {
            "mac": "aa:bb:cc:dd:ee:01",
            "name": "3f1b2c4d5e6f7a8"
        },
        {
            "mac": "0a:58:0a:f4:01:05",
            "name": "eth0",
            "sandbox": "/var/run/netns/cni-5c1f0c9e"
        },
        {
            "mac": "be:bb:cc:dd:ee:02",
            "name": "3f1b2c4d5e6f7_3"
        },
        {
            "mac": "0a:58:0a:80:01:05",
            "name": "ovn-udn1",
            "sandbox": "/var/run/netns/cni-5c1f0c9e"
        }
    ],
    "ips": [
        {
            "address": "10.244.1.5/24",
            "interface": 1
        },
        {
            "address": "10.128.1.5/24",
            "gateway": "10.128.1.1",
            "interface": 3
        }
    ]
}"#;

/// And in 0.4.0 (struct order, `version` on each IP, `dns` always present).
const PRINTED_0_4: &str = r#"{
    "cniVersion": "0.4.0",
    "interfaces": [
        {
            "name": "3f1b2c4d5e6f7a8",
            "mac": "aa:bb:cc:dd:ee:01"
        },
        {
            "name": "eth0",
            "mac": "0a:58:0a:f4:01:05",
            "sandbox": "/var/run/netns/cni-5c1f0c9e"
        },
        {
            "name": "3f1b2c4d5e6f7_3",
            "mac": "be:bb:cc:dd:ee:02"
        },
        {
            "name": "ovn-udn1",
            "mac": "0a:58:0a:80:01:05",
            "sandbox": "/var/run/netns/cni-5c1f0c9e"
        }
    ],
    "ips": [
        {
            "version": "4",
            "interface": 1,
            "address": "10.244.1.5/24"
        },
        {
            "version": "4",
            "interface": 3,
            "address": "10.128.1.5/24",
            "gateway": "10.128.1.1"
        }
    ],
    "dns": {}
}"#;

const DEL_RESPONSE: &str = r#"{"Result":{},"PodIFInfo":null,"PrimaryUDNPodInfo":null,"PrimaryUDNPodReq":null,"KubeAuth":null}"#;

fn add_server() -> FakeServer {
    FakeServer::start(http(
        "200 OK",
        "application/json",
        DUAL_INTERFACE_RESPONSE.as_bytes(),
    ))
}

fn metrics_of(server: &FakeServer) -> Value {
    let requests = server.requests();
    let metrics: Vec<_> = requests.iter().filter(|r| r.path() == "/metrics").collect();
    assert_eq!(metrics.len(), 1, "{requests:?}");
    assert_eq!(metrics[0].request_line, "POST /metrics HTTP/1.1");
    metrics[0].json()
}

#[test]
fn add_sends_upstreams_request_and_prints_the_result() {
    let server = add_server();
    let env = kubelet_env("ADD", server.socket());
    let conf = default_conf("1.1.0");
    let run = run_plugin(&env, conf.as_bytes());
    run.assert_success();
    assert_eq!(run.stdout, PRINTED_1_1);
    assert_eq!(run.stderr, "");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the request, then the metrics");
    let request = &requests[0];
    assert_eq!(request.request_line, "POST / HTTP/1.1");
    assert_eq!(request.header("Host"), Some("dummy"));
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    // Go's json.Marshal of upstream's Request: env keys sorted, config as base64.
    let want = format!(
        concat!(
            r#"{{"env":{{"CNI_ARGS":"IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=3f1b2c4d5e6f7a8b9c0d;K8S_POD_UID=0f3c2b1a-1111-2222-3333-444455556666","#,
            r#""CNI_COMMAND":"ADD","CNI_CONTAINERID":"3f1b2c4d5e6f7a8b9c0d","CNI_IFNAME":"eth0","CNI_NETNS":"/var/run/netns/cni-5c1f0c9e","#,
            r#""CNI_PATH":"/opt/cni/bin","UDN_CNI_SERVER_SOCKET":"{socket}"}},"config":"{config}"}}"#
        ),
        socket = server.socket().display(),
        config = base64::engine::general_purpose::STANDARD.encode(conf.as_bytes()),
    );
    assert_eq!(String::from_utf8(request.body.clone()).unwrap(), want);

    let metrics = metrics_of(&server);
    assert_eq!(metrics["command"], "ADD");
    assert_eq!(metrics["hasErr"], false);
    let elapsed = metrics["elapsedTime"].as_f64().unwrap();
    assert!((0.0..60.0).contains(&elapsed), "{elapsed}");
}

#[test]
fn add_answers_in_the_configs_version() {
    let server = add_server();
    let env = kubelet_env("ADD", server.socket());

    let run = run_plugin(&env, default_conf("0.4.0").as_bytes());
    run.assert_success();
    assert_eq!(run.stdout, PRINTED_0_4);

    let run = run_plugin(&env, default_conf("1.0.0").as_bytes());
    run.assert_success();
    assert_eq!(
        run.stdout,
        PRINTED_1_1.replace(r#""cniVersion": "1.1.0""#, r#""cniVersion": "1.0.0""#)
    );
}

#[test]
fn add_reads_chunked_answers() {
    for chunk in [1, 7, 4096] {
        let server = FakeServer::start(http_chunked(
            "200 OK",
            DUAL_INTERFACE_RESPONSE.as_bytes(),
            chunk,
        ));
        let run = run_plugin(
            &kubelet_env("ADD", server.socket()),
            default_conf("1.1.0").as_bytes(),
        );
        run.assert_success();
        assert_eq!(run.stdout, PRINTED_1_1, "chunk size {chunk}");
    }
}

#[test]
fn add_from_a_config_list_answers_in_the_lists_version() {
    let server = add_server();
    let list = r#"{"cniVersion":"0.4.0","name":"ovn-kubernetes","plugins":[{"type":"ovn-k8s-cni-overlay"}]}"#;
    let run = run_plugin(&kubelet_env("ADD", server.socket()), list.as_bytes());
    run.assert_success();
    assert_eq!(run.stdout, PRINTED_0_4);
}

#[test]
fn add_embeds_the_device_info_file() {
    let server = add_server();
    let info = server.path("devinfo.json");
    std::fs::write(
        &info,
        r#"{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:03:00.2"}}"#,
    )
    .unwrap();
    let conf = format!(
        r#"{{"cniVersion":"1.1.0","name":"ns_net","type":"ovn-k8s-cni-overlay","topology":"layer2","netAttachDefName":"ns/net","runtimeConfig":{{"CNIDeviceInfoFile":"{}"}}}}"#,
        info.display()
    );
    run_plugin(&kubelet_env("ADD", server.socket()), conf.as_bytes()).assert_success();
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert!(
        body.ends_with(r#"","type":"pci","version":"1.1.0","pci":{"pci-address":"0000:03:00.2"}}"#),
        "{body}"
    );
}

#[test]
fn del_prints_nothing() {
    let server = FakeServer::start(http("200 OK", "application/json", DEL_RESPONSE.as_bytes()));
    let mut env = kubelet_env("DEL", server.socket());
    // The spec makes CNI_NETNS optional for DEL (runtimes drop it once the netns is gone).
    env.remove("CNI_NETNS");
    let run = run_plugin(&env, default_conf("1.1.0").as_bytes());
    run.assert_success();
    assert_eq!(run.stdout, "");
    let requests = server.requests();
    assert_eq!(requests[0].json()["env"]["CNI_COMMAND"], "DEL");
    assert_eq!(metrics_of(&server)["command"], "DEL");
}

#[test]
fn status_is_forwarded_and_silent() {
    let server = FakeServer::start(http("200 OK", "application/json", b""));
    let env = [
        ("CNI_COMMAND", "STATUS"),
        ("UDN_CNI_SERVER_SOCKET", server.socket().to_str().unwrap()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let run = run_plugin(&env, default_conf("1.1.0").as_bytes());
    run.assert_success();
    assert_eq!(run.stdout, "");
    assert_eq!(server.requests()[0].json()["env"]["CNI_COMMAND"], "STATUS");
    assert_eq!(metrics_of(&server)["command"], "STATUS");
}

#[test]
fn gc_and_check_are_forwarded_and_version_contacts_nobody() {
    let server = FakeServer::start(http("200 OK", "text/plain", b""));
    let conf = r#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"}]}"#;
    let run = run_plugin(&kubelet_env("GC", server.socket()), conf.as_bytes());
    run.assert_success();
    assert_eq!(run.stdout, "");
    let requests = server.requests();
    let sent: Vec<_> = requests.iter().filter(|r| r.path() == "/").collect();
    assert_eq!(sent.len(), 1, "{requests:?}");
    assert_eq!(sent[0].json()["env"]["CNI_COMMAND"], "GC");
    assert_eq!(metrics_of(&server)["command"], "GC");

    let server = FakeServer::start(http("200 OK", "text/plain", b""));
    let run = run_plugin(
        &kubelet_env("CHECK", server.socket()),
        default_conf("1.1.0").as_bytes(),
    );
    run.assert_success();
    assert_eq!(run.stdout, "");
    let requests = server.requests();
    let sent: Vec<_> = requests.iter().filter(|r| r.path() == "/").collect();
    assert_eq!(sent.len(), 1, "{requests:?}");
    assert_eq!(sent[0].json()["env"]["CNI_COMMAND"], "CHECK");

    let body =
        b"{\"code\":100,\"msg\":\"eth0: MAC 0a:58:0a:f4:01:06, expected 0a:58:0a:f4:01:05\"}\n";
    let server = FakeServer::start(http("400 Bad Request", "application/json", body));
    let run = run_plugin(
        &kubelet_env("CHECK", server.socket()),
        default_conf("1.1.0").as_bytes(),
    );
    assert_eq!(run.error()["code"], 100);
    assert_eq!(metrics_of(&server)["hasErr"], true);

    let server = FakeServer::start(http("500 Internal Server Error", "text/plain", b"no\n"));
    let run = run_plugin(&kubelet_env("VERSION", server.socket()), b"");
    run.assert_success();
    assert_eq!(
        run.stdout,
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
    );
    assert!(server.requests().is_empty(), "VERSION sent nothing");
}

#[test]
fn a_server_cni_error_is_printed_as_it_came() {
    let body = b"{\"code\":11,\"msg\":\"pod is being deleted\",\"details\":\"retry\"}\n";
    let server = FakeServer::start(http("400 Bad Request", "application/json", body));
    let run = run_plugin(
        &kubelet_env("ADD", server.socket()),
        default_conf("1.0.0").as_bytes(),
    );
    assert_eq!(
        run.error(),
        json!({"cniVersion": "1.0.0", "code": 11, "msg": "pod is being deleted", "details": "retry"})
    );
    assert_eq!(metrics_of(&server)["hasErr"], true);
    assert!(
        run.stderr.contains("pod is being deleted; retry"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_server_plain_text_error_is_upstreams_999() {
    let text = b"[ns/p 3f1b2c4d5e6f7a8b9c0d network default NAD default NAD key default] timed out waiting for annotations\n";
    let server = FakeServer::start(http("400 Bad Request", "text/plain; charset=utf-8", text));
    let run = run_plugin(
        &kubelet_env("ADD", server.socket()),
        default_conf("1.1.0").as_bytes(),
    );
    let err = run.error();
    assert_eq!(err["code"], 999);
    assert_eq!(
        err["msg"],
        "CNI request failed with status 400: '[ns/p 3f1b2c4d5e6f7a8b9c0d network default NAD default NAD key default] timed out waiting for annotations\n'"
    );
}

#[test]
fn a_server_closing_early_is_an_io_error() {
    let mut cut = http(
        "200 OK",
        "application/json",
        DUAL_INTERFACE_RESPONSE.as_bytes(),
    );
    cut.truncate(cut.len() - 40);
    for (answer, what) in [
        (cut, "truncated body"),
        (Vec::new(), "no answer"),
        (b"HTTP/1.1 200 OK\r\nContent-Le".to_vec(), "cut head"),
    ] {
        let server = FakeServer::start(answer);
        let run = run_plugin(
            &kubelet_env("ADD", server.socket()),
            default_conf("1.1.0").as_bytes(),
        );
        let err = run.error();
        assert_eq!(err["code"], 5, "{what}: {err}");
        let msg = err["msg"].as_str().unwrap();
        assert!(
            msg.starts_with("failed to read the CNI server's answer from "),
            "{what}: {msg}"
        );
        assert!(msg.contains("connection closed after"), "{what}: {msg}");
    }
}

#[test]
fn answers_that_are_not_upstreams_are_refused() {
    let server = FakeServer::start(http("200 OK", "application/json", b"<html>hello</html>"));
    let err = run_plugin(
        &kubelet_env("ADD", server.socket()),
        default_conf("1.1.0").as_bytes(),
    )
    .error();
    assert_eq!(err["code"], 6);
    assert!(
        err["msg"]
            .as_str()
            .unwrap()
            .starts_with("failed to unmarshal response '<html>hello</html>': "),
        "{err}"
    );

    let server = FakeServer::start(b"SSH-2.0-OpenSSH_9.6\r\n".to_vec());
    let err = run_plugin(
        &kubelet_env("ADD", server.socket()),
        default_conf("1.1.0").as_bytes(),
    )
    .error();
    assert_eq!(err["code"], 5);
    assert!(
        err["msg"]
            .as_str()
            .unwrap()
            .contains("not an HTTP/1.x status line"),
        "{err}"
    );

    let unprivileged = r#"{"Result":null,"PodIFInfo":{"mtu":1400},"PrimaryUDNPodInfo":null,"PrimaryUDNPodReq":null,"KubeAuth":{}}"#;
    let server = FakeServer::start(http("200 OK", "application/json", unprivileged.as_bytes()));
    let err = run_plugin(
        &kubelet_env("ADD", server.socket()),
        default_conf("1.1.0").as_bytes(),
    )
    .error();
    assert_eq!(err["code"], 999);
    assert!(
        err["msg"].as_str().unwrap().contains("unprivileged mode"),
        "{err}"
    );
}

#[test]
fn failures_are_also_logged_to_the_configs_log_file() {
    let server = FakeServer::start(http(
        "400 Bad Request",
        "application/json",
        b"{\"code\":7,\"msg\":\"no such NAD\"}\n",
    ));
    let log = server.path("logs/ovn-k8s-cni-overlay.log");
    let conf = format!(
        r#"{{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","logFile":"{}"}}"#,
        log.display()
    );
    let run = run_plugin(&kubelet_env("ADD", server.socket()), conf.as_bytes());
    assert_eq!(run.error()["msg"], "no such NAD");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains(" E ovn-k8s-cni-overlay[") && logged.ends_with("]: no such NAD\n"),
        "{logged}"
    );
    assert_eq!(run.stderr, logged, "stderr gets the same lines");
}
