//! Kubelet restart tracking: a peer-to-peer D-Bus connection to systemd's private socket
//! (EXTERNAL authentication), subscribed to unit changes; a `PropertiesChanged` signal on
//! the kubelet unit's object path with `ActiveState` `active` means kubelet (re)started, so
//! its cgroup may be new and the rule must be reloaded.
//!
//! Before subscribing, `GetUnit` asks systemd whether it knows the unit: a cgroup named like
//! a unit that systemd does not manage would otherwise be "tracked" without ever a signal.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use futures::StreamExt as _;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};
use zbus::{AuthMechanism, Connection, MessageStream};

use super::warning::RestartTrackingUnavailable;

const SYSTEMD_PATH: &str = "/org/freedesktop/systemd1";
const SYSTEMD_SERVICE: &str = "org.freedesktop.systemd1";
const MANAGER_INTERFACE: &str = "org.freedesktop.systemd1.Manager";
const PROPERTIES_INTERFACE: &str = "org.freedesktop.DBus.Properties";
const NO_SUCH_UNIT: &str = "org.freedesktop.systemd1.NoSuchUnit";
/// The match upstream adds (systemd's private connections get signals after `Subscribe`
/// anyway; the call is kept for peers that filter).
const MATCH_RULE: &str =
    "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'";
/// How long connecting and subscribing may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Unit types that own a cgroup.
const CGROUP_UNIT_SUFFIXES: [&str; 3] = [".service", ".scope", ".slice"];

/// The unit a cgroup path's last component names (`kubelet.service`), if it names one.
pub fn unit_of_cgroup(last_component: &str) -> Option<&str> {
    CGROUP_UNIT_SUFFIXES
        .iter()
        .any(|suffix| {
            last_component
                .strip_suffix(suffix)
                .is_some_and(|stem| !stem.is_empty())
        })
        .then_some(last_component)
}

/// systemd's object path of `unit`: `/org/freedesktop/systemd1/unit/` and the name escaped
/// as systemd's bus labels are (every byte but ASCII letters, and digits after the first,
/// as `_` and two lowercase hex digits): `kubelet.service` -> `kubelet_2eservice`.
pub fn unit_object_path(unit: &str) -> String {
    let mut path = format!("{SYSTEMD_PATH}/unit/");
    if unit.is_empty() {
        path.push('_');
    }
    for (index, byte) in unit.bytes().enumerate() {
        if byte.is_ascii_alphabetic() || (index > 0 && byte.is_ascii_digit()) {
            path.push(char::from(byte));
        } else {
            path.push_str(&format!("_{byte:02x}"));
        }
    }
    path
}

/// A subscribed connection to systemd, watching one unit.
#[derive(Debug)]
pub struct UnitWatch {
    _connection: Connection,
    messages: MessageStream,
    unit: String,
    unit_path: String,
}

impl UnitWatch {
    /// Connects to `socket`, checks that systemd knows `unit`, and subscribes.
    pub async fn connect(socket: &Path, unit: &str) -> Result<Self, RestartTrackingUnavailable> {
        let no_systemd = |error: String| RestartTrackingUnavailable::NoSystemd {
            socket: socket.to_path_buf(),
            error,
        };
        tokio::time::timeout(SETUP_TIMEOUT, Self::setup(socket, unit))
            .await
            .map_err(|_| no_systemd(format!("no answer within {SETUP_TIMEOUT:?}")))?
    }

    async fn setup(socket: &Path, unit: &str) -> Result<Self, RestartTrackingUnavailable> {
        let no_systemd = |error: String| RestartTrackingUnavailable::NoSystemd {
            socket: socket.to_path_buf(),
            error,
        };
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|error| no_systemd(error.to_string()))?;
        let connection = zbus::connection::Builder::unix_stream(stream)
            .p2p()
            .auth_mechanism(AuthMechanism::External)
            .build()
            .await
            .map_err(|error| no_systemd(format!("D-Bus handshake: {error}")))?;
        // Opened before subscribing, so no signal after Subscribe is missed.
        let messages = MessageStream::from(&connection);
        if let Err(error) = connection
            .call_method(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                Some("org.freedesktop.DBus"),
                "AddMatch",
                &(MATCH_RULE,),
            )
            .await
        {
            tracing::debug!(%error, "systemd did not take AddMatch");
        }
        let unit_path = match Self::get_unit(&connection, unit).await {
            Ok(path) => path,
            Err(zbus::Error::MethodError(name, detail, _)) if name.as_str() == NO_SUCH_UNIT => {
                return Err(RestartTrackingUnavailable::UnknownUnit {
                    unit: unit.to_owned(),
                    error: detail.unwrap_or_else(|| name.to_string()),
                });
            }
            Err(error) => {
                tracing::warn!(%unit, %error, "cannot ask systemd for the kubelet unit, watching its usual object path");
                unit_object_path(unit)
            }
        };
        connection
            .call_method(
                Some(SYSTEMD_SERVICE),
                SYSTEMD_PATH,
                Some(MANAGER_INTERFACE),
                "Subscribe",
                &(),
            )
            .await
            .map_err(|error| no_systemd(format!("Subscribe: {error}")))?;
        tracing::info!(%unit, %unit_path, socket = %socket.display(), "tracking kubelet restarts through systemd");
        Ok(Self {
            _connection: connection,
            messages,
            unit: unit.to_owned(),
            unit_path,
        })
    }

    async fn get_unit(connection: &Connection, unit: &str) -> Result<String, zbus::Error> {
        let reply = connection
            .call_method(
                Some(SYSTEMD_SERVICE),
                SYSTEMD_PATH,
                Some(MANAGER_INTERFACE),
                "GetUnit",
                &(unit,),
            )
            .await?;
        let path: OwnedObjectPath = reply.body().deserialize()?;
        Ok(path.as_str().to_owned())
    }

    /// The unit watched.
    pub fn unit(&self) -> &str {
        &self.unit
    }

    /// Waits until the unit becomes active; `false` when the connection is gone.
    pub async fn next_activation(&mut self) -> bool {
        while let Some(message) = self.messages.next().await {
            let message = match message {
                Ok(message) => message,
                Err(error) => {
                    tracing::debug!(%error, "unreadable message from systemd");
                    continue;
                }
            };
            if self.is_activation(&message) {
                return true;
            }
        }
        false
    }

    fn is_activation(&self, message: &zbus::Message) -> bool {
        let header = message.header();
        let for_unit = header.message_type() == zbus::message::Type::Signal
            && header
                .path()
                .is_some_and(|path| path.as_str() == self.unit_path)
            && header
                .interface()
                .is_some_and(|interface| interface.as_str() == PROPERTIES_INTERFACE)
            && header
                .member()
                .is_some_and(|member| member.as_str() == "PropertiesChanged");
        if !for_unit {
            return false;
        }
        let Ok((_, changed, _)) = message
            .body()
            .deserialize::<(String, HashMap<String, OwnedValue>, Vec<String>)>()
        else {
            return false;
        };
        changed
            .get("ActiveState")
            .and_then(|state| String::try_from(state.clone()).ok())
            .is_some_and(|state| state == "active")
    }
}
