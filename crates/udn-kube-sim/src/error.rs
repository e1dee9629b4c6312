//! API errors as the real server reports them: an HTTP code, a `metav1.Status` reason and
//! message, and details (name, group, kind, causes).

use serde_json::{Value, json};

/// A `metav1.StatusCause`: one field-level reason of an Invalid error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusCause {
    /// `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: String,
    /// The cause text (e.g. `Invalid value: Subnets must not overlap ...`).
    pub message: String,
    /// The field path (`spec.layer3`).
    pub field: String,
}

/// An error response of the API server.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status code (404, 409, 410, 422, ...).
    pub code: u16,
    /// `metav1.StatusReason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `Gone`,
    /// `BadRequest`, `MethodNotAllowed`, `Forbidden`, `Expired`, `InternalError`, ...).
    pub reason: &'static str,
    /// The human message, word for word as the real server writes it.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (the resource plural for most errors, the Kind for Invalid).
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<StatusCause>,
}

impl ApiError {
    fn with(code: u16, reason: &'static str, message: String) -> Self {
        Self {
            code,
            reason,
            message,
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
        }
    }

    fn details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.group = Some(group.to_owned());
        self.kind = Some(kind.to_owned());
        self.name = Some(name.to_owned());
        self
    }

    /// `<resource>[.<group>] "<name>"` as the server qualifies a resource in messages.
    pub fn qualified(group: &str, plural: &str) -> String {
        if group.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}.{group}")
        }
    }

    /// 404: `<plural>[.<group>] "<name>" not found`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::with(
            404,
            "NotFound",
            format!("{} {name:?} not found", Self::qualified(group, plural)),
        )
        .details(group, plural, name)
    }

    /// 404 for a resource (or subresource) the server does not serve:
    /// `the server could not find the requested resource`.
    pub fn resource_not_served() -> Self {
        Self::with(
            404,
            "NotFound",
            "the server could not find the requested resource".to_owned(),
        )
    }

    /// 409: `<plural>[.<group>] "<name>" already exists`.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::with(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", Self::qualified(group, plural)),
        )
        .details(group, plural, name)
    }

    /// 409 Conflict with the optimistic-concurrency message.
    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        Self::with(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
                Self::qualified(group, plural)
            ),
        )
        .details(group, plural, name)
    }

    /// 409 Conflict with a custom reason text (e.g. a precondition or SSA conflict).
    pub fn conflict_with(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::with(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {why}",
                Self::qualified(group, plural)
            ),
        )
        .details(group, plural, name)
    }

    /// 410 Gone for a watch or list from a compacted resourceVersion.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::with(410, "Expired", message.into())
    }

    /// 422 Invalid: `<Kind>[.<group>] "<name>" is invalid: <errors>`, with one cause each.
    pub fn invalid(
        group: &str,
        kind: &str,
        name: &str,
        message: String,
        causes: Vec<StatusCause>,
    ) -> Self {
        let mut error = Self::with(422, "Invalid", message).details(group, kind, name);
        error.causes = causes;
        error
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::with(400, "BadRequest", message.into())
    }

    /// 403 Forbidden (e.g. creating in a terminating namespace).
    pub fn forbidden(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::with(
            403,
            "Forbidden",
            format!(
                "{} {name:?} is forbidden: {why}",
                Self::qualified(group, plural)
            ),
        )
        .details(group, plural, name)
    }

    /// 405 Method Not Allowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::with(405, "MethodNotAllowed", message.into())
    }

    /// 415 Unsupported Media Type (e.g. an unknown patch content type).
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::with(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 500 Internal Server Error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::with(500, "InternalError", message.into())
    }

    /// The `metav1.Status` object the server sends for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.name.is_some() || self.kind.is_some() || !self.causes.is_empty() {
            let mut details = serde_json::Map::new();
            if let Some(name) = &self.name {
                details.insert("name".to_owned(), json!(name));
            }
            if let Some(group) = self.group.as_ref().filter(|g| !g.is_empty()) {
                details.insert("group".to_owned(), json!(group));
            }
            if let Some(kind) = &self.kind {
                details.insert("kind".to_owned(), json!(kind));
            }
            if !self.causes.is_empty() {
                let causes: Vec<Value> = self
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".to_owned(), Value::Array(causes));
            }
            status["details"] = Value::Object(details);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_real_server() {
        assert_eq!(
            ApiError::not_found("", "namespaces", "blue").message,
            "namespaces \"blue\" not found"
        );
        assert_eq!(
            ApiError::already_exists("k8s.ovn.org", "userdefinednetworks", "n").message,
            "userdefinednetworks.k8s.ovn.org \"n\" already exists"
        );
        assert_eq!(
            ApiError::conflict("", "pods", "p").message,
            "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let status = ApiError::not_found("", "pods", "p").to_status();
        assert_eq!(status["code"], 404);
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["details"], json!({"name": "p", "kind": "pods"}));
    }
}
