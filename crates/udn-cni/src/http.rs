//! A small HTTP/1.1 client for one `POST` over a unix socket: what Go's `http.Client`
//! does for upstream's shim, without an async runtime.
//!
//! One connection per request (`Connection: close`; upstream's server disables
//! keep-alives anyway). The answer may be framed by `Content-Length`, by chunked
//! transfer-encoding (Go's server chunks bodies it could not buffer whole) or by the
//! connection closing. One deadline covers the whole exchange.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Header block limit (status line and headers together).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Body limit: results are a few KiB; anything near this is not our server.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// A received answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpResponse {
    /// Status code.
    pub(crate) status: u16,
    /// Body, de-chunked.
    pub(crate) body: Vec<u8>,
}

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// Nothing accepted the connection (no socket file, nobody listening, no permission).
    #[error("failed to connect to the CNI server socket {}", socket.display())]
    Connect {
        /// The socket path.
        socket: PathBuf,
        /// The connect error.
        #[source]
        source: io::Error,
    },
    /// The request could not be written and no answer followed.
    #[error("failed to send the CNI request to {}", socket.display())]
    Send {
        /// The socket path.
        socket: PathBuf,
        /// The write error.
        #[source]
        source: io::Error,
    },
    /// No complete answer within the deadline.
    #[error("no answer from the CNI server at {} within {}s", socket.display(), after.as_secs())]
    TimedOut {
        /// The socket path.
        socket: PathBuf,
        /// The deadline that passed.
        after: Duration,
    },
    /// The answer could not be read or was not HTTP.
    #[error("failed to read the CNI server's answer from {}", socket.display())]
    Receive {
        /// The socket path.
        socket: PathBuf,
        /// What went wrong.
        #[source]
        source: ResponseError,
    },
}

/// A malformed, truncated or unreadable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResponseError {
    /// A read failed.
    #[error("read failed")]
    Io(#[source] io::Error),
    /// The connection closed before the answer was complete.
    #[error("connection closed after {got} bytes of the {part}")]
    Truncated {
        /// Which part was cut.
        part: &'static str,
        /// Bytes of that part received.
        got: usize,
    },
    /// Not HTTP/1.x as we understand it.
    #[error("malformed HTTP answer: {reason}")]
    Malformed {
        /// What is wrong.
        reason: String,
    },
    /// Longer than this client accepts.
    #[error("{part} longer than {limit} bytes")]
    TooLarge {
        /// Which part.
        part: &'static str,
        /// The limit.
        limit: usize,
    },
}

/// `POST <path>` with a JSON body to the server at `socket`; `timeout` bounds the whole
/// exchange, connect to last body byte.
pub(crate) fn post_json(
    socket: &Path,
    path: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<HttpResponse, HttpError> {
    let deadline = Instant::now() + timeout;
    let stream = UnixStream::connect(socket).map_err(|source| HttpError::Connect {
        socket: socket.to_owned(),
        source,
    })?;
    let timed_out = || HttpError::TimedOut {
        socket: socket.to_owned(),
        after: timeout,
    };

    let sent = send_request(&stream, path, body, timeout);
    let mut reader = BufReader::new(DeadlineReader {
        stream: &stream,
        deadline,
    });
    match read_response(&mut reader) {
        Ok(response) => Ok(response),
        Err(ResponseError::Io(err)) if is_timeout(&err) => Err(timed_out()),
        Err(source) => match sent {
            // A server that closed before reading everything can still have answered;
            // only when it did not is the failed write the cause.
            Err(err) if is_timeout(&err) => Err(timed_out()),
            Err(err) => Err(HttpError::Send {
                socket: socket.to_owned(),
                source: err,
            }),
            Ok(()) => Err(HttpError::Receive {
                socket: socket.to_owned(),
                source,
            }),
        },
    }
}

fn send_request(
    mut stream: &UnixStream,
    path: &str,
    body: &[u8],
    timeout: Duration,
) -> io::Result<()> {
    stream.set_write_timeout(Some(timeout))?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: dummy\r\nUser-Agent: ovn-k8s-cni-overlay\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut request = Vec::with_capacity(head.len() + body.len());
    request.extend_from_slice(head.as_bytes());
    request.extend_from_slice(body);
    stream.write_all(&request)?;
    stream.flush()
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads with the time left until one deadline (a socket timeout is per read call).
struct DeadlineReader<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}

/// Parses one answer: status line, headers, body. Interim 1xx answers are skipped.
pub(crate) fn read_response(reader: &mut impl BufRead) -> Result<HttpResponse, ResponseError> {
    loop {
        let mut head_budget = MAX_HEAD_BYTES;
        let status_line = read_line(reader, &mut head_budget, "status line")?;
        let status = parse_status_line(&status_line)?;
        let mut headers = Vec::new();
        loop {
            let line = read_line(reader, &mut head_budget, "headers")?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| malformed(format!("header line without a colon: {line:?}")))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        let body = if status == 204 || status == 304 || (100..200).contains(&status) {
            Vec::new()
        } else {
            read_body(reader, &headers)?
        };
        return Ok(HttpResponse { status, body });
    }
}

fn read_body(
    reader: &mut impl BufRead,
    headers: &[(String, String)],
) -> Result<Vec<u8>, ResponseError> {
    let chunked = headers
        .iter()
        .filter(|(name, _)| name == "transfer-encoding")
        .flat_map(|(_, value)| value.split(','))
        .next_back()
        .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
    if chunked {
        return read_chunked(reader);
    }
    let mut lengths = headers
        .iter()
        .filter(|(name, _)| name == "content-length")
        .map(|(_, value)| value);
    match lengths.next() {
        Some(first) => {
            if lengths.any(|other| other != first) {
                return Err(malformed("conflicting Content-Length headers".to_owned()));
            }
            let length: usize = first
                .parse()
                .map_err(|_| malformed(format!("invalid Content-Length {first:?}")))?;
            if length > MAX_BODY_BYTES {
                return Err(ResponseError::TooLarge {
                    part: "body",
                    limit: MAX_BODY_BYTES,
                });
            }
            read_exact_body(reader, length, "body")
        }
        None => read_to_close(reader),
    }
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, ResponseError> {
    let mut body = Vec::new();
    let mut budget = MAX_HEAD_BYTES;
    loop {
        let line = read_line(reader, &mut budget, "chunk header")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| malformed(format!("invalid chunk size {size_text:?}")))?;
        if size == 0 {
            // Trailers, if any, end with an empty line; a server that closes right after
            // the last chunk has still sent the whole body.
            loop {
                match read_line(reader, &mut budget, "trailers") {
                    Ok(line) if line.is_empty() => return Ok(body),
                    Ok(_) => continue,
                    Err(ResponseError::Truncated { got: 0, .. }) => return Ok(body),
                    Err(err) => return Err(err),
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(ResponseError::TooLarge {
                part: "body",
                limit: MAX_BODY_BYTES,
            });
        }
        body.extend(read_exact_body(reader, size, "chunk")?);
        let end = read_line(reader, &mut budget, "chunk end")?;
        if !end.is_empty() {
            return Err(malformed("chunk data longer than its size".to_owned()));
        }
    }
}

fn read_exact_body(
    reader: &mut impl BufRead,
    length: usize,
    part: &'static str,
) -> Result<Vec<u8>, ResponseError> {
    let mut body = Vec::with_capacity(length);
    let got = reader
        .take(length as u64)
        .read_to_end(&mut body)
        .map_err(ResponseError::Io)?;
    if got < length {
        return Err(ResponseError::Truncated { part, got });
    }
    Ok(body)
}

fn read_to_close(reader: &mut impl BufRead) -> Result<Vec<u8>, ResponseError> {
    let mut body = Vec::new();
    reader
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut body)
        .map_err(ResponseError::Io)?;
    if body.len() > MAX_BODY_BYTES {
        return Err(ResponseError::TooLarge {
            part: "body",
            limit: MAX_BODY_BYTES,
        });
    }
    Ok(body)
}

/// One CRLF- (or bare LF-) terminated line without its terminator, charged to `budget`.
fn read_line(
    reader: &mut impl BufRead,
    budget: &mut usize,
    part: &'static str,
) -> Result<String, ResponseError> {
    let mut line = Vec::new();
    let got = reader
        .take(*budget as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(ResponseError::Io)?;
    if line.last() != Some(&b'\n') {
        if got > *budget {
            return Err(ResponseError::TooLarge {
                part,
                limit: MAX_HEAD_BYTES,
            });
        }
        return Err(ResponseError::Truncated { part, got });
    }
    *budget -= got;
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| malformed(format!("{part} is not UTF-8")))
}

fn parse_status_line(line: &str) -> Result<u16, ResponseError> {
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(malformed(format!("not an HTTP/1.x status line: {line:?}")));
    }
    let code = parts.next().unwrap_or_default();
    if code.len() != 3 {
        return Err(malformed(format!("invalid status code in {line:?}")));
    }
    code.parse()
        .map_err(|_| malformed(format!("invalid status code in {line:?}")))
}

fn malformed(reason: String) -> ResponseError {
    ResponseError::Malformed { reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;
    use std::thread;

    fn parse(bytes: &[u8]) -> Result<HttpResponse, ResponseError> {
        read_response(&mut &bytes[..])
    }

    #[test]
    fn content_length_body() {
        let got = parse(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello",
        )
        .unwrap();
        assert_eq!(
            got,
            HttpResponse {
                status: 200,
                body: b"hello".to_vec()
            }
        );
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nabcd\r\n3\r\nefg\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(parse(raw).unwrap().body, b"abcdefg");
        // Chunked wins over Content-Length (RFC 9112 6.3).
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        assert_eq!(parse(raw).unwrap().body, b"ok");
        // Closed right after the last chunk.
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n")
                .unwrap()
                .body,
            b"z"
        );
    }

    #[test]
    fn body_until_close_and_empty_bodies() {
        assert_eq!(
            parse(b"HTTP/1.0 400 Bad Request\r\n\r\nplain text\n")
                .unwrap()
                .body,
            b"plain text\n"
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap()
                .body,
            b""
        );
        assert_eq!(
            parse(b"HTTP/1.1 204 No Content\r\n\r\nignored")
                .unwrap()
                .body,
            b""
        );
    }

    #[test]
    fn interim_answers_are_skipped_and_bare_newlines_accepted() {
        let got =
            parse(b"HTTP/1.1 100 Continue\n\nHTTP/1.1 400 Bad Request\nContent-Length: 2\n\nno")
                .unwrap();
        assert_eq!(
            got,
            HttpResponse {
                status: 400,
                body: b"no".to_vec()
            }
        );
    }

    #[test]
    fn truncated_answers_are_errors() {
        for raw in [
            &b""[..],
            b"HTTP/1.1 200 OK\r\nContent-Le",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nabc",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        ] {
            assert!(
                matches!(parse(raw), Err(ResponseError::Truncated { .. })),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn malformed_answers_are_errors() {
        for raw in [
            &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n0\r\n\r\n",
        ] {
            assert!(
                matches!(parse(raw), Err(ResponseError::Malformed { .. })),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn oversized_heads_are_refused() {
        let mut raw = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        raw.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES + 10));
        raw.extend(b"\r\n\r\n");
        assert!(matches!(parse(&raw), Err(ResponseError::TooLarge { .. })));
    }

    #[test]
    fn post_round_trip_over_a_socket() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let server = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(&stream);
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                reader.read_line(&mut head).unwrap();
            }
            let mut body = vec![0; 7];
            reader.read_exact(&mut body).unwrap();
            (&stream)
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                .unwrap();
            (head, body)
        });
        let got = post_json(&socket, "/metrics", b"{\"a\":1}", Duration::from_secs(10)).unwrap();
        assert_eq!(
            got,
            HttpResponse {
                status: 200,
                body: b"{}".to_vec()
            }
        );
        let (head, body) = server.join().unwrap();
        assert!(
            head.starts_with("POST /metrics HTTP/1.1\r\nHost: dummy\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\nContent-Type: application/json\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\nContent-Length: 7\r\n"), "{head}");
        assert_eq!(body, b"{\"a\":1}");
    }

    #[test]
    fn a_silent_server_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let server = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            // Hold the connection open, answering nothing, until the client gave up.
            let _ = wait.recv();
            drop(stream);
        });
        let started = Instant::now();
        let err = post_json(&socket, "/", b"{}", Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, HttpError::TimedOut { .. }), "{err:?}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        release.send(()).unwrap();
        server.join().unwrap();
    }

    #[test]
    fn no_socket_is_a_connect_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = post_json(
            &dir.path().join("absent.sock"),
            "/",
            b"{}",
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(matches!(err, HttpError::Connect { .. }), "{err:?}");
    }
}
