//! The body the shim posts to `http://dummy/metrics` after each command (upstream
//! `CNIRequestMetrics`), feeding the server's `cni_request_duration_seconds`.

use serde::{Deserialize, Serialize};

use crate::command::Command;
use crate::go_json;

/// `{"command":"ADD","elapsedTime":0.42,"hasErr":false}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestMetrics {
    /// The command that ran.
    pub command: Command,
    /// Seconds from the command's start to its end, as measured by the shim.
    #[serde(rename = "elapsedTime")]
    pub elapsed_time: f64,
    /// Whether the command failed.
    #[serde(rename = "hasErr")]
    pub has_err: bool,
}

impl RequestMetrics {
    /// The body bytes, as Go's `json.Marshal` writes them.
    pub fn to_json(&self) -> Vec<u8> {
        go_json::to_vec(self).unwrap_or_default()
    }

    /// Parses a body.
    pub fn from_json(body: &[u8]) -> serde_json::Result<RequestMetrics> {
        serde_json::from_slice(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_bytes() {
        let metrics = RequestMetrics {
            command: Command::Add,
            elapsed_time: 0.42,
            has_err: false,
        };
        assert_eq!(
            metrics.to_json(),
            br#"{"command":"ADD","elapsedTime":0.42,"hasErr":false}"#
        );
        assert_eq!(
            RequestMetrics::from_json(&metrics.to_json()).unwrap(),
            metrics
        );
        let whole = RequestMetrics {
            command: Command::Del,
            elapsed_time: 2.0,
            has_err: true,
        };
        assert_eq!(
            whole.to_json(),
            br#"{"command":"DEL","elapsedTime":2,"hasErr":true}"#
        );
    }
}
