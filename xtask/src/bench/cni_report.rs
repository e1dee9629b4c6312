//! The `docs/benchmarks.md` section of `cargo xtask bench cni`: how the figures were taken,
//! what "ours" holds, the figures per mode and the targets.

use std::fmt::Write as _;

use super::cni_figures::{Figures, Spread, percentile, targets};

fn spread(s: Spread) -> String {
    format!("{:.1} / {:.1} / {:.1}", s.p50, s.p99, s.max)
}

/// The section's body (`date`: when it ran).
pub fn body(figures: &Figures, date: &str) -> String {
    let mut text = String::new();
    let concurrency = figures
        .modes
        .iter()
        .map(|m| m.concurrency)
        .max()
        .unwrap_or(1);
    let _ = writeln!(
        text,
        "`cargo xtask bench cni --pods {}`, measured {date} on {} (1-minute load average {:.2} \
         before, {:.2} after; 2 cores shared with other work; one run). The whole stack as \
         users run it, release builds, each its own process: `udn-kube-sim serve`, \
         `udn-cluster-manager`, and on node1 of a one-node OVN lab (`udn-ovn-lab`: {}, \
         userspace ovs-vswitchd) `udn-controller` for its zone and `udn-node` in the node's \
         netns (log filter `info`). The stack was ready in {:.1} s.\n",
        figures.pods, figures.source, figures.load.0, figures.load.1, figures.ovn, figures.start_s
    );
    let _ = writeln!(
        text,
        "{} default-network pods were created on node1 first; the bench waited until each had \
         its `k8s.ovn.org/pod-networks` annotation and its SB `Port_Binding`, and for \
         `ovn-nbctl --wait=hv sync` ({:.1} s in all), and made each pod's netns. Then ADD, \
         executing the real `ovn-k8s-cni-overlay` as a runtime does (its environment, the \
         node's CNI config on stdin): {} pods one at a time, then {} other pods {concurrency} \
         at a time. **total** is the plugin process's run, exec to exit.\n",
        figures.pods * figures.modes.len(),
        figures.annotate_s,
        figures.pods,
        figures.pods
    );
    let _ = writeln!(
        text,
        "**OVN bind** is the wait for ovn-controller: from the pod's OVS `Interface` row \
         appearing (the agent's port transaction committed) to ovn-controller's \
         `external_ids:ovn-installed=\"true\"` on it, both as the bench's own monitor of the \
         node's OVS database saw them (one connection, on its own thread: the delivery delay \
         falls on both ends), clipped to the plugin's run. **ours** = total - OVN bind: the \
         plugin's exec and checks, its request over the unix socket, the agent's lookup of the \
         pod and its annotation (present: no wait), the veth in the pod netns with MAC, MTU, \
         addresses and routes, TX checksum offload off (an ethtool-netlink request; userspace datapath), the OVS transaction \
         until the server confirms it, the agent noticing `ovn-installed` (after the bench's \
         monitor: the difference is ours), the result, the answer, the plugin's metrics post \
         and its exit.\n"
    );
    text.push_str(
        "| mode | ADDs | wall s | ADDs/s | total ms p50 / p99 / max | ours ms p50 / p99 / max | OVN bind ms p50 / p99 / max |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for mode in &figures.modes {
        let _ = writeln!(
            text,
            "| {} | {} | {:.2} | {:.1} | {} | {} | {} |",
            mode.label(),
            mode.samples.len(),
            mode.wall_s,
            mode.per_s(),
            spread(mode.total()),
            spread(mode.ours()),
            spread(mode.bind())
        );
    }
    text.push_str(
        "\nOurs, split: up to the port (exec to the `Interface` row seen) and after the flag \
         (`ovn-installed` seen to the plugin's exit):\n\n\
         | mode | to the port ms p50 / p99 / max | after `ovn-installed` ms p50 / p99 / max |\n\
         |---|---|---|\n",
    );
    for mode in &figures.modes {
        let _ = writeln!(
            text,
            "| {} | {} | {} |",
            mode.label(),
            spread(mode.to_port()),
            spread(mode.after_installed())
        );
    }
    text.push_str(&cpu_table(figures));
    let _ = writeln!(
        text,
        "\nThe plugin's exec alone (`VERSION`, which it answers by itself, {} runs): {:.1} ms \
         p50, {:.1} ms p99.",
        figures.version_ms.len(),
        percentile(&figures.version_ms, 50.0),
        percentile(&figures.version_ms, 99.0)
    );
    let _ = writeln!(
        text,
        "\nCheck of the bench's clock: ovn-controller stamps `ovn-installed-ts` (its wall clock, \
         ms) with the flag; the bench saw the flag {:.1} ms after the stamp at the median, {:.1} \
         ms at most ({} ADDs){}.\n",
        percentile(&figures.lag_ms, 50.0),
        percentile(&figures.lag_ms, 100.0),
        figures.lag_ms.len(),
        if figures.coalesced > 0 {
            format!(
                "; {} interface rows arrived already installed (no bind time to read: counted \
                 all ours)",
                figures.coalesced
            )
        } else {
            String::new()
        }
    );
    text.push_str(
        "The last line's `p50_ms`, `p99_ms` and `ours_p99_ms` are the worse mode's.\n\n\
         | target | measured | holds |\n|---|---|---|\n",
    );
    for target in targets(figures) {
        let _ = writeln!(
            text,
            "| {} | {} | {} |",
            target.what,
            target.measured,
            if target.holds { "yes" } else { "**no**" }
        );
    }
    let _ = write!(text, "\n`{}`\n", figures.line());
    text
}

/// Who used the CPU during each mode: seconds, and ms per ADD.
fn cpu_table(figures: &Figures) -> String {
    let mut text = String::from(
        "\nCPU used while each mode ran (all threads of each process, from `/proc`; the \
         plugin runs are the bench's waited children; \"other\" is the machine's remaining \
         busy time): the cores are mostly OVN's, so what is ours in the latency above is \
         largely waiting for a core.\n\n| mode | process | CPU s | ms per ADD |\n|---|---|---|---|\n",
    );
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    for mode in &figures.modes {
        let adds = mode.samples.len().max(1) as f64;
        let busy: f64 = mode.cpu.iter().map(|(_, s)| s).sum();
        for (name, seconds) in &mode.cpu {
            let _ = writeln!(
                text,
                "| {} | {name} | {seconds:.2} | {:.1} |",
                mode.label(),
                seconds * 1000.0 / adds
            );
        }
        let _ = writeln!(
            text,
            "| {} | **all** ({:.0}% of {:.2} s x {cores} cores) | {busy:.2} | {:.1} |",
            mode.label(),
            100.0 * busy / (cores as f64 * mode.wall_s.max(f64::EPSILON)),
            mode.wall_s,
            busy * 1000.0 / adds
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::cni_figures::{ModeRun, Sample};

    fn mode(concurrency: usize, total: f64, bind: f64) -> ModeRun {
        ModeRun {
            concurrency,
            samples: (0..4)
                .map(|k| Sample {
                    total_ms: total + f64::from(k),
                    to_port_ms: 6.0,
                    bind_ms: bind,
                })
                .collect(),
            wall_s: 0.5,
            cpu: vec![
                ("ovs-vswitchd".to_owned(), 0.3),
                ("udn-node".to_owned(), 0.02),
                ("other".to_owned(), 0.01),
            ],
        }
    }

    #[test]
    fn the_section_has_both_modes_the_targets_and_ends_with_the_line() {
        let figures = Figures {
            pods: 4,
            modes: vec![mode(1, 40.0, 30.0), mode(8, 200.0, 50.0)],
            lag_ms: vec![0.2, 0.4, 1.5],
            version_ms: vec![0.9, 1.1, 1.0],
            coalesced: 1,
            start_s: 3.2,
            annotate_s: 1.1,
            source: "abc1234".to_owned(),
            ovn: "ovn-controller 23.03.1".to_owned(),
            load: (1.0, 1.5),
        };
        let text = body(&figures, "2026-12-02");
        assert!(
            text.starts_with("`cargo xtask bench cni --pods 4`, measured 2026-12-02 on abc1234"),
            "{text}"
        );
        assert!(
            text.contains("| sequential | 4 | 0.50 | 8.0 | 41.0 / 43.0 / 43.0 | 11.0 / 13.0 / 13.0 | 30.0 / 30.0 / 30.0 |"),
            "{text}"
        );
        assert!(text.contains("| 8 at a time | 4 |"), "{text}");
        assert!(
            text.contains("| sequential | 6.0 / 6.0 / 6.0 | 5.0 / 7.0 / 7.0 |"),
            "{text}"
        );
        assert!(
            text.contains(
                "(`VERSION`, which it answers by itself, 3 runs): 1.0 ms p50, 1.1 ms p99."
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "0.4 ms after the stamp at the median, 1.5 ms at most (3 ADDs); 1 interface rows"
            ),
            "{text}"
        );
        assert!(
            text.contains("| ours p99 <= 20 ms (8 at a time) | 153.0 ms | **no** |"),
            "{text}"
        );
        assert!(
            text.contains("| ours p99 <= 20 ms (sequential) | 13.0 ms | yes |"),
            "{text}"
        );
        assert!(
            text.trim_end()
                .ends_with("`cni-bench pods=4 p50_ms=201.0 p99_ms=203.0 ours_p99_ms=153.0`"),
            "{text}"
        );
    }
}
