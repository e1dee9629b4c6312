//! The node agent's life (upstream ovnkube-node's start-up order,
//! `node-and-interconnect.md` §5): OVS's `Open_vSwitch` row and `br-int`, host isolation,
//! the wait for the node's host subnet, the node's annotations, the management port, the
//! CNI server, and the CNI config file last (its presence marks the node ready). Then it
//! keeps host isolation in step with the pods and re-applies the management port.

pub mod facts;
pub mod gateway;
pub mod mgmt;
pub mod mgmt_snat;
pub mod nic_to_bridge;
pub mod pods;
pub mod primary_udns;
pub mod services;
pub mod udn_host;
pub mod udn_service_mark;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::Reporter;
use tokio::task::JoinSet;
use tracing::{info, warn};
use udn_api::annotations::node_subnets::parse_node_subnets;
use udn_api::names::{ANNOTATION_NODE_SUBNETS, DEFAULT_NETWORK_NAME};
use udn_runtime::events::{Events, Publisher, Subject, Warning};
use udn_runtime::{Readiness, Shutdown};

use crate::cni::server::{bind, serve};
use crate::cni::{CniContext, CniHandler};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::netlink::TxChecksumOffload;
use crate::ovs::{BR_INT, ChassisConfig, DesiredBridge, Ovs, OvsConfig, OvsError};
use crate::watch::{Stores, WatchError};

/// The field manager and Event reporter.
pub const NODE_AGENT: &str = "udn-node";

/// Upstream's wait for the node's host subnet (`node-subnets["default"]`).
const SUBNET_WAIT: Duration = Duration::from_secs(300);

/// How often the management port and the node's annotations are re-applied.
const RESYNC: Duration = Duration::from_secs(30);

/// How often the gateway bridge's flows are compared with what they should be (upstream
/// re-syncs them every 15 s).
const GATEWAY_RESYNC: Duration = Duration::from_secs(15);

/// Why the agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// OVS.
    #[error("OVS: {0}")]
    Ovs(#[from] OvsError),
    /// The watches.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// No host subnet in time.
    #[error(
        "timed out waiting for node's {node} logical switch (k8s.ovn.org/node-subnets has no default entry after {seconds} s)"
    )]
    NoHostSubnet {
        /// The node.
        node: String,
        /// How long it waited.
        seconds: u64,
    },
    /// The host's facts.
    #[error(transparent)]
    Facts(#[from] facts::FactsError),
    /// An annotation could not be formatted.
    #[error("node annotations: {0}")]
    Annotation(#[from] udn_api::annotations::AnnotationError),
    /// The API server refused the node's annotations.
    #[error("writing node {node}'s annotations: {source}")]
    Annotate {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The management port.
    #[error(transparent)]
    Mgmt(#[from] mgmt::MgmtError),
    /// Host isolation.
    #[error("host isolation: {0}")]
    Isolation(#[from] crate::isolation::IsolationError),
    /// The CNI server.
    #[error(transparent)]
    Server(#[from] crate::cni::server::ServerError),
    /// The CNI config file.
    #[error(transparent)]
    CniConfig(#[from] crate::cni_config::CniConfigError),
}

/// Runs the agent until `shutdown`.
pub async fn run(
    config: Arc<Config>,
    client: Client,
    metrics: Metrics,
    readiness: Readiness,
    shutdown: Shutdown,
) -> Result<(), AgentError> {
    let node = config.node_name.clone();
    let mut events = Events::new(Some(Publisher {
        client: client.clone(),
        reporter: Reporter {
            controller: NODE_AGENT.to_owned(),
            instance: Some(node.clone()),
        },
    }));
    // 1. OVS: br-int and the chassis identity ovn-controller needs.
    let ovs = Ovs::connect(&OvsConfig::new(&config.ovs_address)?).await?;
    ovs.ensure_bridge(&DesiredBridge::integration(&config.datapath_type))
        .await?;
    let mut tasks = JoinSet::new();
    let stores = Stores::start(&client, &node, &mut tasks).await?;
    let facts = facts::gather(&config, &ovs).await?;
    let encap_ip = facts
        .encap_ips
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    ovs.ensure_chassis_config(&chassis_config(&config, &encap_ip))
        .await?;
    if let Some(gateway) = &facts.gateway {
        ovs.ensure_bridge_mapping("physnet", &gateway.bridge)
            .await?;
    }
    // 2. Host isolation (primary UDNs).
    let isolation = if config.segmentation {
        let started = pods::start_isolation(&config).await?;
        let warnings = started
            .warnings
            .iter()
            .map(|w| Warning {
                subject: Subject::Node(node.clone()),
                reason: w.reason.as_str(),
                message: w.message.clone(),
            })
            .collect();
        events.report(warnings).await;
        Some(started)
    } else {
        None
    };
    // 3. The node's host subnet (cluster-manager writes it).
    let host_subnets = stores
        .wait_for(SUBNET_WAIT, |stores| {
            let node = stores.own_node()?;
            let value = node
                .metadata
                .annotations
                .as_ref()?
                .get(ANNOTATION_NODE_SUBNETS)?;
            parse_node_subnets(value)
                .ok()?
                .remove(DEFAULT_NETWORK_NAME)
                .filter(|subnets| !subnets.is_empty())
        })
        .await
        .ok_or_else(|| AgentError::NoHostSubnet {
            node: node.clone(),
            seconds: SUBNET_WAIT.as_secs(),
        })?;
    // 4. The node's own annotations.
    annotate(&client, &stores, &facts).await?;
    // 5. The management port.
    let cluster_subnets: Vec<_> = config
        .cluster
        .cluster_subnets
        .iter()
        .map(|entry| entry.cidr)
        .collect();
    let masquerade = [
        ipnetwork::IpNetwork::V4(config.cluster.masquerade_subnet_v4),
        ipnetwork::IpNetwork::V6(config.cluster.masquerade_subnet_v6),
    ];
    let mut mp0 = mgmt::desired(
        &node,
        &host_subnets,
        &cluster_subnets,
        &masquerade,
        config.cluster.mtu,
    )?;
    let mut mp0_memory = mgmt::MgmtMemory::default();
    mgmt::apply(&ovs, &mp0, &mut mp0_memory).await?;
    // 6. The CNI server, then the config file that tells kubelet the network is ready.
    let tx_offload = match ovs.datapath_type(BR_INT)?.as_deref() {
        Some("netdev") => TxChecksumOffload::Disable,
        _ => TxChecksumOffload::Keep,
    };
    let ctx = Arc::new(CniContext {
        config: Arc::clone(&config),
        stores: stores.clone(),
        ovs,
        metrics,
        tx_offload,
    });
    let listener = bind(&config.cni_server_socket)?;
    tasks.spawn(serve(
        listener,
        Arc::new(CniHandler::new(Arc::clone(&ctx))),
        shutdown.clone(),
    ));
    let written = crate::cni_config::write(
        &config.cni_conf_dir,
        &crate::cni_config::render(config.cni_log_level, config.cni_log_file.as_deref()),
    )?;
    info!(
        node = %node,
        socket = %config.cni_server_socket.display(),
        cni_config_written = written,
        "node agent ready"
    );
    readiness.set_ready(true);
    // The bridge's share of the masquerade subnet (host masquerade IP, neighbours,
    // service routes), which the per-network tables route through.
    {
        let netlink =
            crate::netlink::Netlink::connect_current("host").map_err(mgmt::MgmtError::from)?;
        gateway::init_masquerade(&netlink, &config, &facts)
            .await
            .map_err(mgmt::MgmtError::from)?;
    }
    // 7. Every primary UDN's management port, table and rules.
    let udn_ctx = facts
        .gateway
        .as_ref()
        .map(|gateway| udn_host::UdnHostContext {
            node: node.clone(),
            bridge: gateway.bridge.clone(),
            next_hops: gateway.next_hops.clone(),
            service_cidrs: config.cluster.service_cidrs.clone(),
            masquerade: masquerade.to_vec(),
            table_start: config.routing_table_id_start,
        });
    let mut udn_hosts: Option<Vec<udn_host::UdnHostInput>> = None;
    let mut vrf_reported = false;
    // 8. The gateway bridge's flows: synced whenever its inputs change, and every 15 s.
    let (gateway_tx, gateway_rx) = tokio::sync::watch::channel(None);
    let gateway_sync = crate::gateway::GatewaySync::new(
        crate::gateway::Ofctl::new(),
        Some(crate::netlink::Netlink::connect_current("host").map_err(mgmt::MgmtError::from)?),
    );
    tasks.spawn(gateway_sync.run(gateway_rx, GATEWAY_RESYNC));
    let mut fdb_done = false;
    let mut facts = facts;
    let refresh_gateway = |facts: &crate::annotations::NodeFacts| match gateway::bridge_inputs(
        &config, facts, &ctx.ovs, &stores,
    ) {
        Ok(inputs) => {
            gateway_tx.send_if_modified(|current| {
                let changed = *current != inputs;
                *current = inputs.clone();
                changed
            });
            inputs
        }
        Err(error) => {
            warn!(error = %error, "reading the gateway bridge's ports failed");
            None
        }
    };
    let mut service_mark = udn_service_mark::ServiceMarkSync::default();
    let mut service_nft = ServiceNft {
        segmentation: config.segmentation,
        mark: &mut service_mark,
        mp0: &mut mp0,
        mp0_memory: &mut mp0_memory,
    };
    if let Some(inputs) = refresh_gateway(&facts) {
        fdb_done = static_fdb(&inputs).await;
        service_nft.sync(&ctx, &inputs, false).await;
    }
    if config.segmentation
        && let Some(udn_ctx) = &udn_ctx
    {
        sync_udn_hosts(
            &ctx,
            udn_ctx,
            &config,
            &stores,
            &mut udn_hosts,
            &mut vrf_reported,
            &mut events,
        )
        .await;
    }
    // 9. Steady state.
    let mut isolation = isolation;
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    let mut pods_seen = pods::PodVersions::default();
    let mut changes = stores.subscribe();
    // OVS changes matter to the gateway: ovn-controller creates a network's patch port
    // after the NB controller wrote its external switch.
    let mut ovs_changes = ctx.ovs.client().changes();
    if let Some(started) = &mut isolation {
        pods::sync_isolation(&mut started.isolation, &stores, &mut pods_seen).await?;
    }
    loop {
        tokio::select! {
            () = shutdown.wait() => break,
            changed = changes.changed() => {
                if changed.is_err() {
                    break;
                }
                if let Some(started) = &mut isolation
                    && let Err(error) = pods::update_isolation(&mut started.isolation, &stores, &mut pods_seen).await
                {
                    ctx.metrics.error("nft");
                    warn!(error = %error, "host isolation update failed");
                }
                if let Some(inputs) = refresh_gateway(&facts) {
                    if !fdb_done {
                        fdb_done = static_fdb(&inputs).await;
                    }
                    service_nft.sync(&ctx, &inputs, false).await;
                }
                if config.segmentation
                    && let Some(udn_ctx) = &udn_ctx
                {
                    sync_udn_hosts(&ctx, udn_ctx, &config, &stores, &mut udn_hosts, &mut vrf_reported, &mut events).await;
                }
            }
            changed = ovs_changes.changed() => {
                if changed.is_err() {
                    break;
                }
                if let Some(inputs) = refresh_gateway(&facts) {
                    if !fdb_done {
                        fdb_done = static_fdb(&inputs).await;
                    }
                    service_nft.sync(&ctx, &inputs, false).await;
                }
            }
            trigger = next_trigger(&mut isolation) => {
                if let (Some(started), Some(trigger)) = (&mut isolation, trigger) {
                    match started.isolation.handle(trigger).await {
                        Ok(check) => info!(check = ?check, "kubelet rule checked"),
                        Err(error) => {
                            ctx.metrics.error("nft");
                            warn!(error = %error, "kubelet rule reload failed");
                        }
                    }
                }
            }
            _ = resync.tick() => {
                if let Err(error) = mgmt::apply(&ctx.ovs, service_nft.mp0, service_nft.mp0_memory).await {
                    ctx.metrics.error("netlink");
                    warn!(error = %error, "management port resync failed");
                }
                if config.segmentation
                    && let Some(udn_ctx) = &udn_ctx
                {
                    // Forget the last inputs: re-apply (a vswitchd restart empties ports).
                    udn_hosts = None;
                    sync_udn_hosts(&ctx, udn_ctx, &config, &stores, &mut udn_hosts, &mut vrf_reported, &mut events).await;
                }
                match facts::gather(&config, &ctx.ovs).await {
                    Ok(fresh) => {
                        if let Err(error) = annotate(&client, &stores, &fresh).await {
                            ctx.metrics.error("annotation");
                            warn!(error = %error, "node annotation resync failed");
                        }
                        facts = fresh;
                    }
                    Err(error) => warn!(error = %error, "reading the host's facts failed"),
                }
                if let Some(inputs) = refresh_gateway(&facts) {
                    if !fdb_done {
                        fdb_done = static_fdb(&inputs).await;
                    }
                    service_nft.sync(&ctx, &inputs, true).await;
                }
            }
        }
    }
    tasks.abort_all();
    Ok(())
}

/// The nftables that follow the Services: the UDN service mark chains and maps (with network
/// segmentation) and the management port's NodePort no-SNAT set.
struct ServiceNft<'a> {
    segmentation: bool,
    mark: &'a mut udn_service_mark::ServiceMarkSync,
    mp0: &'a mut mgmt::DesiredMgmtPort,
    mp0_memory: &'a mut mgmt::MgmtMemory,
}

impl ServiceNft<'_> {
    /// Brings both in step with the Services of `inputs` (sending nothing when nothing
    /// changed; `check_drift` also compares the mark chain with nft's listing).
    async fn sync(
        &mut self,
        ctx: &CniContext,
        inputs: &crate::gateway::BridgeInputs,
        check_drift: bool,
    ) {
        let nodeports = mgmt_snat::no_snat_nodeports(services::active_services(inputs));
        if mgmt::set_no_snat_nodeports(self.mp0, nodeports)
            && let Err(error) = mgmt::ensure_snat(self.mp0, self.mp0_memory).await
        {
            ctx.metrics.error("nft");
            warn!(error = %error, "management port NodePort no-SNAT set not applied");
        }
        if !self.segmentation {
            return;
        }
        let desired =
            udn_service_mark::desired(&udn_service_mark::ServiceMarkInputs::from_bridge(inputs));
        if let Err(error) = self
            .mark
            .ensure(&crate::nft::NftCli::new(), &desired, check_drift)
            .await
        {
            ctx.metrics.error("nft");
            warn!(error = %error, "UDN service mark chains not applied");
        }
    }
}

/// Event reason when the kernel has no VRFs (udn's own: upstream would fail).
pub const VRF_NOT_SUPPORTED: &str = "UDNVRFNotSupported";

/// Applies the primary UDNs' host side when its inputs changed (or `last` was cleared).
async fn sync_udn_hosts(
    ctx: &CniContext,
    udn_ctx: &udn_host::UdnHostContext,
    config: &Config,
    stores: &Stores,
    last: &mut Option<Vec<udn_host::UdnHostInput>>,
    vrf_reported: &mut bool,
    events: &mut Events,
) {
    let nets = udn_host::inputs(config, stores);
    if last.as_ref() == Some(&nets) {
        return;
    }
    match udn_host::apply(&ctx.ovs, udn_ctx, &nets).await {
        Ok(report) => {
            *last = Some(nets);
            if report.vrf_unsupported && !*vrf_reported {
                *vrf_reported = true;
                let message = format!(
                    "VRF devices are not supported by the kernel of node {}: the routes of primary user defined networks are in per-network routing tables selected by the same ip rules",
                    udn_ctx.node
                );
                warn!(node = %udn_ctx.node, "kernel without VRF support: per-network routing tables instead");
                events
                    .report(vec![Warning {
                        subject: Subject::Node(udn_ctx.node.clone()),
                        reason: VRF_NOT_SUPPORTED,
                        message,
                    }])
                    .await;
            }
        }
        Err(error) => {
            ctx.metrics.error("netlink");
            warn!(error = %error, "primary UDN host side not applied");
        }
    }
}

/// Gateway init's static FDB entry for the bridge MAC on the bridge's own port (otherwise
/// NORMAL learns it on a patch port); whether it is in place.
async fn static_fdb(inputs: &crate::gateway::BridgeInputs) -> bool {
    // A vswitchd started with `--unixctl=<rundir>/ovs-vswitchd.ctl` (rather than the
    // pid-named default) is reached through that socket.
    let rundir = std::env::var_os("OVS_RUNDIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(crate::gateway::DEFAULT_OVS_RUNDIR));
    let named = rundir.join("ovs-vswitchd.ctl");
    let mut ctl = crate::gateway::VswitchdCtl::new();
    if named.exists() {
        ctl = ctl.with_socket(named);
    }
    match ctl
        .add_static_fdb(&inputs.bridge, &inputs.bridge, 0, inputs.mac)
        .await
    {
        Ok(()) => true,
        Err(error) => {
            warn!(bridge = %inputs.bridge, error = %error, "adding the bridge's static FDB entry failed");
            false
        }
    }
}

async fn next_trigger(
    isolation: &mut Option<crate::isolation::Started<crate::nft::NftCli>>,
) -> Option<crate::isolation::ReloadTrigger> {
    match isolation {
        Some(started) => Some(started.triggers.next().await),
        None => std::future::pending().await,
    }
}

fn chassis_config(config: &Config, encap_ip: &str) -> ChassisConfig {
    let mut chassis = ChassisConfig::new(encap_ip, &config.node_name);
    chassis.encap_type = config.encap_type.clone();
    chassis.openflow_probe = u64::from(config.openflow_probe);
    chassis.monitor_all = config.monitor_all;
    chassis.lflow_cache_enable = config.enable_lflow_cache;
    chassis.lflow_cache_limit = Some(config.lflow_cache_limit);
    chassis.lflow_cache_limit_kb = Some(config.lflow_cache_limit_kb);
    chassis.ofctrl_wait_before_clear_ms = u64::from(config.ofctrl_wait_before_clear);
    chassis.ovn_remote = Some(config.ovn_remote.clone());
    if config.datapath_type == "netdev" {
        chassis
            .extra_external_ids
            .insert("ovn-bridge-datapath-type".to_owned(), "netdev".to_owned());
    }
    chassis
}

/// Writes the node's own annotations (what differs) on `nodes/status`, as upstream.
async fn annotate(
    client: &Client,
    stores: &Stores,
    facts: &crate::annotations::NodeFacts,
) -> Result<(), AgentError> {
    let desired = crate::annotations::desired(facts)?;
    let current = stores
        .own_node()
        .and_then(|node| node.metadata.annotations.clone())
        .unwrap_or_default();
    let Some(patch) = crate::annotations::patch(&current, &desired) else {
        return Ok(());
    };
    let params = PatchParams {
        field_manager: Some(NODE_AGENT.to_owned()),
        ..PatchParams::default()
    };
    Api::<Node>::all(client.clone())
        .patch_status(&facts.node, &params, &Patch::Strategic(&patch))
        .await
        .map_err(|source| AgentError::Annotate {
            node: facts.node.clone(),
            source,
        })?;
    Ok(())
}
