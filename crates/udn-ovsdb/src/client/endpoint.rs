//! Where the server listens: `unix:<path>` or `tcp:<host>:<port>` (the ovsdb-server / ovn-nbctl
//! spelling), and opening a byte stream to it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

/// An address that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid OVSDB endpoint {endpoint:?}: {reason}")]
pub struct EndpointError {
    /// The rejected text.
    pub endpoint: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

/// An OVSDB server address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `unix:<path>`: a unix domain socket.
    Unix(PathBuf),
    /// `tcp:<host>:<port>`: held as `<host>:<port>` (IPv6 hosts in brackets).
    Tcp(String),
}

impl Endpoint {
    /// Parses `unix:<path>` or `tcp:<host>:<port>`.
    pub fn parse(text: &str) -> Result<Self, EndpointError> {
        let invalid = |reason| EndpointError {
            endpoint: text.to_owned(),
            reason,
        };
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(invalid("unix: needs a socket path"));
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        if let Some(address) = text.strip_prefix("tcp:") {
            let (host, port) = address
                .rsplit_once(':')
                .ok_or_else(|| invalid("tcp: needs <host>:<port>"))?;
            if host.is_empty() {
                return Err(invalid("tcp: needs a host"));
            }
            if port.parse::<u16>().is_err() {
                return Err(invalid("the port must be a number from 0 to 65535"));
            }
            return Ok(Self::Tcp(address.to_owned()));
        }
        Err(invalid("expected unix:<path> or tcp:<host>:<port>"))
    }

    /// Opens a byte stream to the server, split into its read and write halves.
    pub(crate) async fn open(&self) -> std::io::Result<(ReadHalf, WriteHalf)> {
        match self {
            Self::Unix(path) => {
                let (r, w) = UnixStream::connect(path).await?.into_split();
                Ok((Box::new(r), Box::new(w)))
            }
            Self::Tcp(address) => {
                let stream = TcpStream::connect(address.as_str()).await?;
                stream.set_nodelay(true)?;
                let (r, w) = stream.into_split();
                Ok((Box::new(r), Box::new(w)))
            }
        }
    }
}

/// The reading half of a connection.
pub(crate) type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
/// The writing half of a connection.
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
            Self::Tcp(address) => write!(f, "tcp:{address}"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn parses_and_displays() {
        for text in [
            "unix:/run/ovn/ovnnb_db.sock",
            "tcp:127.0.0.1:6641",
            "tcp:[::1]:6641",
        ] {
            assert_eq!(Endpoint::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            Endpoint::parse("unix:/a").unwrap(),
            Endpoint::Unix(PathBuf::from("/a"))
        );
        assert_eq!(
            Endpoint::parse("tcp:h:1").unwrap(),
            Endpoint::Tcp("h:1".into())
        );
    }

    #[test]
    fn rejects_bad_addresses() {
        for (text, reason) in [
            (
                "ssl:1.2.3.4:6641",
                "expected unix:<path> or tcp:<host>:<port>",
            ),
            ("unix:", "unix: needs a socket path"),
            ("tcp:6641", "tcp: needs <host>:<port>"),
            ("tcp::6641", "tcp: needs a host"),
            ("tcp:h:70000", "the port must be a number from 0 to 65535"),
        ] {
            assert_eq!(
                Endpoint::parse(text),
                Err(EndpointError {
                    endpoint: text.into(),
                    reason
                })
            );
        }
    }
}
