//! Bad input through a whole zone (in-memory API server, real Northbound and Southbound
//! ovsdb-servers): an unparsable NetConf, a pod naming a missing NAD, a node without
//! annotations yet, an unparsable `k8s.ovn.org/open-default-ports`. Each gives a Warning
//! Event on its object and a log line naming the object and the reason, once; nothing
//! crashes, the rest of the zone keeps converging, and fixing the input converges too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
mod zone_common;

use serde_json::{Value, json};
use support::*;
use zone_common::*;

/// A NAD whose `spec.config` is `config` as written.
fn raw_nad(ns: &str, name: &str, config: &str) -> Value {
    json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": ns,
            "annotations": {"k8s.ovn.org/network-id": "9"}},
        "spec": {"config": config}})
}

fn node1(extra: &[(&str, &[&str])]) -> NodeAnnotations {
    let mut subnets: Vec<(&str, &[&str])> = vec![
        ("default", &["10.244.0.0/24"]),
        ("blue_net", &["10.128.1.0/24"]),
    ];
    subnets.extend_from_slice(extra);
    test_node("node1", 2, &subnets)
}

/// The ACLs whose match names the logical port `port`.
async fn open_port_acls(zones: &Zones, port: &str) -> Vec<String> {
    let dump = nb_dump(&zones.zone("node1").nb).await;
    let outport = format!(r#"outport == \"{port}\""#);
    let inport = format!(r#"inport == \"{port}\""#);
    dump["ACL"]
        .values()
        .filter_map(|row| row.get("match"))
        .filter(|m| m.contains(&outport) || m.contains(&inport))
        .cloned()
        .collect()
}

/// Every (reason, note) published about the object, with the number of times each was
/// published (a repeat shows as `series.count`).
async fn published(zones: &Zones, kind: &str, key: &str) -> Vec<(String, String, i32)> {
    let mut out: Vec<(String, String, i32)> = events_about(&zones.client, kind, key)
        .await
        .into_iter()
        .map(|e| (e.reason, e.note, e.series.unwrap_or(1)))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gives_events_and_log_lines_and_the_rest_converges() {
    // Capture warnings before the zone logs any.
    logged();
    let zones = Zones::start(&["node1"], zone_config).await;
    let client = zones.client.clone();
    put_node(&client, &node1(&[])).await;
    // A node that just joined: nothing annotated yet.
    put_node_json(
        &client,
        json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node3"}}),
    )
    .await;
    for (ns, primary) in [("plain", false), ("blue", true), ("bad", false)] {
        put_namespace(&client, ns, primary).await;
    }
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "10.128.0.0/16/24"}),
            1,
        ),
    )
    .await;
    // Not JSON at all, and an OVN-Kubernetes NetConf whose subnets do not parse.
    put_nad(
        &client,
        raw_nad(
            "bad",
            "broken",
            r#"{"type": "ovn-k8s-cni-overlay", "name": "#,
        ),
    )
    .await;
    put_nad(
        &client,
        raw_nad(
            "bad",
            "subnets",
            &json!({"cniVersion": "1.1.0", "name": "bad_subnets", "type": "ovn-k8s-cni-overlay",
                "topology": "layer3", "role": "secondary", "subnets": "10.300.0.0/16/24",
                "netAttachDefName": "bad/subnets"})
            .to_string(),
        ),
    )
    .await;
    put_pod(&client, "plain", "a", "node1", json!({})).await;
    put_pod(
        &client,
        "plain",
        "m",
        "node1",
        json!({"k8s.v1.cni.cncf.io/networks": "missing"}),
    )
    .await;
    put_pod(&client, "blue", "b", "node1", json!({})).await;
    put_pod(
        &client,
        "bad",
        "x",
        "node1",
        json!({"k8s.v1.cni.cncf.io/networks": "subnets"}),
    )
    .await;

    // Meanwhile the rest converges: addresses, ports, the valid network's rows; a pod naming
    // a missing or invalid NAD still gets its default network (as upstream, whose default
    // network controller does not look at secondary requests).
    pod_networks(&client, "plain", "a", &["default"], WAIT).await;
    pod_networks(&client, "plain", "m", &["default"], WAIT).await;
    pod_networks(&client, "bad", "x", &["default"], WAIT).await;
    let b = pod_networks(&client, "blue", "b", &["default", "blue/net"], WAIT).await;
    assert_eq!(b["blue/net"].ip_addresses, [net("10.128.1.3/24")]);
    zones.converged().await;
    let dump = nb_dump(&zones.zone("node1").nb).await;
    for port in ["plain_a", "blue_b", "blue.net_blue_b", "plain_m", "bad_x"] {
        assert!(
            named(&dump, "Logical_Switch_Port", port).is_some(),
            "{port}"
        );
    }
    assert!(named(&dump, "Logical_Switch", "blue_net_node1").is_some());
    let m = raw_pod_networks(&client, "plain", "m").await.unwrap();
    assert!(!m.contains("plain/missing"), "{m}");

    // The Events and log lines, each naming its object and the reason.
    let broken = wait_event(
        &client,
        "NetworkAttachmentDefinition",
        "bad/broken",
        "InvalidConfig",
        "Failed to parse network config: NetworkAttachmentDefinition bad/broken: spec.config",
    )
    .await;
    let subnets = wait_event(
        &client,
        "NetworkAttachmentDefinition",
        "bad/subnets",
        "InvalidConfig",
        "10.300.0.0/16",
    )
    .await;
    let missing = wait_event(
        &client,
        "Pod",
        "plain/m",
        "NetworkAttachmentDefinitionNotFound",
        "plain/missing",
    )
    .await;
    assert_eq!(
        missing.note,
        "failed to find a network attachment definition plain/missing requested in k8s.v1.cni.cncf.io/networks"
    );
    wait_event(
        &client,
        "Pod",
        "bad/x",
        "NetworkAttachmentDefinitionNotFound",
        "bad/subnets",
    )
    .await;
    // A node's Events go to the namespace `default`, which this API server does not have
    // yet: publishing fails, is logged, and is tried again once the namespace exists.
    wait_logged(
        "failed to publish event",
        &[("object", "node node3"), ("reason", "ErrorReconcilingNode")],
    )
    .await;
    put_namespace(&client, "default", false).await;
    let node3 = wait_event(
        &client,
        "Node",
        "node3",
        "ErrorReconcilingNode",
        "k8s.ovn.org/node-chassis-id",
    )
    .await;
    assert!(node3.note.contains("node3"), "{node3:?}");
    for (object, reason, event) in [
        (
            "NetworkAttachmentDefinition bad/broken",
            "InvalidConfig",
            &broken,
        ),
        (
            "NetworkAttachmentDefinition bad/subnets",
            "InvalidConfig",
            &subnets,
        ),
        (
            "pod plain/m",
            "NetworkAttachmentDefinitionNotFound",
            &missing,
        ),
        ("node node3", "ErrorReconcilingNode", &node3),
    ] {
        wait_logged(
            "warning event",
            &[
                ("object", object),
                ("reason", reason),
                ("note", &event.note),
            ],
        )
        .await;
    }

    // More passes (a new pod) publish nothing again.
    let before = [
        ("NetworkAttachmentDefinition", "bad/broken"),
        ("NetworkAttachmentDefinition", "bad/subnets"),
        ("Pod", "plain/m"),
        ("Pod", "bad/x"),
        ("Node", "node3"),
    ];
    let mut counts = Vec::new();
    for (kind, key) in &before {
        counts.push(published(&zones, kind, key).await);
    }
    put_pod(&client, "plain", "c", "node1", json!({})).await;
    pod_networks(&client, "plain", "c", &["default"], WAIT).await;
    zones.more_passes(2).await;
    for ((kind, key), was) in before.iter().zip(&counts) {
        let now = published(&zones, kind, key).await;
        assert_eq!(&now, was, "{kind} {key}: events repeated");
        assert!(now.iter().all(|(_, _, n)| *n == 1), "{kind} {key}: {now:?}");
    }

    // Fixing the input converges: the missing NAD appears, the bad one is corrected, the
    // node gets its annotations.
    put_node(
        &client,
        &node1(&[
            ("plain_missing", &["10.150.1.0/24"]),
            ("bad_subnets", &["10.151.1.0/24"]),
        ]),
    )
    .await;
    put_nad(
        &client,
        nad_json(
            "plain",
            "missing",
            "plain_missing",
            json!({"topology": "layer3", "role": "secondary", "subnets": "10.150.0.0/16/24"}),
            4,
        ),
    )
    .await;
    update_nad(
        &client,
        nad_json(
            "bad",
            "subnets",
            "bad_subnets",
            json!({"topology": "layer3", "role": "secondary", "subnets": "10.151.0.0/16/24"}),
            5,
        ),
    )
    .await;
    put_node(
        &client,
        &test_node(
            "node3",
            4,
            &[
                ("default", &["10.244.2.0/24"]),
                ("blue_net", &["10.128.3.0/24"]),
                ("plain_missing", &["10.150.3.0/24"]),
                ("bad_subnets", &["10.151.3.0/24"]),
            ],
        ),
    )
    .await;
    let m = pod_networks(&client, "plain", "m", &["default", "plain/missing"], WAIT).await;
    assert_eq!(m["plain/missing"].ip_addresses, [net("10.150.1.3/24")]);
    let x = pod_networks(&client, "bad", "x", &["default", "bad/subnets"], WAIT).await;
    assert_eq!(x["bad/subnets"].ip_addresses, [net("10.151.1.3/24")]);
    eventually("node3's chassis", || async {
        let chassis = zones
            .zone("node1")
            .sb
            .sbctl(&["--bare", "--columns=name", "list", "Chassis"])
            .unwrap();
        chassis.contains("chassis-node3")
    })
    .await;
    zones.converged().await;
    let dump = nb_dump(&zones.zone("node1").nb).await;
    for port in [
        "plain_m",
        "plain.missing_plain_m",
        "bad_x",
        "bad.subnets_bad_x",
        "tstor-node3",
        "bad_subnets_tstor-node3",
    ] {
        assert!(
            named(&dump, "Logical_Switch_Port", port).is_some(),
            "{port}"
        );
    }
    // The broken NAD stays broken, and stays reported once.
    assert_eq!(
        published(&zones, "NetworkAttachmentDefinition", "bad/broken").await,
        counts[0]
    );
    zones.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_open_default_ports_remove_the_acls_and_warn_once() {
    // Capture warnings before the zone logs any.
    logged();
    let zones = Zones::start(&["node1"], zone_config).await;
    let client = zones.client.clone();
    put_node(&client, &node1(&[])).await;
    put_namespace(&client, "blue", true).await;
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "10.128.0.0/16/24"}),
            1,
        ),
    )
    .await;
    let open = "k8s.ovn.org/open-default-ports";
    put_pod(
        &client,
        "blue",
        "p",
        "node1",
        json!({open: "- protocol: tcp\n  port: 80"}),
    )
    .await;
    pod_networks(&client, "blue", "p", &["default", "blue/net"], WAIT).await;
    zones.converged().await;
    let acls = open_port_acls(&zones, "blue_p").await;
    assert_eq!(acls.len(), 2, "{acls:?}");
    assert!(acls.iter().any(|m| m.contains("tcp.dst == 80")), "{acls:?}");

    annotate_pod(
        &client,
        "blue",
        "p",
        open,
        Some("- protocol: ppp\n  port: 80"),
    )
    .await;
    eventually("the open-port ACLs are removed", || async {
        open_port_acls(&zones, "blue_p").await.is_empty()
    })
    .await;
    let event = wait_event(
        &client,
        "Pod",
        "blue/p",
        "ErrorUpdatingResource",
        "open ports",
    )
    .await;
    // Upstream's text (ovn.go ensureLocalZonePod), its double space included.
    assert_eq!(
        event.note,
        "failed to update UDN pod  blue/p open ports: invalid protocol ppp"
    );
    wait_logged(
        "warning event",
        &[
            ("object", "pod blue/p"),
            ("reason", "ErrorUpdatingResource"),
        ],
    )
    .await;
    zones.converged().await;
    // The pod itself stays connected.
    let dump = nb_dump(&zones.zone("node1").nb).await;
    for port in ["blue_p", "blue.net_blue_p"] {
        assert!(
            named(&dump, "Logical_Switch_Port", port).is_some(),
            "{port}"
        );
    }

    // More passes publish it no more.
    let was = published(&zones, "Pod", "blue/p").await;
    assert_eq!(was.len(), 1, "{was:?}");
    put_pod(&client, "blue", "q", "node1", json!({})).await;
    pod_networks(&client, "blue", "q", &["default", "blue/net"], WAIT).await;
    zones.more_passes(2).await;
    assert_eq!(published(&zones, "Pod", "blue/p").await, was);
    assert!(open_port_acls(&zones, "blue_p").await.is_empty());

    // Fixed: the ACLs come back with the new ports.
    annotate_pod(
        &client,
        "blue",
        "p",
        open,
        Some("- protocol: udp\n  port: 53"),
    )
    .await;
    eventually("the open-port ACLs are back", || async {
        let acls = open_port_acls(&zones, "blue_p").await;
        acls.len() == 2 && acls.iter().any(|m| m.contains("udp.dst == 53"))
    })
    .await;
    zones.converged().await;
    zones.stop().await;
}
