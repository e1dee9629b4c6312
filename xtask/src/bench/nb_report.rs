//! The `docs/benchmarks.md` section of `cargo xtask bench nb`: every variant's figures and
//! whether the targets hold.

use std::fmt::Write as _;

use super::nb::Figures;
use super::nb_raw::Batching;
use super::nb_topology::{ROWS_PER_NETWORK, ROWS_PER_NODE};

/// Sizes the ratio target is set for (networks, nodes).
const RATIO_SIZES: [(usize, usize); 2] = [(200, 20), (1000, 20)];
/// Most `engine_s / raw_s`.
pub const MAX_RATIO: f64 = 1.5;
/// Most `reapply_s / engine_s`.
pub const MAX_REAPPLY_SHARE: f64 = 0.05;
/// Most replica heap / server RSS.
pub const MAX_MEMORY_FACTOR: f64 = 2.0;

/// One target: what, the measured value, whether it holds (`None`: not set for this size).
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The target.
    pub what: String,
    /// The measured value.
    pub measured: String,
    /// Whether it holds; `None` when the target does not apply at this size.
    pub holds: Option<bool>,
}

/// The targets evaluated on `figures`.
pub fn targets(figures: &Figures) -> Vec<Target> {
    let ratio_applies = RATIO_SIZES.contains(&(figures.networks, figures.nodes));
    let share = figures.reapply.seconds / figures.engine.seconds;
    let factor = figures.replica_mb / figures.server_rss_mb;
    vec![
        Target {
            what: format!("engine_s / raw_s <= {MAX_RATIO} (at 200x20 and 1000x20)"),
            measured: format!("{:.2}", figures.ratio()),
            holds: ratio_applies.then(|| figures.ratio() <= MAX_RATIO),
        },
        Target {
            what: "reapply_ops = 0".to_owned(),
            measured: figures.reapply.ops.to_string(),
            holds: Some(figures.reapply.ops == 0),
        },
        Target {
            what: "reapply_s <= 5% of engine_s".to_owned(),
            measured: format!("{:.3} s = {:.1}%", figures.reapply.seconds, 100.0 * share),
            holds: Some(share <= MAX_REAPPLY_SHARE),
        },
        Target {
            what: "replica heap <= 2 x server RSS".to_owned(),
            measured: format!(
                "{:.1} MiB vs {:.1} MiB = {factor:.2} x",
                figures.replica_mb, figures.server_rss_mb
            ),
            holds: Some(factor <= MAX_MEMORY_FACTOR),
        },
    ]
}

fn verdict(holds: Option<bool>) -> &'static str {
    match holds {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "n/a at this size",
    }
}

/// The section body, measured on `date`.
pub fn body(figures: &Figures, date: &str) -> String {
    let (n, m) = (figures.networks, figures.nodes);
    let mut text = format!(
        "`cargo xtask bench nb --networks {n} --nodes {m}`, measured {date} (1-minute load \
         average {:.2} before, {:.2} after; 2 cores shared with other work). {n} Layer3 \
         primary UDNs on {m} nodes as upstream writes them (shared gateway, multicast on): \
         {ROWS_PER_NETWORK} rows per network (cluster router, join switch and its `rtoj-`/`jtor-` \
         pair, two cluster port groups with 4 multicast ACLs) plus {ROWS_PER_NODE} per node \
         (node switch with `stor-`/`k8s-` ports and the allow-from-node ACL, `rtos-` port, \
         masquerade SNAT, 2 cluster-router routes, gateway router with `rtoj-`/`jtor-`, external \
         switch with localnet/`etor-`/`rtoe-` ports, 2 gateway-router routes) = **{} rows**, \
         every row stamped with the engine's ownership `external_ids`. Each variant writes to a \
         fresh private `ovsdb-server` (OVN NB schema 7.0.0). Run-to-run spread on these shared \
         machines is large (up to ~40% for the same variant, server CPU time included): compare \
         variants within one run.\n\n",
        figures.load.0, figures.load.1, figures.rows
    );
    text.push_str(
        "Raw: the same rows as JSON-RPC `transact` requests (inserts with named UUIDs) encoded \
         beforehand and written back to back on the unix socket, replies read concurrently: \
         the server's own limit. Engine: `Engine::reconcile` through `udn_ovsdb::Client` (plan \
         against the client's replica, apply, then verify the units applied by comparing them \
         with the replica again), timed from the desired units until every transaction is \
         committed, in the replica and verified. The re-apply is a second reconcile by the \
         same engine, which skips the units it verified unless their desired rows or anything \
         they own changed. *full compare*: the same units compared row by row with the \
         database by an engine that remembers nothing, measured after the pass (what the \
         verification cost; what the re-apply would cost without skipping).\n\n",
    );
    text.push_str(
        "`raw_s` is the fastest of one transaction and 10, 50, 200 networks per transaction. \
         The rows marked *diagnostic* are not part of it: one network per transaction, and the \
         same raw requests on a connection that first monitors every column of the written \
         tables (`+ monitor`), as a client keeping a replica does, so the server also builds \
         and sends the updates.\n\n",
    );
    text.push_str(
        "| variant | transactions | seconds | rows/s | server CPU s | client CPU s | server RSS MiB |\n",
    );
    text.push_str("|---|---|---|---|---|---|---|\n");
    let raw_s = figures.raw_s();
    for raw in &figures.raw {
        let counted = !raw.monitored && Batching::ALL.contains(&raw.batching);
        let best = match (counted, raw.seconds == raw_s) {
            (true, true) => " (raw_s)",
            (true, false) => "",
            (false, _) => " *(diagnostic)*",
        };
        let monitor = if raw.monitored { " + monitor" } else { "" };
        let _ = writeln!(
            text,
            "| raw, {}{monitor}{best} | {} | {:.3} | {:.0} | {:.2} | | {:.1} |",
            raw.batching.label(),
            raw.transactions,
            raw.seconds,
            figures.rows as f64 / raw.seconds,
            raw.server_cpu_s,
            raw.server_rss_mb
        );
    }
    let _ = writeln!(
        text,
        "| engine (`ApplyPolicy` max_ops {}, in_flight {}; full compare {:.3} s) | {} | {:.3} | {:.0} | {:.2} | {:.2} | {:.1} |",
        figures.policy.max_ops,
        figures.policy.in_flight,
        figures.engine.compare_s,
        figures.engine.transactions,
        figures.engine.seconds,
        figures.rows as f64 / figures.engine.seconds,
        figures.engine.server_cpu_s,
        figures.engine.client_cpu_s,
        figures.server_rss_mb
    );
    let _ = writeln!(
        text,
        "| engine re-apply, unchanged ({} ops; full compare {:.3} s) | {} | {:.3} | | {:.2} | {:.2} | |",
        figures.reapply.ops,
        figures.reapply.compare_s,
        figures.reapply.transactions,
        figures.reapply.seconds,
        figures.reapply.server_cpu_s,
        figures.reapply.client_cpu_s
    );
    let _ = write!(
        text,
        "\nMemory: `rss_mb` is the heap a fresh `Client` holds after its initial sync of the \
         populated database, i.e. its replica of the {} rows, monitoring what the engine needs \
         (the columns the desired rows set, `external_ids`, the reference columns between \
         these tables): live bytes counted by the xtask binary's global allocator before \
         `Client::connect` and after it plus an `echo` round trip (by then the monitor reply's \
         bytes and JSON are dropped); requested bytes, malloc overhead not included: **{:.1} \
         MiB** ({:.0} bytes per row; {:.1} MiB when every column of these tables is \
         monitored). The server holding the same database and serving that client's monitor \
         has RSS {:.1} MiB. Peak RSS of the bench process over the whole run (desired units, \
         encoded requests, replicas): {:.1} MiB.\n\n",
        figures.replica_rows,
        figures.replica_mb,
        figures.replica_mb * 1024.0 * 1024.0 / figures.replica_rows.max(1) as f64,
        figures.replica_all_columns_mb,
        figures.server_rss_mb,
        figures.process_peak_rss_mb
    );
    text.push_str("| target | measured | holds |\n|---|---|---|\n");
    for target in targets(figures) {
        let _ = writeln!(
            text,
            "| {} | {} | {} |",
            target.what,
            target.measured,
            verdict(target.holds)
        );
    }
    if let Some(fastest) = figures
        .raw
        .iter()
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
    {
        let _ = write!(
            text,
            "\nFor reference, `engine_s` over the fastest raw variant of any batching, \
             diagnostics included (raw, {}{}, {:.3} s): {:.2}.\n",
            fastest.batching.label(),
            if fastest.monitored { " + monitor" } else { "" },
            fastest.seconds,
            figures.engine.seconds / fastest.seconds
        );
    }
    let _ = write!(
        text,
        "\n`{}`\n\n`{}`\n",
        figures.memory_line(),
        figures.line()
    );
    text
}

#[cfg(test)]
mod tests {
    use udn_ovsdb::engine::ApplyPolicy;

    use super::*;
    use crate::bench::nb::{EngineRun, RawFigures};

    fn figures(networks: usize, engine_s: f64, reapply_s: f64, replica_mb: f64) -> Figures {
        let raw = |batching, monitored, seconds| RawFigures {
            batching,
            monitored,
            transactions: 1,
            seconds,
            server_cpu_s: seconds,
            server_rss_mb: 100.0,
        };
        let pass = |seconds, ops| EngineRun {
            compare_s: 0.1,
            seconds,
            ops,
            transactions: 1,
            server_cpu_s: 1.0,
            client_cpu_s: 1.0,
        };
        Figures {
            networks,
            nodes: 20,
            rows: 1000,
            policy: ApplyPolicy::default(),
            // The diagnostic variants are faster here but never count as raw_s.
            raw: vec![
                raw(Batching::Single, false, 3.0),
                raw(Batching::Networks(10), false, 2.0),
                raw(Batching::Networks(1), false, 1.5),
                raw(Batching::Single, true, 1.0),
            ],
            engine: pass(engine_s, 1000),
            reapply: pass(reapply_s, 0),
            server_rss_mb: 100.0,
            replica_mb,
            replica_rows: 1000,
            replica_all_columns_mb: replica_mb,
            process_peak_rss_mb: 50.0,
            load: (0.5, 0.5),
        }
    }

    #[test]
    fn targets_hold_or_not_and_the_ratio_only_where_set() {
        let good = figures(200, 3.0, 0.1, 150.0);
        assert_eq!(good.raw_s(), 2.0);
        let holds: Vec<Option<bool>> = targets(&good).iter().map(|t| t.holds).collect();
        assert_eq!(holds, [Some(true), Some(true), Some(true), Some(true)]);
        let bad = figures(1000, 3.2, 0.2, 250.0);
        let holds: Vec<Option<bool>> = targets(&bad).iter().map(|t| t.holds).collect();
        assert_eq!(holds, [Some(false), Some(true), Some(false), Some(false)]);
        let small = figures(10, 9.0, 0.1, 10.0);
        assert_eq!(targets(&small)[0].holds, None);
        let text = body(&bad, "2026-01-01");
        assert!(
            text.contains("| raw, 10 networks/txn (raw_s) | 1 | 2.000 |"),
            "{text}"
        );
        assert!(
            text.contains("| engine_s / raw_s <= 1.5 (at 200x20 and 1000x20) | 1.60 | **no** |")
        );
        assert!(text.ends_with(&format!("`{}`\n", bad.line())));
        assert!(text.contains(
            "any batching, diagnostics included (raw, one transaction + monitor, 1.000 s): 3.20."
        ));
        assert!(bad.line().starts_with(
            "nb-bench networks=1000 nodes=20 rows=1000 engine_s=3.200 raw_s=2.000 ratio=1.60 reapply_ops=0 reapply_s=0.200 rss_mb=250.0"
        ));
    }
}
