//! One OpenFlow flow in `ovs-ofctl` syntax, kept as upstream's exact text so what we install
//! can be compared with what ovnkube-node installs.

use std::fmt;

/// The cookie of every flow the agent owns on the gateway bridge (upstream
/// `DefaultOpenFlowCookie`); `ovs-ofctl dump-flows breth0 cookie=0xdeff105/-1` lists them.
pub const DEFAULT_OPENFLOW_COOKIE: &str = "0xdeff105";

/// Conntrack mark of connections from OVN's default network (`CtMarkOVN`).
pub const CT_MARK_OVN: &str = "0x1";

/// Conntrack mark of connections from the host (`CtMarkHost`).
pub const CT_MARK_HOST: &str = "0x2";

/// Packet mark asking for a last SNAT to the node IP (EgressIP and egress services set it;
/// upstream `OvnKubeNodeSNATMark`).
pub const NODE_SNAT_PKT_MARK: &str = "0x3f0";

/// A UDN's conntrack mark is this + its network ID (`ctMarkUDNBase`).
pub const CT_MARK_UDN_BASE: u32 = 3;

/// A UDN's packet mark is this + its network ID (`pktMarkBase`).
pub const PKT_MARK_BASE: u32 = 0x1000;

/// How often upstream's OpenFlow manager re-applies the whole table (`openflowManager.Run`).
pub const RESYNC_PERIOD: std::time::Duration = std::time::Duration::from_secs(15);

/// A flow as `ovs-ofctl add-flow` reads it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flow(String);

impl Flow {
    /// A flow from its text.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value of the `key=` field, if the flow has one (fields are separated by commas
    /// and spaces).
    fn field(&self, key: &str) -> Option<&str> {
        self.0
            .split([',', ' '])
            .find_map(|field| field.strip_prefix(key)?.strip_prefix('='))
    }

    /// The flow's table (0 when it names none).
    pub fn table(&self) -> u8 {
        self.field("table")
            .and_then(|value| value.parse().ok())
            .unwrap_or(0)
    }

    /// The flow's priority (OpenFlow's default 32768 when it names none).
    pub fn priority(&self) -> u16 {
        self.field("priority")
            .and_then(|value| value.parse().ok())
            .unwrap_or(32768)
    }

    /// The flow's cookie text (`0xdeff105`), if it sets one.
    pub fn cookie(&self) -> Option<&str> {
        self.field("cookie")
    }
}

impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The text `ovs-ofctl replace-flows` and `diff-flows` read: one flow per line.
pub fn flows_file(flows: &[Flow]) -> String {
    let mut text = String::new();
    for flow in flows {
        text.push_str(flow.as_str());
        text.push('\n');
    }
    text
}
