//! `udn-kube-sim serve`: the in-memory Kubernetes API server on loopback HTTP, with a
//! kubeconfig for `kubectl` and an optional state file kept across restarts.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use udn_kube_sim::{ResourceKey, Sim, SimConfig, WriteOptions, http, kubeconfig};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "An in-memory Kubernetes API server for udn's tests and sandbox"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API over HTTP on a loopback address.
    Serve {
        /// Loopback address to listen on; port 0 picks a free port.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Where to write the kubeconfig for this server (mode 0600).
        #[arg(long)]
        kubeconfig: PathBuf,
        /// Objects to load at start (JSON or YAML list), written back on SIGINT/SIGTERM.
        #[arg(long)]
        state: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match Cli::parse().command {
        Command::Serve {
            listen,
            kubeconfig,
            state,
        } => serve(listen, &kubeconfig, state.as_deref()).await,
    }
}

async fn serve(
    listen: SocketAddr,
    kubeconfig_path: &Path,
    state: Option<&Path>,
) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() {
        bail!(
            "refusing to listen on {listen}: udn-kube-sim has no authentication and serves loopback addresses only (use 127.0.0.1 or [::1])"
        );
    }
    let sim = Sim::new(SimConfig::default());
    if let Some(path) = state.filter(|p| p.exists()) {
        let objects = read_state(path)?;
        let count = objects.len();
        sim.import(objects)
            .with_context(|| format!("loading the objects of state file {}", path.display()))?;
        tracing::info!(objects = count, state = %path.display(), "state loaded");
    }
    create_system_namespaces(&sim)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let address = listener
        .local_addr()
        .context("reading the listening address")?;
    let url = format!("http://{address}");
    kubeconfig::write(kubeconfig_path, &url)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {url}").context("writing to stdout")?;
    stdout.flush().context("writing to stdout")?;
    drop(stdout);
    tracing::info!(%url, kubeconfig = %kubeconfig_path.display(), "serving");

    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    };
    http::serve_with_shutdown(sim.clone(), listener, shutdown).await?;
    if let Some(path) = state {
        write_state(path, sim.export())?;
        tracing::info!(state = %path.display(), "state written");
    }
    Ok(())
}

/// The namespaces a real cluster starts with (`default` is kubectl's default namespace),
/// created unless the state already has them.
fn create_system_namespaces(sim: &Sim) -> anyhow::Result<()> {
    let key = ResourceKey {
        group: String::new(),
        plural: "namespaces".to_owned(),
    };
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        if sim.get(&key, None, name).is_ok() {
            continue;
        }
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        sim.create(&key, None, namespace, &WriteOptions::default())
            .with_context(|| format!("creating namespace {name}"))?;
    }
    Ok(())
}

/// Objects of a state file: a JSON or YAML `List` (or array), or YAML documents.
fn read_state(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading state file {}", path.display()))?;
    let documents: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(value) => vec![value],
        Err(_) => serde_saphyr::from_multiple(&text)
            .with_context(|| format!("state file {} is neither JSON nor YAML", path.display()))?,
    };
    let mut objects = Vec::new();
    for document in documents {
        match document {
            Value::Array(items) => objects.extend(items),
            Value::Object(mut map) if map.get("items").is_some_and(Value::is_array) => {
                if let Some(Value::Array(items)) = map.remove("items") {
                    objects.extend(items);
                }
            }
            Value::Null => {}
            Value::Object(map) => objects.push(Value::Object(map)),
            other => bail!(
                "state file {}: expected objects or a List, found {other}",
                path.display()
            ),
        }
    }
    Ok(objects)
}

/// Writes `objects` as a JSON `List`, through a temporary file renamed over `path`.
fn write_state(path: &Path, objects: Vec<Value>) -> anyhow::Result<()> {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let mut text = serde_json::to_vec_pretty(&list).context("encoding the state")?;
    text.push(b'\n');
    let mut temp_name = path.file_name().unwrap_or_default().to_os_string();
    temp_name.push(".tmp");
    let temp = path.with_file_name(temp_name);
    std::fs::write(&temp, text).with_context(|| format!("writing {}", temp.display()))?;
    std::fs::rename(&temp, path).with_context(|| format!("writing state file {}", path.display()))
}
