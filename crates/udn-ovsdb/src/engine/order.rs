//! Ordering: which units share a transaction, the order of transactions (a unit whose rows
//! refer to new rows of another comes after it), and the order of inserts inside one
//! transaction (a named row is inserted before any row naming it).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::diff::Dep;

/// Groups units into transactions-to-be (a group is never split) and orders the groups so
/// every group comes after the groups whose new rows it refers to. Units of a group keep
/// their order; groups are ordered by their first unit where the dependencies allow.
/// Returns the groups and, per group, the groups it depends on.
pub(crate) fn group_units(units: usize, deps: &[Dep]) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut sets = DisjointSets::new(units);
    for dep in deps.iter().filter(|d| d.bundle) {
        sets.union(dep.consumer as usize, dep.provider as usize);
    }
    loop {
        let (roots, edges) = group_edges(&mut sets, deps);
        match topological(roots.len(), &edges) {
            Ok(order) => return finish(&mut sets, &roots, &edges, &order),
            Err(cyclic) => {
                // Units referring to each other's new rows in a cycle share a transaction.
                let mut members = cyclic.into_iter().filter_map(|g| roots.get(g).copied());
                if let Some(first) = members.next() {
                    for other in members {
                        sets.union(first, other);
                    }
                }
            }
        }
    }
}

type Roots = Vec<usize>;
type Edges = Vec<Vec<usize>>;

/// Distinct group roots in first-unit order, and edges provider group -> consumer group.
fn group_edges(sets: &mut DisjointSets, deps: &[Dep]) -> (Roots, Edges) {
    let mut roots = Vec::new();
    let mut position = BTreeMap::new();
    for unit in 0..sets.len() {
        let root = sets.find(unit);
        position.entry(root).or_insert_with(|| {
            roots.push(root);
            roots.len() - 1
        });
    }
    let mut edges = vec![Vec::new(); roots.len()];
    for dep in deps {
        let from = position.get(&sets.find(dep.provider as usize)).copied();
        let to = position.get(&sets.find(dep.consumer as usize)).copied();
        if let (Some(from), Some(to)) = (from, to)
            && from != to
            && let Some(out) = edges.get_mut(from)
            && !out.contains(&to)
        {
            out.push(to);
        }
    }
    (roots, edges)
}

fn finish(
    sets: &mut DisjointSets,
    roots: &[usize],
    edges: &[Vec<usize>],
    order: &[usize],
) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut rank = vec![0u32; roots.len()];
    for (at, g) in (0u32..).zip(order) {
        if let Some(slot) = rank.get_mut(*g) {
            *slot = at;
        }
    }
    let mut by_root: BTreeMap<usize, usize> = BTreeMap::new();
    for (g, root) in roots.iter().enumerate() {
        by_root.insert(*root, g);
    }
    let mut groups = vec![Vec::new(); roots.len()];
    for unit in 0..sets.len() {
        let g = by_root.get(&sets.find(unit)).copied().unwrap_or(0);
        let at = rank.get(g).copied().unwrap_or(0) as usize;
        if let (Some(group), Ok(unit)) = (groups.get_mut(at), u32::try_from(unit)) {
            group.push(unit);
        }
    }
    let mut needs = vec![Vec::new(); roots.len()];
    for (from, outs) in edges.iter().enumerate() {
        for to in outs {
            let (Some(from), Some(to)) = (rank.get(from), rank.get(*to)) else {
                continue;
            };
            if let Some(list) = needs.get_mut(*to as usize) {
                list.push(*from);
            }
        }
    }
    for list in &mut needs {
        list.sort_unstable();
    }
    (groups, needs)
}

/// Kahn's algorithm, smallest ready node first. On a cycle, returns the nodes that could
/// not be ordered and that lead back into the cycle.
pub(crate) fn topological(nodes: usize, edges: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let mut indegree = vec![0usize; nodes];
    for outs in edges {
        for to in outs {
            if let Some(d) = indegree.get_mut(*to) {
                *d += 1;
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = indegree
        .iter()
        .enumerate()
        .filter(|(_, d)| **d == 0)
        .map(|(n, _)| Reverse(n))
        .collect();
    let mut order = Vec::with_capacity(nodes);
    while let Some(Reverse(node)) = ready.pop() {
        order.push(node);
        for to in edges.get(node).map_or(&[][..], Vec::as_slice) {
            if let Some(d) = indegree.get_mut(*to) {
                *d -= 1;
                if *d == 0 {
                    ready.push(Reverse(*to));
                }
            }
        }
    }
    if order.len() == nodes {
        return Ok(order);
    }
    // Of the rest, keep the nodes on or before a cycle: peel off those that only lead to
    // nodes already peeled (nothing of a cycle is downstream of them).
    let mut left: Vec<bool> = indegree.iter().map(|d| *d > 0).collect();
    loop {
        let mut changed = false;
        for node in 0..nodes {
            let is_left = left.get(node).copied().unwrap_or(false);
            let leads_on = edges.get(node).is_some_and(|outs| {
                outs.iter()
                    .any(|to| left.get(*to).copied().unwrap_or(false))
            });
            if is_left && !leads_on {
                if let Some(slot) = left.get_mut(node) {
                    *slot = false;
                }
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Err((0..nodes)
        .filter(|n| left.get(*n).copied().unwrap_or(false))
        .collect())
}

/// Union-find over unit indices (the smallest index is the root, for determinism).
#[derive(Debug)]
struct DisjointSets {
    parent: Vec<usize>,
}

impl DisjointSets {
    fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    fn len(&self) -> usize {
        self.parent.len()
    }

    fn find(&mut self, mut x: usize) -> usize {
        let mut root = x;
        while let Some(&p) = self.parent.get(root) {
            if p == root {
                break;
            }
            root = p;
        }
        while let Some(p) = self.parent.get_mut(x) {
            if *p == root {
                break;
            }
            let next = *p;
            *p = root;
            x = next;
        }
        root
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        let (low, high) = (a.min(b), a.max(b));
        if let Some(p) = self.parent.get_mut(high) {
            *p = low;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(consumer: u32, provider: u32, bundle: bool) -> Dep {
        Dep {
            consumer,
            provider,
            bundle,
        }
    }

    #[test]
    fn independent_units_keep_their_order_one_group_each() {
        let (groups, needs) = group_units(3, &[]);
        assert_eq!(groups, vec![vec![0], vec![1], vec![2]]);
        assert!(needs.iter().all(Vec::is_empty));
    }

    #[test]
    fn providers_come_first_and_bundles_share_a_group() {
        // Unit 0 refers to a new root row of unit 2; unit 1 holds a new non-root row of 3.
        let (groups, needs) = group_units(4, &[dep(0, 2, false), dep(1, 3, true)]);
        assert_eq!(groups, vec![vec![1, 3], vec![2], vec![0]]);
        assert_eq!(needs, vec![vec![], vec![], vec![1]]);
    }

    #[test]
    fn cycles_between_units_merge_them() {
        let (groups, _) = group_units(3, &[dep(0, 1, false), dep(1, 0, false), dep(2, 1, false)]);
        assert_eq!(groups, vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn topological_reports_only_the_cycle() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3.
        let edges = vec![vec![1], vec![2], vec![1, 3], vec![]];
        assert_eq!(topological(4, &edges), Err(vec![1, 2]));
        assert_eq!(topological(2, &[vec![], vec![0]]), Ok(vec![1, 0]));
    }
}
