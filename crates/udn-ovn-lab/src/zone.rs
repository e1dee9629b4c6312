//! One OVN zone's central part: NB and SB `ovsdb-server` and `ovn-northd`, on unix sockets,
//! named as upstream's ovnkube.sh names a node's zone (`NB_Global.name` and
//! `NB_Global.options:name` = the zone name, which northd copies into `SB_Global.options`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use udn_ovsdb::testing::OvsdbServer;

use crate::command::Cmd;
use crate::daemon::Daemon;
use crate::error::LabError;
use crate::stale::record_ovsdb_dir;

/// The installed OVN Northbound schema (it must match the installed ovn-northd).
pub(crate) const NB_SCHEMA: &str = "/usr/share/ovn/ovn-nb.ovsschema";
/// The installed OVN Southbound schema.
pub(crate) const SB_SCHEMA: &str = "/usr/share/ovn/ovn-sb.ovsschema";

/// A zone's running NB, SB and northd. Field order is teardown order.
#[derive(Debug)]
pub(crate) struct Zone {
    pub(crate) northd: Daemon,
    pub(crate) nb: OvsdbServer,
    pub(crate) sb: OvsdbServer,
}

/// Where a zone's databases listen (shared by every node of the zone).
#[derive(Debug, Clone)]
pub(crate) struct ZoneSockets {
    pub(crate) name: String,
    pub(crate) nb: PathBuf,
    pub(crate) sb: PathBuf,
    pub(crate) northd_log: PathBuf,
}

pub(crate) fn schema_file(
    step: &str,
    path: &str,
    package: &'static str,
) -> Result<PathBuf, LabError> {
    let path = PathBuf::from(path);
    if path.is_file() {
        Ok(path)
    } else {
        Err(LabError::MissingFile {
            step: step.to_owned(),
            path,
            package,
        })
    }
}

/// Starts an ovsdb-server and records its directory in `node_dir` (for
/// [`crate::clean_stale_labs`]).
pub(crate) fn start_ovsdb(
    step: &str,
    schema: &Path,
    node_dir: &Path,
) -> Result<OvsdbServer, LabError> {
    let server = OvsdbServer::start(schema).map_err(|source| LabError::Ovsdb {
        step: step.to_owned(),
        source,
    })?;
    record_ovsdb_dir(step, node_dir, server.dir())?;
    Ok(server)
}

/// `ovn-nbctl --db=unix:<nb> --timeout=<secs>` (no leader-only: the DB is standalone).
pub(crate) fn nbctl(nb: &Path, timeout: Duration) -> Cmd {
    Cmd::new("ovn-nbctl").args([
        format!("--db=unix:{}", nb.display()),
        format!("--timeout={}", whole_seconds(timeout)),
    ])
}

/// `ovn-sbctl --db=unix:<sb> --timeout=<secs>`.
pub(crate) fn sbctl(sb: &Path, timeout: Duration) -> Cmd {
    Cmd::new("ovn-sbctl").args([
        format!("--db=unix:{}", sb.display()),
        format!("--timeout={}", whole_seconds(timeout)),
    ])
}

/// `timeout` rounded up to whole seconds, at least 1 (the OVS tools take seconds).
pub(crate) fn whole_seconds(timeout: Duration) -> u64 {
    let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    secs.max(1)
}

impl Zone {
    /// Starts NB, SB and northd for zone `name`; northd's files go to `dir`. Returns once
    /// northd has processed the NB database once (`--wait=sb sync`).
    pub(crate) fn start(name: &str, dir: &Path, timeout: Duration) -> Result<Self, LabError> {
        let step = format!("start zone {name}");
        let step = step.as_str();
        let nb = start_ovsdb(step, &schema_file(step, NB_SCHEMA, "ovn-common")?, dir)?;
        nbctl(nb.socket(), timeout).arg("init").run(step)?;
        nbctl(nb.socket(), timeout)
            .args(["set", "NB_Global", "."])
            .arg(format!("name={name}"))
            .arg(format!("options:name={name}"))
            .run(step)?;
        let sb = start_ovsdb(step, &schema_file(step, SB_SCHEMA, "ovn-common")?, dir)?;
        sbctl(sb.socket(), timeout).arg("init").run(step)?;
        let pidfile = dir.join("ovn-northd.pid");
        let log = dir.join("ovn-northd.log");
        let command = Cmd::new("ovn-northd").args([
            format!("--ovnnb-db=unix:{}", nb.socket().display()),
            format!("--ovnsb-db=unix:{}", sb.socket().display()),
            format!("--pidfile={}", pidfile.display()),
            format!("--log-file={}", log.display()),
            format!("--unixctl={}", dir.join("ovn-northd.ctl").display()),
            "--detach".to_owned(),
            "--no-chdir".to_owned(),
        ]);
        let northd = Daemon::start(step, "ovn-northd", &command, pidfile, log)?;
        nbctl(nb.socket(), timeout)
            .args(["--wait=sb", "sync"])
            .run(step)?;
        tracing::debug!(zone = name, "zone started");
        Ok(Self { northd, nb, sb })
    }

    pub(crate) fn sockets(&self, name: &str) -> ZoneSockets {
        ZoneSockets {
            name: name.to_owned(),
            nb: self.nb.socket().to_owned(),
            sb: self.sb.socket().to_owned(),
            northd_log: self.northd.log().to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_rounds_up_to_at_least_one() {
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_secs(30)), 30);
    }
}
