//! Services in a sandbox, as a user sees them with kubectl and from pods: a primary UDN's
//! ClusterIP answers its own network's pods (TCP and UDP, both nodes) and neither another
//! network's nor a default-network pod; the EndpointSlice
//! mirror of a primary-UDN namespace (the pods' UDN addresses, repaired when deleted, gone
//! with the Service, none on the default network), a Service on a secondary network (seed
//! 002: the pods' secondary IPs, reachable from that network only) and NAD recovery (an in-use
//! NetworkAttachmentDefinition comes back when deleted; an unused one stays deleted).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;
use udn_e2e::{PodSpec, Sandbox, run_suite};

const BLUE_GREEN: &str = include_str!("../../docs/examples/blue-green.yaml");

const MIRROR: &str = "endpointslice-mirror-controller.k8s.ovn.org";
const DEFAULT_SLICES: &str = "endpointslice-controller.k8s.io";

/// A Service `web` (port 80 to 8080) over the pods labelled `tier: web`, in `blue` and in
/// `default`.
const SERVICES: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web, namespace: blue}
spec:
  selector: {tier: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {tier: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
"#;

/// Seed 003's bridge NAD and its pod, in a namespace of their own. The `bridge` plugin is not
/// installed, so the pod never starts: its object naming the NAD is what counts.
const FOO_NETWORK: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: nadtest}
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: foo-network, namespace: nadtest}
spec:
  config: '{"cniVersion": "0.3.0", "name": "foo-network", "type": "bridge", "bridge": "br0", "isGateway": true, "ipam": {"type": "host-local", "subnet": "172.36.0.0/24"}}'
---
apiVersion: v1
kind: Pod
metadata:
  name: demo
  namespace: nadtest
  annotations: {k8s.v1.cni.cncf.io/networks: "foo-network, foo-network"}
spec:
  nodeName: node1
  containers:
  - name: agnhost
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8080]
"#;

const WEB: [(&str, &str, &str); 3] = [
    ("blue", "blue-web-1", "node1"),
    ("blue", "blue-web-2", "node2"),
    ("default", "default-web", "node1"),
];

/// Clients without the `tier: web` label.
const CLIENTS: [(&str, &str, &str); 2] = [
    ("blue", "blue-client", "node1"),
    ("green", "green-client", "node2"),
];

/// blue's `echo`: port 88 over TCP and UDP to netexec's 8080 (HTTP) and 8081 (UDP).
const ECHO: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: blue}
spec:
  selector: {tier: web}
  ports:
  - {name: http, port: 88, targetPort: 8080, protocol: TCP}
  - {name: udp, port: 88, targetPort: 8081, protocol: UDP}
"#;

/// blue's NodePort Service over the same pods: port 88 to netexec's HTTP 8080, node port
/// 30088 (kube-apiserver would pick one when none is given).
const NODE_PORT: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: np, namespace: blue}
spec:
  type: NodePort
  selector: {tier: web}
  ports:
  - {name: http, port: 88, targetPort: 8080, nodePort: 30088, protocol: TCP}
"#;

/// A stand-in for the cluster DNS on the default network (`kube-system/kube-dns` is one of
/// upstream's default `--udn-allowed-default-services`): netexec's HTTP behind port 53.
const KUBE_DNS: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec:
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns-tcp, port: 53, targetPort: 8080, protocol: TCP}
"#;

/// The kube-dns stand-in's pod, on the default network.
const DNS_POD: (&str, &str, &str) = ("kube-system", "coredns", "node2");

fn setup(sandbox: &Sandbox) -> Result<(), String> {
    sandbox.apply(BLUE_GREEN);
    let mut specs: Vec<PodSpec<'_>> = WEB
        .iter()
        .map(|(namespace, name, node)| PodSpec {
            namespace,
            name,
            node,
            labels: &[("tier", "web")],
            ..PodSpec::default()
        })
        .collect();
    specs.extend(CLIENTS.iter().map(|(namespace, name, node)| PodSpec {
        namespace,
        name,
        node,
        ..PodSpec::default()
    }));
    specs.push(PodSpec {
        namespace: DNS_POD.0,
        name: DNS_POD.1,
        node: DNS_POD.2,
        labels: &[("k8s-app", "kube-dns")],
        ..PodSpec::default()
    });
    sandbox.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system}\n");
    sandbox.run_pods(&specs)?;
    sandbox.apply(SERVICES);
    sandbox.apply(ECHO);
    sandbox.apply(NODE_PORT);
    sandbox.apply(KUBE_DNS);
    Ok(())
}

/// The answer of a UDP `hostname` request to `ip:port` from pod `from`.
fn udp_answer(sandbox: &Sandbox, from: (&str, &str), ip: &str, port: u16) -> Option<String> {
    let script = format!("echo hostname | nc -u -w 2 {ip} {port}");
    let out = sandbox.exec(from.0, from.1, &["sh", "-c", &script]);
    let body = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (!body.is_empty()).then_some(body)
}

fn a_cluster_ip_answers_only_inside_its_network(sandbox: &Sandbox) -> Result<(), String> {
    let ip = sandbox.eventually("blue/echo has a ClusterIP", || {
        let ip = sandbox.kubectl(&[
            "get",
            "svc",
            "-n",
            "blue",
            "echo",
            "-o",
            "jsonpath={.spec.clusterIP}",
        ]);
        let ip = ip.trim().to_owned();
        (!ip.is_empty()).then_some(ip)
    })?;
    let backends = ["blue-web-1", "blue-web-2"];
    let url = format!("http://{ip}:88/hostname");
    // From its own network, on both nodes, over TCP and UDP: a backend answers.
    for from in [("blue", "blue-client"), ("blue", "blue-web-2")] {
        sandbox.eventually(
            &format!("{}/{} reaches blue/echo over TCP", from.0, from.1),
            || {
                sandbox
                    .http_get(from.0, from.1, &url, 2)
                    .filter(|body| backends.contains(&body.trim()))
            },
        )?;
        sandbox.eventually(
            &format!("{}/{} reaches blue/echo over UDP", from.0, from.1),
            || udp_answer(sandbox, from, &ip, 88).filter(|body| backends.contains(&body.as_str())),
        )?;
    }
    // Another network's pod and a default-network pod: no answer.
    for from in [("green", "green-client"), ("default", "default-web")] {
        for _ in 0..2 {
            if let Some(body) = sandbox.http_get(from.0, from.1, &url, 3) {
                return Err(format!(
                    "{}/{} reached blue's ClusterIP {ip}: {body}",
                    from.0, from.1
                ));
            }
        }
        if let Some(body) = udp_answer(sandbox, from, &ip, 88) {
            return Err(format!(
                "{}/{} reached blue's ClusterIP {ip} over UDP: {body}",
                from.0, from.1
            ));
        }
    }
    Ok(())
}

/// The nodes' IPs, in the sandbox's node order.
fn node_ips(sandbox: &Sandbox) -> Vec<String> {
    sandbox.state()["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["ip"].as_str().map(str::to_owned))
        .collect()
}

/// The body of `url` fetched from the lab's external host, if it answers in time.
fn external_get(sandbox: &Sandbox, url: &str) -> Option<String> {
    let out = sandbox
        .external_command(&["curl", "-sS", "--max-time", "2", url])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// blue's NodePort, as upstream documents it: the node's addresses at the node port reach
/// blue's pods from outside the cluster, from blue's own pods on any node, and from other
/// networks' pods (another UDN's, the default network's) through another node; the ClusterIP
/// of the same Service stays blue's alone.
fn a_node_port_on_a_udn_is_reachable_from_outside_and_across_networks(
    sandbox: &Sandbox,
) -> Result<(), String> {
    let backends = ["blue-web-1", "blue-web-2"];
    let ips = node_ips(sandbox);
    if ips.len() != 2 {
        return Err(format!("expected two node IPs, got {ips:?}"));
    }
    for ip in &ips {
        let url = format!("http://{ip}:30088/hostname");
        sandbox.eventually(&format!("the external host reaches {url}"), || {
            external_get(sandbox, &url).filter(|body| backends.contains(&body.as_str()))
        })?;
        sandbox.eventually(&format!("blue/blue-client (node1) reaches {url}"), || {
            sandbox
                .http_get("blue", "blue-client", &url, 2)
                .filter(|body| backends.contains(&body.trim()))
        })?;
    }
    // Other networks through the other node: green's pod runs on node2, the default
    // network's on node1.
    for (from, node_ip) in [
        (("green", "green-client"), &ips[0]),
        (("default", "default-web"), &ips[1]),
    ] {
        let url = format!("http://{node_ip}:30088/hostname");
        sandbox.eventually(&format!("{}/{} reaches {url}", from.0, from.1), || {
            sandbox
                .http_get(from.0, from.1, &url, 2)
                .filter(|body| backends.contains(&body.trim()))
        })?;
    }
    let cluster_ip = sandbox.kubectl(&[
        "get",
        "svc",
        "-n",
        "blue",
        "np",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    let url = format!("http://{}:88/hostname", cluster_ip.trim());
    if let Some(body) = sandbox.http_get("green", "green-client", &url, 3) {
        return Err(format!("green reached blue's ClusterIP {url}: {body}"));
    }
    Ok(())
}

/// `kube-system/kube-dns` is one of upstream's default `--udn-allowed-default-services`: a
/// blue pod reaches its cluster IP (through blue's management port and the host) while
/// another default-network Service stays out of reach; blue's cluster router holds the
/// route upstream writes. The clients run on node1, the endpoint on node2: the host's path
/// to a cluster IP with an endpoint on the same node fails on this machine's userspace
/// datapath for every host process (docs/lab.md, "A known failure on this machine").
fn a_udn_pod_reaches_the_allowed_default_services_only(sandbox: &Sandbox) -> Result<(), String> {
    let cluster_ip = |namespace: &str, name: &str| {
        sandbox
            .kubectl(&[
                "get",
                "svc",
                "-n",
                namespace,
                name,
                "-o",
                "jsonpath={.spec.clusterIP}",
            ])
            .trim()
            .to_owned()
    };
    let dns = cluster_ip("kube-system", "kube-dns");
    let route = sandbox.eventually("blue's route to kube-dns", || {
        sandbox
            .nbctl(
                "node1",
                &[
                    "--bare",
                    "--columns=ip_prefix,nexthop,policy",
                    "find",
                    "Logical_Router_Static_Route",
                    "external_ids:k8s.ovn.org/udn-enabled-default-service=kube-system/kube-dns",
                    "external_ids:k8s.ovn.org/network=blue_blue-network",
                ],
            )
            .ok()
            .map(|out| out.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|out| !out.is_empty())
    })?;
    if !route.starts_with(&format!("{dns} ")) || !route.ends_with(" dst-ip") {
        return Err(format!("blue's kube-dns route: {route}"));
    }
    let url = format!("http://{dns}:53/hostname");
    for from in [("blue", "blue-client"), ("blue", "blue-web-1")] {
        sandbox.eventually(&format!("{}/{} reaches kube-dns", from.0, from.1), || {
            sandbox
                .http_get(from.0, from.1, &url, 2)
                .filter(|body| body.trim() == DNS_POD.1)
        })?;
    }
    let web = cluster_ip("default", "web");
    let url = format!("http://{web}:80/hostname");
    if let Some(body) = sandbox.http_get("blue", "blue-client", &url, 3) {
        return Err(format!(
            "blue reached the default network's web {url}: {body}"
        ));
    }
    Ok(())
}

/// The EndpointSlices of `namespace` matching the label `selector`, as JSON.
fn slices_labelled(sandbox: &Sandbox, namespace: &str, selector: &str) -> Vec<Value> {
    let out = sandbox.kubectl_output(&[
        "get",
        "endpointslices",
        "-n",
        namespace,
        "-l",
        selector,
        "-o",
        "json",
    ]);
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v["items"].as_array().cloned())
        .unwrap_or_default()
}

/// The slices of Service `service` in `namespace` managed by `manager` (mirrors carry the
/// Service in `k8s.ovn.org/service-name`, Kubernetes' in `kubernetes.io/service-name`).
fn service_slices(sandbox: &Sandbox, namespace: &str, manager: &str, service: &str) -> Vec<Value> {
    let key = if manager == MIRROR {
        "k8s.ovn.org/service-name"
    } else {
        "kubernetes.io/service-name"
    };
    slices_labelled(
        sandbox,
        namespace,
        &format!("endpointslice.kubernetes.io/managed-by={manager},{key}={service}"),
    )
}

/// The slices of Service `web` in `namespace` managed by `manager`.
fn slices(sandbox: &Sandbox, namespace: &str, manager: &str) -> Vec<Value> {
    service_slices(sandbox, namespace, manager, "web")
}

fn addresses(slices: &[Value]) -> BTreeSet<String> {
    slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect()
}

fn bare(ip: String) -> String {
    ip.split('/').next().unwrap_or_default().to_owned()
}

fn mirrored_slices_carry_the_udn_addresses(sandbox: &Sandbox) -> Result<(), String> {
    let mut udn = BTreeSet::new();
    let mut default = BTreeSet::new();
    for (namespace, name, _) in &WEB[..2] {
        udn.insert(bare(sandbox.ip_on(namespace, name, "ovn-udn1")?));
        default.insert(bare(sandbox.ip_on(namespace, name, "eth0")?));
    }
    let source = sandbox.eventually("blue/web's default slice lists both pods", || {
        let found = slices(sandbox, "blue", DEFAULT_SLICES);
        (addresses(&found) == default).then_some(found)
    })?;
    let source_name = source[0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mirror = sandbox.eventually("blue/web's mirror lists the pods' UDN addresses", || {
        let found = slices(sandbox, "blue", MIRROR);
        (addresses(&found) == udn).then_some(found)
    })?;
    let meta = &mirror[0]["metadata"];
    if meta["labels"]["k8s.ovn.org/service-name"] != "web"
        || meta["annotations"]["k8s.ovn.org/source-endpointslice"] != source_name.as_str()
        || meta["annotations"]["k8s.ovn.org/endpointslice-network"]
            .as_str()
            .is_none_or(str::is_empty)
        || meta["labels"].get("kubernetes.io/service-name").is_some()
    {
        return Err(format!("the mirror's labels and annotations: {meta}"));
    }
    if meta["ownerReferences"] != source[0]["metadata"]["ownerReferences"] {
        return Err(format!(
            "the mirror's owners differ from the source's: {meta}"
        ));
    }
    // Deleted by hand: it comes back.
    let name = meta["name"].as_str().unwrap_or_default().to_owned();
    sandbox.delete("blue", &["endpointslice", &name])?;
    sandbox.eventually("the mirror made again", || {
        let found = slices(sandbox, "blue", MIRROR);
        (found.len() == 1
            && found[0]["metadata"]["name"] != name.as_str()
            && addresses(&found) == udn)
            .then_some(())
    })?;
    // The default network's namespace: slices, but no mirror.
    sandbox.eventually("default/web's default slice", || {
        (!slices(sandbox, "default", DEFAULT_SLICES).is_empty()).then_some(())
    })?;
    if !slices(sandbox, "default", MIRROR).is_empty() {
        return Err("a namespace on the default network got a mirror".into());
    }
    // The mirror goes with the Service.
    sandbox.delete("blue", &["service", "web"])?;
    sandbox.eventually("blue/web's slices gone with the Service", || {
        (slices(sandbox, "blue", MIRROR).is_empty()
            && slices(sandbox, "blue", DEFAULT_SLICES).is_empty())
        .then_some(())
    })?;
    Ok(())
}

fn nad(sandbox: &Sandbox) -> Option<Value> {
    let out = sandbox.kubectl_output(&[
        "get",
        "network-attachment-definitions",
        "-n",
        "nadtest",
        "foo-network",
        "-o",
        "json",
    ]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

fn an_in_use_nad_comes_back_and_an_unused_one_stays_deleted(
    sandbox: &Sandbox,
) -> Result<(), String> {
    sandbox.apply(FOO_NETWORK);
    let original = sandbox.eventually("foo-network created", || nad(sandbox))?;
    sandbox.delete(
        "nadtest",
        &["network-attachment-definitions", "foo-network"],
    )?;
    let deleted = Instant::now();
    let back = sandbox.eventually("foo-network recovered", || {
        nad(sandbox).filter(|n| n["metadata"]["uid"] != original["metadata"]["uid"])
    })?;
    if deleted.elapsed() > Duration::from_secs(2) {
        return Err(format!(
            "foo-network came back after {:?}",
            deleted.elapsed()
        ));
    }
    if back["spec"] != original["spec"] {
        return Err(format!(
            "the recovered spec differs: {} vs {}",
            back["spec"], original["spec"]
        ));
    }
    sandbox.eventually("the NetworkAttachmentDefinitionRecovered Event", || {
        let events = sandbox.kubectl(&["get", "events", "-n", "nadtest", "-o", "json"]);
        events
            .contains("NetworkAttachmentDefinitionRecovered")
            .then_some(())
    })?;
    // Without its pod, a deletion stands.
    sandbox.delete("nadtest", &["pod", "demo", "--grace-period=0", "--force"])?;
    sandbox.eventually("pod demo gone", || {
        sandbox.pod("nadtest", "demo").is_none().then_some(())
    })?;
    sandbox.delete(
        "nadtest",
        &["network-attachment-definitions", "foo-network"],
    )?;
    // The API deletes a NAD at once (it has no finalizer): any copy seen now is a recovery.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if nad(sandbox).is_some() {
            return Err("foo-network came back without a pod using it".into());
        }
        std::thread::park_timeout(Duration::from_millis(200));
    }
    Ok(())
}

/// Seed 002's example on a udn secondary network (the sandbox's kernel has no macvlan in a
/// netns): a secondary Layer3 UDN in `sec`, two `nginx-nad` pods and a client on it, a client
/// off it, and the headless, selector-less Service that opts in with `isim.dev/network`.
const SECONDARY: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: sec}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: sec-net, namespace: sec}
spec:
  topology: Layer3
  layer3:
    role: Secondary
    subnets: [{cidr: 10.60.0.0/16, hostSubnet: 24}]
---
apiVersion: v1
kind: Service
metadata:
  name: nginx-nad
  namespace: sec
  labels: {app.kubernetes.io/name: nginx-nad}
  annotations: {isim.dev/network: sec-net}
spec:
  clusterIP: None
  ports: [{name: http, port: 8080, protocol: TCP}]
"#;

/// Our secondary-network slices of `sec/nginx-nad`.
fn secondary_slices(sandbox: &Sandbox) -> Vec<Value> {
    service_slices(
        sandbox,
        "sec",
        "secondary-network-endpointslice-controller.k8s.ovn.org",
        "nginx-nad",
    )
}

fn a_secondary_network_service_lists_the_pods_secondary_ips(
    sandbox: &Sandbox,
) -> Result<(), String> {
    sandbox.apply(SECONDARY);
    sandbox.eventually("the NAD of sec-net", || {
        sandbox
            .kubectl_output(&[
                "get",
                "network-attachment-definitions",
                "-n",
                "sec",
                "sec-net",
            ])
            .status
            .success()
            .then_some(())
    })?;
    let backend_labels: &[(&str, &str)] = &[("app.kubernetes.io/name", "nginx-nad")];
    let pods = [
        PodSpec {
            namespace: "sec",
            name: "sec-a",
            node: "node1",
            networks: Some("sec-net"),
            labels: backend_labels,
            ..PodSpec::default()
        },
        PodSpec {
            namespace: "sec",
            name: "sec-b",
            node: "node2",
            networks: Some("sec-net"),
            labels: backend_labels,
            ..PodSpec::default()
        },
        PodSpec {
            namespace: "sec",
            name: "sec-client",
            node: "node1",
            networks: Some("sec-net"),
            ..PodSpec::default()
        },
        PodSpec {
            namespace: "sec",
            name: "sec-outsider",
            node: "node2",
            ..PodSpec::default()
        },
    ];
    sandbox.run_pods(&pods)?;
    let mut expected = BTreeSet::new();
    for name in ["sec-a", "sec-b"] {
        expected.insert(bare(sandbox.ip_on("sec", name, "net1")?));
    }
    sandbox.eventually("nginx-nad's slice lists the pods' net1 IPs", || {
        (addresses(&secondary_slices(sandbox)) == expected).then_some(())
    })?;
    // From a pod on the network the IPs answer; from one off it they time out.
    for ip in &expected {
        let url = format!("http://{ip}:8080/hostname");
        sandbox.eventually(&format!("sec-client reaches {ip}"), || {
            sandbox
                .http_get("sec", "sec-client", &url, 2)
                .filter(|b| b.starts_with("sec-"))
        })?;
        if let Some(body) = sandbox.http_get("sec", "sec-outsider", &url, 3) {
            return Err(format!(
                "sec-outsider, off the network, reached {ip}: {body}"
            ));
        }
    }
    // A deleted pod leaves the slice within 2 s.
    let gone = bare(sandbox.ip_on("sec", "sec-b", "net1")?);
    sandbox.delete("sec", &["pod", "sec-b"])?;
    let deleted = Instant::now();
    sandbox.eventually("sec-b out of the slice", || {
        (!addresses(&secondary_slices(sandbox)).contains(&gone)).then_some(())
    })?;
    if deleted.elapsed() > Duration::from_secs(2) {
        return Err(format!(
            "the slice dropped sec-b after {:?}",
            deleted.elapsed()
        ));
    }
    Ok(())
}

/// A virt-launcher pod of VM instance `vm-uid-1` in `blue` (the migration target when
/// `target`), as KubeVirt labels and owns them, whose readiness probe fails: KubeVirt reports
/// both launchers not ready during a migration.
fn launcher(name: &str, node: &str, target: bool) -> String {
    let spec = PodSpec {
        namespace: "blue",
        name,
        node,
        labels: &[("tier", "vm"), ("kubevirt.io", "virt-launcher")],
        ..PodSpec::default()
    };
    let mut pod: Value = serde_json::from_str(&spec.yaml()).unwrap_or_default();
    pod["metadata"]["ownerReferences"] = serde_json::json!([{
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "name": "vm", "uid": "vm-uid-1", "controller": true,
    }]);
    if target {
        pod["metadata"]["labels"]["kubevirt.io/migrationJobUID"] = "migration-uid-1".into();
    }
    pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = 9.into();
    pod.to_string()
}

const VM_SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: vm, namespace: blue}
spec:
  selector: {tier: vm}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
"#;

/// `(address, ready, serving, terminating)` of the endpoints of blue/vm's slices by `manager`.
fn vm_endpoints(sandbox: &Sandbox, manager: &str) -> Vec<(String, Value, Value, Value)> {
    let slices = service_slices(sandbox, "blue", manager, "vm");
    let mut found: Vec<(String, Value, Value, Value)> = slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            let c = &e["conditions"];
            (
                e["addresses"][0].as_str().unwrap_or_default().to_owned(),
                c["ready"].clone(),
                c["serving"].clone(),
                c["terminating"].clone(),
            )
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

fn vm_endpoints_stay_ready_during_a_live_migration_only(sandbox: &Sandbox) -> Result<(), String> {
    sandbox.apply(&launcher("vm-src", "node1", false));
    sandbox.apply(&launcher("vm-dst", "node2", true));
    let mut udn = BTreeSet::new();
    for name in ["vm-src", "vm-dst"] {
        let ip = sandbox.eventually(&format!("blue/{name} is wired"), || {
            sandbox.ip_on("blue", name, "ovn-udn1").ok()
        })?;
        udn.insert(bare(ip));
    }
    sandbox.apply(VM_SERVICE);
    // Kubernetes' slice says not ready; during the migration the mirror says ready.
    let yes = Value::Bool(true);
    let no = Value::Bool(false);
    sandbox.eventually("the default slice lists both launchers not ready", || {
        let found = vm_endpoints(sandbox, DEFAULT_SLICES);
        (found.len() == 2 && found.iter().all(|e| e.1 == no)).then_some(())
    })?;
    sandbox.eventually("the mirror keeps both launchers ready and serving", || {
        let found = vm_endpoints(sandbox, MIRROR);
        let addresses: BTreeSet<String> = found.iter().map(|e| e.0.clone()).collect();
        (addresses == udn && found.iter().all(|e| e.1 == yes && e.2 == yes && e.3 == no))
            .then_some(())
    })?;
    // The migration fails: KubeVirt deletes the target. The source's conditions are copied.
    sandbox.delete("blue", &["pod", "vm-dst", "--grace-period=0", "--force"])?;
    sandbox.eventually(
        "after the failed migration the mirror copies not ready",
        || {
            let found = vm_endpoints(sandbox, MIRROR);
            (found.len() == 1 && found[0].1 == no && found[0].2 == no).then_some(())
        },
    )?;
    sandbox.delete("blue", &["pod", "vm-src", "--grace-period=0", "--force"])?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    run_suite(
        "services",
        2,
        setup,
        &[
            (
                "a_cluster_ip_answers_only_inside_its_network",
                a_cluster_ip_answers_only_inside_its_network,
            ),
            (
                "a_node_port_on_a_udn_is_reachable_from_outside_and_across_networks",
                a_node_port_on_a_udn_is_reachable_from_outside_and_across_networks,
            ),
            (
                "a_udn_pod_reaches_the_allowed_default_services_only",
                a_udn_pod_reaches_the_allowed_default_services_only,
            ),
            (
                "mirrored_slices_carry_the_udn_addresses",
                mirrored_slices_carry_the_udn_addresses,
            ),
            (
                "vm_endpoints_stay_ready_during_a_live_migration_only",
                vm_endpoints_stay_ready_during_a_live_migration_only,
            ),
            (
                "an_in_use_nad_comes_back_and_an_unused_one_stays_deleted",
                an_in_use_nad_comes_back_and_an_unused_one_stays_deleted,
            ),
            (
                "a_secondary_network_service_lists_the_pods_secondary_ips",
                a_secondary_network_service_lists_the_pods_secondary_ips,
            ),
        ],
    )
}
