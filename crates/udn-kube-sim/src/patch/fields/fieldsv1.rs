//! The `FieldsV1` encoding of a field set: a JSON object tree whose keys are serialized
//! path elements (`f:name`, `k:{"name":"a"}`, `v:"x"`, `i:0`), `{}` for a member leaf and
//! `".": {}` for a member that has members below it. Children are written in
//! structured-merge-diff's element order (fields, keys, values, indices).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{FieldSet, Path, PathElement, Scalar};

/// Why a `fieldsV1` object does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FieldsError {
    /// A node that is not a JSON object.
    #[error("expected an object at {at}")]
    NotAnObject {
        /// The keys leading there.
        at: String,
    },
    /// A key that is not a serialized path element.
    #[error("unknown path element {key:?} at {at}")]
    BadElement {
        /// The key.
        key: String,
        /// The keys leading there.
        at: String,
    },
}

#[derive(Debug, Default)]
struct Node {
    member: bool,
    children: BTreeMap<PathElement, Node>,
}

/// Encode a set as `fieldsV1`.
pub(crate) fn encode(set: &FieldSet) -> Value {
    let mut root = Node::default();
    for path in set.iter() {
        let mut node = &mut root;
        for element in path {
            node = node.children.entry(element.clone()).or_default();
        }
        node.member = true;
    }
    encode_node(&root)
}

fn encode_node(node: &Node) -> Value {
    let mut out = Map::new();
    if node.member && !node.children.is_empty() {
        out.insert(".".to_owned(), Value::Object(Map::new()));
    }
    for (element, child) in &node.children {
        out.insert(serialize(element), encode_node(child));
    }
    Value::Object(out)
}

/// `f:`/`k:`/`v:`/`i:` form of an element.
pub(crate) fn serialize(element: &PathElement) -> String {
    match element {
        PathElement::Field(name) => format!("f:{name}"),
        PathElement::Key(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(name, value)| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(name).unwrap_or_default(),
                        value.json()
                    )
                })
                .collect();
            format!("k:{{{}}}", parts.join(","))
        }
        PathElement::Value(value) => format!("v:{}", value.json()),
        PathElement::Index(index) => format!("i:{index}"),
    }
}

fn parse(key: &str) -> Option<PathElement> {
    let (prefix, rest) = key.split_at_checked(2)?;
    match prefix {
        "f:" => Some(PathElement::Field(rest.to_owned())),
        "k:" => {
            let Value::Object(map) = serde_json::from_str::<Value>(rest).ok()? else {
                return None;
            };
            let mut fields: Vec<(String, Scalar)> = map
                .iter()
                .map(|(k, v)| (k.clone(), Scalar::of(v)))
                .collect();
            fields.sort();
            Some(PathElement::Key(fields))
        }
        "v:" => Scalar::parse(rest).map(PathElement::Value),
        "i:" => rest.parse().ok().map(PathElement::Index),
        _ => None,
    }
}

/// Decode `fieldsV1`.
pub(crate) fn decode(fields: &Value) -> Result<FieldSet, FieldsError> {
    let mut set = FieldSet::new();
    let mut path = Path::new();
    decode_node(fields, &mut path, &mut set)?;
    Ok(set)
}

fn decode_node(node: &Value, path: &mut Path, set: &mut FieldSet) -> Result<(), FieldsError> {
    let Value::Object(map) = node else {
        return Err(FieldsError::NotAnObject {
            at: super::path_display(path),
        });
    };
    if map.is_empty() && !path.is_empty() {
        set.insert(path.clone());
    }
    for (key, child) in map {
        if key == "." {
            if !path.is_empty() {
                set.insert(path.clone());
            }
            continue;
        }
        let element = parse(key).ok_or_else(|| FieldsError::BadElement {
            key: key.clone(),
            at: super::path_display(path),
        })?;
        path.push(element);
        let result = decode_node(child, path, set);
        path.pop();
        result?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trips_the_real_servers_shape() {
        let fields = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                ".": {}, "f:image": {}, "f:name": {},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
            }}},
            "f:metadata2": {"f:finalizers": {"v:\"a\"": {}}}
        });
        let set = decode(&fields).unwrap();
        assert!(set.contains(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into())
        ]));
        let encoded = encode(&set);
        assert_eq!(encoded, fields);
        let text = serde_json::to_string(&encoded).unwrap();
        assert!(
            text.starts_with(r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}}"#),
            "{text}"
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode(&json!({"x:y": {}})).is_err());
        assert!(decode(&json!({"f:a": 1})).is_err());
        assert!(decode(&json!([])).is_err());
    }
}
