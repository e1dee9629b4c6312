//! A network's load balancers from its Services and EndpointSlices (upstream
//! `buildServiceLBConfigs` / `buildClusterLBs` for ClusterIPs).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::view::{ServiceView, SliceView};

/// One `Load_Balancer` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbSpec {
    /// `[<prefix>]Service_<ns>/<name>_<PROTO>_cluster`.
    pub name: String,
    /// `ns/name` of the Service (the unit that owns the row).
    pub service: String,
    /// `tcp`, `udp` or `sctp`.
    pub protocol: String,
    /// VIP (`ip:port`, `[ip6]:port`) to backends (`ip:port,...`, empty: rejected).
    pub vips: BTreeMap<String, String>,
    /// `options`.
    pub options: BTreeMap<String, String>,
    /// `external_ids` besides the engine's ownership stamps.
    pub external_ids: BTreeMap<String, String>,
}

fn endpoint(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// The backends of Service port `port_name`/`protocol` in `family` (v6 or not) from `slices`
/// (the Service's): ready endpoints, or when there are none the serving terminating ones
/// (kube-proxy's fallback), each at the slice's port of that name.
fn backends(slices: &[&SliceView], port_name: &str, protocol: &str, v6: bool) -> String {
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
            for ip in e.addresses.iter().filter(|ip| ip.is_ipv6() == v6) {
                if e.ready && !e.terminating {
                    ready.insert((*ip, *target));
                } else if e.serving && e.terminating {
                    terminating.insert((*ip, *target));
                }
            }
        }
    }
    let chosen = if ready.is_empty() { terminating } else { ready };
    chosen
        .into_iter()
        .map(|(ip, port)| endpoint(ip, port))
        .collect::<Vec<_>>()
        .join(",")
}

/// The load balancers of network `network` (`None`: the default network): its Services are
/// those of `in_network` namespaces; `prefix` scopes the names (`<network>_` on a UDN);
/// `hairpin_snat_ip` is upstream's `"<v4> <v6>"` service hairpin masquerade IPs. Sorted by
/// name.
pub fn network_lbs(
    network: Option<&str>,
    prefix: &str,
    in_network: &dyn Fn(&str) -> bool,
    services: &[ServiceView],
    slices: &[SliceView],
    hairpin_snat_ip: &str,
) -> Vec<LbSpec> {
    let mut by_service: BTreeMap<(&str, &str), Vec<&SliceView>> = BTreeMap::new();
    for slice in slices {
        if slice.network.as_deref() == network {
            by_service
                .entry((slice.namespace.as_str(), slice.service.as_str()))
                .or_default()
                .push(slice);
        }
    }
    let mut lbs = Vec::new();
    for service in services {
        if service.cluster_ips.is_empty() || !in_network(&service.namespace) {
            continue;
        }
        let slices = by_service
            .get(&(service.namespace.as_str(), service.name.as_str()))
            .cloned()
            .unwrap_or_default();
        let protocols: BTreeSet<&str> = service.ports.iter().map(|p| p.protocol.as_str()).collect();
        for protocol in protocols {
            let mut vips = BTreeMap::new();
            for port in service.ports.iter().filter(|p| p.protocol == protocol) {
                for ip in &service.cluster_ips {
                    vips.insert(
                        endpoint(*ip, port.port),
                        backends(&slices, &port.name, protocol, ip.is_ipv6()),
                    );
                }
            }
            let mut options = BTreeMap::from([
                ("event".to_owned(), "false".to_owned()),
                ("reject".to_owned(), "true".to_owned()),
                ("skip_snat".to_owned(), "false".to_owned()),
                ("neighbor_responder".to_owned(), "none".to_owned()),
                ("hairpin_snat_ip".to_owned(), hairpin_snat_ip.to_owned()),
            ]);
            if let Some(timeout) = service.affinity_timeout {
                options.insert("affinity_timeout".to_owned(), timeout.to_string());
            }
            let mut external_ids =
                BTreeMap::from([("k8s.ovn.org/kind".to_owned(), "Service".to_owned())]);
            if let Some(network) = network {
                external_ids.insert("k8s.ovn.org/network".to_owned(), network.to_owned());
                external_ids.insert("k8s.ovn.org/role".to_owned(), "primary".to_owned());
            }
            lbs.push(LbSpec {
                name: format!(
                    "{prefix}Service_{}/{}_{protocol}_cluster",
                    service.namespace, service.name
                ),
                service: format!("{}/{}", service.namespace, service.name),
                protocol: protocol.to_ascii_lowercase(),
                vips,
                options,
                external_ids,
            });
        }
    }
    lbs.sort_by(|a, b| a.name.cmp(&b.name));
    lbs
}

#[cfg(test)]
mod tests {
    use super::super::view::{EndpointView, ServicePortView};
    use super::*;

    fn service(namespace: &str, ips: &[&str], ports: &[(&str, &str, u16)]) -> ServiceView {
        ServiceView {
            namespace: namespace.to_owned(),
            name: "web".to_owned(),
            cluster_ips: ips.iter().map(|ip| ip.parse().unwrap()).collect(),
            ports: ports
                .iter()
                .map(|(name, protocol, port)| ServicePortView {
                    name: (*name).to_owned(),
                    protocol: (*protocol).to_owned(),
                    port: *port,
                })
                .collect(),
            affinity_timeout: None,
        }
    }

    fn slice(
        namespace: &str,
        network: Option<&str>,
        ports: &[(&str, u16, &str)],
        endpoints: &[(&str, bool, bool, bool)],
    ) -> SliceView {
        SliceView {
            namespace: namespace.to_owned(),
            service: "web".to_owned(),
            network: network.map(str::to_owned),
            ports: ports
                .iter()
                .map(|(n, p, proto)| ((*n).to_owned(), *p, (*proto).to_owned()))
                .collect(),
            endpoints: endpoints
                .iter()
                .map(|(ip, ready, serving, terminating)| EndpointView {
                    addresses: vec![ip.parse().unwrap()],
                    ready: *ready,
                    serving: *serving,
                    terminating: *terminating,
                })
                .collect(),
        }
    }

    const HAIRPIN: &str = "169.254.0.5 fd69::5";

    #[test]
    fn a_udn_service_balances_over_its_mirrored_endpoints_only() {
        let services = [service(
            "blue",
            &["10.96.0.10", "fd00:10:96::a"],
            &[("http", "TCP", 88), ("dns", "UDP", 53)],
        )];
        let slices = [
            // Kubernetes' slice: the pods' default-network IPs.
            slice(
                "blue",
                None,
                &[("http", 80, "TCP"), ("dns", 5353, "UDP")],
                &[("10.244.0.5", true, true, false)],
            ),
            slice(
                "blue",
                Some("blue_net"),
                &[("http", 80, "TCP"), ("dns", 5353, "UDP")],
                &[
                    ("103.103.1.5", true, true, false),
                    ("103.103.0.5", true, true, false),
                ],
            ),
        ];
        let lbs = network_lbs(
            Some("blue_net"),
            "blue_net_",
            &|ns| ns == "blue",
            &services,
            &slices,
            HAIRPIN,
        );
        assert_eq!(
            lbs.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
            [
                "blue_net_Service_blue/web_TCP_cluster",
                "blue_net_Service_blue/web_UDP_cluster"
            ]
        );
        let tcp = &lbs[0];
        assert_eq!(tcp.protocol, "tcp");
        assert_eq!(
            tcp.vips,
            BTreeMap::from([
                (
                    "10.96.0.10:88".to_owned(),
                    "103.103.0.5:80,103.103.1.5:80".to_owned()
                ),
                ("[fd00:10:96::a]:88".to_owned(), String::new()),
            ])
        );
        assert_eq!(
            lbs[1].vips["10.96.0.10:53"],
            "103.103.0.5:5353,103.103.1.5:5353"
        );
        assert_eq!(tcp.external_ids["k8s.ovn.org/network"], "blue_net");
        assert_eq!(tcp.external_ids["k8s.ovn.org/role"], "primary");
        assert_eq!(tcp.options["hairpin_snat_ip"], HAIRPIN);
        assert_eq!(tcp.options["reject"], "true");
        // The default network never sees a UDN namespace's Service.
        let default = network_lbs(None, "", &|ns| ns != "blue", &services, &slices, HAIRPIN);
        assert!(default.is_empty());
    }

    #[test]
    fn the_default_network_uses_kubernetes_slices_and_the_terminating_fallback() {
        let mut svc = service("default", &["10.96.0.20"], &[("", "TCP", 80)]);
        svc.affinity_timeout = Some(10_800);
        let slices = [
            slice(
                "default",
                None,
                &[("", 8080, "TCP")],
                &[
                    ("10.244.0.7", false, true, true),
                    ("10.244.0.8", false, false, true),
                ],
            ),
            slice(
                "default",
                Some("blue_net"),
                &[("", 8080, "TCP")],
                &[("103.103.0.9", true, true, false)],
            ),
        ];
        let lbs = network_lbs(None, "", &|_| true, &[svc], &slices, HAIRPIN);
        assert_eq!(lbs.len(), 1);
        assert_eq!(lbs[0].name, "Service_default/web_TCP_cluster");
        // No ready endpoint: the serving terminating one; never the mirror's UDN address.
        assert_eq!(lbs[0].vips["10.96.0.20:80"], "10.244.0.7:8080");
        assert_eq!(lbs[0].options["affinity_timeout"], "10800");
        assert!(!lbs[0].external_ids.contains_key("k8s.ovn.org/network"));
    }

    #[test]
    fn headless_services_get_no_load_balancer() {
        let headless = service("default", &[], &[("", "TCP", 80)]);
        assert!(network_lbs(None, "", &|_| true, &[headless], &[], HAIRPIN).is_empty());
    }
}
