//! Network sysctls through `/proc/sys/net`. A net sysctl file belongs to the netns of the
//! thread that opens it: in the agent that is the host's; in a worker of
//! [`in_netns`](super::in_netns) the namespace it entered.

use std::fs;
use std::path::PathBuf;

use super::error::NetlinkError;
use super::rule::IpFamily;

/// One sysctl, by its `/proc/sys` path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sysctl {
    path: PathBuf,
}

impl Sysctl {
    /// A sysctl by its dotted name (`net.ipv4.ip_forward`). Use [`Sysctl::interface`] for
    /// per-interface keys: interface names may contain dots.
    pub fn dotted(name: &str) -> Self {
        Self {
            path: PathBuf::from("/proc/sys").join(name.replace('.', "/")),
        }
    }

    /// `net.ipv{4,6}.conf.<ifname>.<key>` (`forwarding`, `rp_filter`, `accept_ra`,
    /// `dad_transmits`, ...).
    pub fn interface(family: IpFamily, ifname: &str, key: &str) -> Self {
        let family = match family {
            IpFamily::V4 => "ipv4",
            IpFamily::V6 => "ipv6",
        };
        Self {
            path: PathBuf::from("/proc/sys/net")
                .join(family)
                .join("conf")
                .join(ifname)
                .join(key),
        }
    }

    /// The `/proc/sys` path.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The current value, trimmed.
    pub fn read(&self, netns: &str) -> Result<String, NetlinkError> {
        fs::read_to_string(&self.path)
            .map(|value| value.trim().to_owned())
            .map_err(|source| self.error(netns, "", source))
    }

    /// Writes `value`.
    pub fn write(&self, netns: &str, value: &str) -> Result<(), NetlinkError> {
        fs::write(&self.path, value).map_err(|source| self.error(netns, value, source))
    }

    /// Writes `value` unless the sysctl already has it; returns whether it wrote.
    pub fn ensure(&self, netns: &str, value: &str) -> Result<bool, NetlinkError> {
        if self.read(netns)? == value {
            return Ok(false);
        }
        self.write(netns, value)?;
        Ok(true)
    }

    fn error(&self, netns: &str, value: &str, source: std::io::Error) -> NetlinkError {
        NetlinkError::Sysctl {
            netns: netns.to_owned(),
            path: self.path.display().to_string(),
            value: value.to_owned(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            Sysctl::dotted("net.ipv4.ip_forward").path(),
            std::path::Path::new("/proc/sys/net/ipv4/ip_forward")
        );
        assert_eq!(
            Sysctl::interface(IpFamily::V6, "breth0.100", "forwarding").path(),
            std::path::Path::new("/proc/sys/net/ipv6/conf/breth0.100/forwarding")
        );
    }

    #[test]
    fn a_missing_sysctl_names_its_path() {
        let sysctl = Sysctl::interface(IpFamily::V4, "no-such-link0", "forwarding");
        let error = sysctl.read("host").unwrap_err();
        assert_eq!(
            error.to_string(),
            "sysctl /proc/sys/net/ipv4/conf/no-such-link0/forwarding (value \"\") in network namespace host"
        );
    }
}
