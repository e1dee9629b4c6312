//! API clients and kubeconfigs.

use std::path::Path;

use crate::error::SandboxError;

/// The runtime the sandbox's synchronous entry points (`up`, `demo`, `exec`, the matrix)
/// run their API calls on: multi-threaded, as the bring-up's waits block in places.
pub fn runtime() -> Result<tokio::runtime::Runtime, SandboxError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| SandboxError::Spawn {
            program: "the async runtime".to_owned(),
            source,
        })
}

/// A client of the API server in `kubeconfig`.
pub async fn client(kubeconfig: &Path) -> Result<kube::Client, SandboxError> {
    let state = |reason: String| SandboxError::State {
        path: kubeconfig.to_path_buf(),
        reason,
    };
    let text = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| state(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(text, &Default::default())
        .await
        .map_err(|e| state(e.to_string()))?;
    kube::Client::try_from(config).map_err(|source| SandboxError::Api {
        what: format!("a client for {}", kubeconfig.display()),
        source,
    })
}

/// Writes a kubeconfig for the API server at `server` (no credentials: the sandbox's API
/// server listens on loopback only), mode 0600.
pub fn write_kubeconfig(path: &Path, server: &str) -> Result<(), SandboxError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: udn-sandbox\n  cluster:\n    server: {server}\ncontexts:\n- name: udn-sandbox\n  context:\n    cluster: udn-sandbox\n    user: udn-sandbox\n    namespace: default\ncurrent-context: udn-sandbox\nusers:\n- name: udn-sandbox\n  user: {{}}\n"
    );
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|source| SandboxError::io("write", path, source))
}
