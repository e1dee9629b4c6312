//! Probes as kubelet runs them: httpGet and tcpSocket from the kubelet process itself (its
//! cgroup, its netns: the node's host network), exec inside the container's netns.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The probe's port as a number (a named port is looked up in the container's ports).
fn port(port: &IntOrString, container: &Container) -> Option<u16> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// Runs `probe` once against the pod at `pod_ip`; whether it succeeded.
pub fn run(probe: &Probe, container: &Container, pod_ip: IpAddr, netns: &str) -> bool {
    let timeout = Duration::from_secs(
        u64::try_from(probe.timeout_seconds.unwrap_or(1))
            .unwrap_or(1)
            .max(1),
    );
    if let Some(http) = &probe.http_get {
        let host = http
            .host
            .as_deref()
            .and_then(|h| h.parse().ok())
            .unwrap_or(pod_ip);
        let Some(port) = port(&http.port, container) else {
            return false;
        };
        return http_get(
            SocketAddr::new(host, port),
            http.path.as_deref().unwrap_or("/"),
            timeout,
        );
    }
    if let Some(tcp) = &probe.tcp_socket {
        let host = tcp
            .host
            .as_deref()
            .and_then(|h| h.parse().ok())
            .unwrap_or(pod_ip);
        let Some(port) = port(&tcp.port, container) else {
            return false;
        };
        return TcpStream::connect_timeout(&SocketAddr::new(host, port), timeout).is_ok();
    }
    if let Some(exec) = &probe.exec {
        let command = exec.command.clone().unwrap_or_default();
        return std::process::Command::new("nsenter")
            .arg(format!("--net={netns}"))
            .arg("--")
            .args(&command)
            .output()
            .is_ok_and(|out| out.status.success());
    }
    false
}

/// An HTTP/1.1 GET; success is a status in 200..400, as kubelet's.
fn http_get(address: SocketAddr, path: &str, timeout: Duration) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nUser-Agent: kube-probe/1.33\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    status_code(&mut stream).is_some_and(|code| (200..400).contains(&code))
}

/// The status code of the response on `stream`: reads until the status line is whole (TCP
/// may deliver it in pieces), the peer closes, or 4 KiB arrived without one.
fn status_code(stream: &mut impl std::io::Read) -> Option<u16> {
    let mut head = Vec::with_capacity(256);
    let mut buf = [0_u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 4096 {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let end = head.windows(2).position(|w| w == b"\r\n")?;
    let line = String::from_utf8_lossy(&head[..end]);
    let mut words = line.split_whitespace();
    words.next().filter(|v| v.starts_with("HTTP/"))?;
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    /// A reader that hands out one byte per read, as a slow network may.
    struct Dribble<'a>(&'a [u8]);

    impl std::io::Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn the_status_line_may_arrive_in_pieces() {
        let response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(status_code(&mut Dribble(response)), Some(200));
        assert_eq!(status_code(&mut Dribble(b"HTTP/1.1 503 No\r\n")), Some(503));
        // Cut before the line ends, or not HTTP at all: no status.
        assert_eq!(status_code(&mut Dribble(b"HTTP/1.1 ")), None);
        assert_eq!(status_code(&mut Dribble(b"SSH-2.0-x\r\n")), None);
    }

    #[test]
    fn every_answer_of_a_netexec_server_parses() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let options = crate::images::netexec::Options {
            http_port: address.port(),
            udp_port: None,
        };
        std::thread::spawn(move || crate::images::netexec::run(&options));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(address).is_err() && std::time::Instant::now() < deadline {
            std::thread::park_timeout(Duration::from_millis(10));
        }
        // What is checked is the answer, whole as the server sent it: a connection the
        // loaded test machine refuses or resets is not the server's answer, and not counted
        // (at most a few are allowed). The probe reading in pieces is the test above.
        let timeout = Duration::from_secs(5);
        let mut answers = Vec::new();
        for _ in 0..300 {
            let Ok(mut stream) = TcpStream::connect_timeout(&address, timeout) else {
                continue;
            };
            let _ = stream.set_read_timeout(Some(timeout));
            let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
            let mut answer = Vec::new();
            if stream.write_all(request).is_ok() && stream.read_to_end(&mut answer).is_ok() {
                answers.push(answer);
            }
        }
        assert!(answers.len() >= 290, "{} answers of 300", answers.len());
        let wrong: Vec<String> = answers
            .iter()
            .filter(|a| status_code(&mut a.as_slice()) != Some(200) || !a.ends_with(b"ok"))
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        assert!(wrong.is_empty(), "{wrong:?}");
        // And the probe itself, end to end.
        let probe = |path: &str| (0..3).any(|_| http_get(address, path, timeout));
        assert!(probe("/healthz"));
        assert!(!probe("/nope"));
    }
}
