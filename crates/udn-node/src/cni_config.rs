//! The CNI config file `10-ovn-kubernetes.conf` (upstream `config.WriteCNIConfig`): written
//! last at start-up, since its presence is what marks the node's network ready (kubelet
//! and upstream's readiness probe look for it).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value as Json, json};

/// The file's name in the CNI conf dir.
pub const FILE_NAME: &str = "10-ovn-kubernetes.conf";

/// Why the file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("writing the CNI config {path}: {source}")]
pub struct CniConfigError {
    /// The file.
    pub path: PathBuf,
    /// The error.
    #[source]
    pub source: std::io::Error,
}

/// The file's content, byte for byte as upstream writes it: the base plugin fields with
/// the empty `ipam` and `dns` objects, `logFile` only when set, the log rotation settings
/// (always upstream's 100/5/5) and an empty `runtimeConfig`.
pub fn render(log_level: u32, log_file: Option<&str>) -> String {
    let mut conf = Map::new();
    conf.insert("cniVersion".into(), json!("1.1.0"));
    conf.insert("name".into(), json!("ovn-kubernetes"));
    conf.insert("type".into(), json!("ovn-k8s-cni-overlay"));
    conf.insert("ipam".into(), json!({}));
    conf.insert("dns".into(), json!({}));
    if let Some(file) = log_file {
        conf.insert("logFile".into(), json!(file));
    }
    conf.insert("logLevel".into(), json!(log_level.to_string()));
    conf.insert("logfile-maxsize".into(), json!(100));
    conf.insert("logfile-maxbackups".into(), json!(5));
    conf.insert("logfile-maxage".into(), json!(5));
    conf.insert("runtimeConfig".into(), json!({}));
    Json::Object(conf).to_string()
}

/// Writes `content` to `<dir>/10-ovn-kubernetes.conf` atomically (a temporary file in the
/// same directory, then a rename), only when it differs; whether it was written.
pub fn write(dir: &Path, content: &str) -> Result<bool, CniConfigError> {
    let path = dir.join(FILE_NAME);
    let err = |source| CniConfigError {
        path: path.clone(),
        source,
    };
    if std::fs::read_to_string(&path).is_ok_and(|have| have == content) {
        return Ok(false);
    }
    std::fs::create_dir_all(dir).map_err(err)?;
    let temp = dir.join(format!("ovnkube-{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(content.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(err)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn upstreams_bytes() {
        assert_eq!(
            render(4, Some("/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log")),
            r#"{"cniVersion":"1.1.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{},"dns":{},"logFile":"/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log","logLevel":"4","logfile-maxsize":100,"logfile-maxbackups":5,"logfile-maxage":5,"runtimeConfig":{}}"#
        );
        assert!(!render(5, None).contains("logFile"));
        assert!(render(5, None).contains(r#""logLevel":"5""#));
    }

    #[test]
    fn written_once_and_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let conf_dir = dir.path().join("net.d");
        let content = render(4, None);
        assert!(write(&conf_dir, &content).unwrap());
        assert!(!write(&conf_dir, &content).unwrap());
        assert_eq!(
            std::fs::read_to_string(conf_dir.join(FILE_NAME)).unwrap(),
            content
        );
        let names: Vec<_> = std::fs::read_dir(&conf_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
    }
}
