//! The OpenAPI v3 documents `kubectl` reads before it writes: `/openapi/v3` lists one
//! document per group version, and each document lists the paths of every served
//! resource with its operations, `x-kubernetes-group-version-kind` and query
//! parameters. That is what kubectl's field-validation check looks for (the PATCH
//! operation of the kind takes `fieldValidation`); finding it, `kubectl apply` (default
//! `--validate=strict`) sends `fieldValidation=Strict` and leaves validation to the
//! server. Schemas (`components`) are not served, so `kubectl explain` has nothing to
//! show and client-side apply uses its built-in strategic merge for core types and a
//! JSON merge patch for custom resources, as with a real server without schemas.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::resource::{ResourceKey, ResourceType};
use crate::sim::Sim;

use super::discovery::{KUBERNETES_VERSION, forbids_collection_delete};

const WRITE_PARAMS: [&str; 3] = ["dryRun", "fieldManager", "fieldValidation"];
const LIST_PARAMS: [&str; 10] = [
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];

fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the document of every served group version, with a content hash so
/// clients re-read a document when its types change.
pub(crate) fn root(sim: &Sim, types: &[ResourceType]) -> Value {
    let mut versions: Vec<(String, String)> = Vec::new();
    for rt in types {
        for version in &rt.versions {
            let gv = (rt.group.clone(), version.clone());
            if !versions.contains(&gv) {
                versions.push(gv);
            }
        }
    }
    let mut paths = Map::new();
    for (group, version) in versions {
        let path = group_version_path(&group, &version);
        let hash = fnv1a(
            document(sim, types, &group, &version)
                .to_string()
                .as_bytes(),
        );
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash:016X}")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`.
pub(crate) fn document(sim: &Sim, types: &[ResourceType], group: &str, version: &str) -> Value {
    let base = format!("/{}", group_version_path(group, version));
    let mut paths = Map::new();
    for rt in types
        .iter()
        .filter(|rt| rt.group == group && rt.versions.iter().any(|v| v == version))
    {
        let gvk = json!({"group": group, "version": version, "kind": rt.kind});
        let collection = if rt.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", rt.plural)
        } else {
            format!("{base}/{}", rt.plural)
        };
        let op = |action: &str, params: &[&str]| operation(rt, &gvk, action, params);
        let mut collection_ops = Map::new();
        collection_ops.insert("get".to_owned(), op("list", &LIST_PARAMS));
        collection_ops.insert("post".to_owned(), op("post", &WRITE_PARAMS));
        if !forbids_collection_delete(rt) {
            collection_ops.insert("delete".to_owned(), op("deletecollection", &["dryRun"]));
        }
        paths.insert(collection.clone(), Value::Object(collection_ops));
        let patch_params = ["dryRun", "fieldManager", "fieldValidation", "force"];
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": op("get", &[]),
                "put": op("put", &WRITE_PARAMS),
                "patch": op("patch", &patch_params),
                "delete": op("delete", &["dryRun", "propagationPolicy"]),
            }),
        );
        if rt.status_subresource {
            paths.insert(
                format!("{collection}/{{name}}/status"),
                json!({
                    "get": op("get", &[]),
                    "put": op("put", &WRITE_PARAMS),
                    "patch": op("patch", &patch_params),
                }),
            );
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": crd_schemas(sim, types, group, version)},
    })
}

/// The `openAPIV3Schema` of every custom resource of `group/version`, named as the real
/// server names them (`org.ovn.k8s.v1.UserDefinedNetwork` for `k8s.ovn.org`), with
/// `apiVersion`, `kind` and `metadata` added as the server adds them.
fn crd_schemas(
    sim: &Sim,
    types: &[ResourceType],
    group: &str,
    version: &str,
) -> BTreeMap<String, Value> {
    let crds = ResourceKey {
        group: "apiextensions.k8s.io".to_owned(),
        plural: "customresourcedefinitions".to_owned(),
    };
    let mut schemas = BTreeMap::new();
    for rt in types
        .iter()
        .filter(|rt| rt.group == group && !rt.validators.is_empty())
    {
        let Ok(crd) = sim.get(&crds, None, &format!("{}.{}", rt.plural, rt.group)) else {
            continue;
        };
        let schema = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|versions| {
                versions
                    .iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
            })
            .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
            .cloned();
        let Some(Value::Object(mut schema)) = schema else {
            continue;
        };
        let properties = schema.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(properties) = properties {
            properties.entry("apiVersion").or_insert_with(|| json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            properties.entry("kind").or_insert_with(|| json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            properties.entry("metadata").or_insert_with(
                || json!({"type": "object", "description": "Standard object's metadata."}),
            );
        }
        schema.insert(
            "x-kubernetes-group-version-kind".to_owned(),
            json!([{"group": group, "version": version, "kind": rt.kind}]),
        );
        let reversed: Vec<&str> = group.rsplit('.').collect();
        schemas.insert(
            format!("{}.{version}.{}", reversed.join("."), rt.kind),
            Value::Object(schema),
        );
    }
    schemas
}

fn operation(rt: &ResourceType, gvk: &Value, action: &str, params: &[&str]) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|name| json!({"name": name, "in": "query", "schema": {"type": "string"}}))
        .collect();
    json!({
        "operationId": format!("{action}{}", rt.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": parameters,
        "responses": {"200": {"description": "OK"}},
    })
}

/// FNV-1a, 64 bits: a stable content hash for the document URLs.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
