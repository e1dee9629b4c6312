//! One reconcile pass.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use tracing::{debug, info, warn};
use udn_ovsdb::engine::{DesiredUnit, Scope, UnitKey, UnitOutcome};
use udn_ovsdb::protocol::{Operation, Uuid};

use super::jobs::{Done, Job, JobMeta, write_jobs};
use super::teardown::controllers_in;
use super::{Running, Zone, annotate, shared};
use crate::events::{Subject, Warning};
use crate::metrics::{ErrorLabels, ResultLabels, TopologyLabels};
use crate::model::{Network, PodAttachment};
use crate::networks::NetworkIdentity;
use crate::sb::{remote_binding_ops, remote_chassis, remote_chassis_ops};
use crate::services::{LbSpec, ServiceView, lbs_by_network};
use crate::snapshot::{Snapshot, add_services, attachments_by_network, snapshot};
use crate::topology::UdnEnabledService;
use crate::topology::keyed::{KeyedDesired, plan_keyed};
use crate::topology::{
    self, NetworkDesired, Problem, SchemaFeatures, ZoneInputs, network_engine, network_scope,
};
use udn_api::cluster::ClusterConfig;

/// What a pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassReport {
    /// Networks reconciled.
    pub networks: usize,
    /// Of those, the ones rendered and planned anew (the others' inputs had not changed
    /// since their last fully applied render).
    pub rendered: usize,
    /// Northbound operations committed.
    pub nb_ops: usize,
    /// Southbound operations committed.
    pub sb_ops: usize,
    /// Pod annotations written.
    pub pods_annotated: usize,
    /// Steps that failed (retried soon).
    pub failures: usize,
    /// Remote ports waiting for a binding or pods waiting for an annotation write.
    pub pending: usize,
}

impl PassReport {
    /// Whether a pass should come again soon.
    pub fn needs_retry(&self) -> bool {
        self.failures > 0 || self.pending > 0 || self.pods_annotated > 0
    }
}

/// What a network's last fully applied render was made from, and what of that render a
/// pass needs again when it does not render the network anew: the rows outside the engine
/// (load balancer groups, static MAC bindings) and the problems it reported.
#[derive(Debug, Clone)]
pub(super) struct Rendered {
    net: Network,
    pods: Vec<PodAttachment>,
    copp: Option<Uuid>,
    groups: BTreeMap<String, Uuid>,
    lbs: Vec<LbSpec>,
    keyed: NetworkDesired,
    warnings: Vec<Warning>,
}

impl Rendered {
    /// Whether rendering `net` with these inputs again would give what is applied already.
    fn same(
        &self,
        net: &Network,
        pods: &[PodAttachment],
        copp: Option<Uuid>,
        groups: &BTreeMap<String, Uuid>,
        lbs: &[LbSpec],
    ) -> bool {
        self.net == *net
            && self.pods == pods
            && self.copp == copp
            && self.groups == *groups
            && self.lbs == lbs
    }
}

/// The `--udn-allowed-default-services` that exist with a cluster IP, sorted.
fn udn_enabled_services(
    services: &[ServiceView],
    cluster: &ClusterConfig,
) -> Vec<UdnEnabledService> {
    let mut out: Vec<UdnEnabledService> = services
        .iter()
        .filter(|s| cluster.is_udn_enabled_service(&s.namespace, &s.name))
        .filter_map(|s| {
            Some(UdnEnabledService {
                key: s.key(),
                cluster_ip: *s.cluster_ips.first()?,
            })
        })
        .collect();
    out.sort();
    out
}

fn identity(network: &Network) -> Option<NetworkIdentity> {
    network.user_defined().map(NetworkIdentity::of)
}

/// The object a topology problem is about: the node, the pod, or for a network-wide part the
/// network's first NAD (the default network has none: logged only).
fn problem_subject(network: &Network, problem: &Problem) -> Option<Subject> {
    match problem {
        Problem::Node { node, .. } => Some(Subject::Node(node.clone())),
        Problem::Pod { namespace, pod, .. } => Some(Subject::Pod(namespace.clone(), pod.clone())),
        Problem::Network { .. } => network.nads.first().map(|nad| Subject::nad(nad)),
    }
}

impl Zone {
    fn read(&self) -> Snapshot {
        let nads = self.stores.nads.state();
        let nodes = self.stores.nodes.state();
        let namespaces = self.stores.namespaces.state();
        let pods = self.stores.pods.state();
        let mut snap = snapshot(
            &self.config.zone,
            nads.iter().map(AsRef::as_ref),
            nodes.iter().map(AsRef::as_ref),
            namespaces.iter().map(AsRef::as_ref),
            pods.iter().map(AsRef::as_ref),
        );
        if self.config.zone.dynamic_udn {
            crate::dynamic_udn::retain_rendered(&mut snap.networks.networks, &snap.nodes);
        }
        let services = self.stores.services.state();
        let slices = self.stores.slices.state();
        add_services(
            &mut snap,
            services.iter().map(AsRef::as_ref),
            slices.iter().map(AsRef::as_ref),
        );
        snap
    }

    /// One pass: everything the zone wants, written; see the module docs.
    pub async fn pass(&mut self) -> PassReport {
        let started = Instant::now();
        let mut report = PassReport::default();
        let mut snap = self.read();
        let read_ms = started.elapsed().as_millis() as u64;
        let mut warnings: Vec<Warning> = Vec::new();
        for (node, error) in &snap.node_errors {
            warnings.push(Warning {
                subject: Subject::Node(node.clone()),
                reason: "ErrorReconcilingNode",
                message: error.to_string(),
            });
        }
        for problem in &snap.networks.problems {
            warnings.push(Warning {
                subject: Subject::nad(&problem.nad),
                reason: problem.reason,
                message: problem.message.clone(),
            });
        }

        // Pod addresses first: their annotations are what pod ports are built from.
        if !self.restored {
            annotate::restore(&mut self.ipam, &snap);
            self.restored = true;
        }
        annotate::release_gone(&mut self.ipam, &snap);
        let (writes, pod_warnings) = annotate::allocate(&mut self.ipam, &snap, &self.config.zone);
        warnings.extend(pod_warnings);
        let (written, failed) = annotate::write(&self.kube, writes).await;
        report.pods_annotated = written.len();
        // The addresses just written are the pods' now: their ports go in this pass.
        for write in written {
            if let Some(entry) = snap
                .pods
                .get_mut(&format!("{}/{}", write.namespace, write.name))
            {
                entry.view.pod_networks = Ok(write.networks);
            }
        }
        if failed > 0 {
            report.failures += 1;
            self.metrics
                .errors
                .get_or_create(&ErrorLabels {
                    kind: "pod_annotation",
                })
                .inc();
        }

        let (attachments, open_port_problems) = attachments_by_network(&snap);
        for problem in open_port_problems {
            // Upstream's text (`ensureLocalZonePod`), with its two spaces after "pod".
            warnings.push(Warning {
                subject: Subject::pod(&problem.pod),
                reason: "ErrorUpdatingResource",
                message: format!(
                    "failed to update UDN pod  {} open ports: {}",
                    problem.pod,
                    shared::open_ports_message(&problem.error)
                ),
            });
        }

        let annotated_ms = started.elapsed().as_millis() as u64;
        self.teardown_stale(&snap, &mut report).await;
        self.reconcile_networks(&snap, &attachments, &mut warnings, &mut report)
            .await;
        let nb_ms = started.elapsed().as_millis() as u64;
        self.reconcile_sb(&snap, &mut warnings, &mut report).await;
        self.events.report(warnings).await;
        self.sweep = false;

        self.last_pass_failed = report.failures > 0;
        let result = if report.failures == 0 { "ok" } else { "error" };
        self.metrics
            .passes
            .get_or_create(&ResultLabels { result })
            .inc();
        self.metrics
            .pass_duration
            .observe(started.elapsed().as_secs_f64());
        debug!(
            networks = report.networks,
            rendered = report.rendered,
            nb_ops = report.nb_ops,
            sb_ops = report.sb_ops,
            pods_annotated = report.pods_annotated,
            failures = report.failures,
            read_ms,
            annotated_ms,
            nb_ms,
            millis = started.elapsed().as_millis() as u64,
            "pass done"
        );
        report
    }

    /// Tears down networks that are gone or changed incompatibly, (once, at start)
    /// controllers of networks that no longer exist, and again those whose teardown failed
    /// (the network is no longer in `running`, so nothing else would retry it).
    async fn teardown_stale(&mut self, snap: &Snapshot, report: &mut PassReport) {
        let mut stale: BTreeSet<String> = BTreeSet::new();
        for (name, running) in &self.running {
            match snap.networks.networks.get(name) {
                Some(net) if net.id == running.id && identity(net) == running.identity => {}
                _ => {
                    stale.insert(name.clone());
                }
            }
        }
        let mut controllers: Vec<String> = stale
            .iter()
            .map(|name| format!("{name}-network-controller"))
            .collect();
        if !self.swept {
            let live: BTreeSet<String> = snap
                .networks
                .networks
                .values()
                .map(Network::controller_name)
                .collect();
            let found = controllers_in(&self.nb.replica());
            controllers.extend(found.into_iter().filter(|c| !live.contains(c)));
            self.swept = true;
        }
        controllers.extend(std::mem::take(&mut self.teardown_failed));
        controllers.sort();
        controllers.dedup();
        for controller in controllers {
            match self.teardown(&controller).await {
                Ok(applied) if applied.is_success() => {
                    info!(controller = %controller, ops = applied.ops, "network torn down");
                    report.nb_ops += applied.ops;
                }
                Ok(applied) => {
                    for failure in applied.failures() {
                        warn!(controller = %controller, error = %failure, "network teardown failed");
                    }
                    report.failures += 1;
                    self.teardown_failed.insert(controller);
                }
                Err(error) => {
                    warn!(controller = %controller, error = %error, "network teardown failed");
                    report.failures += 1;
                    self.teardown_failed.insert(controller);
                }
            }
        }
        for name in stale {
            self.running.remove(&name);
        }
    }

    /// Reconciles every network: the default network first (it owns the COPP the other
    /// routers refer to), then the others.
    async fn reconcile_networks(
        &mut self,
        snap: &Snapshot,
        attachments: &BTreeMap<String, Vec<PodAttachment>>,
        warnings: &mut Vec<Warning>,
        report: &mut PassReport,
    ) {
        let features = SchemaFeatures::of(&self.nb.schema());
        let mut order: Vec<&Network> = snap.networks.networks.values().collect();
        order.sort_by_key(|n| (!n.is_default(), n.name.clone()));
        // Rows without external_ids that networks refer to come first: the load balancer
        // groups (their names do not depend on the rendering).
        let groups_only = KeyedDesired {
            load_balancer_groups: order
                .iter()
                .flat_map(|n| topology::load_balancer_groups(n))
                .collect(),
            controllers: order.iter().map(|n| n.controller_name()).collect(),
            ..KeyedDesired::default()
        };
        // The shared rows (the groups, the COPP the default network owns) as they are, or as
        // this pass inserts them: with chosen UUIDs, written ahead of the networks'
        // transactions, so every network is planned and sent without waiting for them.
        let lead = plan_keyed(&groups_only, &*self.nb.replica()).upserts;
        let (copp, mut groups) = shared::shared_rows(&self.nb.replica());
        let mut ahead: BTreeSet<Uuid> = BTreeSet::new();
        for (name, uuid) in lead.iter().filter_map(inserted_group) {
            groups.insert(name, uuid);
            ahead.insert(uuid);
        }
        // Chosen only when the default network (its owner) is written in this pass: a UDN
        // router must not name a COPP nobody inserts (its whole transaction would be refused);
        // without one the reference is left unmanaged, as a `SharedReference` problem.
        let default_written = order
            .iter()
            .any(|n| n.is_default() && !self.teardown_failed.contains(&n.controller_name()));
        let copp = copp.or_else(|| {
            default_written.then(|| {
                let uuid =
                    topology::shared_row_uuid(udn_ovsdb::nb::copp::TABLE, topology::DEFAULT_COPP);
                ahead.insert(uuid);
                uuid
            })
        });
        let mut keyed_parts: Vec<NetworkDesired> = Vec::new();
        let empty: Vec<PodAttachment> = Vec::new();
        let lbs_by_net = lbs_by_network(
            snap.networks.networks.values(),
            &snap.labelled,
            &snap.services,
            &snap.slices,
            &snap.nodes,
            &self.config.zone.cluster,
        );
        let no_lbs: Vec<LbSpec> = Vec::new();
        let udn_enabled = udn_enabled_services(&snap.services, &self.config.zone.cluster);
        let mut jobs: Vec<(&Network, Job)> = Vec::new();
        let mut render = std::time::Duration::ZERO;
        // A network rendered from the same inputs as its last fully applied render is left
        // alone: a pod change re-renders its own networks, not the zone's hundreds. A sweep
        // (the first pass, every resync), the pass after a failure and the first pass on a
        // new Northbound connection render and plan everything, which also repairs rows
        // changed behind our back.
        let generation = self.nb.generation();
        if generation != self.rendered_generation || self.last_pass_failed {
            self.rendered.clear();
            self.rendered_generation = generation;
        }
        let nodes_same =
            self.rendered_nodes == snap.nodes && self.rendered_udn_enabled_services == udn_enabled;
        let mut fresh: BTreeMap<String, Rendered> = BTreeMap::new();
        let mut skipped = 0_usize;
        // The default network first: it owns the COPP the other routers refer to.
        for net in order {
            if self.teardown_failed.contains(&net.controller_name()) {
                // Built again once the old rows are gone.
                continue;
            }
            let mut zone = ZoneInputs::new(&self.config.zone, &snap.nodes);
            zone.copp = copp;
            // Only this network's groups: a copy of every group per network would cost
            // O(networks) each.
            zone.load_balancer_groups = topology::load_balancer_groups(net)
                .into_iter()
                .filter_map(|name| groups.get(&name).map(|uuid| (name, *uuid)))
                .collect();
            zone.ahead = zone
                .load_balancer_groups
                .values()
                .chain(copp.as_ref())
                .filter(|uuid| ahead.contains(uuid))
                .copied()
                .collect();
            zone.features = features;
            zone.acl_logging_rate_limit = self.config.acl_logging_rate_limit;
            zone.ephemeral_port_range
                .clone_from(&self.config.ephemeral_port_range);
            let pods = attachments.get(&net.name).unwrap_or(&empty);
            let lbs = lbs_by_net.get(&net.name).unwrap_or(&no_lbs);
            zone.services = lbs;
            zone.udn_enabled_services = &udn_enabled;
            let controller = net.controller_name();
            if let Some(last) = self.rendered.get(&controller)
                && !self.sweep
                && nodes_same
                && zone.ahead.is_empty()
                && last.same(net, pods, copp, &zone.load_balancer_groups, lbs)
            {
                warnings.extend(last.warnings.iter().cloned());
                keyed_parts.push(last.keyed.clone());
                skipped += 1;
                continue;
            }
            let render_started = Instant::now();
            let desired: NetworkDesired = topology::network_desired(net, &zone, pods);
            render += render_started.elapsed();
            let mut own_warnings = Vec::new();
            for problem in &desired.problems {
                let message = format!("network {}: {problem}", net.name);
                match problem_subject(net, problem) {
                    Some(subject) => own_warnings.push(Warning {
                        subject,
                        reason: problem_reason(problem),
                        message,
                    }),
                    None => warn!(network = %net.name, problem = %message, "cannot render"),
                }
            }
            warnings.extend(own_warnings.iter().cloned());
            let keyed = NetworkDesired {
                controller: desired.controller.clone(),
                units: Vec::new(),
                load_balancer_groups: desired.load_balancer_groups.clone(),
                load_balancer_members: desired.load_balancer_members.clone(),
                direct_load_balancers: desired.direct_load_balancers.clone(),
                static_mac_bindings: desired.static_mac_bindings.clone(),
                problems: Vec::new(),
            };
            keyed_parts.push(keyed.clone());
            fresh.insert(
                controller,
                Rendered {
                    net: net.clone(),
                    pods: pods.clone(),
                    copp,
                    groups: zone.load_balancer_groups.clone(),
                    lbs: lbs.to_vec(),
                    keyed,
                    warnings: own_warnings,
                },
            );
            let job = self.prepare(desired);
            jobs.push((net, job));
            report.rendered += 1;
        }
        let engines_started = Instant::now();
        let written = write_jobs(&self.nb, &self.policy, lead, jobs).await;
        match &written.lead {
            Ok((ops, took)) => {
                if *ops > 0 {
                    self.metrics.record_write("nb", *ops, *took);
                }
                report.nb_ops += ops;
            }
            Err(error) => {
                warn!(error = %error, "load balancer groups not written");
                report.failures += 1;
            }
        }
        report.networks = snap.networks.networks.len();
        self.metrics
            .networks
            .set(i64::try_from(report.networks).unwrap_or(i64::MAX));
        // Then the static MAC bindings, and the groups and bindings nobody wants any more.
        let keyed = KeyedDesired::from_networks(&keyed_parts);
        let plan = plan_keyed(&keyed, &*self.nb.replica());
        let mut ops = plan.upserts;
        ops.extend(plan.deletes);
        match self.write_nb(ops).await {
            Ok(ops) => report.nb_ops += ops,
            Err(error) => {
                warn!(error = %error, "static MAC bindings or load balancer groups not written");
                report.failures += 1;
            }
        }
        // Every write of the pass is answered: each network is verified now.
        let done = written.verify(&self.nb);
        let applied = self.finish_jobs(done, report);
        // Only a render that fully landed may be skipped next time; one that did not is
        // rendered and planned again.
        for (controller, rendered) in fresh {
            if applied.contains(&controller) {
                self.rendered.insert(controller, rendered);
            } else {
                self.rendered.remove(&controller);
            }
        }
        let live: BTreeSet<String> = snap
            .networks
            .networks
            .values()
            .map(Network::controller_name)
            .filter(|c| !self.teardown_failed.contains(c))
            .collect();
        self.rendered
            .retain(|controller, _| live.contains(controller));
        self.rendered_nodes.clone_from(&snap.nodes);
        self.rendered_udn_enabled_services = udn_enabled;
        debug!(
            skipped,
            render_ms = render.as_millis() as u64,
            engines_ms = engines_started.elapsed().as_millis() as u64,
            "networks reconciled"
        );
    }

    /// Writes plain operations to the Northbound database in one transaction.
    async fn write_nb(
        &self,
        ops: Vec<udn_ovsdb::protocol::Operation>,
    ) -> Result<usize, udn_ovsdb::client::ClientError> {
        if ops.is_empty() {
            return Ok(0);
        }
        let count = ops.len();
        let started = Instant::now();
        self.nb.transact(ops).await?;
        self.metrics.record_write("nb", count, started.elapsed());
        Ok(count)
    }

    /// A network's units ready for its engine, with the scope to plan them in. Units gone
    /// since the last pass are known from that pass: they are deleted as empty units, and
    /// the plan looks at nothing else. A sweep (the first pass of an engine, then every
    /// resync) plans with the whole scope, which also finds units of ours the zone did not
    /// render (left by an earlier run, or written back by someone).
    fn prepare(&mut self, desired: NetworkDesired) -> Job {
        let engine = self
            .engines
            .entry(desired.controller.clone())
            .or_insert_with(|| network_engine(&desired.controller))
            .clone();
        let keys: BTreeSet<UnitKey> = desired.units.iter().map(|u| u.key.clone()).collect();
        let previous = self.unit_keys.get(&desired.controller).cloned();
        let (units, scope, sweeping) = match &previous {
            Some(previous) if !self.sweep => {
                let mut units = desired.units;
                units.extend(previous.difference(&keys).cloned().map(DesiredUnit::new));
                (units, Scope::Units, false)
            }
            _ => (desired.units, network_scope(), true),
        };
        Job {
            engine,
            units,
            scope,
            meta: JobMeta {
                controller: desired.controller,
                keys,
                previous,
                sweeping,
            },
        }
    }

    /// Records what the jobs did: unit tracking, metrics, failures.
    fn finish_jobs(&mut self, done: Vec<Done<'_>>, report: &mut PassReport) -> BTreeSet<String> {
        let mut applied = BTreeSet::new();
        for Done {
            net,
            meta,
            result,
            took,
        } in done
        {
            let ok = self.record_network(net, result, report, took);
            if ok {
                applied.insert(meta.controller.clone());
                self.unit_keys.insert(meta.controller, meta.keys);
            } else if meta.sweeping {
                // The gone units this sweep found (and maybe did not delete) are not known
                // here: the next pass sweeps again.
                self.unit_keys.remove(&meta.controller);
            } else {
                // Keep tracking what may still be there.
                let mut tracked = meta.previous.unwrap_or_default();
                tracked.extend(meta.keys);
                self.unit_keys.insert(meta.controller, tracked);
            }
            let running = self.running.entry(net.name.clone()).or_insert(Running {
                id: net.id,
                identity: identity(net),
                pending_since: Some(Instant::now()),
            });
            if ok && let Some(since) = running.pending_since.take() {
                self.metrics
                    .udn_nbdb_programmed
                    .get_or_create(&TopologyLabels {
                        topology: net.topology().as_str(),
                    })
                    .observe(since.elapsed().as_secs_f64());
            }
        }
        applied
    }

    /// Logs and counts a network's reconcile; whether everything landed.
    fn record_network(
        &self,
        net: &Network,
        result: Result<udn_ovsdb::engine::ApplyReport, udn_ovsdb::engine::PlanError>,
        report: &mut PassReport,
        took: std::time::Duration,
    ) -> bool {
        match result {
            Ok(applied) => {
                if applied.ops > 0 {
                    self.metrics.record_write("nb", applied.ops, took);
                    debug!(network = %net.name, ops = applied.ops, transactions = applied.transactions, "network reconciled");
                }
                report.nb_ops += applied.ops;
                let mut ok = true;
                for (unit, outcome) in &applied.units {
                    match outcome {
                        UnitOutcome::Failed(error) => {
                            warn!(network = %net.name, unit = %unit, error = %error, "unit not applied");
                            ok = false;
                        }
                        UnitOutcome::NotAttempted => ok = false,
                        UnitOutcome::Unchanged | UnitOutcome::Applied { .. } => {}
                    }
                }
                if !ok {
                    report.failures += 1;
                    self.metrics
                        .errors
                        .get_or_create(&ErrorLabels { kind: "nb" })
                        .inc();
                }
                ok
            }
            Err(error) => {
                warn!(network = %net.name, error = %error, "network not planned");
                report.failures += 1;
                self.metrics
                    .errors
                    .get_or_create(&ErrorLabels { kind: "plan" })
                    .inc();
                false
            }
        }
    }

    /// Remote chassis and remote port bindings in the Southbound database.
    async fn reconcile_sb(
        &mut self,
        snap: &Snapshot,
        warnings: &mut Vec<Warning>,
        report: &mut PassReport,
    ) {
        let (desired, missing) = remote_chassis(&snap.nodes);
        for (node, annotation) in missing {
            warnings.push(Warning {
                subject: Subject::Node(node.clone()),
                reason: "ErrorReconcilingNode",
                message: format!(
                    "remote node {node}: no remote chassis yet: annotation {annotation} is not set"
                ),
            });
        }
        let ops = {
            let replica = self.sb.replica();
            let mut ops = remote_chassis_ops(&desired, &*replica);
            ops.extend(remote_binding_ops(&*replica));
            ops
        };
        if ops.is_empty() {
            report.pending += remote_binding_ops(&*self.sb.replica()).len();
            return;
        }
        let count = ops.len();
        let started = Instant::now();
        match self.sb.transact(ops).await {
            Ok(_) => {
                self.metrics.record_write("sb", count, started.elapsed());
                report.sb_ops += count;
            }
            Err(error) => {
                warn!(error = %error, "southbound write failed");
                report.failures += 1;
                self.metrics
                    .errors
                    .get_or_create(&ErrorLabels { kind: "sb" })
                    .inc();
            }
        }
        report.pending += remote_binding_ops(&*self.sb.replica()).len();
    }
}

fn problem_reason(problem: &Problem) -> &'static str {
    match problem {
        Problem::Pod { .. } => "ErrorReconcilingPod",
        Problem::Node { .. } | Problem::Network { .. } => "ErrorReconcilingNode",
    }
}

/// The name and UUID of a load balancer group the lead inserts with a chosen UUID.
fn inserted_group(op: &Operation) -> Option<(String, Uuid)> {
    let Operation::Insert {
        table,
        row,
        uuid: Some(uuid),
        ..
    } = op
    else {
        return None;
    };
    if table != udn_ovsdb::nb::load_balancer_group::TABLE {
        return None;
    }
    match row.get(udn_ovsdb::nb::load_balancer_group::NAME) {
        Some(udn_ovsdb::protocol::Value::Atom(udn_ovsdb::protocol::Atom::String(name))) => {
            Some((name.clone(), *uuid))
        }
        _ => None,
    }
}
