//! Round trips of every kind: an object encoded by prost (`k8s-pb`) decodes to the JSON
//! that `k8s-openapi` serializes for the same object, and that JSON encodes back to the
//! same prost object. The prost objects are written as Go clients write them: special
//! messages (Time, IntOrString) with all their fields.

mod core_v1;
mod other_groups;

use std::collections::BTreeMap;
use std::fmt::Debug;

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::super::{decode, encode};

pub(super) fn s(text: &str) -> Option<String> {
    Some(text.to_owned())
}

pub(super) fn time(seconds: i64) -> Option<meta::Time> {
    Some(meta::Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

pub(super) fn micro_time(seconds: i64, nanos: i32) -> Option<meta::MicroTime> {
    Some(meta::MicroTime {
        seconds: Some(seconds),
        nanos: Some(nanos),
    })
}

pub(super) fn quantity(text: &str) -> Quantity {
    Quantity { string: s(text) }
}

pub(super) fn quantities(items: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), quantity(v)))
        .collect()
}

pub(super) fn strings(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub(super) fn int_or_string_int(value: i32) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(0),
        int_val: Some(value),
        str_val: s(""),
    })
}

pub(super) fn int_or_string_str(value: &str) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(value),
    })
}

/// Metadata with most of ObjectMeta's quirks: labels, an owner with `controller: true`,
/// times, managedFields with its raw `fieldsV1`, a zero pointer (`deletionGracePeriodSeconds`).
pub(super) fn metadata(namespace: Option<&str>) -> (meta::ObjectMeta, Value) {
    let pb = meta::ObjectMeta {
        name: s("x"),
        namespace: namespace.and_then(s),
        uid: s("6c3a9e2e-2f6b-4a39-9d2a-1f7c1b1f0a01"),
        resource_version: s("42"),
        generation: Some(3),
        creation_timestamp: time(1_700_000_000),
        deletion_timestamp: time(1_700_000_100),
        deletion_grace_period_seconds: Some(0),
        labels: strings(&[("app", "web"), ("empty", "")]),
        annotations: strings(&[("note", "a\nb")]),
        owner_references: vec![meta::OwnerReference {
            api_version: s("apps/v1"),
            kind: s("ReplicaSet"),
            name: s("web-1"),
            uid: s("0d6f0b5e-5a8b-4d36-a0d5-3ab3c3f8e9aa"),
            controller: Some(true),
            block_owner_deletion: Some(false),
        }],
        finalizers: vec!["example.com/keep".to_owned()],
        managed_fields: vec![meta::ManagedFieldsEntry {
            manager: s("kubectl"),
            operation: s("Apply"),
            api_version: s("v1"),
            time: time(1_700_000_000),
            fields_type: s("FieldsV1"),
            fields_v1: Some(meta::FieldsV1 {
                raw: Some(br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#.to_vec()),
            }),
            subresource: None,
        }],
        ..Default::default()
    };
    let mut json = serde_json::json!({
        "name": "x",
        "uid": "6c3a9e2e-2f6b-4a39-9d2a-1f7c1b1f0a01",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2023-11-14T22:13:20Z",
        "deletionTimestamp": "2023-11-14T22:15:00Z",
        "deletionGracePeriodSeconds": 0,
        "labels": {"app": "web", "empty": ""},
        "annotations": {"note": "a\nb"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
            "uid": "0d6f0b5e-5a8b-4d36-a0d5-3ab3c3f8e9aa", "controller": true, "blockOwnerDeletion": false}],
        "finalizers": ["example.com/keep"],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
            "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}],
    });
    if let Some(namespace) = namespace {
        json["namespace"] = Value::from(namespace);
    }
    (pb, json)
}

/// The enveloped body of a prost message.
pub(super) fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// Checks both directions for one object: `pb` (prost) and `json`, the object as a JSON
/// client writes it (checked against, and normalized by, the `k8s-openapi` type `O`).
pub(super) fn round_trip<P, O>(api_version: &str, kind: &str, pb: &P, json: Value)
where
    P: prost::Message + Default + PartialEq + Debug,
    O: DeserializeOwned + Serialize,
{
    let typed: O = match serde_json::from_value(json.clone()) {
        Ok(typed) => typed,
        Err(error) => panic!("{kind}: the JSON fixture is not a k8s-openapi object: {error}"),
    };
    let expected = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        expected, json,
        "{kind}: the fixture is not k8s-openapi's own JSON"
    );
    let decoded = decode(&envelope(api_version, kind, pb.encode_to_vec())).unwrap();
    assert_eq!(decoded, expected, "{kind}: protobuf -> JSON");
    let encoded = encode(&decoded).unwrap();
    let unknown = Unknown::decode(&encoded[4..]).unwrap();
    let type_meta = unknown.type_meta.unwrap_or_default();
    assert_eq!(type_meta.api_version.as_deref(), Some(api_version));
    assert_eq!(type_meta.kind.as_deref(), Some(kind));
    let back = P::decode(unknown.raw.unwrap_or_default().as_slice()).unwrap();
    assert_eq!(&back, pb, "{kind}: JSON -> protobuf");
}
