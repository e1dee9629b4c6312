//! The core/v1 kinds: Namespace, Node, Pod, Service, Event, ConfigMap.

use k8s_openapi::api::core::v1 as openapi;
use k8s_pb::api::core::v1 as pb;
use serde_json::json;

use super::{
    int_or_string_int, int_or_string_str, metadata, micro_time, quantities, round_trip, s, strings,
    time,
};

#[test]
fn namespace() {
    let (meta, meta_json) = metadata(None);
    let object = pb::Namespace {
        metadata: Some(meta),
        spec: Some(pb::NamespaceSpec {
            finalizers: vec!["kubernetes".to_owned()],
        }),
        status: Some(pb::NamespaceStatus {
            phase: s("Terminating"),
            conditions: vec![pb::NamespaceCondition {
                r#type: s("NamespaceDeletionContentFailure"),
                status: s("False"),
                last_transition_time: time(1_700_000_050),
                reason: s("ContentDeleted"),
                message: s("All content successfully deleted"),
            }],
        }),
    };
    let json = json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": meta_json,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating", "conditions": [{
            "type": "NamespaceDeletionContentFailure", "status": "False",
            "lastTransitionTime": "2023-11-14T22:14:10Z", "reason": "ContentDeleted",
            "message": "All content successfully deleted"}]},
    });
    round_trip::<_, openapi::Namespace>("v1", "Namespace", &object, json);
}

#[test]
fn node() {
    let (meta, meta_json) = metadata(None);
    let info = pb::NodeSystemInfo {
        machine_id: s("m"),
        system_uuid: s("u"),
        boot_id: s("b"),
        kernel_version: s("6.1.0"),
        os_image: s("Debian GNU/Linux 12"),
        container_runtime_version: s("containerd://1.7"),
        kubelet_version: s("v1.33.0"),
        kube_proxy_version: s(""),
        operating_system: s("linux"),
        architecture: s("amd64"),
        swap: None,
    };
    let object = pb::Node {
        metadata: Some(meta),
        spec: Some(pb::NodeSpec {
            pod_cidr: s("10.244.1.0/24"),
            pod_cid_rs: vec!["10.244.1.0/24".to_owned(), "fd00:10:244:1::/64".to_owned()],
            unschedulable: Some(true),
            taints: vec![pb::Taint {
                key: s("node.kubernetes.io/unschedulable"),
                value: None,
                effect: s("NoSchedule"),
                time_added: time(1_700_000_010),
            }],
            ..Default::default()
        }),
        status: Some(pb::NodeStatus {
            capacity: quantities(&[("cpu", "2"), ("memory", "8Gi"), ("pods", "110")]),
            allocatable: quantities(&[("cpu", "1900m")]),
            conditions: vec![pb::NodeCondition {
                r#type: s("Ready"),
                status: s("True"),
                last_heartbeat_time: time(1_700_000_020),
                last_transition_time: time(1_700_000_000),
                reason: s("KubeletReady"),
                message: s("kubelet is posting ready status"),
            }],
            addresses: vec![pb::NodeAddress {
                r#type: s("InternalIP"),
                address: s("172.18.0.2"),
            }],
            daemon_endpoints: Some(pb::NodeDaemonEndpoints {
                kubelet_endpoint: Some(pb::DaemonEndpoint { port: Some(10250) }),
            }),
            node_info: Some(info),
            ..Default::default()
        }),
    };
    let json = json!({
        "apiVersion": "v1", "kind": "Node", "metadata": meta_json,
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24", "fd00:10:244:1::/64"],
            "unschedulable": true,
            "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                "timeAdded": "2023-11-14T22:13:30Z"}]},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "1900m"},
            "conditions": [{"type": "Ready", "status": "True",
                "lastHeartbeatTime": "2023-11-14T22:13:40Z", "lastTransitionTime": "2023-11-14T22:13:20Z",
                "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "m", "systemUUID": "u", "bootID": "b", "kernelVersion": "6.1.0",
                "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7",
                "kubeletVersion": "v1.33.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64"},
        },
    });
    round_trip::<_, openapi::Node>("v1", "Node", &object, json);
}

fn container() -> pb::Container {
    pb::Container {
        name: s("web"),
        image: s("registry.k8s.io/e2e-test-images/agnhost:2.53"),
        command: vec!["/agnhost".to_owned()],
        args: vec!["netexec".to_owned(), "--http-port=8080".to_owned()],
        ports: vec![pb::ContainerPort {
            name: s("http"),
            container_port: Some(8080),
            protocol: s("TCP"),
            ..Default::default()
        }],
        env: vec![pb::EnvVar {
            name: s("MODE"),
            value: s("1"),
            value_from: None,
        }],
        resources: Some(pb::ResourceRequirements {
            limits: quantities(&[("cpu", "500m"), ("memory", "128Mi")]),
            requests: quantities(&[("cpu", "100m")]),
            claims: Vec::new(),
        }),
        readiness_probe: Some(pb::Probe {
            handler: Some(pb::ProbeHandler {
                http_get: Some(pb::HttpGetAction {
                    path: s("/healthz"),
                    port: int_or_string_str("http"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            period_seconds: Some(5),
            ..Default::default()
        }),
        liveness_probe: Some(pb::Probe {
            handler: Some(pb::ProbeHandler {
                tcp_socket: Some(pb::TcpSocketAction {
                    port: int_or_string_int(8080),
                    host: None,
                }),
                ..Default::default()
            }),
            failure_threshold: Some(10),
            ..Default::default()
        }),
        security_context: Some(pb::SecurityContext {
            run_as_user: Some(0),
            privileged: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn pod() {
    let (meta, meta_json) = metadata(Some("blue"));
    let status = pb::PodStatus {
        phase: s("Running"),
        conditions: vec![pb::PodCondition {
            r#type: s("Ready"),
            status: s("True"),
            last_transition_time: time(1_700_000_030),
            ..Default::default()
        }],
        host_ip: s("172.18.0.2"),
        pod_ip: s("10.244.1.5"),
        pod_ips: vec![pb::PodIp {
            ip: s("10.244.1.5"),
        }],
        start_time: time(1_700_000_001),
        container_statuses: vec![pb::ContainerStatus {
            name: s("web"),
            state: Some(pb::ContainerState {
                running: Some(pb::ContainerStateRunning {
                    started_at: time(1_700_000_002),
                }),
                ..Default::default()
            }),
            // Go writes these non-pointer fields even when zero; JSON shows them.
            ready: Some(false),
            restart_count: Some(0),
            image: s("agnhost:2.53"),
            image_id: s(""),
            started: Some(false),
            ..Default::default()
        }],
        ..Default::default()
    };
    let object = pb::Pod {
        metadata: Some(meta),
        spec: Some(pb::PodSpec {
            volumes: vec![pb::Volume {
                name: s("data"),
                volume_source: Some(pb::VolumeSource {
                    empty_dir: Some(pb::EmptyDirVolumeSource {
                        medium: None,
                        size_limit: Some(super::quantity("1Gi")),
                    }),
                    ..Default::default()
                }),
            }],
            containers: vec![container()],
            restart_policy: s("Always"),
            termination_grace_period_seconds: Some(0),
            node_selector: strings(&[("kubernetes.io/hostname", "node1")]),
            node_name: s("node1"),
            host_network: Some(true),
            ..Default::default()
        }),
        status: Some(status),
    };
    let json = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta_json,
        "spec": {
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
            "containers": [{
                "name": "web", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                "command": ["/agnhost"], "args": ["netexec", "--http-port=8080"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "1"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                "livenessProbe": {"tcpSocket": {"port": 8080}, "failureThreshold": 10},
                "securityContext": {"runAsUser": 0, "privileged": false},
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"kubernetes.io/hostname": "node1"}, "nodeName": "node1", "hostNetwork": true,
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2023-11-14T22:13:50Z"}],
            "hostIP": "172.18.0.2", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}],
            "startTime": "2023-11-14T22:13:21Z",
            "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": "2023-11-14T22:13:22Z"}},
                "ready": false, "restartCount": 0, "image": "agnhost:2.53", "imageID": "", "started": false}],
        },
    });
    round_trip::<_, openapi::Pod>("v1", "Pod", &object, json);
}

#[test]
fn service() {
    let (meta, meta_json) = metadata(Some("blue"));
    let object = pb::Service {
        metadata: Some(meta),
        spec: Some(pb::ServiceSpec {
            ports: vec![
                pb::ServicePort {
                    name: s("http"),
                    protocol: s("TCP"),
                    port: Some(80),
                    target_port: int_or_string_int(8080),
                    node_port: Some(30080),
                    app_protocol: None,
                },
                pb::ServicePort {
                    name: s("https"),
                    protocol: s("TCP"),
                    port: Some(443),
                    target_port: int_or_string_str("https"),
                    app_protocol: s("kubernetes.io/h2c"),
                    node_port: None,
                },
            ],
            selector: strings(&[("app", "web")]),
            cluster_ip: s("10.96.0.10"),
            cluster_ips: vec!["10.96.0.10".to_owned()],
            r#type: s("LoadBalancer"),
            session_affinity: s("None"),
            external_traffic_policy: s("Local"),
            health_check_node_port: Some(31000),
            ip_families: vec!["IPv4".to_owned()],
            ip_family_policy: s("SingleStack"),
            allocate_load_balancer_node_ports: Some(false),
            internal_traffic_policy: s("Cluster"),
            ..Default::default()
        }),
        status: Some(pb::ServiceStatus {
            load_balancer: Some(pb::LoadBalancerStatus {
                ingress: vec![pb::LoadBalancerIngress {
                    ip: s("192.0.2.10"),
                    ..Default::default()
                }],
            }),
            conditions: Vec::new(),
        }),
    };
    let json = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta_json,
        "spec": {
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080},
                {"name": "https", "protocol": "TCP", "port": 443, "targetPort": "https",
                 "appProtocol": "kubernetes.io/h2c"},
            ],
            "selector": {"app": "web"}, "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "type": "LoadBalancer", "sessionAffinity": "None", "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 31000, "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "allocateLoadBalancerNodePorts": false, "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}},
    });
    round_trip::<_, openapi::Service>("v1", "Service", &object, json);
}

#[test]
fn event() {
    let (meta, meta_json) = metadata(Some("blue"));
    let object = pb::Event {
        metadata: Some(meta),
        involved_object: Some(pb::ObjectReference {
            kind: s("Pod"),
            namespace: s("blue"),
            name: s("web"),
            uid: s("9a1f"),
            api_version: s("v1"),
            resource_version: s("7"),
            field_path: s("spec.containers{web}"),
        }),
        reason: s("Started"),
        message: s("Started container web"),
        source: Some(pb::EventSource {
            component: s("kubelet"),
            host: s("node1"),
        }),
        first_timestamp: time(1_700_000_000),
        last_timestamp: time(1_700_000_060),
        count: Some(2),
        r#type: s("Normal"),
        event_time: micro_time(1_700_000_000, 123_456_000),
        action: s("Start"),
        reporting_component: s("kubelet"),
        reporting_instance: s("node1"),
        ..Default::default()
    };
    let json = json!({
        "apiVersion": "v1", "kind": "Event", "metadata": meta_json,
        "involvedObject": {"kind": "Pod", "namespace": "blue", "name": "web", "uid": "9a1f",
            "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{web}"},
        "reason": "Started", "message": "Started container web",
        "source": {"component": "kubelet", "host": "node1"},
        "firstTimestamp": "2023-11-14T22:13:20Z", "lastTimestamp": "2023-11-14T22:14:20Z",
        "count": 2, "type": "Normal", "eventTime": "2023-11-14T22:13:20.123456Z",
        "action": "Start", "reportingComponent": "kubelet", "reportingInstance": "node1",
    });
    round_trip::<_, openapi::Event>("v1", "Event", &object, json);
}

#[test]
fn config_map() {
    let (meta, meta_json) = metadata(Some("blue"));
    let object = pb::ConfigMap {
        metadata: Some(meta),
        immutable: Some(false),
        data: strings(&[("a", "1"), ("b", "")]),
        binary_data: [("bin".to_owned(), vec![0u8, 1, 2, 255])].into(),
    };
    let json = json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta_json,
        "immutable": false, "data": {"a": "1", "b": ""}, "binaryData": {"bin": "AAEC/w=="},
    });
    round_trip::<_, openapi::ConfigMap>("v1", "ConfigMap", &object, json);
}
