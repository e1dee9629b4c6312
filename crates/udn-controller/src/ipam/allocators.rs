//! One address allocator per (network, local node) over the node's host subnets of the
//! network, with the gateway (.1) and management (.2) addresses never handed out (upstream's
//! logical switch manager reserves them). Rebuilt from the pods' annotations before anything is
//! allocated, so a restart never hands out a live pod's address again.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_ipam::{PodIpAllocator, PodIpConfig, PodIpError, gateway_ip, management_ip};

/// Why an address could not be allocated (an Event on the pod).
#[derive(Debug, thiserror::Error)]
pub enum IpamError {
    /// The node has no host subnet for the network yet.
    #[error("node {node} has no host subnet for network {network} in k8s.ovn.org/node-subnets yet")]
    NoHostSubnet {
        /// Network.
        network: String,
        /// Node.
        node: String,
    },
    /// The allocator refused.
    #[error("network {network} on node {node}: {source}")]
    Allocator {
        /// Network.
        network: String,
        /// Node.
        node: String,
        /// Why.
        #[source]
        source: Box<PodIpError>,
    },
}

#[derive(Debug)]
struct NodeAllocator {
    subnets: Vec<IpNetwork>,
    ips: PodIpAllocator,
}

/// The zone's pod address allocators. Owners are attachment keys (`<ns>/<pod>/<nad key>`).
#[derive(Debug, Default)]
pub struct ZoneIpam {
    allocators: BTreeMap<(String, String), NodeAllocator>,
}

fn reserved(subnets: &[IpNetwork]) -> Vec<IpNetwork> {
    let mut out = Vec::new();
    for subnet in subnets {
        for ip in [gateway_ip(*subnet), management_ip(*subnet)]
            .into_iter()
            .flatten()
        {
            let host = match ip.ip() {
                IpAddr::V4(_) => 32,
                IpAddr::V6(_) => 128,
            };
            if let Ok(net) = IpNetwork::new(ip.ip(), host) {
                out.push(net);
            }
        }
    }
    out
}

impl ZoneIpam {
    /// The allocator of `network` on `node` for `subnets`, (re)built when the subnets changed
    /// (existing holders whose addresses still fit are kept).
    fn allocator(
        &mut self,
        network: &str,
        node: &str,
        subnets: &[IpNetwork],
    ) -> Result<&mut NodeAllocator, IpamError> {
        if subnets.is_empty() {
            return Err(IpamError::NoHostSubnet {
                network: network.to_owned(),
                node: node.to_owned(),
            });
        }
        let key = (network.to_owned(), node.to_owned());
        let stale = self
            .allocators
            .get(&key)
            .is_some_and(|a| a.subnets.as_slice() != subnets);
        if stale || !self.allocators.contains_key(&key) {
            let config = PodIpConfig {
                subnets: subnets.to_vec(),
                exclude_subnets: reserved(subnets),
                ..PodIpConfig::default()
            };
            let mut ips =
                PodIpAllocator::new(network, &config).map_err(|source| IpamError::Allocator {
                    network: network.to_owned(),
                    node: node.to_owned(),
                    source: Box::new(source),
                })?;
            if let Some(old) = self.allocators.remove(&key) {
                for (owner, held) in old.ips.assignments() {
                    // Addresses outside the new subnets are simply forgotten.
                    let _ = ips.restore(owner, held);
                }
            }
            self.allocators.insert(
                key.clone(),
                NodeAllocator {
                    subnets: subnets.to_vec(),
                    ips,
                },
            );
        }
        self.allocators
            .get_mut(&key)
            .ok_or_else(|| IpamError::NoHostSubnet {
                network: network.to_owned(),
                node: node.to_owned(),
            })
    }

    /// Marks `ips` as held by `owner` (from an existing annotation).
    pub fn restore(
        &mut self,
        network: &str,
        node: &str,
        subnets: &[IpNetwork],
        owner: &str,
        ips: &[IpNetwork],
    ) -> Result<(), IpamError> {
        let allocator = self.allocator(network, node, subnets)?;
        if allocator.ips.ips_of(owner) == Some(ips) {
            return Ok(());
        }
        allocator
            .ips
            .restore(owner, ips)
            .map_err(|source| IpamError::Allocator {
                network: network.to_owned(),
                node: node.to_owned(),
                source: Box::new(source),
            })
    }

    /// Addresses for `owner` (one per host subnet); the same ones again if it holds some.
    pub fn allocate(
        &mut self,
        network: &str,
        node: &str,
        subnets: &[IpNetwork],
        owner: &str,
    ) -> Result<Vec<IpNetwork>, IpamError> {
        let allocator = self.allocator(network, node, subnets)?;
        if let Some(held) = allocator.ips.ips_of(owner) {
            return Ok(held.to_vec());
        }
        allocator
            .ips
            .allocate(owner)
            .map_err(|source| IpamError::Allocator {
                network: network.to_owned(),
                node: node.to_owned(),
                source: Box::new(source),
            })
    }

    /// Releases whatever `owner` holds, on every network and node.
    pub fn release(&mut self, owner: &str) {
        for allocator in self.allocators.values_mut() {
            allocator.ips.release(owner);
        }
    }

    /// Every (network, node, owner, addresses) held.
    pub fn holders(&self) -> impl Iterator<Item = (&str, &str, &str, &[IpNetwork])> {
        self.allocators.iter().flat_map(|((network, node), a)| {
            a.ips
                .assignments()
                .map(move |(owner, ips)| (network.as_str(), node.as_str(), owner, ips))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(texts: &[&str]) -> Vec<IpNetwork> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    #[test]
    fn first_pod_gets_dot_three_and_restore_is_respected() {
        let subnets = nets(&["10.244.1.0/24", "fd00:10:244:2::/64"]);
        let mut ipam = ZoneIpam::default();
        ipam.restore(
            "default",
            "n1",
            &subnets,
            "ns/a/default",
            &nets(&["10.244.1.3/24", "fd00:10:244:2::3/64"]),
        )
        .unwrap();
        let b = ipam
            .allocate("default", "n1", &subnets, "ns/b/default")
            .unwrap();
        assert_eq!(b, nets(&["10.244.1.4/24", "fd00:10:244:2::4/64"]));
        assert_eq!(
            ipam.allocate("default", "n1", &subnets, "ns/b/default")
                .unwrap(),
            b
        );
        ipam.release("ns/b/default");
        assert_eq!(ipam.holders().count(), 1);
        assert!(matches!(
            ipam.allocate("default", "n2", &[], "x"),
            Err(IpamError::NoHostSubnet { .. })
        ));
    }

    #[test]
    fn gateway_and_management_addresses_are_never_allocated() {
        let subnets = nets(&["10.0.0.0/29"]);
        let mut ipam = ZoneIpam::default();
        let got: Vec<String> = (0..4)
            .map(|i| {
                ipam.allocate("n", "n1", &subnets, &format!("p{i}"))
                    .unwrap()[0]
                    .to_string()
            })
            .collect();
        assert_eq!(
            got,
            ["10.0.0.3/29", "10.0.0.4/29", "10.0.0.5/29", "10.0.0.6/29"]
        );
        assert!(ipam.allocate("n", "n1", &subnets, "p9").is_err());
    }
}
