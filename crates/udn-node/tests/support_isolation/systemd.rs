//! A stand-in for systemd's private D-Bus socket: a peer-to-peer D-Bus server on a unix
//! socket in a temporary directory. It answers `AddMatch`, `GetUnit` (for the units it is
//! given; others get `org.freedesktop.systemd1.NoSuchUnit`) and `Subscribe`, records them,
//! and emits `PropertiesChanged` on a unit's object path when told to.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zbus::zvariant::{OwnedObjectPath, Value};
use zbus::{Connection, DBusError};

use udn_node::isolation::unit_object_path;

/// What peers asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub add_match: Vec<String>,
    pub get_unit: Vec<String>,
    pub subscribe: usize,
}

#[derive(DBusError, Debug)]
#[zbus(prefix = "org.freedesktop.systemd1")]
enum SystemdError {
    #[zbus(error)]
    ZBus(zbus::Error),
    NoSuchUnit(String),
}

struct Shared {
    recorded: Mutex<Recorded>,
    subscribed: watch::Sender<usize>,
    /// Connections kept so far (a peer can subscribe before its connection is kept).
    connected: watch::Sender<usize>,
}

struct Manager {
    units: Vec<String>,
    shared: Arc<Shared>,
}

#[zbus::interface(name = "org.freedesktop.systemd1.Manager")]
impl Manager {
    async fn subscribe(&self) {
        let count = {
            let mut recorded = self.shared.recorded.lock().unwrap();
            recorded.subscribe += 1;
            recorded.subscribe
        };
        self.shared.subscribed.send_replace(count);
    }

    async fn get_unit(&self, name: String) -> Result<OwnedObjectPath, SystemdError> {
        self.shared
            .recorded
            .lock()
            .unwrap()
            .get_unit
            .push(name.clone());
        if !self.units.contains(&name) {
            return Err(SystemdError::NoSuchUnit(format!("Unit {name} not loaded.")));
        }
        OwnedObjectPath::try_from(unit_object_path(&name))
            .map_err(|error| SystemdError::ZBus(error.into()))
    }
}

struct Bus {
    shared: Arc<Shared>,
}

#[zbus::interface(name = "org.freedesktop.DBus")]
impl Bus {
    async fn add_match(&self, rule: String) {
        self.shared.recorded.lock().unwrap().add_match.push(rule);
    }
}

/// The stand-in; its socket and directory go on drop.
pub struct FakeSystemd {
    pub socket: PathBuf,
    shared: Arc<Shared>,
    subscribed: watch::Receiver<usize>,
    connected: watch::Receiver<usize>,
    connections: Arc<tokio::sync::Mutex<Vec<Connection>>>,
    accept: JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl FakeSystemd {
    /// Listens on `<tempdir>/private`, knowing `units`.
    pub fn start(units: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("private");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let (subscribed_tx, subscribed) = watch::channel(0);
        let (connected_tx, connected) = watch::channel(0);
        let shared = Arc::new(Shared {
            recorded: Mutex::new(Recorded::default()),
            subscribed: subscribed_tx,
            connected: connected_tx,
        });
        let connections = Arc::new(tokio::sync::Mutex::new(Vec::new()));
        let units: Vec<String> = units.iter().map(|u| (*u).to_owned()).collect();
        let accept = tokio::spawn({
            let shared = shared.clone();
            let connections = connections.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let built = zbus::connection::Builder::unix_stream(stream)
                        .server(zbus::Guid::generate())
                        .and_then(|b| {
                            b.p2p().serve_at(
                                "/org/freedesktop/systemd1",
                                Manager {
                                    units: units.clone(),
                                    shared: shared.clone(),
                                },
                            )
                        })
                        .and_then(|b| {
                            b.serve_at(
                                "/org/freedesktop/DBus",
                                Bus {
                                    shared: shared.clone(),
                                },
                            )
                        });
                    let Ok(builder) = built else { continue };
                    if let Ok(connection) = builder.build().await {
                        connections.lock().await.push(connection);
                        shared.connected.send_modify(|n| *n += 1);
                    }
                }
            }
        });
        Self {
            socket,
            shared,
            subscribed,
            connected,
            connections,
            accept,
            _dir: dir,
        }
    }

    pub fn recorded(&self) -> Recorded {
        self.shared.recorded.lock().unwrap().clone()
    }

    /// Waits until `count` subscriptions arrived, from connections kept, in total.
    pub async fn wait_subscribed(&mut self, count: usize) {
        let both = async {
            self.subscribed.wait_for(|n| *n >= count).await.unwrap();
            self.connected.wait_for(|n| *n >= count).await.unwrap();
        };
        tokio::time::timeout(Duration::from_secs(20), both)
            .await
            .expect("no subscription in time");
    }

    /// Emits `PropertiesChanged` for `unit` with `ActiveState` = `state` to every peer.
    pub async fn announce(&self, unit: &str, state: &str) {
        let mut changed: HashMap<&str, Value<'_>> = HashMap::new();
        changed.insert("ActiveState", Value::from(state));
        changed.insert("SubState", Value::from("running"));
        let body = (
            "org.freedesktop.systemd1.Unit",
            changed,
            Vec::<String>::new(),
        );
        for connection in self.connections.lock().await.iter() {
            connection
                .emit_signal(
                    None::<&str>,
                    unit_object_path(unit).as_str(),
                    "org.freedesktop.DBus.Properties",
                    "PropertiesChanged",
                    &body,
                )
                .await
                .unwrap();
        }
    }

    /// Closes every peer's connection (as a systemd re-exec does).
    pub async fn disconnect_all(&self) {
        let connections: Vec<Connection> = self.connections.lock().await.drain(..).collect();
        for connection in connections {
            let _ = connection.close().await;
        }
    }
}

impl Drop for FakeSystemd {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
