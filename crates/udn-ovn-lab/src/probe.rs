//! Reachability probes between the lab's namespaces: ping, and TCP through `nc` (a listener
//! that reports readiness and the peer's address on stderr, a sender that closes its side at
//! the end of its input).

use std::io::{BufRead, BufReader, Read};
use std::marker::PhantomData;
use std::net::IpAddr;
use std::process::Child;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use crate::command::Cmd;
use crate::error::LabError;
use crate::zone::whole_seconds;

/// How hard [`crate::Lab::ping`] tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping {
    /// Replies needed for success.
    pub count: u32,
    /// Deadline for all of them (echo requests go out every 200 ms until then).
    pub timeout: Duration,
}

impl Default for Ping {
    /// One reply within 3 s.
    fn default() -> Self {
        Self {
            count: 1,
            timeout: Duration::from_secs(3),
        }
    }
}

impl Ping {
    /// `count` replies within `timeout`.
    pub fn new(count: u32, timeout: Duration) -> Self {
        Self { count, timeout }
    }
}

/// Whether `ping` from `netns` got `ping.count` replies from `dst` before the deadline.
pub(crate) fn ping(netns: &str, dst: IpAddr, ping: Ping) -> Result<bool, LabError> {
    let output = Cmd::new("ping")
        .netns(netns)
        .args(["-n", "-q", "-i", "0.2"])
        .arg("-c")
        .arg(ping.count.max(1).to_string())
        .arg("-w")
        .arg(whole_seconds(ping.timeout).to_string())
        .arg(dst.to_string())
        .output(&format!("ping {dst} from {netns}"))?;
    Ok(output.success())
}

/// What a [`TcpListener`] received on its one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The bytes, up to the peer closing the connection.
    pub data: Vec<u8>,
    /// The peer's address as the listener saw it (after any NAT on the way).
    pub peer: Option<IpAddr>,
}

#[derive(Debug)]
enum Event {
    Listening,
    Peer(IpAddr),
    Stderr(String),
    StderrClosed,
    Data(Vec<u8>),
}

/// An `nc` listener in a lab netns that accepts one connection and keeps what it receives.
/// Killed on drop.
#[derive(Debug)]
pub struct TcpListener<'lab> {
    child: Child,
    port: u16,
    netns: String,
    events: Receiver<Event>,
    peer: Option<IpAddr>,
    _lab: PhantomData<&'lab ()>,
}

/// Reads nc's stderr: "Listening on ADDR PORT", "Connection received on ADDR PORT".
fn watch_stderr(stderr: impl Read, events: Sender<Event>) {
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        let event = if line.starts_with("Listening on") {
            Event::Listening
        } else if let Some(rest) = line.strip_prefix("Connection received on ") {
            match rest
                .split_whitespace()
                .next()
                .and_then(|ip| ip.parse().ok())
            {
                Some(ip) => Event::Peer(ip),
                None => Event::Stderr(line),
            }
        } else {
            Event::Stderr(line)
        };
        if events.send(event).is_err() {
            return;
        }
    }
    let _ = events.send(Event::StderrClosed);
}

fn read_all(mut stdout: impl Read, events: Sender<Event>) {
    let mut data = Vec::new();
    let _ = stdout.read_to_end(&mut data);
    let _ = events.send(Event::Data(data));
}

impl<'lab> TcpListener<'lab> {
    /// Starts `nc -l` on `port` in `netns` and returns once it listens.
    pub(crate) fn start(netns: &str, port: u16, timeout: Duration) -> Result<Self, LabError> {
        let step = format!("listen on TCP port {port} in {netns}");
        let mut child = Cmd::new("nc")
            .netns(netns)
            .args(["-n", "-v", "-l", "-p"])
            .arg(port.to_string())
            .spawn(&step)?;
        let (send, events) = channel();
        if let (Some(stderr), Some(stdout)) = (child.stderr.take(), child.stdout.take()) {
            let to_stderr = send.clone();
            std::thread::spawn(move || watch_stderr(stderr, to_stderr));
            std::thread::spawn(move || read_all(stdout, send));
        }
        let mut listener = Self {
            child,
            port,
            netns: netns.to_owned(),
            events,
            peer: None,
            _lab: PhantomData,
        };
        listener.wait_listening(&step, timeout)?;
        Ok(listener)
    }

    fn wait_listening(&mut self, step: &str, timeout: Duration) -> Result<(), LabError> {
        let deadline = Instant::now() + timeout;
        let mut stderr = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Listening) => return Ok(()),
                Ok(Event::Stderr(line)) => stderr.push(line),
                Ok(Event::StderrClosed | Event::Data(_)) | Err(RecvTimeoutError::Disconnected) => {
                    let status = self
                        .child
                        .wait()
                        .map_or_else(|error| error.to_string(), |status| status.to_string());
                    return Err(LabError::Command {
                        step: step.to_owned(),
                        command: format!("nc -n -v -l -p {}", self.port),
                        status,
                        stderr: stderr.join("\n"),
                    });
                }
                Ok(Event::Peer(ip)) => self.peer = Some(ip),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(LabError::Timeout {
                        step: step.to_owned(),
                        what: "nc listening".to_owned(),
                        waited: timeout,
                    });
                }
            }
        }
    }

    /// The nc process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Waits (up to `timeout`) until a peer has connected, sent its data and closed.
    pub fn received(mut self, timeout: Duration) -> Result<Received, LabError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Data(data)) => {
                    // The peer line comes before nc exits; stderr may still be in flight.
                    while self.peer.is_none() {
                        match self.events.recv_timeout(Duration::from_millis(500)) {
                            Ok(Event::Peer(ip)) => self.peer = Some(ip),
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                    return Ok(Received {
                        data,
                        peer: self.peer,
                    });
                }
                Ok(Event::Peer(ip)) => self.peer = Some(ip),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    return Err(LabError::Timeout {
                        step: format!("TCP listener on port {} in {}", self.port, self.netns),
                        what: "a connection that sends and closes".to_owned(),
                        waited: timeout,
                    });
                }
            }
        }
    }
}

impl Drop for TcpListener<'_> {
    fn drop(&mut self) {
        // Our own child: kill, then reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `data` over TCP from `netns` to `dst:port` and closes; true if nc connected and sent
/// everything.
pub(crate) fn tcp_send(
    netns: &str,
    dst: IpAddr,
    port: u16,
    data: &[u8],
    timeout: Duration,
) -> Result<bool, LabError> {
    let output = Cmd::new("nc")
        .netns(netns)
        .args(["-n", "-N", "-w"])
        .arg(whole_seconds(timeout).to_string())
        .arg(dst.to_string())
        .arg(port.to_string())
        .stdin(data.to_vec())
        .output(&format!("send TCP to {dst}:{port} from {netns}"))?;
    Ok(output.success())
}

/// Whether a TCP connection from `netns` to `dst:port` is accepted (`nc -z`).
pub(crate) fn tcp_connect(
    netns: &str,
    dst: IpAddr,
    port: u16,
    timeout: Duration,
) -> Result<bool, LabError> {
    let output = Cmd::new("nc")
        .netns(netns)
        .args(["-n", "-z", "-w"])
        .arg(whole_seconds(timeout).to_string())
        .arg(dst.to_string())
        .arg(port.to_string())
        .output(&format!("connect to {dst}:{port} from {netns}"))?;
    Ok(output.success())
}

/// A deterministic, incompressible-looking payload (xorshift), so a byte-exact comparison
/// catches corruption such as a bad checksum path.
pub(crate) fn payload(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_deterministic_and_varied() {
        let a = payload(4096);
        assert_eq!(a, payload(4096));
        let distinct: std::collections::BTreeSet<u8> = a.iter().copied().collect();
        assert!(distinct.len() > 200, "{}", distinct.len());
    }
}
