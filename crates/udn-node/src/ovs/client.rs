//! The connection to the local OVS database: what it monitors, and one method per step the
//! agent takes (each plans from a snapshot of the replica and sends one transaction, or none
//! when there is nothing to do).
//!
//! Plans see what the replica holds: this client's own commits at once (the client returns
//! from `transact` after their monitor update), another client's (ovn-controller,
//! `ovs-vsctl`) once its update has arrived. A plan made just before such an update may miss
//! it; the transaction then fails (e.g. a name taken meanwhile) or the next pass fixes it.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use udn_ovsdb::client::{Client, ClientConfig, Endpoint};
use udn_ovsdb::protocol::Operation;
use udn_ovsdb::schema::Requirements;
use udn_ovsdb::vswitch::{self, bridge, interface, open_vswitch, port};

use super::bridge::{DesiredBridge, plan_bridge};
use super::error::OvsError;
use super::mgmt_port::{MgmtPort, plan_mgmt_port};
use super::open_vswitch::{ChassisConfig, plan_bridge_mapping, plan_open_vswitch};
use super::pod_port::{IFACE_ID, PodPort, PodPortPlan, SANDBOX, plan_pod_port};
use super::port::delete_port_op;
use super::sandbox::{NadFilter, PodPortRecord, list_pod_ports, plan_delete_sandbox};
use super::state::{Focus, OvsState};
use super::wait::{InstalledWait, wait_ovn_installed};

/// Where ovsdb-server listens on a node.
pub const DEFAULT_OVS_ENDPOINT: &str = "unix:/var/run/openvswitch/db.sock";

/// How to reach the OVS database.
#[derive(Debug, Clone)]
pub struct OvsConfig {
    /// The endpoint (default [`DEFAULT_OVS_ENDPOINT`]).
    pub endpoint: Endpoint,
    /// How long a request waits for its reply.
    pub request_timeout: Duration,
}

impl OvsConfig {
    /// The endpoint given as `unix:<path>` or `tcp:<host>:<port>`, a 30 s request timeout.
    pub fn new(endpoint: &str) -> Result<Self, OvsError> {
        Ok(Self {
            endpoint: Endpoint::parse(endpoint).map_err(OvsError::Endpoint)?,
            request_timeout: Duration::from_secs(30),
        })
    }
}

/// The tables and columns this module reads (statistics and status columns left out: they
/// change every few seconds and would wake every waiter).
fn monitored() -> Requirements {
    Requirements::default()
        .with(
            open_vswitch::TABLE,
            [
                open_vswitch::BRIDGES,
                open_vswitch::EXTERNAL_IDS,
                open_vswitch::OTHER_CONFIG,
            ],
        )
        .with(
            bridge::TABLE,
            [
                bridge::NAME,
                bridge::PORTS,
                bridge::DATAPATH_TYPE,
                bridge::FAIL_MODE,
                bridge::EXTERNAL_IDS,
                bridge::OTHER_CONFIG,
            ],
        )
        .with(
            port::TABLE,
            [
                port::NAME,
                port::INTERFACES,
                port::EXTERNAL_IDS,
                port::OTHER_CONFIG,
            ],
        )
        .with(
            interface::TABLE,
            [
                interface::NAME,
                interface::TYPE,
                interface::EXTERNAL_IDS,
                interface::MAC,
                interface::MTU_REQUEST,
                interface::OFPORT,
                interface::ERROR,
            ],
        )
}

/// The node's OVS database, with a replica of what [`monitored`] lists.
#[derive(Debug)]
pub struct Ovs {
    client: Client,
    /// The typed snapshot of the replica as of a change count. Every OVS change wakes
    /// several readers (the gateway, the UDN hosts, each CNI request), and typing every
    /// row of a node with hundreds of pods for each of them cost more CPU than the rest
    /// of a CNI ADD; now a change is typed once, by whoever reads it first.
    snapshot: Mutex<Option<(u64, Arc<OvsState>)>>,
}

impl Ovs {
    /// Connects, monitors and waits for the initial contents.
    pub async fn connect(config: &OvsConfig) -> Result<Self, OvsError> {
        let mut client_config = ClientConfig::new(config.endpoint.clone(), vswitch::DATABASE);
        client_config.monitor = monitored();
        client_config.required = monitored();
        client_config.indexed_keys = vec![IFACE_ID.to_owned(), SANDBOX.to_owned()];
        client_config.request_timeout = config.request_timeout;
        let client = Client::connect(client_config).await.map_err(|source| {
            OvsError::client(format!("connect to {}", config.endpoint), source)
        })?;
        Ok(Self {
            client,
            snapshot: Mutex::new(None),
        })
    }

    /// The underlying client (its replica, `changes()`).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A typed snapshot of the replica (shared until the replica changes).
    pub fn state(&self) -> Result<Arc<OvsState>, OvsError> {
        // The count is read before the replica: the client counts a change after applying
        // it, so the snapshot is never older than the count it is kept under.
        let count = *self.client.changes().borrow();
        let mut snapshot = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, state)) = snapshot.as_ref()
            && *seen == count
        {
            return Ok(Arc::clone(state));
        }
        let state = Arc::new(OvsState::from_replica(&self.client.replica())?);
        *snapshot = Some((count, Arc::clone(&state)));
        Ok(state)
    }

    /// A typed snapshot of the part of the replica `focus` names (see [`OvsState::focused`]).
    pub fn focused_state(&self, focus: &Focus<'_>) -> Result<OvsState, OvsError> {
        OvsState::focused(&self.client.replica(), focus)
    }

    /// How many interfaces carry a CNI sandbox id (`external_ids:sandbox`), read from the
    /// replica's index without typing a row.
    pub fn pod_interface_count(&self) -> usize {
        let replica = self.client.replica();
        replica
            .indexed_values(interface::TABLE, SANDBOX)
            .map(|values| {
                values
                    .filter(|sandbox| !sandbox.is_empty())
                    .map(|sandbox| replica.find(interface::TABLE, SANDBOX, sandbox).len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// The `datapath_type` of `bridge` (`netdev`: userspace, so pods need TX checksum
    /// offload off), or `None` when there is no such bridge.
    pub fn datapath_type(&self, bridge: &str) -> Result<Option<String>, OvsError> {
        Ok(self
            .state()?
            .bridge(bridge)
            .map(|(_, row)| row.datapath_type.clone()))
    }

    /// Sends `ops` as one transaction; returns whether there was anything to send.
    async fn run(&self, step: String, ops: Vec<Operation>) -> Result<bool, OvsError> {
        if ops.is_empty() {
            return Ok(false);
        }
        self.client
            .transact(ops)
            .await
            .map_err(|source| OvsError::client(step, source))?;
        Ok(true)
    }

    /// Merges the chassis configuration into the `Open_vSwitch` row; returns whether it
    /// changed anything.
    pub async fn ensure_chassis_config(&self, config: &ChassisConfig) -> Result<bool, OvsError> {
        let ops = plan_open_vswitch(
            &*self.state()?,
            &config.external_ids(),
            &config.other_config(),
        )?;
        self.run("set Open_vSwitch external_ids".to_owned(), ops)
            .await
    }

    /// Maps `physnet` to `bridge` in `ovn-bridge-mappings`, keeping other mappings.
    pub async fn ensure_bridge_mapping(
        &self,
        physnet: &str,
        bridge: &str,
    ) -> Result<bool, OvsError> {
        let ops = plan_bridge_mapping(&*self.state()?, physnet, bridge)?;
        self.run(format!("map {physnet} to bridge {bridge}"), ops)
            .await
    }

    /// Creates or updates a bridge.
    pub async fn ensure_bridge(&self, desired: &DesiredBridge) -> Result<bool, OvsError> {
        let ops = plan_bridge(&*self.state()?, desired)?;
        self.run(format!("ensure bridge {}", desired.name), ops)
            .await
    }

    /// Adds or updates a pod's port (one transaction, also removing older ports of the same
    /// `iface-id`); returns the plan that was sent.
    pub async fn add_pod_port(&self, port: &PodPort) -> Result<PodPortPlan, OvsError> {
        let focus = Focus {
            names: vec![&port.name],
            external_ids: vec![(IFACE_ID, &port.iface_id)],
            bridges: Vec::new(),
        };
        let plan = plan_pod_port(&self.focused_state(&focus)?, port)?;
        self.run(format!("add pod port {}", port.name), plan.ops.clone())
            .await?;
        Ok(plan)
    }

    /// Waits for `external_ids:ovn-installed=true` (see [`wait_ovn_installed`]).
    pub async fn wait_ovn_installed(
        &self,
        wait: &InstalledWait,
        timeout: Duration,
        cancel: impl Future<Output = String>,
    ) -> Result<(), OvsError> {
        wait_ovn_installed(&self.client, wait, timeout, cancel).await
    }

    /// Removes the ports of a sandbox (CNI DEL) in one transaction; returns their names (the
    /// host veths to delete), empty when there were none.
    pub async fn delete_sandbox_ports(
        &self,
        bridge: &str,
        sandbox: &str,
        filter: &NadFilter,
    ) -> Result<Vec<String>, OvsError> {
        let focus = Focus {
            external_ids: vec![(SANDBOX, sandbox)],
            ..Focus::default()
        };
        let plan = plan_delete_sandbox(&self.focused_state(&focus)?, bridge, sandbox, filter);
        self.run(format!("delete ports of sandbox {sandbox}"), plan.ops)
            .await?;
        Ok(plan.ports)
    }

    /// Removes port `name` from `bridge`; returns whether it was there.
    pub async fn delete_port(&self, bridge: &str, name: &str) -> Result<bool, OvsError> {
        let focus = Focus {
            names: vec![name],
            ..Focus::default()
        };
        let ops = delete_port_op(&self.focused_state(&focus)?, bridge, name)
            .into_iter()
            .collect();
        self.run(format!("delete port {name} from {bridge}"), ops)
            .await
    }

    /// Every pod port the CNI made on `bridge`.
    pub fn pod_ports(&self, bridge: &str) -> Result<Vec<PodPortRecord>, OvsError> {
        Ok(list_pod_ports(&*self.state()?, bridge))
    }

    /// Creates or updates a management port; returns whether it changed anything.
    pub async fn ensure_mgmt_port(&self, port: &MgmtPort) -> Result<bool, OvsError> {
        let ops = plan_mgmt_port(&*self.state()?, port)?;
        self.run(format!("ensure management port {}", port.name), ops)
            .await
    }
}
