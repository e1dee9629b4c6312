//! Who reaches whom: HTTP (agnhost netexec's `/hostname` answers the pod's name), UDP
//! (netexec's UDP server answers `hostname`) and ICMP, from inside a pod's netns.

use crate::Sandbox;

/// A pod: (namespace, name).
pub type PodRef<'a> = (&'a str, &'a str);

/// The HTTP port of the test pods (netexec `--http-port`).
pub const HTTP_PORT: u16 = 8080;
/// The UDP port of the test pods (netexec `--udp-port`).
pub const UDP_PORT: u16 = 8081;

/// `http://<ip>:<port><path>`, IPv6 in brackets.
pub fn url(ip: &str, port: u16, path: &str) -> String {
    if ip.contains(':') {
        format!("http://[{ip}]:{port}{path}")
    } else {
        format!("http://{ip}:{port}{path}")
    }
}

/// The `/hostname` URL of a test pod at `ip`.
pub fn hostname_url(ip: &str) -> String {
    url(ip, HTTP_PORT, "/hostname")
}

impl Sandbox {
    /// `from` reaches `to`'s IP on `interface` over HTTP and `to` answers with its name
    /// (retried until [`crate::WAIT`]: the network may still be converging).
    pub fn reaches(&self, from: PodRef<'_>, to: PodRef<'_>, interface: &str) -> Result<(), String> {
        let ip = self.ip_on(to.0, to.1, interface)?;
        self.eventually(
            &format!(
                "{}/{} reaches {}/{} at {ip} ({interface})",
                from.0, from.1, to.0, to.1
            ),
            || {
                self.http_get(from.0, from.1, &hostname_url(&ip), 2)
                    .filter(|body| body.trim() == to.1)
            },
        )
        .map(|_| ())
    }

    /// `from` does not reach `to` at its IP on `interface` (two tries, 3 s each). An answer
    /// from another pod does not count: with overlapping subnets the same IP may be a pod
    /// of `from`'s own network, which it rightly reaches.
    pub fn unreachable(
        &self,
        from: PodRef<'_>,
        to: PodRef<'_>,
        interface: &str,
    ) -> Result<(), String> {
        let ip = self.ip_on(to.0, to.1, interface)?;
        for _ in 0..2 {
            if let Some(body) = self.http_get(from.0, from.1, &hostname_url(&ip), 3)
                && body.trim() == to.1
            {
                return Err(format!(
                    "{}/{} reached {}/{} at {ip} ({interface})",
                    from.0, from.1, to.0, to.1
                ));
            }
        }
        Ok(())
    }

    /// The answer of the netexec UDP server at `ip` to `hostname`, sent from `from`
    /// (`None` without an answer within `timeout_s`).
    pub fn udp_hostname(&self, from: PodRef<'_>, ip: &str, timeout_s: u32) -> Option<String> {
        let script = format!(
            "echo hostname | nc -u -w {timeout_s} {ip} {UDP_PORT}",
            ip = ip.trim_matches(['[', ']'])
        );
        let out = self.exec(from.0, from.1, &["sh", "-c", &script]);
        let body = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (!body.is_empty()).then_some(body)
    }

    /// Whether `from` gets an ICMP echo reply from `ip` within `timeout_s`.
    pub fn pings(&self, from: PodRef<'_>, ip: &str, timeout_s: u32) -> bool {
        let timeout = timeout_s.to_string();
        self.exec(from.0, from.1, &["ping", "-c", "1", "-W", &timeout, ip])
            .status
            .success()
    }
}

/// Runs `check` on every item at once (each check mostly waits: on a timeout, or for a
/// network to converge) and gathers every failure.
pub fn all<T: Sync>(
    items: &[T],
    check: impl Fn(&T) -> Result<(), String> + Sync,
) -> Result<(), String> {
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .iter()
            .map(|item| scope.spawn(|| check(item)))
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| match handle.join() {
                Ok(result) => result.err(),
                Err(_) => Some("a check panicked".to_owned()),
            })
            .collect()
    });
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}
