//! Building the Kubernetes client of a binary: from an explicit kubeconfig file, or inferred
//! from the environment (`KUBECONFIG`, `~/.kube/config`, then the in-cluster service
//! account).

use std::path::{Path, PathBuf};

use kube::config::{Config, InferConfigError, KubeConfigOptions, Kubeconfig, KubeconfigError};

/// The Kubernetes client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file could not be read or parsed.
    #[error("reading kubeconfig {path}")]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: KubeconfigError,
    },
    /// The kubeconfig file was read but its current context is unusable.
    #[error("loading the current context of kubeconfig {path}")]
    LoadKubeconfig {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: KubeconfigError,
    },
    /// No `--kubeconfig` was given and neither `KUBECONFIG`/`~/.kube/config` nor the
    /// in-cluster environment gave a configuration.
    #[error(
        "no --kubeconfig given and no configuration found in KUBECONFIG, ~/.kube/config or the in-cluster service account"
    )]
    Infer {
        /// Both causes (kubeconfig and in-cluster).
        #[source]
        source: InferConfigError,
    },
    /// The configuration was loaded but the client could not be built from it (TLS
    /// material, proxy, ...).
    #[error("building the Kubernetes client for {server} (from {origin})")]
    Build {
        /// The API server URL.
        server: String,
        /// Where the configuration came from (the kubeconfig path, or `inferred`).
        origin: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// A client for the cluster: with `kubeconfig`, from that file's current context; without,
/// from [`Config::infer`] (`KUBECONFIG`, which may list several files, `~/.kube/config`,
/// then the in-cluster service account).
pub async fn kube_client(kubeconfig: Option<&Path>) -> Result<kube::Client, ClientError> {
    let (config, origin) = match kubeconfig {
        Some(path) => (from_file(path).await?, path.display().to_string()),
        None => (
            Config::infer()
                .await
                .map_err(|source| ClientError::Infer { source })?,
            "inferred".to_owned(),
        ),
    };
    let server = config.cluster_url.to_string();
    kube::Client::try_from(config).map_err(|source| ClientError::Build {
        server,
        origin,
        source,
    })
}

/// The configuration of `path`'s current context.
async fn from_file(path: &Path) -> Result<Config, ClientError> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
        path: path.to_owned(),
        source,
    })?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| ClientError::LoadKubeconfig {
            path: path.to_owned(),
            source,
        })
}
