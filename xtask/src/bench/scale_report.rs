//! The `docs/benchmarks.md` section of `cargo xtask bench scale`.

use std::fmt::Write as _;

use super::scale::{Figures, UPSTREAM_SHAPE_ARGS};
use super::scale_zone::ZoneFigures;

fn zone_row(zone: &ZoneFigures) -> String {
    let flags = if zone.extra_args.is_empty() {
        "(none)".to_owned()
    } else {
        format!("`{}`", zone.extra_args.join(" "))
    };
    format!(
        "| {} | {flags} | {} | {} | {:.2} | {:.2} | {:.2} | {} | {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.0} / {:.0} |\n",
        zone.label,
        zone.nb_networks,
        zone.remote_ports,
        zone.timeline.nb_s,
        zone.timeline.sb_s,
        zone.timeline.hv_s,
        zone.full.lflows,
        zone.full.of_flows,
        zone.full.rss.total(),
        zone.lflows_per_net(),
        zone.of_per_net(),
        zone.rss_per_net(),
        zone.controller_rss_mb.0,
        zone.controller_rss_mb.1,
    )
}

fn holds(ok: bool) -> &'static str {
    if ok { "yes" } else { "**no**" }
}

/// What Dynamic UDN and the lean settings saved on node1, from the run's per-network figures.
fn savings(f: &Figures, upstream: &ZoneFigures, lean: &ZoneFigures) -> String {
    let plan = f.plan;
    let not_rendered = plan.networks.saturating_sub(f.node1_networks);
    let mut out = format!(
        "What each saving bought on node1 (per-network figures of this run):\n\n\
         - **Dynamic UDN**: node1 renders the {rendered} networks cluster-manager gave it instead of all {n}. \
         At the upstream-shaped cost per network measured here, the {not_rendered} others would add \
         ~{lf:.0} logical flows, ~{of:.0} OpenFlow flows and ~{gib:.1} GiB of daemon RSS to the zone \
         (`docs/benchmarks.md` controller-500x20: a zone of 500 networks already takes ~63 s to flows installed). \
         And each network node1 renders has only the remote nodes that carry it: {remote} transit switch remote \
         ports in NB instead of {all_remote} (every network on every node), each with its routes.\n",
        remote = lean.remote_ports,
        all_remote = (f.node1_networks + 1) * plan.nodes.saturating_sub(1),
        rendered = f.node1_networks,
        n = plan.networks,
        lf = not_rendered as f64 * upstream.lflows_per_net(),
        of = not_rendered as f64 * upstream.of_per_net(),
        gib = not_rendered as f64 * upstream.rss_per_net() / 1024.0,
    );
    if UPSTREAM_SHAPE_ARGS.is_empty() {
        out.push_str(
            "- **Lean topology**: no lean-topology setting exists in the controller this run was built from \
             (`UPSTREAM_SHAPE_ARGS` is empty), so both zone runs render the same shape and the ratios only \
             show the run-to-run spread.\n",
        );
    } else {
        let _ = writeln!(
            out,
            "- **Lean topology** (the upstream-shaped run sets every lean setting off: `{}`): per network {:.0} fewer logical flows, \
             {:.0} fewer OpenFlow flows, {:.2} MiB less daemon RSS; over node1's {} networks {:.0} lflows, \
             {:.0} OpenFlow flows and {:.0} MiB; flows installed {:.2} s instead of {:.2} s.",
            UPSTREAM_SHAPE_ARGS.join(" "),
            upstream.lflows_per_net() - lean.lflows_per_net(),
            upstream.of_per_net() - lean.of_per_net(),
            upstream.rss_per_net() - lean.rss_per_net(),
            lean.nb_networks,
            (upstream.full.lflows as f64) - (lean.full.lflows as f64),
            (upstream.full.of_flows as f64) - (lean.full.of_flows as f64),
            upstream.full.rss.total() - lean.full.rss.total(),
            lean.timeline.hv_s,
            upstream.timeline.hv_s,
        );
    }
    out
}

/// The section's body.
pub fn body(f: &Figures, date: &str) -> String {
    let plan = f.plan;
    let cm = &f.cm;
    let (mean, max) = cm.state.per_node();
    let mut out = format!(
        "`cargo xtask bench scale --networks {n} --nodes {m} --active-per-node {a}`, measured {date} on {source} \
         (1-minute load average {l0:.2} before, {l1:.2} after; 2 cores shared with other work; one run). \
         Dynamic UDN (`--enable-dynamic-udn-allocation --udn-deletion-grace-period 120s`) on for every component.\n\n\
         Control plane: `udn-kube-sim serve` with {n} namespaces, each with a primary Layer3 UDN (`10.132.0.0/16`, \
         host subnet /24), {m} nodes carrying the node agent's annotations (node1 the lab's node, the others \
         remote nodes with random chassis IDs) and {pods} pods bound to nodes (`spec.nodeName`, no kubelet): two \
         per network on two different nodes, so that each node hosts pods of at most {a} networks and node1 of \
         {active}. The objects were created first ({create:.1} s); then the release `udn-cluster-manager` \
         started. Converged = every NAD has its network ID and every node its node ID and the host subnets of \
         the default network and of the networks with pods on it, and nothing of that changed for 3 s (as \
         watches of NADs and nodes see it); the time is the last change, from cluster-manager's start.\n\n\
         | | measured |\n|---|---|\n\
         | **cluster-manager converged** | **{conv:.2} s** |\n\
         | cluster-manager peak RSS at convergence | **{rss:.1} MiB** (at the end of the run: {rss_end:.1} MiB) |\n\
         | NADs with a network ID | {nads} |\n\
         | networks node1 carries (has pods of) | {node1} ({active}) |\n\
         | networks per node: mean / max | {mean:.1} / {max} |\n\
         | gated (every node carries exactly the networks with pods on it) | {gated} |\n\n",
        n = plan.networks,
        m = plan.nodes,
        a = plan.active_per_node,
        source = f.source,
        l0 = f.load.0,
        l1 = f.load.1,
        pods = plan.pods(),
        active = f.active,
        create = cm.create_s,
        conv = cm.state.converge_s,
        rss = cm.rss_mb,
        rss_end = cm.rss_end_mb,
        nads = cm.state.nads_with_id,
        node1 = f.node1_networks,
        gated = if cm.gated {
            "yes"
        } else {
            "**no**: Dynamic UDN gating not in effect"
        },
    );
    if let Some(reason) = &f.skipped {
        let _ = writeln!(out, "Zone runs skipped: {reason}.\n");
    }
    if let Some((upstream, lean)) = &f.zones {
        out.push_str(
            "node1's zone, run twice, each in a fresh OVN 23.03 lab (`udn-ovn-lab`: NB and SB ovsdb-server, \
             ovn-northd, ovn-controller with `ovn-monitor-all=true`, userspace ovs-vswitchd) with node1's \
             node-agent annotations pointed at it, and the release `udn-controller` for zone `node1` against \
             the same API server: first upstream-shaped (every lean-topology setting off: the flags \
             `UPSTREAM_SHAPE_ARGS`), then with the controller's defaults. The other nodes are remote nodes of \
             the networks they carry. Times from the controller's start, as the controller bench measures them \
             (NB converged: the expected routers and pod ports present and NB unchanged for 3 s; `sb_cfg` and \
             `hv_cfg` reaching the last `nb_cfg` bump). Per network: the zone after `hv_cfg` minus the empty \
             zone, over the UDN networks with a router in NB (the default network's rows and flows are in it). \
             RSS: NB, SB, northd, ovn-controller and vswitchd together; the controller's own RSS (now / peak) \
             apart.\n\n\
             | run | extra flags | networks rendered | remote ports | NB s | sb_cfg s | **hv_cfg s** | SB lflows | OpenFlow flows | daemons MiB | **lflows / net** | **OF / net** | **RSS MiB / net** | udn-controller MiB |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        out.push_str(&zone_row(upstream));
        out.push_str(&zone_row(lean));
        let _ = writeln!(
            out,
            "\nRatios, default over upstream-shaped, per network: logical flows **{:.2}**, OpenFlow flows **{:.2}**, daemon RSS **{:.2}**.\n",
            f.lflows_ratio(),
            f.of_ratio(),
            f.rss_ratio()
        );
        out.push_str(&savings(f, upstream, lean));
        out.push('\n');
    }
    if let Some(pod) = &f.pod {
        let _ = writeln!(
            out,
            "New network, first pod on node1 (in the default zone): the release `udn-node` started in node1's netns as \
             the sandbox runs it (Dynamic UDN on; CNI config written {agent:.1} s after its start, done with node1's networks \
             at {settled:.1} s: its last log line before 5 s of quiet, after its gateway bridge sync), and the zone settled (NB quiet, `hv_cfg` \
             caught up: {settle:.1} s). A namespace with a primary Layer3 UDN was created; its NAD had its network \
             ID {nad:.2} s later. Then a pod bound to node1 was created and the bench acted as kubelet's runtime: \
             a netns, the real `ovn-k8s-cni-overlay` ADD (the agent waits for udn-controller's annotation, which \
             needs cluster-manager to give node1 the network's host subnet and the controller to render the \
             network; wires the veth and the OVS port; answers once ovn-controller set `ovn-installed`), then the \
             pod's status written Ready (no container to start, no probe).\n\n\
             | pod created to | seconds |\n|---|---|\n\
             | `k8s.ovn.org/pod-networks` seen by a watch | {ann:.2} |\n\
             | CNI ADD returned (its run: {cni:.2} s) | {add:.2} |\n\
             | **Ready written** | **{ready:.2}** |\n",
            agent = pod.agent_ready_s,
            settled = pod.agent_settled_s,
            settle = pod.settle_s,
            nad = pod.udn_to_nad_s,
            ann = pod.annotated_s,
            cni = pod.cni_s,
            add = pod.added_s,
            ready = pod.ready_s,
        );
    }
    let target = |value: f64, limit: f64| holds(value.is_finite() && value <= limit);
    let pod_ready = f.pod.map_or(f64::NAN, |p| p.ready_s);
    let _ = write!(
        out,
        "| target | measured | holds |\n|---|---|---|\n\
         | cm_converge_s <= 60 | {:.2} | {} |\n\
         | cm_rss_mb <= 1024 | {:.1} | {} |\n\
         | lflows_ratio <= 0.5 | {:.2} | {} |\n\
         | of_ratio <= 0.5 | {:.2} | {} |\n\
         | new_net_pod_ready_s <= 5 | {:.2} | {} |\n\n`{}`\n",
        cm.state.converge_s,
        target(cm.state.converge_s, 60.0),
        cm.rss_mb,
        target(cm.rss_mb, 1024.0),
        f.lflows_ratio(),
        target(f.lflows_ratio(), 0.5),
        f.of_ratio(),
        target(f.of_ratio(), 0.5),
        pod_ready,
        target(pod_ready, 5.0),
        f.line()
    );
    out
}
