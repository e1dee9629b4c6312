//! The CNI error result: `{"cniVersion","code","msg","details"}` and its well-known codes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A CNI error code. The spec reserves 0-99 for well-known errors; 100+ are the plugin's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 1: incompatible CNI version.
    IncompatibleVersion,
    /// 2: unsupported field in the network configuration (the message names key and value).
    UnsupportedField,
    /// 3: container unknown or does not exist (the runtime need not clean up).
    UnknownContainer,
    /// 4: invalid necessary environment variables (the message names them).
    InvalidEnvironment,
    /// 5: I/O failure.
    Io,
    /// 6: failed to decode content.
    Decode,
    /// 7: invalid network configuration.
    InvalidNetworkConfig,
    /// 8: `CNI_NETNS` is the plugin's own namespace (the CNI library's `ErrInvalidNetNS`).
    InvalidNetNs,
    /// 11: try again later: a transient condition the runtime should retry after.
    TryAgainLater,
    /// 50: the plugin is not available (cannot service ADD); STATUS only.
    PluginNotAvailable,
    /// 51: not available, and existing containers may have limited connectivity; STATUS only.
    LimitedConnectivity,
    /// 100: what upstream's `main` prints for an error that is not a CNI error; reached
    /// only when its CLI wrapper fails, never for a command's own failure.
    Generic,
    /// 999: the CNI library's `ErrInternal`: upstream's plugin prints every non-CNI error
    /// of its commands (server plain-text errors among them) with this code.
    Internal,
    /// Any other code, kept as received.
    Other(u32),
}

impl ErrorCode {
    /// The numeric code.
    pub fn as_u32(self) -> u32 {
        match self {
            ErrorCode::IncompatibleVersion => 1,
            ErrorCode::UnsupportedField => 2,
            ErrorCode::UnknownContainer => 3,
            ErrorCode::InvalidEnvironment => 4,
            ErrorCode::Io => 5,
            ErrorCode::Decode => 6,
            ErrorCode::InvalidNetworkConfig => 7,
            ErrorCode::InvalidNetNs => 8,
            ErrorCode::TryAgainLater => 11,
            ErrorCode::PluginNotAvailable => 50,
            ErrorCode::LimitedConnectivity => 51,
            ErrorCode::Generic => 100,
            ErrorCode::Internal => 999,
            ErrorCode::Other(code) => code,
        }
    }

    /// The typed code for a number (unknown numbers become [`ErrorCode::Other`]).
    pub fn from_u32(code: u32) -> ErrorCode {
        match code {
            1 => ErrorCode::IncompatibleVersion,
            2 => ErrorCode::UnsupportedField,
            3 => ErrorCode::UnknownContainer,
            4 => ErrorCode::InvalidEnvironment,
            5 => ErrorCode::Io,
            6 => ErrorCode::Decode,
            7 => ErrorCode::InvalidNetworkConfig,
            8 => ErrorCode::InvalidNetNs,
            11 => ErrorCode::TryAgainLater,
            50 => ErrorCode::PluginNotAvailable,
            51 => ErrorCode::LimitedConnectivity,
            100 => ErrorCode::Generic,
            999 => ErrorCode::Internal,
            other => ErrorCode::Other(other),
        }
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.as_u32())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u32::deserialize(deserializer).map(ErrorCode::from_u32)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_u32())
    }
}

/// A CNI error result.
///
/// Upstream's Go type has no `cniVersion`, so the server's HTTP 400 bodies leave it out
/// (`cni_version: None`, byte-compatible); the plugin fills it in when printing, as the
/// spec asks. `Display` is the CNI library's `msg` or `msg; details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CniError {
    /// The protocol version in use (absent on the shim <-> server wire).
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cni_version: Option<String>,
    /// The error code.
    pub code: ErrorCode,
    /// A short message.
    #[serde(default)]
    pub msg: String,
    /// A longer description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
}

impl CniError {
    /// An error with a code and message, no details, no version.
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> CniError {
        CniError {
            cni_version: None,
            code,
            msg: msg.into(),
            details: None,
        }
    }

    /// Sets the details (an empty string means none, as Go's `omitempty`).
    pub fn with_details(mut self, details: impl Into<String>) -> CniError {
        let details = details.into();
        self.details = (!details.is_empty()).then_some(details);
        self
    }

    /// Sets the protocol version this error is reported in.
    pub fn with_version(mut self, version: impl Into<String>) -> CniError {
        self.cni_version = Some(version.into());
        self
    }

    /// The shim's reading of a non-200 body (upstream `doCNI`): a JSON CNI error with a
    /// non-zero code is that error; anything else is not one.
    pub fn from_error_body(body: &[u8]) -> Option<CniError> {
        serde_json::from_slice::<CniError>(body)
            .ok()
            .filter(|err| err.code.as_u32() != 0)
    }
}

impl fmt::Display for CniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.details {
            Some(details) => write!(f, "{}; {details}", self.msg),
            None => f.write_str(&self.msg),
        }
    }
}

impl std::error::Error for CniError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::go_json;

    #[test]
    fn codes_round_trip_through_numbers() {
        for n in [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51, 100, 999, 123] {
            assert_eq!(ErrorCode::from_u32(n).as_u32(), n);
        }
        assert_eq!(ErrorCode::from_u32(50), ErrorCode::PluginNotAvailable);
        assert_eq!(ErrorCode::from_u32(123), ErrorCode::Other(123));
    }

    #[test]
    fn server_wire_form_is_upstreams() {
        // json.NewEncoder(w).Encode(&types.Error{Code: 50, Msg: "DPU Not Ready"})
        let err = CniError::new(ErrorCode::PluginNotAvailable, "DPU Not Ready");
        assert_eq!(
            go_json::to_vec_line(&err).unwrap(),
            b"{\"code\":50,\"msg\":\"DPU Not Ready\"}\n"
        );
        let err = err.with_details("lease expired");
        assert_eq!(
            go_json::to_vec(&err).unwrap(),
            br#"{"code":50,"msg":"DPU Not Ready","details":"lease expired"}"#
        );
    }

    #[test]
    fn printed_form_carries_the_version_first() {
        let err = CniError::new(ErrorCode::InvalidNetworkConfig, "Invalid Configuration")
            .with_details("Network 192.168.0.0/31 too small to allocate from.")
            .with_version("1.1.0");
        assert_eq!(
            String::from_utf8(go_json::to_vec_indented(&err).unwrap()).unwrap(),
            "{\n    \"cniVersion\": \"1.1.0\",\n    \"code\": 7,\n    \"msg\": \"Invalid Configuration\",\n    \"details\": \"Network 192.168.0.0/31 too small to allocate from.\"\n}"
        );
    }

    #[test]
    fn error_body_reading_is_upstreams() {
        let err = CniError::from_error_body(b"{\"code\":7,\"msg\":\"bad\"}\n").unwrap();
        assert_eq!(err.code, ErrorCode::InvalidNetworkConfig);
        assert_eq!(err.to_string(), "bad");
        assert!(CniError::from_error_body(b"{\"code\":0,\"msg\":\"zero\"}").is_none());
        assert!(
            CniError::from_error_body(
                b"[ns/pod abc network default NAD default NAD key default] boom\n"
            )
            .is_none()
        );
        assert!(CniError::from_error_body(b"").is_none());
        assert!(CniError::from_error_body(b"{\"msg\":\"no code\"}").is_none());
    }

    #[test]
    fn empty_details_are_omitted() {
        let err = CniError::new(ErrorCode::Io, "x").with_details("");
        assert_eq!(err.details, None);
    }
}
