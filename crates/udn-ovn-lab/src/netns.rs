//! Named network namespaces (`/run/netns/NAME`) that are deleted on drop.

use crate::command::Cmd;
use crate::error::LabError;

/// A named network namespace this lab created; deleted on drop.
#[derive(Debug)]
pub(crate) struct Netns {
    name: String,
}

impl Netns {
    /// Creates the namespace and brings its loopback up.
    pub(crate) fn create(step: &str, name: &str) -> Result<Self, LabError> {
        Cmd::new("ip").args(["netns", "add", name]).run(step)?;
        let netns = Self {
            name: name.to_owned(),
        };
        ip(name).args(["link", "set", "lo", "up"]).run(step)?;
        Ok(netns)
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(error) = Cmd::new("ip")
            .args(["netns", "del", &self.name])
            .run("teardown")
        {
            tracing::warn!(netns = %self.name, %error, "cannot delete network namespace");
        }
    }
}

/// `ip -n NETNS ...`.
pub(crate) fn ip(netns: &str) -> Cmd {
    Cmd::new("ip").args(["-n", netns])
}

/// The names of every network namespace whose name starts with `prefix`.
pub fn netns_with_prefix(prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with(prefix))
        .collect();
    names.sort();
    names
}
