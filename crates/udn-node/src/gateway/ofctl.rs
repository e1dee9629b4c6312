//! Running `ovs-ofctl` against a bridge: the whole table replaced atomically
//! (`--bundle replace-flows`, as upstream's `util.ReplaceOFFlows`), compared (`diff-flows`),
//! listed, and the no-flood bit of ports. Flows go as OpenFlow 1.3 (as upstream); with it OVS
//! stores `mod_vlan_vid`/`strip_vlan` as `push_vlan`+`set_field`/`pop_vlan`, so with a gateway
//! VLAN the flows that tag or untag always compare as different and every sync re-sends them.
//!
//! The bridge is addressed by its management socket `unix:<rundir>/<bridge>.mgmt`, the run
//! dir being the configured one, else `$OVS_RUNDIR`, else `/var/run/openvswitch`: a bare
//! bridge name would make `diff-flows` read a file of that name if one exists in the current
//! directory, and a lab's OVS has its own run dir.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::exec::{OfctlError, Tool};
use super::flow::{Flow, flows_file};
use super::inputs::OfPort;

/// OVS's default run directory.
pub const DEFAULT_OVS_RUNDIR: &str = "/var/run/openvswitch";

/// How long one ovs-ofctl invocation may take before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `diff-flows` exits with this status when the two sources differ.
const DIFF_FLOWS_DIFFERENT: i32 = 2;

/// Runs ovs-ofctl (OpenFlow 1.3, as upstream).
#[derive(Debug, Clone)]
pub struct Ofctl {
    program: PathBuf,
    rundir: Option<PathBuf>,
    timeout: Duration,
}

impl Default for Ofctl {
    fn default() -> Self {
        Self::new()
    }
}

/// The lines of `diff-flows` output: flows only the bridge has (`-`) and flows only the
/// desired table has (`+`); a flow whose actions or cookie differ is in both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowDiff {
    /// On the bridge, not desired (OVS's text).
    pub remove: Vec<String>,
    /// Desired, not on the bridge (OVS's text).
    pub add: Vec<String>,
}

impl FlowDiff {
    /// Whether the bridge already has exactly the desired flows.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.add.is_empty()
    }
}

impl Ofctl {
    /// `ovs-ofctl` from `PATH`, run dir from `$OVS_RUNDIR` or the default.
    pub fn new() -> Self {
        Self {
            program: PathBuf::from("ovs-ofctl"),
            rundir: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// This runner with OVS's run directory (where ovs-vswitchd puts `<bridge>.mgmt`).
    pub fn with_rundir(mut self, rundir: impl Into<PathBuf>) -> Self {
        self.rundir = Some(rundir.into());
        self
    }

    /// This runner with another per-invocation timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// This runner with another program (a wrapper script, a full path).
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// The run directory in use.
    pub fn rundir(&self) -> PathBuf {
        self.rundir
            .clone()
            .or_else(|| std::env::var_os("OVS_RUNDIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OVS_RUNDIR))
    }

    /// How ovs-ofctl is told which switch: `unix:<rundir>/<bridge>.mgmt`.
    pub fn target(&self, bridge: &str) -> String {
        format!("unix:{}", mgmt_socket(&self.rundir(), bridge).display())
    }

    /// Replaces the whole flow table of `bridge` with `flows` in one bundle (one atomic
    /// OpenFlow transaction): missing flows are added, others deleted, changed ones modified,
    /// identical ones left alone (their counters kept).
    pub async fn replace_flows(&self, bridge: &str, flows: &[Flow]) -> Result<(), OfctlError> {
        let args = [
            "-O".to_owned(),
            "OpenFlow13".to_owned(),
            "--bundle".to_owned(),
            "replace-flows".to_owned(),
            self.target(bridge),
            "-".to_owned(),
        ];
        self.run(&args, Some(flows_file(flows)), &[0]).await?;
        Ok(())
    }

    /// What [`Self::replace_flows`] with `flows` would change on `bridge`.
    pub async fn diff_flows(&self, bridge: &str, flows: &[Flow]) -> Result<FlowDiff, OfctlError> {
        let args = [
            "-O".to_owned(),
            "OpenFlow13".to_owned(),
            "diff-flows".to_owned(),
            self.target(bridge),
            // A name starting with `/` is always a file for diff-flows.
            "/dev/stdin".to_owned(),
        ];
        let stdout = self
            .run(&args, Some(flows_file(flows)), &[0, DIFF_FLOWS_DIFFERENT])
            .await?;
        Ok(parse_flow_diff(&stdout))
    }

    /// The flows on `bridge` as OVS prints them, without counters.
    pub async fn dump_flows(&self, bridge: &str) -> Result<Vec<String>, OfctlError> {
        let args = [
            "-O".to_owned(),
            "OpenFlow13".to_owned(),
            "--no-stats".to_owned(),
            "dump-flows".to_owned(),
            self.target(bridge),
        ];
        let stdout = self.run(&args, None, &[0]).await?;
        Ok(stdout
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.contains(" reply "))
            .map(str::to_owned)
            .collect())
    }

    /// The ofports of `bridge` whose OpenFlow config has `NO_FLOOD` (`dump-ports-desc`).
    pub async fn no_flood_ports(&self, bridge: &str) -> Result<BTreeSet<u32>, OfctlError> {
        // OFPPC_NO_FLOOD exists only in OpenFlow 1.0: OpenFlow 1.3 neither shows nor sets it.
        let args = ["dump-ports-desc".to_owned(), self.target(bridge)];
        let stdout = self.run(&args, None, &[0]).await?;
        Ok(parse_no_flood_ports(&stdout))
    }

    /// Sets `NO_FLOOD` on `port` of `bridge`: NORMAL and FLOOD then skip it. It is OpenFlow
    /// port state, not in OVSDB, so it is lost when vswitchd restarts or the port is made
    /// again.
    pub async fn set_no_flood(&self, bridge: &str, port: &OfPort) -> Result<(), OfctlError> {
        // OpenFlow 1.0, as upstream: later versions have no no-flood bit (and OVS then
        // accepts the request and changes nothing).
        let args = [
            "mod-port".to_owned(),
            self.target(bridge),
            port.to_string(),
            "no-flood".to_owned(),
        ];
        self.run(&args, None, &[0]).await?;
        Ok(())
    }

    async fn run(
        &self,
        args: &[String],
        stdin: Option<String>,
        success: &[i32],
    ) -> Result<String, OfctlError> {
        let tool = Tool {
            program: &self.program,
            rundir: self.rundir(),
            timeout: self.timeout,
        };
        tool.run(args, stdin, success).await
    }
}

/// The `-`/`+` lines of `diff-flows` output, without the pairs whose two texts are the same.
/// OVS 3.1 reports a flow matching `nw_frag=yes` as different from the identical flow read
/// from a file (its match does not compare equal after the round trip through the switch;
/// `nw_frag=first` does), so without this a converged table would always look changed.
pub(super) fn parse_flow_diff(text: &str) -> FlowDiff {
    let mut diff = FlowDiff::default();
    for line in text.lines() {
        if let Some(flow) = line.strip_prefix('-') {
            diff.remove.push(flow.trim().to_owned());
        } else if let Some(flow) = line.strip_prefix('+') {
            diff.add.push(flow.trim().to_owned());
        }
    }
    let mut index = 0;
    while index < diff.remove.len() {
        if let Some(twin) = diff.add.iter().position(|flow| *flow == diff.remove[index]) {
            diff.add.remove(twin);
            diff.remove.remove(index);
        } else {
            index += 1;
        }
    }
    diff
}

/// `<rundir>/<bridge>.mgmt`.
pub fn mgmt_socket(rundir: &Path, bridge: &str) -> PathBuf {
    rundir.join(format!("{bridge}.mgmt"))
}

/// The ofports `dump-ports-desc` shows with `NO_FLOOD` in their config. Blocks look like
/// ` 2(patch-x): addr:...` followed by `     config:     NO_FLOOD`.
pub(super) fn parse_no_flood_ports(text: &str) -> BTreeSet<u32> {
    let mut ports = BTreeSet::new();
    let mut current = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some((port, _)) = line.split_once('(') {
            if let Ok(number) = port.trim().parse::<u32>() {
                current = Some(number);
                continue;
            }
            if port.trim() == "LOCAL" {
                current = None;
                continue;
            }
        }
        if let (Some(port), Some(config)) = (current, line.strip_prefix("config:"))
            && config.split_whitespace().any(|flag| flag == "NO_FLOOD")
        {
            ports.insert(port);
        }
    }
    ports
}
