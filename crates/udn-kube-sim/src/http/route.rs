//! Request paths resolved as the real server resolves them: discovery documents, and
//! `/api/v1/...` or `/apis/<group>/<version>/...` resource paths (namespaced, cluster
//! scoped, all-namespaces, the `status` subresource, the legacy `/watch/` prefix).

use crate::error::ApiError;
use crate::options::Subresource;
use crate::resource::ResourceType;
use crate::sim::Sim;

use super::query::percent_decode;

/// What a path names.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    GroupList,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1`, `/apis/<group>/<version>`.
    ResourceList {
        /// API group (`""` for core).
        group: String,
        /// Version.
        version: String,
    },
    /// `/openapi/v3`.
    OpenApiV3Root,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`.
    OpenApiV3 {
        /// API group (`""` for core).
        group: String,
        /// Version.
        version: String,
    },
    /// A resource path.
    Resource(Box<Target>),
    /// `/api/v1/namespaces/<namespace>/pods/<name>/binding`.
    PodBinding {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        name: String,
    },
}

/// The resource a request targets.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The resource type.
    pub(crate) rt: ResourceType,
    /// The version in the path.
    pub(crate) version: String,
    /// Namespace (`None` for cluster-scoped types and all-namespaces requests).
    pub(crate) namespace: Option<String>,
    /// Object name (`None` for a collection).
    pub(crate) name: Option<String>,
    /// Main resource or `status`.
    pub(crate) subresource: Subresource,
    /// The path started with the legacy `/watch/` segment.
    pub(crate) legacy_watch: bool,
}

/// Resolves `path` against the types `sim` serves.
pub(crate) fn resolve(sim: &Sim, path: &str) -> Result<Route, ApiError> {
    let trimmed = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    let segments: Vec<String> = trimmed.split('/').skip(1).map(percent_decode).collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["version"] => Ok(Route::Version),
        ["healthz" | "livez" | "readyz"] => Ok(Route::Health),
        ["api"] => Ok(Route::CoreVersions),
        ["apis"] => Ok(Route::GroupList),
        ["openapi", "v3"] => Ok(Route::OpenApiV3Root),
        ["openapi", "v3", "api", version] => {
            served_version(sim, "", version).map(|version| Route::OpenApiV3 {
                group: String::new(),
                version,
            })
        }
        ["openapi", "v3", "apis", group, version] => {
            served_version(sim, group, version).map(|version| Route::OpenApiV3 {
                group: (*group).to_owned(),
                version,
            })
        }
        ["apis", group] => {
            if sim.resource_types().iter().any(|rt| rt.group == *group) {
                Ok(Route::Group((*group).to_owned()))
            } else {
                Err(ApiError::resource_not_served())
            }
        }
        ["api", version] => served_version(sim, "", version).map(|version| Route::ResourceList {
            group: String::new(),
            version,
        }),
        ["apis", group, version] => {
            served_version(sim, group, version).map(|version| Route::ResourceList {
                group: (*group).to_owned(),
                version,
            })
        }
        [
            "api",
            "v1",
            "namespaces",
            namespace,
            "pods",
            name,
            "binding",
        ] => Ok(Route::PodBinding {
            namespace: (*namespace).to_owned(),
            name: (*name).to_owned(),
        }),
        ["api", version, rest @ ..] => resource(sim, "", version, rest),
        ["apis", group, version, rest @ ..] => resource(sim, group, version, rest),
        _ => Err(ApiError::resource_not_served()),
    }
}

fn served_version(sim: &Sim, group: &str, version: &str) -> Result<String, ApiError> {
    let served = sim
        .resource_types()
        .iter()
        .any(|rt| rt.group == group && rt.versions.iter().any(|v| v == version));
    if served {
        Ok(version.to_owned())
    } else {
        Err(ApiError::resource_not_served())
    }
}

fn resource(sim: &Sim, group: &str, version: &str, rest: &[&str]) -> Result<Route, ApiError> {
    let (legacy_watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let namespaced_type = |plural: &str| {
        sim.resource_type(group, version, plural)
            .filter(|rt| rt.namespaced)
    };
    let (rt, namespace, name, sub) = match rest {
        ["namespaces", namespace, plural, tail @ ..] if namespaced_type(plural).is_some() => {
            let rt = namespaced_type(plural).ok_or_else(ApiError::resource_not_served)?;
            let (name, sub) = name_and_subresource(tail)?;
            (rt, Some((*namespace).to_owned()), name, sub)
        }
        [plural, tail @ ..] => {
            let rt = sim
                .resource_type(group, version, plural)
                .ok_or_else(ApiError::resource_not_served)?;
            let (name, sub) = name_and_subresource(tail)?;
            if rt.namespaced && name.is_some() {
                return Err(ApiError::resource_not_served());
            }
            (rt, None, name, sub)
        }
        [] => return Err(ApiError::resource_not_served()),
    };
    let subresource = match sub {
        None => Subresource::Main,
        Some("status") if rt.status_subresource && !legacy_watch => Subresource::Status,
        Some(_) => return Err(ApiError::resource_not_served()),
    };
    Ok(Route::Resource(Box::new(Target {
        rt,
        version: version.to_owned(),
        namespace,
        name,
        subresource,
        legacy_watch,
    })))
}

fn name_and_subresource<'a>(
    tail: &[&'a str],
) -> Result<(Option<String>, Option<&'a str>), ApiError> {
    match tail {
        [] => Ok((None, None)),
        [name] => Ok((Some((*name).to_owned()), None)),
        [name, sub] => Ok((Some((*name).to_owned()), Some(*sub))),
        _ => Err(ApiError::resource_not_served()),
    }
}
