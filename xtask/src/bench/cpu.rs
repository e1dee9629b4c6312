//! Where the machine's CPU went during a stretch of a bench: per process name, from
//! `/proc/<pid>/stat` (user + system time of all of a process's threads), the bench's own
//! waited children (`cutime` + `cstime` of this process: the plugin runs), and the machine's
//! busy time from `/proc/stat`. A bench that reports a latency on a shared machine shows
//! with it who held the cores meanwhile.

use std::collections::BTreeMap;

/// The processes reported by name; everything else counts as "other".
pub const WATCHED: [&str; 10] = [
    "ovs-vswitchd",
    "ovn-northd",
    "ovn-controller",
    "ovsdb-server",
    "udn-node",
    "udn-controller",
    "udn-cluster-man",
    "udn-kube-sim",
    "xtask",
    // The sandbox's kubelets and the built-in images' processes.
    "udnctl",
];

/// The name the bench's waited children are reported under.
pub const CHILDREN: &str = "bench children (plugin runs)";

/// CPU seconds used so far, by name, and the machine's busy seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuSnapshot {
    /// By process name (`comm`), summed over processes of that name.
    pub by_name: BTreeMap<String, f64>,
    /// Every CPU's non-idle time (`/proc/stat`), s.
    pub busy_s: f64,
}

/// The clock ticks per second of `/proc` times (`sysconf(_SC_CLK_TCK)`: 100 on Linux).
const TICKS: f64 = 100.0;

/// `(comm, utime + stime, cutime + cstime)` of a `/proc/<pid>/stat` line, in ticks.
pub fn parse_stat(line: &str) -> Option<(String, u64, u64)> {
    // The name is in parentheses and may itself hold spaces or parentheses.
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // After the name: state is field 3 of the man page, utime 14, stime 15, cutime 16,
    // cstime 17, so they are at 11..=14 here.
    let tick = |index: usize| fields.get(index)?.parse::<u64>().ok();
    Some((comm, tick(11)? + tick(12)?, tick(13)? + tick(14)?))
}

/// The busy ticks of the `cpu` line of `/proc/stat` (all but idle and iowait).
pub fn parse_busy(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = values.iter().take(8).sum();
    let idle = values.get(3)? + values.get(4)?;
    Some(total.saturating_sub(idle))
}

impl CpuSnapshot {
    /// Now.
    pub fn take() -> Self {
        let mut snapshot = Self::default();
        let own = std::process::id();
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let Ok(line) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    continue;
                };
                let Some((comm, ticks, children)) = parse_stat(&line) else {
                    continue;
                };
                if pid == own {
                    *snapshot.by_name.entry(CHILDREN.to_owned()).or_default() +=
                        children as f64 / TICKS;
                }
                if WATCHED.contains(&comm.as_str()) {
                    *snapshot.by_name.entry(comm).or_default() += ticks as f64 / TICKS;
                }
            }
        }
        snapshot.busy_s = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|stat| parse_busy(&stat))
            .map_or(0.0, |ticks| ticks as f64 / TICKS);
        snapshot
    }

    /// What was used from `earlier` to `self`, by name, largest first, with "other" (the
    /// machine's busy time nobody named accounts for) last.
    pub fn since(&self, earlier: &Self) -> Vec<(String, f64)> {
        let mut used: Vec<(String, f64)> = self
            .by_name
            .iter()
            .map(|(name, now)| {
                let before = earlier.by_name.get(name).copied().unwrap_or(0.0);
                (name.clone(), (now - before).max(0.0))
            })
            .filter(|(_, seconds)| *seconds > 0.0)
            .collect();
        used.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let named: f64 = used.iter().map(|(_, s)| s).sum();
        let busy = (self.busy_s - earlier.busy_s).max(0.0);
        used.push(("other".to_owned(), (busy - named).max(0.0)));
        used
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn stat_lines_parse_with_odd_names() {
        let line =
            "4242 (ovs-vswitchd) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 50 7 3 10 -10 5 0 100 0 0";
        assert_eq!(parse_stat(line), Some(("ovs-vswitchd".to_owned(), 300, 10)));
        let odd = "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 1 0 0";
        assert_eq!(parse_stat(odd), Some(("a (b) c".to_owned(), 3, 7)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn busy_leaves_out_idle_and_iowait() {
        let stat = "cpu  100 5 20 1000 50 1 2 3 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_busy(stat), Some(100 + 5 + 20 + 1 + 2 + 3));
    }

    #[test]
    fn usage_is_the_difference_with_the_rest_as_other() {
        let before = CpuSnapshot {
            by_name: BTreeMap::from([("a".to_owned(), 1.0), ("b".to_owned(), 2.0)]),
            busy_s: 10.0,
        };
        let after = CpuSnapshot {
            by_name: BTreeMap::from([("a".to_owned(), 1.5), ("b".to_owned(), 4.0)]),
            busy_s: 13.0,
        };
        assert_eq!(
            after.since(&before),
            [
                ("b".to_owned(), 2.0),
                ("a".to_owned(), 0.5),
                ("other".to_owned(), 0.5)
            ]
        );
    }
}
