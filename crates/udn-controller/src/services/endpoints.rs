//! Which endpoints of a Service port a load balancer sends to (upstream
//! `GetEndpointsForService` with `getSelectedEligibleEndpoints`): the ready ones, or when none
//! is ready the serving terminating ones (kube-proxy's fallback), each at the slice's port of
//! the Service port's name and protocol.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::view::SliceView;

/// One backend: an address and the target port.
pub(crate) type Target = (IpAddr, u16);

/// The eligible targets of Service port `port_name`/`protocol` in `slices` (the Service's),
/// of every endpoint, or (`node`) of the endpoints on that node only, the fallback applied
/// to that selection as upstream's local selection does. Sorted, without duplicates.
pub(crate) fn eligible(
    slices: &[&SliceView],
    port_name: &str,
    protocol: &str,
    node: Option<&str>,
) -> Vec<Target> {
    let mut ready = BTreeSet::new();
    let mut terminating = BTreeSet::new();
    for slice in slices {
        let Some((_, target, _)) = slice
            .ports
            .iter()
            .find(|(name, _, proto)| name == port_name && proto == protocol)
        else {
            continue;
        };
        for e in &slice.endpoints {
            if node.is_some() && e.node.as_deref() != node {
                continue;
            }
            for ip in &e.addresses {
                if e.ready && !e.terminating {
                    ready.insert((*ip, *target));
                } else if e.serving && e.terminating {
                    terminating.insert((*ip, *target));
                }
            }
        }
    }
    let chosen = if ready.is_empty() { terminating } else { ready };
    chosen.into_iter().collect()
}

/// `ip:port`, or `[ip6]:port`.
pub(crate) fn join_host_port(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// The targets of one family, as `ip:port` texts.
pub(crate) fn of_family(targets: &[Target], v6: bool) -> Vec<String> {
    targets
        .iter()
        .filter(|(ip, _)| ip.is_ipv6() == v6)
        .map(|(ip, port)| join_host_port(*ip, *port))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::view::EndpointView;
    use super::*;

    fn slice(endpoints: &[(&str, bool, bool, bool, &str)]) -> SliceView {
        SliceView {
            namespace: "ns".to_owned(),
            service: "web".to_owned(),
            network: None,
            ports: vec![("http".to_owned(), 8080, "TCP".to_owned())],
            endpoints: endpoints
                .iter()
                .map(|(ip, ready, serving, terminating, node)| EndpointView {
                    addresses: vec![ip.parse().unwrap()],
                    ready: *ready,
                    serving: *serving,
                    terminating: *terminating,
                    node: Some((*node).to_owned()),
                })
                .collect(),
        }
    }

    #[test]
    fn local_selection_falls_back_on_its_own() {
        let s = slice(&[
            ("10.0.0.1", true, true, false, "a"),
            ("10.0.0.2", false, true, true, "b"),
            ("10.0.0.3", false, false, true, "b"),
        ]);
        let all = eligible(&[&s], "http", "TCP", None);
        assert_eq!(all, [("10.0.0.1".parse().unwrap(), 8080)]);
        // Node b has no ready endpoint: its serving terminating one.
        let b = eligible(&[&s], "http", "TCP", Some("b"));
        assert_eq!(b, [("10.0.0.2".parse().unwrap(), 8080)]);
        assert!(eligible(&[&s], "http", "TCP", Some("c")).is_empty());
        assert!(eligible(&[&s], "http", "UDP", None).is_empty());
    }

    #[test]
    fn families_are_formatted_as_upstream() {
        let targets = [
            ("10.0.0.1".parse().unwrap(), 80),
            ("fd00::1".parse().unwrap(), 80),
        ];
        assert_eq!(of_family(&targets, false), ["10.0.0.1:80"]);
        assert_eq!(of_family(&targets, true), ["[fd00::1]:80"]);
    }
}
