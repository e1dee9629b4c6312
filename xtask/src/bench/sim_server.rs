//! `udn-kube-sim serve` as the benchmarks run it: its own process on a loopback port, a
//! kubeconfig for the binaries under test, a client for the bench, udn's CRDs installed.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::process::ChildGuard;

/// A running `udn-kube-sim serve`; stopped when dropped.
#[derive(Debug)]
pub struct SimServer {
    /// The kubeconfig it wrote.
    pub kubeconfig: PathBuf,
    /// The address it listens on.
    pub address: SocketAddr,
    _child: ChildGuard,
}

impl SimServer {
    /// Starts `binary serve` on a free loopback port, writing its kubeconfig into `dir`;
    /// returns once it prints its address (it is ready then).
    pub fn start(binary: &Path, dir: &Path) -> anyhow::Result<Self> {
        let kubeconfig = dir.join("kubeconfig");
        let mut child = Command::new(binary)
            .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting udn-kube-sim")?;
        let stdout = child.stdout.take().context("sim stdout")?;
        let guard = ChildGuard(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("reading the sim's address")?;
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .map(|a| a.trim_start_matches("http://"))
            .with_context(|| format!("unexpected sim output: {line}"))?
            .parse()
            .with_context(|| format!("the sim's address in {line:?}"))?;
        Ok(Self {
            kubeconfig,
            address,
            _child: guard,
        })
    }

    /// A client of the server.
    pub async fn client(&self) -> anyhow::Result<Client> {
        client_for(&self.kubeconfig).await
    }
}

/// A client from `kubeconfig`.
pub async fn client_for(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).context("reading the sim's kubeconfig")?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("loading the sim's kubeconfig")?;
    Client::try_from(config).context("building a client")
}

/// Creates udn's CRDs (UDN, CUDN, NetworkAttachmentDefinition, IPAMClaim).
pub async fn install_crds(client: &Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in udn_api::crd::manifests() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.create(&PostParams::default(), &crd)
            .await
            .with_context(|| format!("creating the CRD {name}"))?;
    }
    Ok(())
}
