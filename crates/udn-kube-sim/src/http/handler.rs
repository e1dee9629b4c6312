//! Requests on resource paths: the verb (get, list, watch, create, update, patch,
//! delete, deletecollection) from the method and path, options from the query and body,
//! then one call of the [`Sim`] API.

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, Method, Response};
use serde_json::Value;

use crate::error::ApiError;
use crate::options::{PatchKind, Subresource};
use crate::resource::ResourceKey;
use crate::sim::Sim;

use super::accept::{Endpoint, Negotiated, Representation, negotiate};
use super::body::ResponseBody;
use super::discovery::forbids_collection_delete;
use super::query::Query;
use super::route::Target;
use super::{protobuf, response, table, watch};

/// One request on a resource path.
#[derive(Debug)]
pub(crate) struct ResourceRequest<'a> {
    /// The resolved target.
    pub(crate) target: &'a Target,
    /// The method.
    pub(crate) method: &'a Method,
    /// Request headers.
    pub(crate) headers: &'a HeaderMap,
    /// The decoded query.
    pub(crate) query: &'a Query,
    /// The request body.
    pub(crate) body: Bytes,
}

fn header(headers: &HeaderMap, name: http::header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed("the server does not allow this method on the requested resource")
}

/// Serves `req` from `sim`.
pub(crate) fn serve(
    sim: &Sim,
    req: ResourceRequest<'_>,
) -> Result<Response<ResponseBody>, ApiError> {
    let target = req.target;
    let key = target.rt.key();
    let namespace = target.namespace.as_deref();
    let endpoint = Endpoint::Resource {
        protobuf: protobuf::has_form(&target.rt.api_version(), &target.rt.kind),
    };
    let negotiated = negotiate(header(req.headers, ACCEPT), endpoint)?;
    let pretty = req.query.pretty();
    let render = |code: u16, value: Value| -> Result<Response<ResponseBody>, ApiError> {
        let value = match negotiated.representation {
            Representation::Table => {
                table::table(&target.rt, &value, req.query.include_object()?, true)
            }
            Representation::PartialMetadata => table::partial_metadata_of(&value),
            Representation::Object | Representation::AggregatedDiscovery(_) => value,
        };
        response::document(code, &value, pretty, negotiated.encoding)
    };
    let is_main = target.subresource == Subresource::Main;
    let all_namespaces = target.rt.namespaced && namespace.is_none();
    match (req.method, target.name.as_deref()) {
        (&Method::GET, name) if is_main && (target.legacy_watch || req.query.watch()?) => {
            start_watch(sim, &req, &key, name, negotiated)
        }
        (&Method::GET, None) => render(200, sim.list(&key, namespace, &req.query.list_options()?)?),
        (&Method::GET, Some(name)) => render(200, sim.get(&key, namespace, name)?),
        (&Method::POST, None) if !all_namespaces => {
            let object = decode_object(&req)?;
            let opts = req.query.write_options()?;
            render(201, sim.create(&key, namespace, object, &opts)?)
        }
        (&Method::PUT, Some(name)) => {
            let object = decode_object(&req)?;
            let opts = req.query.write_options()?;
            render(
                200,
                sim.update(&key, namespace, name, object, target.subresource, &opts)?,
            )
        }
        (&Method::PATCH, Some(name)) => {
            let content_type = header(req.headers, CONTENT_TYPE).unwrap_or("");
            let kind = PatchKind::from_content_type(content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
            let opts = req.query.write_options()?;
            if kind == PatchKind::Apply && opts.field_manager.is_none() {
                return Err(ApiError::bad_request(
                    "fieldManager is required for apply requests",
                ));
            }
            let creates = kind == PatchKind::Apply && sim.get(&key, namespace, name).is_err();
            let patched = sim.patch(
                &key,
                namespace,
                name,
                kind,
                &req.body,
                target.subresource,
                &opts,
            )?;
            render(if creates { 201 } else { 200 }, patched)
        }
        (&Method::DELETE, Some(name)) if is_main => {
            let opts = req.query.delete_options(&req.body)?;
            render(200, sim.delete(&key, namespace, name, &opts)?)
        }
        (&Method::DELETE, None) if !all_namespaces && !forbids_collection_delete(&target.rt) => {
            let opts = req.query.delete_options(&req.body)?;
            let list = req.query.list_options()?;
            render(200, sim.delete_collection(&key, namespace, &list, &opts)?)
        }
        _ => Err(method_not_allowed()),
    }
}

fn start_watch(
    sim: &Sim,
    req: &ResourceRequest<'_>,
    key: &ResourceKey,
    name: Option<&str>,
    negotiated: Negotiated,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut opts = req.query.watch_options()?;
    if let Some(name) = name {
        let by_name = format!("metadata.name={name}");
        opts.list.field_selector = Some(match opts.list.field_selector.take() {
            Some(existing) => format!("{existing},{by_name}"),
            None => by_name,
        });
    }
    let encoding = negotiated.encoding;
    let render = watch::Render {
        rt: req.target.rt.clone(),
        representation: negotiated.representation,
        include: req.query.include_object()?,
        encoding,
    };
    match sim.watch(key, req.target.namespace.as_deref(), &opts) {
        Ok(events) => Ok(response::stream(watch::events(events, render), encoding)),
        Err(error) if error.code == 410 => {
            Ok(response::stream(watch::error(&error, encoding), encoding))
        }
        Err(error) => Err(error),
    }
}

/// 415 for a create or update body in a media type the server does not read for this
/// type (custom resources take no protobuf).
fn unsupported_body(content_type: &str, protobuf_accepted: bool) -> ApiError {
    let protobuf_listed = if protobuf_accepted {
        format!(", {}", protobuf::MEDIA_TYPE)
    } else {
        String::new()
    };
    ApiError {
        code: 415,
        reason: "UnsupportedMediaType",
        message: format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml{protobuf_listed} (got {content_type:?})"
        ),
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    }
}

/// The object of a create or update: JSON (or YAML) with `apiVersion` and `kind` of the
/// path's type, filled in when absent.
fn decode_object(req: &ResourceRequest<'_>) -> Result<Value, ApiError> {
    let rt = &req.target.rt;
    let content_type = header(req.headers, CONTENT_TYPE).unwrap_or("application/json");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let protobuf_accepted = protobuf::has_form(&rt.api_version(), &rt.kind);
    let decoded: Result<Value, String> = match essence {
        "application/json" | "" => serde_json::from_slice(&req.body).map_err(|e| e.to_string()),
        "application/yaml" => serde_saphyr::from_slice(&req.body).map_err(|e| e.to_string()),
        protobuf::MEDIA_TYPE if protobuf_accepted => Ok(protobuf::decode(&req.body)?),
        _ => return Err(unsupported_body(content_type, protobuf_accepted)),
    };
    let mut object = decoded.map_err(|e| {
        ApiError::bad_request(format!(
            "the body of the request could not be decoded as a {}: {e}",
            rt.kind
        ))
    })?;
    let Value::Object(map) = &mut object else {
        return Err(ApiError::bad_request(format!(
            "the body of the request is not a {} object",
            rt.kind
        )));
    };
    let expected = if rt.group.is_empty() {
        req.target.version.clone()
    } else {
        format!("{}/{}", rt.group, req.target.version)
    };
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".to_owned(), Value::String(expected));
        }
        Some(found) if found == expected => {}
        Some(found) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({found}) does not match the expected API version ({expected})"
            )));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".to_owned(), Value::String(rt.kind.clone()));
        }
        Some(found) if found == rt.kind => {}
        Some(found) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({found}) does not match the expected kind ({})",
                rt.kind
            )));
        }
    }
    Ok(object)
}
