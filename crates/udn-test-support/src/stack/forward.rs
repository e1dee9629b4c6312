//! A TCP forwarder from a lab node's network namespace to an address of the test's own
//! namespace: the node agent runs inside the node's netns (where its OVS, veths and routes
//! are), and reaches the API server (listening on the test's loopback) through it. The
//! listening socket is made inside the node's netns and the outgoing ones outside: a
//! socket keeps the namespace it was created in.

use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

/// A running forwarder; stops accepting when dropped.
#[derive(Debug)]
pub struct Forwarder {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Forwarder {
    /// Listens on 127.0.0.1 (an ephemeral port) inside netns `netns` (a name under
    /// /run/netns) and forwards every connection to `target`.
    pub fn start(netns: &str, target: SocketAddr) -> Self {
        let path = format!("/run/netns/{netns}");
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        std::thread::Builder::new()
            .name(format!("forward-{netns}"))
            .spawn(move || {
                let own = std::fs::File::open("/proc/thread-self/ns/net")
                    .expect("opening the thread's own netns");
                let node =
                    std::fs::File::open(&path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
                move_into_link_name_space(node.as_fd(), Some(LinkNameSpaceType::Network))
                    .unwrap_or_else(|e| panic!("entering {path}: {e}"));
                let listener = TcpListener::bind("127.0.0.1:0")
                    .unwrap_or_else(|e| panic!("listening in {path}: {e}"));
                move_into_link_name_space(own.as_fd(), Some(LinkNameSpaceType::Network))
                    .expect("returning to the thread's own netns");
                let port = listener
                    .local_addr()
                    .expect("the listener's address")
                    .port();
                // The caller waits for the port; it cannot have gone away.
                let _ = tx.send(port);
                listener
                    .set_nonblocking(true)
                    .expect("a non-blocking listener");
                while !stopping.load(Ordering::Relaxed) {
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
                            std::thread::park_timeout(std::time::Duration::from_millis(20));
                        }
                        Err(_) => break,
                    }
                }
            })
            .expect("starting the forwarder's thread");
        let port = rx
            .recv()
            .unwrap_or_else(|_| panic!("the forwarder into {netns} did not start"));
        Self { port, stop }
    }

    /// The port inside the node's netns.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
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
        let forwarder = Forwarder::start(&netns.0, target.local_addr().expect("its address"));
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
}
