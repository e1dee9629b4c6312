//! [`DynamicUdnArgs`]: the Dynamic UDN flags with upstream's names, flattened into every
//! binary's flags (feature `cli`).

use std::time::Duration;

use clap::Args;

use crate::dynamic_udn::{DynamicUdn, parse_go_duration};

/// Dynamic UDN flags.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct DynamicUdnArgs {
    /// Render a UDN/CUDN network on a node only while a pod on it uses the network (and for
    /// the grace period after).
    #[arg(long)]
    pub enable_dynamic_udn_allocation: bool,
    /// How long a node keeps a network after its last pod of it left (Go duration).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_go_duration)]
    pub udn_deletion_grace_period: Duration,
}

impl DynamicUdnArgs {
    /// The settings these flags give.
    pub fn settings(&self) -> DynamicUdn {
        DynamicUdn {
            enabled: self.enable_dynamic_udn_allocation,
            grace_period: self.udn_deletion_grace_period,
        }
    }
}
