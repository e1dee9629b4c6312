//! Protobuf request bodies of the built-in types kubectl's typed commands write.
//!
//! client-go (so kubectl) sends `application/vnd.kubernetes.protobuf` bodies for built-in
//! types: `kubectl create namespace` and `kubectl create service ...` do. The server
//! otherwise speaks JSON, so this decodes those bodies into the JSON objects they encode:
//! the `k8s\0` envelope (`runtime.Unknown`), then the object by a field table of
//! Namespace, Service and DeleteOptions (field numbers of k8s.io/api's and apimachinery's
//! `generated.proto`). Fields outside the tables are skipped; zero scalars are dropped, as
//! Go's JSON `omitempty` drops them. Any other type gets 415 and should be sent as JSON.

use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// The protobuf envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\0";

/// The media type of Kubernetes protobuf.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A string; dropped when empty.
    Str,
    /// An integer; dropped when zero.
    Int,
    /// A bool; dropped when false (Go `bool` with `omitempty`).
    Bool,
    /// A `*bool`: kept when false.
    OptBool,
    /// `map<string, string>`.
    StringMap,
    /// `intstr.IntOrString`.
    IntOrString,
    /// A nested message.
    Message(&'static [Field]),
}

#[derive(Clone, Copy, Debug)]
struct Field {
    number: u64,
    name: &'static str,
    kind: Kind,
    repeated: bool,
}

const fn one(number: u64, name: &'static str, kind: Kind) -> Field {
    Field {
        number,
        name,
        kind,
        repeated: false,
    }
}

const fn many(number: u64, name: &'static str, kind: Kind) -> Field {
    Field {
        number,
        name,
        kind,
        repeated: true,
    }
}

const OWNER_REFERENCE: &[Field] = &[
    one(1, "kind", Kind::Str),
    one(3, "name", Kind::Str),
    one(4, "uid", Kind::Str),
    one(5, "apiVersion", Kind::Str),
    one(6, "controller", Kind::OptBool),
    one(7, "blockOwnerDeletion", Kind::OptBool),
];

const OBJECT_META: &[Field] = &[
    one(1, "name", Kind::Str),
    one(2, "generateName", Kind::Str),
    one(3, "namespace", Kind::Str),
    one(5, "uid", Kind::Str),
    one(6, "resourceVersion", Kind::Str),
    one(11, "labels", Kind::StringMap),
    one(12, "annotations", Kind::StringMap),
    many(13, "ownerReferences", Kind::Message(OWNER_REFERENCE)),
    many(14, "finalizers", Kind::Str),
];

const NAMESPACE: &[Field] = &[
    one(1, "metadata", Kind::Message(OBJECT_META)),
    one(
        2,
        "spec",
        Kind::Message(&[many(1, "finalizers", Kind::Str)]),
    ),
    one(3, "status", Kind::Message(&[one(1, "phase", Kind::Str)])),
];

const SERVICE_PORT: &[Field] = &[
    one(1, "name", Kind::Str),
    one(2, "protocol", Kind::Str),
    one(3, "port", Kind::Int),
    one(4, "targetPort", Kind::IntOrString),
    one(5, "nodePort", Kind::Int),
    one(6, "appProtocol", Kind::Str),
];

const SERVICE_SPEC: &[Field] = &[
    many(1, "ports", Kind::Message(SERVICE_PORT)),
    one(2, "selector", Kind::StringMap),
    one(3, "clusterIP", Kind::Str),
    one(4, "type", Kind::Str),
    many(5, "externalIPs", Kind::Str),
    one(7, "sessionAffinity", Kind::Str),
    one(8, "loadBalancerIP", Kind::Str),
    many(9, "loadBalancerSourceRanges", Kind::Str),
    one(10, "externalName", Kind::Str),
    one(11, "externalTrafficPolicy", Kind::Str),
    one(12, "healthCheckNodePort", Kind::Int),
    one(13, "publishNotReadyAddresses", Kind::Bool),
    one(17, "ipFamilyPolicy", Kind::Str),
    many(18, "clusterIPs", Kind::Str),
    many(19, "ipFamilies", Kind::Str),
    one(20, "allocateLoadBalancerNodePorts", Kind::OptBool),
    one(21, "loadBalancerClass", Kind::Str),
    one(22, "internalTrafficPolicy", Kind::Str),
    one(23, "trafficDistribution", Kind::Str),
];

const SERVICE: &[Field] = &[
    one(1, "metadata", Kind::Message(OBJECT_META)),
    one(2, "spec", Kind::Message(SERVICE_SPEC)),
];

const DELETE_OPTIONS: &[Field] = &[
    one(1, "gracePeriodSeconds", Kind::Int),
    one(
        2,
        "preconditions",
        Kind::Message(&[
            one(1, "uid", Kind::Str),
            one(2, "resourceVersion", Kind::Str),
        ]),
    ),
    one(3, "orphanDependents", Kind::OptBool),
    one(4, "propagationPolicy", Kind::Str),
    many(5, "dryRun", Kind::Str),
];

/// Whether `body` is a Kubernetes protobuf envelope.
pub(crate) fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

fn unsupported(what: &str) -> ApiError {
    ApiError {
        code: 415,
        reason: "UnsupportedMediaType",
        message: format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml ({what})"
        ),
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    }
}

fn malformed(why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "the protobuf body of the request is malformed: {why}"
    ))
}

/// Decodes a protobuf-encoded Namespace, Service or DeleteOptions into its JSON form.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("it does not start with the k8s protobuf magic"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for item in Reader(envelope) {
        match item? {
            (1, Wire::Bytes(type_meta)) => {
                for field in Reader(type_meta) {
                    match field? {
                        (1, Wire::Bytes(v)) => api_version = utf8(v)?,
                        (2, Wire::Bytes(v)) => kind = utf8(v)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(bytes)) => raw = bytes,
            _ => {}
        }
    }
    let table = match kind.as_str() {
        "Namespace" => NAMESPACE,
        "Service" => SERVICE,
        "DeleteOptions" => DELETE_OPTIONS,
        other => {
            return Err(unsupported(&format!(
                "protobuf is decoded for Namespace, Service and DeleteOptions only, not {other:?}; send JSON"
            )));
        }
    };
    let mut object = Map::new();
    object.insert("apiVersion".to_owned(), json!(api_version));
    object.insert("kind".to_owned(), json!(kind));
    if let Value::Object(fields) = message(raw, table)? {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

fn utf8(bytes: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| malformed("a string is not UTF-8"))
}

fn message(bytes: &[u8], table: &[Field]) -> Result<Value, ApiError> {
    let mut out = Map::new();
    for item in Reader(bytes) {
        let (number, wire) = item?;
        let Some(field) = table.iter().find(|f| f.number == number) else {
            continue;
        };
        let Some(value) = scalar_or_message(field.kind, wire)? else {
            continue;
        };
        match (field.repeated, field.kind) {
            (true, _) => {
                let list = out.entry(field.name).or_insert_with(|| json!([]));
                if let Value::Array(items) = list {
                    items.push(value);
                }
            }
            (false, Kind::StringMap) => {
                let map = out.entry(field.name).or_insert_with(|| json!({}));
                if let (Value::Object(map), Value::Object(entry)) = (map, value) {
                    map.extend(entry);
                }
            }
            (false, _) => {
                out.insert(field.name.to_owned(), value);
            }
        }
    }
    Ok(Value::Object(out))
}

/// One field's JSON value; `None` for a dropped zero value.
fn scalar_or_message(kind: Kind, wire: Wire<'_>) -> Result<Option<Value>, ApiError> {
    let value = match (kind, wire) {
        (Kind::Str, Wire::Bytes(b)) => Some(json!(utf8(b)?)).filter(|v| v != ""),
        (Kind::Int, Wire::Varint(n)) => Some(json!(n.cast_signed())).filter(|v| v != 0),
        (Kind::Bool, Wire::Varint(n)) => (n != 0).then_some(json!(true)),
        (Kind::OptBool, Wire::Varint(n)) => Some(json!(n != 0)),
        (Kind::Message(table), Wire::Bytes(b)) => Some(message(b, table)?),
        (Kind::StringMap, Wire::Bytes(b)) => {
            let (mut key, mut value) = (String::new(), String::new());
            for item in Reader(b) {
                match item? {
                    (1, Wire::Bytes(k)) => key = utf8(k)?,
                    (2, Wire::Bytes(v)) => value = utf8(v)?,
                    _ => {}
                }
            }
            Some(json!({ key: value }))
        }
        (Kind::IntOrString, Wire::Bytes(b)) => {
            let (mut is_string, mut int, mut string) = (false, 0u64, String::new());
            for item in Reader(b) {
                match item? {
                    (1, Wire::Varint(t)) => is_string = t == 1,
                    (2, Wire::Varint(i)) => int = i,
                    (3, Wire::Bytes(s)) => string = utf8(s)?,
                    _ => {}
                }
            }
            Some(if is_string {
                json!(string)
            } else {
                json!(int.cast_signed())
            })
        }
        _ => return Err(malformed("a field has an unexpected wire type")),
    };
    Ok(value)
}

/// A field's payload by wire type.
#[derive(Clone, Copy, Debug)]
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// Iterates the `(field number, payload)` pairs of one message.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .0
                .split_first()
                .ok_or_else(|| malformed("truncated varint"))?;
            self.0 = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint too long"))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], ApiError> {
        if len > self.0.len() {
            return Err(malformed("truncated field"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<(u64, Wire<'a>), ApiError> {
        let tag = self.varint()?;
        let wire = match tag & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => self.take(8).map(|_| Wire::Fixed)?,
            2 => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| malformed("length overflows"))?;
                Wire::Bytes(self.take(len)?)
            }
            5 => self.take(4).map(|_| Wire::Fixed)?,
            _ => return Err(malformed("unsupported wire type")),
        };
        Ok((tag >> 3, wire))
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<(u64, Wire<'a>), ApiError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let item = self.field();
        if item.is_err() {
            self.0 = &[];
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn decodes_kubectl_create_namespace() {
        // `kubectl create namespace x` (kubectl 1.32) as sent on the wire.
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
        // `kubectl create service nodeport np --tcp=443:https -n default` (kubectl 1.32).
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
                }
            })
        );
    }

    #[test]
    fn refuses_other_kinds_and_garbage() {
        // Unknown{typeMeta{apiVersion "v1", kind "Pod"}, raw ""}
        let pod = hex("6b3873000a090a027631120350 6f64".replace(' ', "").as_str());
        assert_eq!(decode(&pod).map_err(|e| e.code), Err(415));
        assert_eq!(decode(b"k8s\0\x0a\xff").map_err(|e| e.code), Err(400));
        assert!(!is_protobuf(b"{}"));
    }
}
