//! The static FDB entry that pins the bridge MAC to the host's port (upstream
//! `util.SetStaticFDBEntry`, from gateway init): every UDN gateway router sends with the
//! bridge MAC too, and without the entry NORMAL would learn that MAC on a patch port and
//! switch the host's own traffic into OVN.

use std::path::PathBuf;
use std::time::Duration;

use udn_api::annotations::MacAddress;

use super::exec::{OfctlError, Tool};
use super::ofctl::DEFAULT_OVS_RUNDIR;

/// How long one ovs-appctl invocation may take.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `ovs-appctl` against ovs-vswitchd.
#[derive(Debug, Clone)]
pub struct VswitchdCtl {
    program: PathBuf,
    target: String,
    rundir: Option<PathBuf>,
    timeout: Duration,
}

impl Default for VswitchdCtl {
    fn default() -> Self {
        Self::new()
    }
}

impl VswitchdCtl {
    /// `ovs-appctl -t ovs-vswitchd` (the daemon found through its pidfile in the run dir).
    pub fn new() -> Self {
        Self {
            program: PathBuf::from("ovs-appctl"),
            target: "ovs-vswitchd".to_owned(),
            rundir: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// This runner with an explicit control socket (a vswitchd started with `--unixctl`).
    pub fn with_socket(mut self, socket: impl Into<PathBuf>) -> Self {
        self.target = socket.into().display().to_string();
        self
    }

    /// This runner with OVS's run directory.
    pub fn with_rundir(mut self, rundir: impl Into<PathBuf>) -> Self {
        self.rundir = Some(rundir.into());
        self
    }

    /// Adds (or refreshes) the static FDB entry `mac` on `port` of `bridge` in `vlan`
    /// (0: untagged): `fdb/add <bridge> <port> <vlan> <mac>`.
    pub async fn add_static_fdb(
        &self,
        bridge: &str,
        port: &str,
        vlan: u16,
        mac: MacAddress,
    ) -> Result<(), OfctlError> {
        let rundir = self
            .rundir
            .clone()
            .or_else(|| std::env::var_os("OVS_RUNDIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OVS_RUNDIR));
        let tool = Tool {
            program: &self.program,
            rundir,
            timeout: self.timeout,
        };
        let args = [
            "-t".to_owned(),
            self.target.clone(),
            "fdb/add".to_owned(),
            bridge.to_owned(),
            port.to_owned(),
            vlan.to_string(),
            mac.to_string(),
        ];
        tool.run(&args, None, &[0]).await?;
        Ok(())
    }
}
