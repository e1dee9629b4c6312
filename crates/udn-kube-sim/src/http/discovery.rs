//! Discovery documents as the real server serves them: `/version`, `/api`, `/apis`,
//! `/apis/<group>`, `/api/v1` and `/apis/<group>/<version>` (legacy discovery), and the
//! aggregated `APIGroupDiscoveryList` of `/api` and `/apis` when the client asks for it.

use serde_json::{Value, json};

use crate::resource::ResourceType;

/// The Kubernetes version the server reports (the API level of the k8s-openapi types it
/// serves).
pub const KUBERNETES_VERSION: &str = "v1.33.0";

const STATUS_VERBS: [&str; 3] = ["get", "patch", "update"];

/// The verbs of a resource type, as the real server lists them (namespaces have no
/// `deletecollection`).
pub(crate) fn verbs(rt: &ResourceType) -> Vec<&'static str> {
    let all = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    all.into_iter()
        .filter(|verb| !(forbids_collection_delete(rt) && *verb == "deletecollection"))
        .collect()
}

/// Namespaces cannot be deleted as a collection.
pub(crate) fn forbids_collection_delete(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "namespaces"
}

/// `/version`.
pub(crate) fn version() -> Value {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": "33",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "udn-kube-sim",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    })
}

/// `/api`: the core versions.
pub(crate) fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    })
}

/// The non-core groups in serving order (first appearance), each with its versions.
fn groups(types: &[ResourceType]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for rt in types.iter().filter(|rt| !rt.group.is_empty()) {
        let index = match groups.iter().position(|(g, _)| *g == rt.group) {
            Some(index) => index,
            None => {
                groups.push((rt.group.clone(), Vec::new()));
                groups.len() - 1
            }
        };
        if let Some((_, versions)) = groups.get_mut(index) {
            for version in &rt.versions {
                if !versions.contains(version) {
                    versions.push(version.clone());
                }
            }
        }
    }
    groups
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

/// `/apis`: APIGroupList.
pub(crate) fn group_list(types: &[ResourceType]) -> Value {
    let groups: Vec<Value> = groups(types)
        .iter()
        .map(|(name, versions)| group_json(name, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`: APIGroup.
pub(crate) fn group(types: &[ResourceType], name: &str) -> Value {
    let versions = groups(types)
        .into_iter()
        .find(|(g, _)| g == name)
        .map(|(_, versions)| versions)
        .unwrap_or_default();
    let mut group = group_json(name, &versions);
    if let Value::Object(map) = &mut group {
        map.insert("kind".to_owned(), json!("APIGroup"));
        map.insert("apiVersion".to_owned(), json!("v1"));
    }
    group
}

fn serves(rt: &ResourceType, group: &str, version: &str) -> bool {
    rt.group == group && rt.versions.iter().any(|v| v == version)
}

/// `/api/v1`, `/apis/<group>/<version>`: APIResourceList.
pub(crate) fn resource_list(types: &[ResourceType], group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for rt in types.iter().filter(|rt| serves(rt, group, version)) {
        let mut resource = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": verbs(rt),
        });
        if !rt.short_names.is_empty() {
            resource["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            resource["categories"] = json!(rt.categories);
        }
        resources.push(resource);
        if rt.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": STATUS_VERBS,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    })
}

/// Aggregated discovery of the core group (`core == true`, `/api`) or of every other
/// group (`/apis`), as `apidiscovery.k8s.io/<discovery_version>` APIGroupDiscoveryList.
pub(crate) fn aggregated(types: &[ResourceType], core: bool, discovery_version: &str) -> Value {
    let groups: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_owned()])]
    } else {
        groups(types)
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| {
                    let resources: Vec<Value> = types
                        .iter()
                        .filter(|rt| serves(rt, group, version))
                        .map(|rt| aggregated_resource(rt, version))
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if group.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": group, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{discovery_version}"),
        "metadata": {},
        "items": items,
    })
}

fn aggregated_resource(rt: &ResourceType, version: &str) -> Value {
    let response_kind = json!({"group": rt.group, "version": version, "kind": rt.kind});
    let mut resource = json!({
        "resource": rt.plural,
        "responseKind": response_kind,
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": verbs(rt),
    });
    if !rt.short_names.is_empty() {
        resource["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        resource["categories"] = json!(rt.categories);
    }
    if rt.status_subresource {
        resource["subresources"] = json!([{
            "subresource": "status",
            "responseKind": response_kind,
            "verbs": STATUS_VERBS,
        }]);
    }
    resource
}

/// The `Content-Type` of an aggregated discovery response.
pub(crate) fn aggregated_content_type(discovery_version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={discovery_version};as=APIGroupDiscoveryList")
}
