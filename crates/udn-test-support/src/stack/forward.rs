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
                let own = std::fs::File::open("/proc/thread-self/ns/net").unwrap();
                let node = std::fs::File::open(&path).unwrap();
                move_into_link_name_space(node.as_fd(), Some(LinkNameSpaceType::Network)).unwrap();
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                move_into_link_name_space(own.as_fd(), Some(LinkNameSpaceType::Network)).unwrap();
                tx.send(listener.local_addr().unwrap().port()).unwrap();
                listener.set_nonblocking(true).unwrap();
                while !stopping.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((inbound, _)) => {
                            inbound.set_nonblocking(false).unwrap();
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
            .unwrap();
        let port = rx.recv().unwrap();
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
    let (a2, b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
    std::thread::spawn(move || copy(a, b));
    std::thread::spawn(move || copy(b2, a2));
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}
