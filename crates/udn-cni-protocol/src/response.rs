//! The server -> shim answer (upstream `Response`) and the server's error bodies.
//!
//! Upstream's `Response` has no JSON tags, so its keys are the Go field names and every
//! field is always written (`null` when unset):
//! `{"Result":…,"PodIFInfo":null,"PrimaryUDNPodInfo":null,"PrimaryUDNPodReq":null,"KubeAuth":…}`.
//! `PodIFInfo`, `PrimaryUDNPodInfo` and `PrimaryUDNPodReq` are only set by a server in
//! unprivileged mode (the shim then plumbs the pod itself); they are carried as raw JSON.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::errors::CniError;
use crate::go_json;
use crate::result::CniResult;

/// The body of a 200 answer to `POST /`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The CNI result (ADD: the pod's interfaces and IPs; DEL: an empty result). `None`
    /// means the server ran unprivileged and left the plumbing to the shim.
    #[serde(rename = "Result", default)]
    pub result: Option<CniResult>,
    /// Unprivileged mode: upstream's `PodInterfaceInfo` for the shim to plumb.
    #[serde(rename = "PodIFInfo", default)]
    pub pod_if_info: Option<Value>,
    /// Unprivileged mode: the primary UDN's `PodInterfaceInfo`.
    #[serde(rename = "PrimaryUDNPodInfo", default)]
    pub primary_udn_pod_info: Option<Value>,
    /// Unprivileged mode: the primary UDN's `PodRequest`.
    #[serde(rename = "PrimaryUDNPodReq", default)]
    pub primary_udn_pod_req: Option<Value>,
    /// How the shim could reach the API server (upstream's ADD always sends it).
    #[serde(rename = "KubeAuth", default)]
    pub kube_auth: Option<KubeAuth>,
}

impl Response {
    /// A privileged ADD answer: the result and, optionally, the API credentials.
    pub fn add(result: CniResult, kube_auth: Option<KubeAuth>) -> Response {
        Response {
            result: Some(result),
            kube_auth,
            ..Default::default()
        }
    }

    /// A privileged DEL answer: upstream's `{"Result":{},…}` (the shim prints nothing).
    pub fn del() -> Response {
        Response {
            result: Some(CniResult::default()),
            ..Default::default()
        }
    }

    /// The body bytes, as Go's `json.Marshal` writes them.
    pub fn to_json(&self) -> Vec<u8> {
        // Maps of strings and numbers only: serializing cannot fail.
        go_json::to_vec(self).unwrap_or_default()
    }

    /// Parses a body.
    pub fn from_json(body: &[u8]) -> serde_json::Result<Response> {
        serde_json::from_slice(body)
    }
}

fn is_empty(text: &str) -> bool {
    text.is_empty()
}

/// Upstream `KubeAPIAuth`: every key `omitempty`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubeAuth {
    /// Path to a kubeconfig.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub kubeconfig: String,
    /// API server URL.
    #[serde(rename = "kube-api-server", default, skip_serializing_if = "is_empty")]
    pub kube_api_server: String,
    /// Bearer token.
    #[serde(rename = "kube-api-token", default, skip_serializing_if = "is_empty")]
    pub kube_api_token: String,
    /// Path of a token file (read periodically, wins over the token).
    #[serde(
        rename = "kube-api-token-file",
        default,
        skip_serializing_if = "is_empty"
    )]
    pub kube_api_token_file: String,
    /// Base64 of the CA certificate data.
    #[serde(rename = "kube-ca-data", default, skip_serializing_if = "is_empty")]
    pub kube_ca_data: String,
}

/// The HTTP status of every failed request (upstream answers all errors with 400).
pub const ERROR_STATUS: u16 = 400;

/// How the server answers a failed request, as upstream's handler does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorResponse {
    /// A CNI error: 400, `Content-Type: application/json`, the error JSON (no
    /// `cniVersion`) and a newline (`json.NewEncoder(w).Encode`).
    Cni(CniError),
    /// Any other error: 400 through Go's `http.Error`, `text/plain; charset=utf-8`,
    /// `X-Content-Type-Options: nosniff`, the text and a newline. For requests that got
    /// as far as a pod request the text is [`crate::PodRequest::label`] + `" "` + message.
    Plain(String),
}

impl ErrorResponse {
    /// A plain error about a pod request: `"<label> <message>"`.
    pub fn for_pod(label: &str, message: impl fmt::Display) -> ErrorResponse {
        ErrorResponse::Plain(format!("{label} {message}"))
    }

    /// The `Content-Type` header value.
    pub fn content_type(&self) -> &'static str {
        match self {
            ErrorResponse::Cni(_) => "application/json",
            ErrorResponse::Plain(_) => "text/plain; charset=utf-8",
        }
    }

    /// The body bytes.
    pub fn body(&self) -> Vec<u8> {
        match self {
            ErrorResponse::Cni(err) => go_json::to_vec_line(err).unwrap_or_default(),
            ErrorResponse::Plain(text) => format!("{text}\n").into_bytes(),
        }
    }
}

/// The shim's reading of a non-200 answer (upstream `doCNI`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The body was a CNI error with a non-zero code: returned as is.
    #[error(transparent)]
    Cni(CniError),
    /// Anything else, with upstream's text (the body is quoted verbatim, newline included).
    #[error("CNI request failed with status {status}: '{body}'")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The body, lossily decoded as UTF-8.
        body: String,
    },
}

impl ReplyError {
    /// `None` for status 200 (exactly 200, as upstream), else the error the body means.
    pub fn from_reply(status: u16, body: &[u8]) -> Option<ReplyError> {
        if status == 200 {
            return None;
        }
        Some(match CniError::from_error_body(body) {
            Some(err) => ReplyError::Cni(err),
            None => ReplyError::Status {
                status,
                body: String::from_utf8_lossy(body).into_owned(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorCode;
    use crate::result::{Interface, IpConfig};

    #[test]
    fn del_response_bytes() {
        assert_eq!(
            String::from_utf8(Response::del().to_json()).unwrap(),
            r#"{"Result":{},"PodIFInfo":null,"PrimaryUDNPodInfo":null,"PrimaryUDNPodReq":null,"KubeAuth":null}"#
        );
    }

    #[test]
    fn add_response_bytes() {
        let result = CniResult {
            interfaces: vec![
                Interface::host("3f1b2c4d5e6f7a8", "aa:bb:cc:dd:ee:01"),
                Interface::in_sandbox("eth0", "0a:58:0a:f4:01:05", "/var/run/netns/cni-1"),
            ],
            ips: vec![IpConfig {
                address: "10.244.1.5/24".parse().unwrap(),
                gateway: Some("10.244.1.1".parse().unwrap()),
                interface: Some(1),
            }],
            ..Default::default()
        };
        let auth = KubeAuth {
            kube_api_server: "https://10.96.0.1:443".into(),
            kube_api_token_file: "/var/run/secrets/kubernetes.io/serviceaccount/token".into(),
            ..Default::default()
        };
        let want = concat!(
            r#"{"Result":{"interfaces":[{"mac":"aa:bb:cc:dd:ee:01","name":"3f1b2c4d5e6f7a8"},"#,
            r#"{"mac":"0a:58:0a:f4:01:05","name":"eth0","sandbox":"/var/run/netns/cni-1"}],"#,
            r#""ips":[{"address":"10.244.1.5/24","gateway":"10.244.1.1","interface":1}]},"#,
            r#""PodIFInfo":null,"PrimaryUDNPodInfo":null,"PrimaryUDNPodReq":null,"#,
            r#""KubeAuth":{"kube-api-server":"https://10.96.0.1:443","kube-api-token-file":"/var/run/secrets/kubernetes.io/serviceaccount/token"}}"#
        );
        let response = Response::add(result, Some(auth));
        assert_eq!(String::from_utf8(response.to_json()).unwrap(), want);
        assert_eq!(Response::from_json(want.as_bytes()).unwrap(), response);
    }

    #[test]
    fn unprivileged_fields_are_kept_raw() {
        let body =
            br#"{"Result":null,"PodIFInfo":{"MAC":"0a:58:0a:f4:01:05","mtu":1400},"KubeAuth":{}}"#;
        let response = Response::from_json(body).unwrap();
        assert_eq!(response.result, None);
        assert_eq!(
            response
                .pod_if_info
                .as_ref()
                .and_then(|v| v.get("mtu"))
                .and_then(Value::as_u64),
            Some(1400)
        );
        assert_eq!(response.kube_auth, Some(KubeAuth::default()));
    }

    #[test]
    fn error_bodies_are_upstreams() {
        let cni = ErrorResponse::Cni(CniError::new(
            ErrorCode::PluginNotAvailable,
            "DPU Not Ready",
        ));
        assert_eq!(cni.content_type(), "application/json");
        assert_eq!(cni.body(), b"{\"code\":50,\"msg\":\"DPU Not Ready\"}\n");
        let plain = ErrorResponse::for_pod(
            "[ns/p abc network default NAD default NAD key default]",
            "timed out waiting for annotations",
        );
        assert_eq!(plain.content_type(), "text/plain; charset=utf-8");
        assert_eq!(
            plain.body(),
            b"[ns/p abc network default NAD default NAD key default] timed out waiting for annotations\n"
        );
    }

    #[test]
    fn reply_errors_are_read_like_upstreams_shim() {
        assert_eq!(ReplyError::from_reply(200, b"anything"), None);
        let cni = ReplyError::from_reply(400, b"{\"code\":11,\"msg\":\"later\"}\n").unwrap();
        assert_eq!(
            cni,
            ReplyError::Cni(CniError::new(ErrorCode::TryAgainLater, "later"))
        );
        assert_eq!(cni.to_string(), "later");
        let plain = ReplyError::from_reply(
            400,
            b"[ns/p abc network default NAD default NAD key default] boom\n",
        )
        .unwrap();
        assert_eq!(
            plain.to_string(),
            "CNI request failed with status 400: '[ns/p abc network default NAD default NAD key default] boom\n'"
        );
        let zero = ReplyError::from_reply(500, b"{\"code\":0,\"msg\":\"x\"}").unwrap();
        assert!(matches!(zero, ReplyError::Status { status: 500, .. }));
    }
}
