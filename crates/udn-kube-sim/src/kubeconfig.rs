//! A kubeconfig for a `udn-kube-sim serve` instance: one cluster `udn-kube-sim` at the
//! server's loopback URL, a user with no credentials, and a context selecting both.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The cluster, user and context name in the kubeconfig.
pub const NAME: &str = "udn-kube-sim";

/// Writing the kubeconfig failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The server URL would not survive in YAML unquoted (it must be a plain URL).
    #[error("server URL {url:?} is not a plain http(s) URL")]
    Url {
        /// The URL.
        url: String,
    },
    /// Writing the file failed.
    #[error("writing kubeconfig {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The kubeconfig YAML for a server at `server_url` (e.g. `http://127.0.0.1:41234`).
pub fn render(server_url: &str) -> Result<String, KubeconfigError> {
    let plain = server_url.starts_with("http://") || server_url.starts_with("https://");
    let safe = server_url
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/:.-[]_".contains(c));
    if !plain || !safe {
        return Err(KubeconfigError::Url {
            url: server_url.to_owned(),
        });
    }
    Ok(format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {NAME}
  cluster:
    server: {server_url}
users:
- name: {NAME}
  user: {{}}
contexts:
- name: {NAME}
  context:
    cluster: {NAME}
    user: {NAME}
    namespace: default
current-context: {NAME}
preferences: {{}}
"
    ))
}

/// Writes the kubeconfig for `server_url` to `path`, readable by the owner only (0600):
/// written to a temporary file next to it, then renamed over it.
pub fn write(path: &Path, server_url: &str) -> Result<(), KubeconfigError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

    let text = render(server_url)?;
    let error = |source| KubeconfigError::Write {
        path: path.to_owned(),
        source,
    };
    let mut temp_name = path.file_name().unwrap_or_default().to_os_string();
    temp_name.push(".tmp");
    let temp = path.with_file_name(temp_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .map_err(error)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(error)?;
    file.write_all(text.as_bytes()).map_err(error)?;
    file.sync_all().map_err(error)?;
    drop(file);
    std::fs::rename(&temp, path).map_err(error)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn writes_an_owner_only_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, "old").unwrap();
        write(&path, "http://127.0.0.1:41234").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("    server: http://127.0.0.1:41234\n"));
        assert!(text.contains("current-context: udn-kube-sim\n"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn refuses_urls_that_need_quoting() {
        assert!(matches!(
            render("http://127.0.0.1:1/#x: y"),
            Err(KubeconfigError::Url { .. })
        ));
        assert!(matches!(
            render("127.0.0.1:80"),
            Err(KubeconfigError::Url { .. })
        ));
    }
}
