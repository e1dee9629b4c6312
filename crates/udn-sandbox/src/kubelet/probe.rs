//! Probes as kubelet runs them: httpGet and tcpSocket from the kubelet process itself (its
//! cgroup, its netns: the node's host network), exec inside the container's netns.

use std::io::{Read as _, Write as _};
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
    let mut head = [0_u8; 64];
    let Ok(n) = stream.read(&mut head) else {
        return false;
    };
    let line = String::from_utf8_lossy(&head[..n]);
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .is_some_and(|code| (200..400).contains(&code))
}
