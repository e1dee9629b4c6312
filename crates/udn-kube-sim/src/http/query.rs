//! Query parameters (and the DELETE body) decoded into the store's option types.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::error::ApiError;
use crate::options::{DeleteOptions, ListOptions, Propagation, WatchOptions, WriteOptions};

/// The decoded query string: every value of every parameter, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Query {
    params: BTreeMap<String, Vec<String>>,
}

/// `includeObject` of a Table request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// No object in the rows.
    None,
    /// The rows carry a `PartialObjectMetadata` (the server's default).
    #[default]
    Metadata,
    /// The rows carry the full object.
    Object,
}

impl Query {
    /// Decodes `a=b&c=d` (percent-encoding and `+` for space).
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        let mut params: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            params
                .entry(percent_decode(key))
                .or_default()
                .push(percent_decode(value));
        }
        Self { params }
    }

    /// The first value of `name` (as Go's `url.Values.Get`), `None` when absent or empty.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .and_then(|values| values.first())
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean parameter as Go's `strconv.ParseBool` reads it; absent is false.
    pub(crate) fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.get(name) {
            None => Ok(false),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
            Some(other) => Err(ApiError::bad_request(format!(
                "invalid value {other:?} of query parameter {name:?}: expected a boolean"
            ))),
        }
    }

    fn number(&self, name: &str) -> Result<Option<u64>, ApiError> {
        self.get(name)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "invalid value {v:?} of query parameter {name:?}: expected a non-negative integer"
                    ))
                })
            })
            .transpose()
    }

    /// `watch=true` (or `1`, ...).
    pub(crate) fn watch(&self) -> Result<bool, ApiError> {
        self.flag("watch")
    }

    /// `pretty=true`.
    pub(crate) fn pretty(&self) -> bool {
        self.flag("pretty").unwrap_or(false)
    }

    /// `includeObject` for Table output.
    pub(crate) fn include_object(&self) -> Result<IncludeObject, ApiError> {
        match self.get("includeObject") {
            None | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(unsupported(
                "includeObject",
                other,
                "\"Metadata\", \"None\", \"Object\"",
            )),
        }
    }

    /// Selectors and paging. `resourceVersion`, `resourceVersionMatch` and
    /// `timeoutSeconds` are checked but a list always reads the newest state.
    pub(crate) fn list_options(&self) -> Result<ListOptions, ApiError> {
        self.resource_version_match()?;
        self.number("timeoutSeconds")?;
        Ok(ListOptions {
            label_selector: self.get("labelSelector").map(str::to_owned),
            field_selector: self.get("fieldSelector").map(str::to_owned),
            limit: self.number("limit")?,
            continue_token: self.get("continue").map(str::to_owned),
        })
    }

    /// Watch options; `sendInitialEvents=true` requires `resourceVersionMatch=NotOlderThan`
    /// as on the real server.
    pub(crate) fn watch_options(&self) -> Result<WatchOptions, ApiError> {
        let send_initial_events = self.flag("sendInitialEvents")?;
        let rv_match = self.resource_version_match()?;
        if send_initial_events && rv_match != Some("NotOlderThan") {
            return Err(ApiError::bad_request(
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        Ok(WatchOptions {
            list: self.list_options()?,
            resource_version: self.get("resourceVersion").map(str::to_owned),
            allow_bookmarks: self.flag("allowWatchBookmarks")?,
            send_initial_events,
            timeout: self.number("timeoutSeconds")?.map(Duration::from_secs),
        })
    }

    fn resource_version_match(&self) -> Result<Option<&str>, ApiError> {
        match self.get("resourceVersionMatch") {
            None => Ok(None),
            Some(v @ ("Exact" | "NotOlderThan")) => Ok(Some(v)),
            Some(other) => Err(unsupported(
                "resourceVersionMatch",
                other,
                "\"Exact\", \"NotOlderThan\"",
            )),
        }
    }

    /// `dryRun`, `fieldManager`, `force`; `fieldValidation` is checked for a known value
    /// (unknown fields are pruned as with `Ignore`, see docs/kube-sim.md).
    pub(crate) fn write_options(&self) -> Result<WriteOptions, ApiError> {
        match self.get("fieldValidation") {
            None | Some("Ignore" | "Warn" | "Strict") => {}
            Some(other) => {
                return Err(unsupported(
                    "fieldValidation",
                    other,
                    "\"Ignore\", \"Strict\", \"Warn\"",
                ));
            }
        }
        Ok(WriteOptions {
            dry_run: self.dry_run()?,
            field_manager: self.get("fieldManager").map(str::to_owned),
            force: self.flag("force")?,
        })
    }

    fn dry_run(&self) -> Result<bool, ApiError> {
        let values = self.params.get("dryRun").map(Vec::as_slice).unwrap_or(&[]);
        dry_run_values(values.iter().map(String::as_str))
    }

    /// Delete options from the query, overridden by a `DeleteOptions` JSON body.
    pub(crate) fn delete_options(&self, body: &[u8]) -> Result<DeleteOptions, ApiError> {
        let mut opts = DeleteOptions {
            dry_run: self.dry_run()?,
            ..DeleteOptions::default()
        };
        if let Some(policy) = self.get("propagationPolicy") {
            opts.propagation = propagation(policy)?;
        } else if self.flag("orphanDependents")? {
            opts.propagation = Propagation::Orphan;
        }
        if let Some(grace) = self.get("gracePeriodSeconds") {
            opts.grace_period_seconds = Some(grace.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid value for gracePeriodSeconds: {grace:?}"))
            })?);
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(opts);
        }
        let body: Value = if super::protobuf::is_protobuf(body) {
            super::protobuf::decode(body)?
        } else {
            serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the DELETE request is not DeleteOptions JSON: {e}"
                ))
            })?
        };
        if let Some(policy) = body.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation = propagation(policy)?;
        } else if body.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
            opts.propagation = Propagation::Orphan;
        }
        if let Some(values) = body.get("dryRun").and_then(Value::as_array) {
            opts.dry_run |= dry_run_values(values.iter().filter_map(Value::as_str))?;
        }
        let preconditions = body.get("preconditions");
        let precondition = |field: &str| {
            preconditions
                .and_then(|p| p.get(field))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if let Some(grace) = body.get("gracePeriodSeconds").and_then(Value::as_i64) {
            opts.grace_period_seconds = Some(grace);
        }
        opts.precondition_uid = precondition("uid");
        opts.precondition_resource_version = precondition("resourceVersion");
        Ok(opts)
    }
}

fn dry_run_values<'a>(values: impl Iterator<Item = &'a str>) -> Result<bool, ApiError> {
    let mut dry_run = false;
    for value in values {
        match value {
            "All" => dry_run = true,
            "" => {}
            other => return Err(unsupported("dryRun", other, "\"All\"")),
        }
    }
    Ok(dry_run)
}

fn propagation(policy: &str) -> Result<Propagation, ApiError> {
    match policy {
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        "Orphan" => Ok(Propagation::Orphan),
        other => Err(unsupported(
            "propagationPolicy",
            other,
            "\"Foreground\", \"Background\", \"Orphan\"",
        )),
    }
}

fn unsupported(field: &str, value: &str, supported: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{field}: Unsupported value: {value:?}: supported values: {supported}"
    ))
}

/// Percent-decoding of one query component (`+` is a space); invalid escapes are kept.
pub(crate) fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (b, escaped) {
            (_, Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (other, None) => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_selectors_and_flags() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&watch=1&limit=5&fieldSelector=metadata.name%3Dx",
        ));
        assert_eq!(q.watch().ok(), Some(true));
        let list = q.list_options().unwrap_or_default();
        assert_eq!(
            list.label_selector.as_deref(),
            Some("app=web,tier in (a,b)")
        );
        assert_eq!(list.field_selector.as_deref(), Some("metadata.name=x"));
        assert_eq!(list.limit, Some(5));
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(
            Query::parse(Some("watch=maybe"))
                .watch()
                .map_err(|e| e.code),
            Err(400)
        );
        assert_eq!(
            Query::parse(Some("dryRun=Some"))
                .write_options()
                .map_err(|e| e.message),
            Err("dryRun: Unsupported value: \"Some\": supported values: \"All\"".to_owned())
        );
        assert_eq!(
            Query::parse(Some("sendInitialEvents=true&watch=true"))
                .watch_options()
                .map_err(|e| e.code),
            Err(400)
        );
    }

    #[test]
    fn delete_body_overrides_query() {
        let q = Query::parse(Some("propagationPolicy=Orphan"));
        let body = br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground","preconditions":{"uid":"u1","resourceVersion":"7"},"dryRun":["All"]}"#;
        let opts = q.delete_options(body).unwrap_or_default();
        assert_eq!(opts.propagation, Propagation::Foreground);
        assert_eq!(opts.precondition_uid.as_deref(), Some("u1"));
        assert_eq!(opts.precondition_resource_version.as_deref(), Some("7"));
        assert!(opts.dry_run);
        let query_only = q.delete_options(b"").unwrap_or_default();
        assert_eq!(query_only.propagation, Propagation::Orphan);
    }

    #[test]
    fn percent_decoding_keeps_invalid_escapes() {
        assert_eq!(percent_decode("a%2Fb+c%zz%"), "a/b c%zz%");
    }
}
