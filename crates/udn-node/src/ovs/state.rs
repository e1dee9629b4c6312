//! A typed snapshot of the tables this module reads (`Open_vSwitch`, `Bridge`, `Port`,
//! `Interface`), taken from the client's replica: what every plan is computed from, so plans
//! are pure functions that unit tests feed with hand-made rows.

use std::collections::BTreeMap;

use udn_ovsdb::protocol::Uuid;
use udn_ovsdb::replica::Replica;
use udn_ovsdb::table::Table;
use udn_ovsdb::vswitch::{Bridge, Interface, OpenVswitch, Port};

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
        .map(|(uuid, row)| {
            T::from_row(Some(*uuid), row)
                .map(|typed| (*uuid, typed))
                .map_err(|source| OvsError::Row {
                    table: T::TABLE,
                    source,
                })
        })
        .collect()
}

impl OvsState {
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
