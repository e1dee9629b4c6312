//! A TCP forwarder from a node's network namespace to an address of this host's: the node
//! agent and the kubelet run inside the node's netns (its host network), and reach the API
//! server (listening on this host's loopback) through it, as a real node reaches its API
//! server over the network. The listening socket is made inside the node's netns and the
//! outgoing ones outside: a socket keeps the namespace it was created in.

use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use crate::error::SandboxError;

/// A running forwarder; stops accepting when dropped.
#[derive(Debug)]
pub struct Forwarder {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Forwarder {
    /// Listens on `listen` (port 0: an ephemeral one) inside netns `netns` (a name under
    /// /run/netns) and forwards every connection to `target`, from a thread of its own.
    pub fn start(
        netns: &str,
        listen: SocketAddr,
        target: SocketAddr,
    ) -> Result<Self, SandboxError> {
        let listener = listen_in(netns, listen)?;
        let port = listener
            .local_addr()
            .map_err(|source| SandboxError::io("read the address of", Path::new(netns), source))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        std::thread::Builder::new()
            .name(format!("forward-{netns}"))
            .spawn(move || accept_loop(&listener, target, &stopping))
            .map_err(|source| SandboxError::Spawn {
                program: "the forwarder's thread".to_owned(),
                source,
            })?;
        Ok(Self { port, stop })
    }

    /// The port inside the node's netns.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Forwards until the process ends (the `udnctl sandbox forward` daemon).
    pub fn serve_forever(
        netns: &str,
        listen: SocketAddr,
        target: SocketAddr,
    ) -> Result<(), SandboxError> {
        let listener = listen_in(netns, listen)?;
        accept_loop(&listener, target, &AtomicBool::new(false));
        Ok(())
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A non-blocking listener on `listen` inside `netns`, made from this thread, which returns
/// to its own netns afterwards.
fn listen_in(netns: &str, listen: SocketAddr) -> Result<TcpListener, SandboxError> {
    let path = format!("/run/netns/{netns}");
    let own_path = Path::new("/proc/thread-self/ns/net");
    let own = std::fs::File::open(own_path)
        .map_err(|source| SandboxError::io("open", own_path, source))?;
    let node = std::fs::File::open(&path)
        .map_err(|source| SandboxError::io("open", Path::new(&path), source))?;
    let enter = |file: &std::fs::File, what: &str| {
        move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network)).map_err(|errno| {
            SandboxError::io("enter the network namespace", Path::new(what), errno.into())
        })
    };
    enter(&node, &path)?;
    let bound = TcpListener::bind(listen);
    enter(&own, "/proc/thread-self/ns/net")?;
    let listener =
        bound.map_err(|source| SandboxError::io("listen in", Path::new(&path), source))?;
    listener
        .set_nonblocking(true)
        .map_err(|source| SandboxError::io("configure a listener in", Path::new(&path), source))?;
    Ok(listener)
}

fn accept_loop(listener: &TcpListener, target: SocketAddr, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((inbound, _)) => {
                if inbound.set_nonblocking(false).is_err() {
                    continue;
                }
                let Ok(outbound) = TcpStream::connect(target) else {
                    continue;
                };
                pipe(inbound, outbound);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                // Polled, so a dropped Forwarder's thread notices and ends.
                std::thread::park_timeout(Duration::from_millis(20));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!(%error, "forwarder stops accepting");
                break;
            }
        }
    }
}

fn pipe(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    std::thread::spawn(move || copy(a, b));
    std::thread::spawn(move || copy(b2, a2));
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};

    use super::*;

    /// A netns deleted on drop.
    struct Netns(String);

    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = Command::new("ip")
                .args(["netns", "delete", &self.0])
                .status();
        }
    }

    fn ip_netns(args: &[&str]) {
        let status = Command::new("ip").args(args).status().expect("running ip");
        assert!(status.success(), "ip {args:?}: {status}");
    }

    #[test]
    fn connections_made_inside_the_netns_reach_the_target_outside() {
        let netns = Netns(format!("udn-fwd-test-{}", std::process::id()));
        ip_netns(&["netns", "add", &netns.0]);
        ip_netns(&["-n", &netns.0, "link", "set", "lo", "up"]);
        let target = TcpListener::bind("127.0.0.1:0").expect("a listener outside");
        let listen = "127.0.0.1:0".parse().expect("an address");
        let forwarder =
            Forwarder::start(&netns.0, listen, target.local_addr().expect("its address"))
                .expect("the forwarder");
        let server = std::thread::spawn(move || {
            let (mut stream, _) = target.accept().expect("a forwarded connection");
            let mut got = String::new();
            stream.read_to_string(&mut got).expect("reading");
            stream
                .write_all(format!("echo {got}").as_bytes())
                .expect("answering");
        });
        // nc runs inside the netns: the forwarder's port exists only there.
        let mut nc = Command::new("ip")
            .args(["netns", "exec", &netns.0, "nc", "-N", "127.0.0.1"])
            .arg(forwarder.port().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting nc");
        nc.stdin
            .take()
            .expect("piped")
            .write_all(b"hello")
            .expect("writing to nc");
        let out = nc.wait_with_output().expect("waiting for nc");
        server.join().expect("the target thread");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "echo hello");
    }

    #[test]
    fn a_missing_netns_is_an_error_naming_it() {
        let listen = "127.0.0.1:0".parse().expect("an address");
        let error = Forwarder::start("udn-no-such-netns", listen, listen).expect_err("no netns");
        assert!(error.to_string().contains("udn-no-such-netns"), "{error}");
    }
}
