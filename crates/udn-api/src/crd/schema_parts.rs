//! Hand-written schema fragments for fields whose upstream schema cannot be expressed with
//! derive attributes alone: an immutability rule that upstream lists *before* the rules of the
//! field's type, and `metav1.Condition` lists with the apimachinery bounds.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::cudn::LocalnetConfig;
use super::shared::{DualStackCidrs, Layer2Config, NetworkRole, NetworkTopology};

/// The transition rule that makes a field immutable.
const IMMUTABLE_RULE: &str = "self == oldSelf";

/// `T`'s schema with `self == oldSelf` (reported as `message`) as its first CEL rule, ahead
/// of the rules `T` carries itself (the order controller-gen emits for field markers).
fn immutable<T: JsonSchema>(generator: &mut SchemaGenerator, message: &str) -> Schema {
    let mut schema = T::json_schema(generator);
    let rule = json!({ "message": message, "rule": IMMUTABLE_RULE });
    let object = schema.ensure_object();
    match object.get_mut("x-kubernetes-validations") {
        Some(Value::Array(rules)) => rules.insert(0, rule),
        _ => {
            object.insert("x-kubernetes-validations".to_owned(), json!([rule]));
        }
    }
    schema
}

/// `layer3.joinSubnets`: a dual-stack CIDR list that cannot change.
pub(crate) fn immutable_join_subnets(generator: &mut SchemaGenerator) -> Schema {
    immutable::<DualStackCidrs>(generator, "joinSubnets is immutable")
}

/// `layer2`: immutable as a whole.
pub(crate) fn immutable_layer2(generator: &mut SchemaGenerator) -> Schema {
    immutable::<Layer2Config>(generator, "Layer2 is immutable")
}

/// `localnet`: immutable as a whole.
pub(crate) fn immutable_localnet(generator: &mut SchemaGenerator) -> Schema {
    immutable::<LocalnetConfig>(generator, "Localnet is immutable")
}

/// A string enum of `T` narrowed to `values`. schemars describes a documented unit enum
/// as a `oneOf` of constants (which kube folds into `enum`); that list is replaced.
fn only<T: JsonSchema>(generator: &mut SchemaGenerator, values: &[&str]) -> Schema {
    let mut schema = T::json_schema(generator);
    let object = schema.ensure_object();
    object.remove("oneOf");
    object.insert("type".to_owned(), json!("string"));
    object.insert("enum".to_owned(), json!(values));
    schema
}

/// `UserDefinedNetwork.spec.topology`: Layer2 or Layer3 (no Localnet for a namespace).
pub(crate) fn udn_topology(generator: &mut SchemaGenerator) -> Schema {
    only::<NetworkTopology>(generator, &["Layer2", "Layer3"])
}

/// `localnet.role`: Secondary only.
pub(crate) fn secondary_role(generator: &mut SchemaGenerator) -> Schema {
    only::<NetworkRole>(generator, &["Secondary"])
}

/// `spec.namespaceSelector`: a `metav1.LabelSelector` with the atomic merge markers the
/// apimachinery type declares (the selector and its expression lists are replaced whole).
pub(crate) fn label_selector(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = LabelSelector::json_schema(generator);
    let object = schema.ensure_object();
    object.insert("x-kubernetes-map-type".to_owned(), json!("atomic"));
    if let Some(Value::Object(expressions)) = object
        .get_mut("properties")
        .and_then(|properties| properties.get_mut("matchExpressions"))
    {
        expressions.insert("x-kubernetes-list-type".to_owned(), json!("atomic"));
        if let Some(Value::Object(values)) = expressions
            .get_mut("items")
            .and_then(|items| items.get_mut("properties"))
            .and_then(|properties| properties.get_mut("values"))
        {
            values.insert("x-kubernetes-list-type".to_owned(), json!("atomic"));
        }
    }
    schema
}

/// `status.conditions`: a list of `metav1.Condition` keyed by `type`, with the bounds and
/// patterns apimachinery declares on each field.
pub(crate) fn conditions(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "description": "Conditions of the network, one per type.",
        "items": {
            "type": "object",
            "description": "One aspect of the current state of the network.",
            "properties": {
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When the condition last changed status.",
                },
                "message": {
                    "type": "string",
                    "maxLength": 32768,
                    "description": "Human readable details about the last transition; may be empty.",
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "The metadata.generation the condition was computed from.",
                },
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "CamelCase identifier of the reason for the last transition.",
                },
                "status": {
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                    "description": "True, False or Unknown.",
                },
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "Condition type, CamelCase or foo.example.com/CamelCase.",
                },
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        },
        "x-kubernetes-list-map-keys": ["type"],
        "x-kubernetes-list-type": "map",
    })
}
