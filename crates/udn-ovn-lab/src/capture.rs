//! Packet capture with `tcpdump` in a lab netns: incoming packets only, one line each,
//! delivered as they arrive (`--immediate-mode -l`); ready once tcpdump says "listening on".

use std::io::{BufRead, BufReader, Read};
use std::marker::PhantomData;
use std::net::IpAddr;
use std::process::Child;
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::command::Cmd;
use crate::error::LabError;

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// tcpdump's line (`-n -q -t`), e.g. `IP 172.18.0.2.40000 > 172.18.0.1.8080: tcp 0`.
    pub line: String,
    /// The IP source address, for IP packets.
    pub src: Option<IpAddr>,
    /// The IP destination address, for IP packets.
    pub dst: Option<IpAddr>,
}

impl Packet {
    fn parse(line: String) -> Self {
        let (src, dst) = parse_addresses(&line).unzip();
        Self {
            line,
            src,
            dst: dst.flatten(),
        }
    }
}

/// `IP 1.2.3.4.5555 > 6.7.8.9.80: ...` or `IP6 fd00::1.5555 > fd00::2.80: ...` (tcpdump puts
/// the port after a dot; ICMP has none).
fn parse_addresses(line: &str) -> Option<(IpAddr, Option<IpAddr>)> {
    let mut words = line.split_whitespace();
    let family = words.next()?;
    if family != "IP" && family != "IP6" {
        return None;
    }
    let src = parse_endpoint(words.next()?)?;
    let dst = match (words.next(), words.next()) {
        (Some(">"), Some(dst)) => parse_endpoint(dst.trim_end_matches(':')),
        _ => None,
    };
    Some((src, dst))
}

fn parse_endpoint(word: &str) -> Option<IpAddr> {
    word.parse().ok().or_else(|| {
        let (address, port) = word.rsplit_once('.')?;
        port.parse::<u16>().ok()?;
        address.parse().ok()
    })
}

/// Reports "listening on" as `Ok`, or at end of file everything else tcpdump said as `Err`.
fn watch_stderr(stderr: impl Read, ready: &Sender<Result<(), String>>) {
    let mut lines = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if line.starts_with("listening on") {
            let _ = ready.send(Ok(()));
        } else {
            lines.push(line);
        }
    }
    let _ = ready.send(Err(lines.join("\n")));
}

fn collect_packets(stdout: impl Read, seen: &(Mutex<Seen>, Condvar)) {
    let (lock, changed) = seen;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Ok(mut seen) = lock.lock() {
            seen.packets.push(Packet::parse(line));
        }
        changed.notify_all();
    }
    if let Ok(mut seen) = lock.lock() {
        seen.closed = true;
    }
    changed.notify_all();
}

#[derive(Debug, Default)]
struct Seen {
    packets: Vec<Packet>,
    closed: bool,
}

/// A running capture; killed on drop.
#[derive(Debug)]
pub struct Capture<'lab> {
    child: Child,
    seen: Arc<(Mutex<Seen>, Condvar)>,
    _lab: PhantomData<&'lab ()>,
}

impl<'lab> Capture<'lab> {
    /// Starts tcpdump on `interface` in `netns` with the pcap `filter` (may be empty) and
    /// returns once it captures.
    pub(crate) fn start(
        netns: &str,
        interface: &str,
        filter: &str,
        timeout: Duration,
    ) -> Result<Self, LabError> {
        let step = format!("capture on {interface} in {netns}");
        let mut child = Cmd::new("tcpdump")
            .netns(netns)
            .args([
                "--immediate-mode",
                "-l",
                "-n",
                "-q",
                "-t",
                "-Q",
                "in",
                "-i",
                interface,
            ])
            .args(filter.split_whitespace())
            .spawn(&step)?;
        let seen = Arc::new((Mutex::new(Seen::default()), Condvar::new()));
        let (ready, readiness) = channel();
        if let Some(stderr) = child.stderr.take() {
            std::thread::spawn(move || watch_stderr(stderr, &ready));
        }
        if let Some(stdout) = child.stdout.take() {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || collect_packets(stdout, &seen));
        }
        let mut capture = Self {
            child,
            seen,
            _lab: PhantomData,
        };
        let stderr = match readiness.recv_timeout(timeout) {
            Ok(Ok(())) => return Ok(capture),
            Ok(Err(stderr)) => stderr,
            Err(RecvTimeoutError::Disconnected) => String::new(),
            Err(RecvTimeoutError::Timeout) => {
                return Err(LabError::Timeout {
                    step,
                    what: "tcpdump listening".to_owned(),
                    waited: timeout,
                });
            }
        };
        let status = capture
            .child
            .wait()
            .map_or_else(|error| error.to_string(), |status| status.to_string());
        Err(LabError::Command {
            step,
            command: format!("tcpdump -i {interface} {filter}"),
            status,
            stderr,
        })
    }

    /// The tcpdump process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every packet captured so far.
    pub fn packets(&self) -> Vec<Packet> {
        let (lock, _) = &*self.seen;
        lock.lock()
            .map(|seen| seen.packets.clone())
            .unwrap_or_default()
    }

    /// Waits (up to `timeout`) for a captured packet (already captured or arriving) that
    /// satisfies `matches`.
    pub fn wait_for(&self, timeout: Duration, matches: impl Fn(&Packet) -> bool) -> Option<Packet> {
        let deadline = Instant::now() + timeout;
        let (lock, changed) = &*self.seen;
        let mut seen = lock.lock().ok()?;
        let mut checked = 0;
        loop {
            if let Some(packet) = seen.packets[checked..].iter().find(|p| matches(p)) {
                return Some(packet.clone());
            }
            checked = seen.packets.len();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || seen.closed {
                return None;
            }
            seen = changed.wait_timeout(seen, left).ok()?.0;
        }
    }

    /// The source address of the first IP packet (up to `timeout`).
    pub fn wait_source(&self, timeout: Duration) -> Option<IpAddr> {
        self.wait_for(timeout, |packet| packet.src.is_some())?.src
    }
}

impl Drop for Capture<'_> {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcpdump_lines() {
        let tcp = Packet::parse("IP 172.18.0.2.40000 > 172.18.0.1.8080: tcp 0".to_owned());
        assert_eq!(tcp.src, Some("172.18.0.2".parse().unwrap()));
        assert_eq!(tcp.dst, Some("172.18.0.1".parse().unwrap()));
        let icmp = Packet::parse(
            "IP 10.244.1.5 > 172.18.0.1: ICMP echo request, id 7, seq 1, length 64".to_owned(),
        );
        assert_eq!(icmp.src, Some("10.244.1.5".parse().unwrap()));
        assert_eq!(icmp.dst, Some("172.18.0.1".parse().unwrap()));
        let v6 = Packet::parse("IP6 fd00::2.5555 > fd00::1.80: tcp 0".to_owned());
        assert_eq!(v6.src, Some("fd00::2".parse().unwrap()));
        let icmp6 = Packet::parse("IP6 fe80::1 > ff02::2: ICMP6, router solicitation".to_owned());
        assert_eq!(icmp6.src, Some("fe80::1".parse().unwrap()));
        let arp = Packet::parse("ARP, Request who-has 172.18.0.1 tell 172.18.0.2".to_owned());
        assert_eq!((arp.src, arp.dst), (None, None));
    }
}
