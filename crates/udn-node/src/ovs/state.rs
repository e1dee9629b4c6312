//! A typed snapshot of the tables this module reads (`Open_vSwitch`, `Bridge`, `Port`,
//! `Interface`), taken from the client's replica: what every plan is computed from, so plans
//! are pure functions that unit tests feed with hand-made rows.

use std::collections::{BTreeMap, BTreeSet};

use udn_ovsdb::protocol::{Atom, Row, Uuid, Value};
use udn_ovsdb::replica::Replica;
use udn_ovsdb::table::Table;
use udn_ovsdb::vswitch::{Bridge, Interface, OpenVswitch, Port, interface, port};

use super::error::OvsError;

/// The rows of the four tables, by UUID.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OvsState {
    /// The one `Open_vSwitch` row (with its UUID), if any.
    pub open_vswitch: Option<OpenVswitch>,
    /// Bridges.
    pub bridges: BTreeMap<Uuid, Bridge>,
    /// Ports.
    pub ports: BTreeMap<Uuid, Port>,
    /// Interfaces.
    pub interfaces: BTreeMap<Uuid, Interface>,
}

fn typed<T: Table>(replica: &Replica) -> Result<BTreeMap<Uuid, T>, OvsError> {
    replica
        .rows(T::TABLE)
        .map(|(uuid, row)| Ok((*uuid, typed_row(*uuid, row)?)))
        .collect()
}

/// The rows a plan reads, for [`OvsState::focused`]: a node has a port per pod, and typing
/// all of them for a plan that reads two is most of a CNI request's CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Focus<'a> {
    /// Ports and interfaces by name.
    pub names: Vec<&'a str>,
    /// Interfaces whose `external_ids` map the key to the value.
    pub external_ids: Vec<(&'a str, &'a str)>,
    /// Every port and interface of these bridges.
    pub bridges: Vec<&'a str>,
}

fn typed_row<T: Table>(uuid: Uuid, row: &Row) -> Result<T, OvsError> {
    T::from_row(Some(uuid), row).map_err(|source| OvsError::Row {
        table: T::TABLE,
        source,
    })
}

fn named(row: &Row, column: &str, names: &[&str]) -> bool {
    matches!(row.get(column), Some(Value::Atom(Atom::String(name))) if names.contains(&name.as_str()))
}

impl OvsState {
    /// The part of `replica` that `focus` names, with every consequence a plan looks up:
    /// the `Open_vSwitch` row and every bridge (a node has a handful); the ports and
    /// interfaces named, the interfaces with the `external_ids` pairs, every port and
    /// interface of the bridges named; and the port of each interface and the interfaces
    /// of each port taken. A plan that only asks about these rows plans as on the whole
    /// [`OvsState::from_replica`].
    pub fn focused(replica: &Replica, focus: &Focus<'_>) -> Result<Self, OvsError> {
        let mut state = Self {
            open_vswitch: typed::<OpenVswitch>(replica)?.into_values().next(),
            bridges: typed(replica)?,
            ..Self::default()
        };
        let mut ports: BTreeSet<Uuid> = state
            .bridges
            .values()
            .filter(|row| focus.bridges.contains(&row.name.as_str()))
            .flat_map(|row| row.ports.iter().copied())
            .collect();
        ports.extend(
            replica
                .rows(port::TABLE)
                .filter(|(_, row)| named(row, port::NAME, &focus.names))
                .map(|(uuid, _)| *uuid),
        );
        let mut interfaces: BTreeSet<Uuid> = replica
            .rows(interface::TABLE)
            .filter(|(_, row)| named(row, interface::NAME, &focus.names))
            .map(|(uuid, _)| *uuid)
            .collect();
        for (key, value) in &focus.external_ids {
            interfaces.extend(replica.find(interface::TABLE, key, value));
        }
        // The ports holding the interfaces taken, from the replica's reference index.
        for uuid in &interfaces {
            ports.extend(
                replica
                    .referrers(uuid)
                    .into_iter()
                    .filter(|(table, _, column)| table == port::TABLE && column == port::INTERFACES)
                    .map(|(_, referrer, _)| referrer),
            );
        }
        for uuid in ports {
            if let Some(row) = replica.get(port::TABLE, &uuid) {
                let typed: Port = typed_row(uuid, row)?;
                interfaces.extend(typed.interfaces.iter().copied());
                state.ports.insert(uuid, typed);
            }
        }
        for uuid in interfaces {
            if let Some(row) = replica.get(interface::TABLE, &uuid) {
                state.interfaces.insert(uuid, typed_row(uuid, row)?);
            }
        }
        Ok(state)
    }

    /// The snapshot of `replica`.
    pub fn from_replica(replica: &Replica) -> Result<Self, OvsError> {
        Ok(Self {
            open_vswitch: typed::<OpenVswitch>(replica)?.into_values().next(),
            bridges: typed(replica)?,
            ports: typed(replica)?,
            interfaces: typed(replica)?,
        })
    }

    /// The bridge named `name`, with its UUID.
    pub fn bridge(&self, name: &str) -> Option<(Uuid, &Bridge)> {
        self.bridges
            .iter()
            .find(|(_, bridge)| bridge.name == name)
            .map(|(uuid, bridge)| (*uuid, bridge))
    }

    /// The port named `name`, with its UUID.
    pub fn port(&self, name: &str) -> Option<(Uuid, &Port)> {
        self.ports
            .iter()
            .find(|(_, port)| port.name == name)
            .map(|(uuid, port)| (*uuid, port))
    }

    /// The interface named `name`, with its UUID.
    pub fn interface(&self, name: &str) -> Option<(Uuid, &Interface)> {
        self.interfaces
            .iter()
            .find(|(_, interface)| interface.name == name)
            .map(|(uuid, interface)| (*uuid, interface))
    }

    /// The port holding interface `interface`, with its UUID.
    pub fn port_of_interface(&self, interface: Uuid) -> Option<(Uuid, &Port)> {
        self.ports
            .iter()
            .find(|(_, port)| port.interfaces.contains(&interface))
            .map(|(uuid, port)| (*uuid, port))
    }

    /// The bridge holding port `port`, with its UUID.
    pub fn bridge_of_port(&self, port: Uuid) -> Option<(Uuid, &Bridge)> {
        self.bridges
            .iter()
            .find(|(_, bridge)| bridge.ports.contains(&port))
            .map(|(uuid, bridge)| (*uuid, bridge))
    }

    /// The interfaces whose `external_ids` map `key` to `value`, with their UUIDs.
    pub fn interfaces_with<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
    ) -> impl Iterator<Item = (Uuid, &'a Interface)> + 'a {
        self.interfaces
            .iter()
            .filter(move |(_, interface)| {
                interface.external_ids.get(key).map(String::as_str) == Some(value)
            })
            .map(|(uuid, interface)| (*uuid, interface))
    }
}
