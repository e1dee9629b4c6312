//! agnhost `netexec`: an HTTP server (one thread per connection, std only) and an optional
//! UDP responder.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream, UdpSocket};

use super::ImageError;

/// `netexec` flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `--http-port` (8080).
    pub http_port: u16,
    /// `--udp-port`, when given.
    pub udp_port: Option<u16>,
}

impl Options {
    /// Parses `--http-port=N`, `--udp-port=N` (also as two arguments).
    pub fn parse(flags: &[String]) -> Result<Self, ImageError> {
        let mut options = Self {
            http_port: 8080,
            udp_port: None,
        };
        let mut iter = flags.iter();
        while let Some(flag) = iter.next() {
            let (key, value) = match flag.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (flag.clone(), iter.next().cloned().unwrap_or_default()),
            };
            let port = || {
                value
                    .parse::<u16>()
                    .map_err(|_| ImageError::Usage(format!("netexec {key}: {value:?} is no port")))
            };
            match key.as_str() {
                "--http-port" => options.http_port = port()?,
                "--udp-port" => options.udp_port = Some(port()?),
                _ => {}
            }
        }
        Ok(options)
    }
}

fn hostname() -> String {
    std::env::var("HOSTNAME").unwrap_or_default()
}

/// Serves until the process is stopped.
pub fn run(options: &Options) -> Result<(), ImageError> {
    let io = |what: String| {
        move |source| ImageError::Io {
            what: what.clone(),
            source,
        }
    };
    let listener = TcpListener::bind(("::", options.http_port))
        .or_else(|_| TcpListener::bind(("0.0.0.0", options.http_port)))
        .map_err(io(format!("listening on TCP {}", options.http_port)))?;
    if let Some(port) = options.udp_port {
        let socket = UdpSocket::bind(("::", port))
            .or_else(|_| UdpSocket::bind(("0.0.0.0", port)))
            .map_err(io(format!("listening on UDP {port}")))?;
        std::thread::spawn(move || udp(&socket));
    }
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let _ = serve(stream);
        });
    }
    Ok(())
}

fn udp(socket: &UdpSocket) {
    let mut buf = [0_u8; 2048];
    while let Ok((n, peer)) = socket.recv_from(&mut buf) {
        let text = String::from_utf8_lossy(&buf[..n]).trim().to_owned();
        let answer = match text.split_once(' ') {
            Some(("echo", rest)) => rest.to_owned(),
            _ if text == "hostname" => hostname(),
            _ => continue,
        };
        let _ = socket.send_to(answer.as_bytes(), peer);
    }
}

/// The answer for `target` (path and query) from a client at `peer`.
pub fn answer(target: &str, peer: &str) -> (u16, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/hostname" | "/" => (200, hostname()),
        "/clientip" => (200, peer.to_owned()),
        "/healthz" => (200, "ok".to_owned()),
        "/echo" => (
            200,
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix("msg="))
                .unwrap_or_default()
                .to_owned(),
        ),
        _ => (404, "404 page not found".to_owned()),
    }
}

fn serve(stream: TcpStream) -> std::io::Result<()> {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Drain the headers.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let target = request.split_whitespace().nth(1).unwrap_or("/");
    let (code, body) = answer(target, &peer);
    let reason = if code == 200 { "OK" } else { "Not Found" };
    // One write: a response sent piece by piece leaves its first segment alone on the wire
    // (Nagle holds the rest for the ACK), and a client that reads once sees only "HTTP/1.1 ".
    let response = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = stream;
    stream.write_all(response.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_answers() {
        let options = Options::parse(&[
            "--http-port=9000".to_owned(),
            "--udp-port".to_owned(),
            "9001".to_owned(),
        ])
        .unwrap();
        assert_eq!(
            options,
            Options {
                http_port: 9000,
                udp_port: Some(9001)
            }
        );
        assert!(Options::parse(&["--http-port=x".to_owned()]).is_err());
        assert_eq!(answer("/echo?msg=hi", "1.2.3.4:5"), (200, "hi".to_owned()));
        assert_eq!(
            answer("/clientip", "1.2.3.4:5"),
            (200, "1.2.3.4:5".to_owned())
        );
        assert_eq!(answer("/nope", "x").0, 404);
    }
}
