//! No body, of any patch kind, makes the patch code panic.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

/// Keys that steer the patch code: object fields of the fixtures, directives, JSON
/// patch operation fields.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "finalizers",
    "ownerReferences",
    "managedFields",
    "spec",
    "status",
    "containers",
    "ports",
    "containerPort",
    "protocol",
    "env",
    "value",
    "image",
    "volumes",
    "conditions",
    "type",
    "layer2",
    "subnets",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$setElementOrder/finalizers",
    "$deleteFromPrimitiveList/finalizers",
    "$deleteFromPrimitiveList",
    "op",
    "path",
    "from",
    "add",
    "remove",
    "replace",
    "move",
    "copy",
    "test",
    "delete",
    "merge",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        prop::sample::select(KEYS).prop_map(|k| json!(k)),
        "[/a-z0-9~-]{0,12}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|fields| {
                let map: Map<String, Value> =
                    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                Value::Object(map)
            }),
        ]
    })
}

fn contexts() -> Vec<(Value, PatchContext<'static>)> {
    let forced = PatchContext {
        force: true,
        ..by("fuzz", udn_ctx())
    };
    let status = PatchContext {
        subresource: Subresource::Status,
        ..by("fuzz", pod_ctx())
    };
    let managed = run(
        Some(&pod()),
        PatchKind::Merge,
        &json!({"metadata": {"labels": {"x": "y"}}}),
        &by("seed", pod_ctx()),
    )
    .unwrap();
    let hinted = PatchContext {
        subresource: Subresource::Status,
        schema_hints: Some(super::hints::udn_crd_hints()),
        ..by("fuzz", udn_ctx())
    };
    vec![
        (pod(), by("fuzz", pod_ctx())),
        (managed, status),
        (udn(), forced),
        (udn(), udn_ctx()),
        (udn(), hinted),
    ]
}

const KINDS: [PatchKind; 4] = [
    PatchKind::Json,
    PatchKind::Merge,
    PatchKind::StrategicMerge,
    PatchKind::Apply,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_json_bodies_never_panic(body in value()) {
        let bytes = serde_json::to_vec(&body).unwrap();
        for (object, ctx) in contexts() {
            for kind in KINDS {
                let _ = apply_patch(Some(&object), kind, &bytes, &ctx);
                let _ = apply_patch(None, kind, &bytes, &ctx);
            }
        }
    }

    #[test]
    fn random_operation_lists_never_panic(ops in prop::collection::vec(
        (prop::sample::select(&["add", "remove", "replace", "move", "copy", "test"][..]),
         "(/(metadata|spec|labels|finalizers|containers|0|1|-|name|image|x)){0,4}",
         "(/(metadata|spec|labels|finalizers|containers|0|1|-|name)){0,3}",
         value()),
        0..8,
    )) {
        let body: Vec<Value> = ops
            .into_iter()
            .map(|(op, path, from, value)| json!({"op": op, "path": path, "from": from, "value": value}))
            .collect();
        let bytes = serde_json::to_vec(&body).unwrap();
        for (object, ctx) in contexts() {
            let _ = apply_patch(Some(&object), PatchKind::Json, &bytes, &ctx);
        }
    }

    #[test]
    fn objects_built_from_random_patches_can_be_patched_again(
        first in value(),
        second in value(),
    ) {
        for (object, ctx) in contexts() {
            for kind in KINDS {
                let bytes = serde_json::to_vec(&first).unwrap();
                let Ok(patched) = apply_patch(Some(&object), kind, &bytes, &ctx) else {
                    continue;
                };
                let bytes = serde_json::to_vec(&second).unwrap();
                for again in KINDS {
                    let _ = apply_patch(Some(&patched), again, &bytes, &ctx);
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        for (object, ctx) in contexts() {
            for kind in KINDS {
                let _ = apply_patch(Some(&object), kind, &bytes, &ctx);
            }
        }
    }
}
