//! Bodies kubectl 1.32 sends, byte for byte.

use serde_json::json;

use super::super::{decode, is_protobuf};

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn decodes_kubectl_create_namespace() {
    // `kubectl create namespace x`: Go writes every non-pointer field, so the empty
    // strings, the zero creationTimestamp and the empty spec and status are on the wire.
    let body = hex(
        "6b3873000a0f0a02763112094e616d65737061636512190a110a017812001a0022002a0032003800420012001a020a001a002200",
    );
    assert!(is_protobuf(&body));
    assert_eq!(
        decode(&body).unwrap(),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {}, "status": {}})
    );
}

#[test]
fn decodes_kubectl_create_service_nodeport() {
    // `kubectl create service nodeport np --tcp=443:https -n default`.
    let body = hex(
        "6b3873000a0d0a02763112075365727669636512730a240a026e7012001a0764656661756c7422002a003200380042005a090a0361707012026e7012470a220a093434332d6874747073120354435018bb03220b080110001a056874747073280012090a0361707012026e701a0022084e6f6465506f72743a00420052005a00600068001a020a001a002200",
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "np", "namespace": "default", "labels": {"app": "np"}},
            "spec": {
                "ports": [{"name": "443-https", "protocol": "TCP", "port": 443, "targetPort": "https"}],
                "selector": {"app": "np"},
                "type": "NodePort"
            },
            "status": {"loadBalancer": {}}
        })
    );
}

#[test]
fn refuses_unknown_kinds_and_garbage() {
    // Unknown{typeMeta{apiVersion "example.com/v1", kind "Widget"}, raw ""}
    let mut widget = b"k8s\0".to_vec();
    let type_meta = b"\x0a\x0eexample.com/v1\x12\x06Widget";
    widget.push(0x0a);
    widget.push(type_meta.len() as u8);
    widget.extend_from_slice(type_meta);
    assert_eq!(decode(&widget).map_err(|e| e.code), Err(415));
    assert_eq!(decode(b"k8s\0\x0a\xff").map_err(|e| e.code), Err(400));
    assert!(!is_protobuf(b"{}"));
}
