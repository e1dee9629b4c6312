//! `udnctl render` run as a user runs it: the real binary, files from `docs/examples`,
//! exit codes, stdout and stderr.

// Test helpers outside #[test] fns may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn example(name: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    root.join(name).display().to_string()
}

fn udnctl(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_udnctl"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("udnctl starts");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("udnctl finishes")
}

fn render_json(args: &[&str]) -> Value {
    let mut all = vec!["render", "-o", "json"];
    all.extend_from_slice(args);
    let out = udnctl(&all, None);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn configs(doc: &Value) -> Vec<(String, String)> {
    doc["nads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|nad| {
            let key = format!(
                "{}/{}",
                nad["metadata"]["namespace"].as_str().unwrap(),
                nad["metadata"]["name"].as_str().unwrap()
            );
            (key, nad["spec"]["config"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn blue_green_renders_nads_ids_and_node_subnets() {
    let file = example("blue-green.yaml");
    let doc = render_json(&["-f", &file, "--nodes", "3"]);
    assert_eq!(
        doc["networkIDs"],
        json!({"blue_blue-network": 1, "green_green-network": 2})
    );
    assert_eq!(
        doc["nodeSubnets"],
        json!({
            "node-1": {"blue_blue-network": ["103.103.0.0/24"], "green_green-network": ["203.203.0.0/24"]},
            "node-2": {"blue_blue-network": ["103.103.1.0/24"], "green_green-network": ["203.203.1.0/24"]},
            "node-3": {"blue_blue-network": ["103.103.2.0/24"], "green_green-network": ["203.203.2.0/24"]},
        })
    );
    assert_eq!(
        configs(&doc),
        vec![
            (
                "blue/blue-network".to_owned(),
                r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"blue_blue-network","netAttachDefName":"blue/blue-network","role":"primary","subnets":"103.103.0.0/16/24","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#.to_owned()
            ),
            (
                "green/green-network".to_owned(),
                r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"green_green-network","netAttachDefName":"green/green-network","role":"primary","subnets":"203.203.0.0/16/24","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#.to_owned()
            ),
        ]
    );
    let blue = &doc["nads"][0]["metadata"];
    assert_eq!(
        blue["labels"],
        json!({"k8s.ovn.org/user-defined-network": "", "name": "blue", "purpose": "kubecon-eu-2025-demo"})
    );
    assert_eq!(
        blue["finalizers"],
        json!(["k8s.ovn.org/user-defined-network-protection"])
    );
    assert_eq!(
        blue["annotations"],
        json!({"k8s.ovn.org/network-id": "1", "k8s.ovn.org/network-name": "blue_blue-network", "k8s.ovn.org/tunnel-keys": "[]"})
    );
    assert_eq!(blue["ownerReferences"][0]["kind"], "UserDefinedNetwork");
    assert_eq!(blue["ownerReferences"][0]["controller"], true);
}

#[test]
fn yaml_output_has_a_summary_header_and_nad_documents() {
    let file = example("blue-green.yaml");
    let out = udnctl(&["render", "-f", &file, "--nodes", "1"], None);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# network IDs:\n#   blue_blue-network: 1\n#   green_green-network: 2\n# node host subnets:\n#   node-1: blue_blue-network: 103.103.0.0/24\n"), "{text}");
    assert_eq!(
        text.matches("\n---\nkind: NetworkAttachmentDefinition\n")
            .count()
            + text
                .matches("---\napiVersion: k8s.cni.cncf.io/v1\n")
                .count(),
        2,
        "{text}"
    );
}

#[test]
fn cudns_give_every_selected_namespace_a_nad_with_one_network_id() {
    let file = example("berlin-munich.yaml");
    let doc = render_json(&["-f", &file, "--nodes", "2"]);
    assert_eq!(
        doc["networkIDs"],
        json!({"cluster_udn_berlin": 1, "cluster_udn_munich": 2})
    );
    let keys: Vec<String> = configs(&doc).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "blue/berlin",
            "green/berlin",
            "purple/berlin",
            "yellow/berlin",
            "brown/munich",
            "cyan/munich",
            "orange/munich",
            "violet/munich"
        ]
    );
    // Same pod subnet on both networks: allowed, and allocated independently.
    assert_eq!(
        doc["nodeSubnets"]["node-2"],
        json!({"cluster_udn_berlin": ["10.132.1.0/24"], "cluster_udn_munich": ["10.132.1.0/24"]})
    );
    for nad in doc["nads"].as_array().unwrap() {
        let network = nad["metadata"]["annotations"]["k8s.ovn.org/network-name"]
            .as_str()
            .unwrap();
        let id = nad["metadata"]["annotations"]["k8s.ovn.org/network-id"]
            .as_str()
            .unwrap();
        assert_eq!(
            id,
            if network == "cluster_udn_berlin" {
                "1"
            } else {
                "2"
            }
        );
    }
}

#[test]
fn layer2_persistent_ips_need_the_feature_flag() {
    let file = example("layer2-vms.yaml");
    let out = udnctl(&["render", "-f", &file], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&out),
        [format!(
            "{file}#2: ClusterUserDefinedNetwork vm-network: condition NetworkCreated=False, reason NetworkAttachmentDefinitionSyncError: failed to generate NetworkAttachmentDefinition: failed to render CNI network config: allowPersistentIPs is set but persistentIPs is Disabled"
        )]
    );
    let doc = render_json(&["-f", &file, "--enable-persistent-ips"]);
    assert_eq!(
        configs(&doc),
        [(
            "vms/vm-network".to_owned(),
            r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"cluster_udn_vm-network","netAttachDefName":"vms/vm-network","role":"primary","subnets":"192.168.100.0/24,fd10:100::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}"#.to_owned()
        )]
    );
    // cluster-manager's key layout (docs/cluster-manager.md, "Network ID and tunnel key
    // pools"): the transit key of ID 1, then the first free key after the transit range.
    assert_eq!(
        doc["nads"][0]["metadata"]["annotations"]["k8s.ovn.org/tunnel-keys"],
        "[16711684,16744450]"
    );
}

#[test]
fn localnet_with_vlan_renders() {
    let doc = render_json(&["-f", &example("localnet-vlan.yaml")]);
    assert_eq!(
        configs(&doc),
        [(
            "db/storage-vlan".to_owned(),
            r#"{"cniVersion":"1.1.0","excludeSubnets":"192.0.2.0/29","mtu":1500,"name":"cluster_udn_storage-vlan","netAttachDefName":"db/storage-vlan","physicalNetworkName":"physnet-tenant","role":"secondary","subnets":"192.0.2.0/24","topology":"localnet","type":"ovn-k8s-cni-overlay","vlanID":200}"#.to_owned()
        )]
    );
    assert_eq!(doc["nodeSubnets"]["node-1"], json!({}));
}

const NS_RED: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: red\n  labels:\n    k8s.ovn.org/primary-user-defined-network: \"\"\n";

fn udn(name: &str, namespace: &str, spec: &str) -> String {
    format!(
        "apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n{spec}"
    )
}

const L3_PRIMARY: &str =
    "  topology: Layer3\n  layer3:\n    role: Primary\n    subnets:\n    - cidr: 10.10.0.0/16\n";

#[test]
fn invalid_input_is_one_line_per_problem_with_exit_code_1() {
    let input = [
        NS_RED.to_owned(),
        udn("overlap", "red", "  topology: Layer3\n  layer3:\n    role: Primary\n    subnets:\n    - cidr: 10.10.0.0/16\n    - cidr: 10.10.1.0/24\n"),
        udn("Bad", "red", "  topology: Layer4\n"),
        udn("lost", "nowhere", L3_PRIMARY),
    ]
    .join("---\n");
    let out = udnctl(&["render", "-f", "-"], Some(&input));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr_lines(&out),
        [
            "<stdin>#2: UserDefinedNetwork.k8s.ovn.org \"overlap\" is invalid: spec.layer3: Invalid value: Subnets must not overlap or contain each other".to_owned(),
            "<stdin>#3: UserDefinedNetwork.k8s.ovn.org \"Bad\" is invalid: metadata.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned(),
            "<stdin>#3: UserDefinedNetwork.k8s.ovn.org \"Bad\" is invalid: spec.topology: Unsupported value: \"Layer4\": supported values: \"Layer2\", \"Layer3\"".to_owned(),
            "<stdin>#3: UserDefinedNetwork.k8s.ovn.org \"Bad\" is invalid: <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_owned(),
            "<stdin>#4: UserDefinedNetwork nowhere/lost: namespaces \"nowhere\" not found".to_owned(),
        ]
    );
}

#[test]
fn primary_network_needs_the_namespace_label() {
    let input = [
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: plain\n".to_owned(),
        udn("net", "plain", L3_PRIMARY),
    ]
    .join("---\n");
    let out = udnctl(&["render", "-f", "-"], Some(&input));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&out),
        [
            "<stdin>#2: UserDefinedNetwork plain/net: condition NetworkCreated=False, reason SyncError: invalid primary network state for namespace \"plain\": a valid primary user defined network or network attachment definition custom resource, and required namespace label \"k8s.ovn.org/primary-user-defined-network\" must both be present"
        ]
    );
}

#[test]
fn one_primary_network_per_namespace() {
    let input = [
        NS_RED.to_owned(),
        udn("first", "red", L3_PRIMARY),
        udn("second", "red", L3_PRIMARY),
        udn("first", "red", L3_PRIMARY),
    ]
    .join("---\n");
    let out = udnctl(&["render", "-f", "-"], Some(&input));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&out),
        [
            "<stdin>#3: UserDefinedNetwork red/second: condition NetworkCreated=False, reason SyncError: primary network already exist in namespace \"red\": \"first\"",
            "<stdin>#4: userdefinednetworks.k8s.ovn.org \"first\" already exists",
        ]
    );
}

#[test]
fn render_time_checks_use_the_cluster_flags() {
    let spec = "  topology: Layer2\n  layer2:\n    role: Secondary\n    subnets: [172.30.0.0/24]\n";
    let input = [NS_RED.to_owned(), udn("l2", "red", spec)].join("---\n");
    let out = udnctl(
        &[
            "render",
            "-f",
            "-",
            "--k8s-service-cidrs",
            "172.30.0.0/16,fd00:10:96::/112",
        ],
        Some(&input),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&out),
        [
            "<stdin>#2: UserDefinedNetwork red/l2: condition NetworkCreated=False, reason SyncError: failed to generate NetworkAttachmentDefinition: failed to render CNI network config: invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined subnet \"172.30.0.0/24\" overlaps service subnet \"172.30.0.0/16\""
        ]
    );
    // IPv4-only cluster: an IPv6 primary subnet is refused.
    let v6 =
        "  topology: Layer3\n  layer3:\n    role: Primary\n    subnets:\n    - cidr: fd50::/48\n";
    let input = [NS_RED.to_owned(), udn("v6", "red", v6)].join("---\n");
    let out = udnctl(
        &[
            "render",
            "-f",
            "-",
            "--cluster-subnets",
            "10.244.0.0/16/24",
            "--k8s-service-cidrs",
            "10.96.0.0/16",
        ],
        Some(&input),
    );
    assert_eq!(out.status.code(), Some(1));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0]
            .contains("is attempting to use ipv6 subnets but the cluster does not support ipv6"),
        "{lines:?}"
    );
}

#[test]
fn exhausted_host_subnets_are_reported() {
    let spec = "  topology: Layer3\n  layer3:\n    role: Primary\n    subnets:\n    - cidr: 10.10.0.0/23\n      hostSubnet: 24\n";
    let input = [NS_RED.to_owned(), udn("small", "red", spec)].join("---\n");
    let out = udnctl(&["render", "-f", "-", "--nodes", "3"], Some(&input));
    assert_eq!(out.status.code(), Some(1));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "red_small: error allocating networks for network: red_small, node node-3: "
        ),
        "{lines:?}"
    );
}

#[test]
fn unreadable_files_and_unknown_kinds_are_reported() {
    let out = udnctl(&["render", "-f", "/nonexistent/x.yaml"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_lines(&out)[0].starts_with("/nonexistent/x.yaml: cannot read file:"));
    let out = udnctl(
        &["render", "-f", "-"],
        Some("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&out),
        [
            "<stdin>: unsupported object Pod (v1): udnctl render reads v1 Namespace, k8s.ovn.org/v1 UserDefinedNetwork and ClusterUserDefinedNetwork"
        ]
    );
}
