//! Planning work spread over a few threads: units are independent, so the per-unit phases
//! run on contiguous ranges of units, one range per thread, results kept in unit order.
//! Small plans stay on the calling thread.

use std::ops::Range;
use std::thread;

/// Below this many rows a plan runs on one thread (threads cost more than they save).
const PARALLEL_FROM_ROWS: usize = 8_192;
/// At most this many threads.
const MAX_WORKERS: usize = 4;

/// How many threads to use for `rows` rows.
pub(crate) fn workers(rows: usize) -> usize {
    if rows < PARALLEL_FROM_ROWS {
        return 1;
    }
    thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS))
}

/// Drops `value`, which holds `rows` desired rows (or operations), on a thread of its own
/// when they are many (freeing their many small allocations costs about as much as
/// planning them), else here.
pub(crate) fn drop_aside<T: Send + 'static>(value: T, rows: usize) {
    if rows < PARALLEL_FROM_ROWS {
        drop(value);
        return;
    }
    // Should the thread not start, the closure and the value are dropped here.
    let _detached = thread::Builder::new()
        .name("udn-plan-drop".to_owned())
        .spawn(move || drop(value));
}

/// Splits items of the given weights into at most `parts` contiguous, non-empty ranges of
/// similar total weight.
pub(crate) fn split(weights: &[usize], parts: usize) -> Vec<Range<usize>> {
    let total: usize = weights.iter().sum();
    let parts = parts.max(1);
    let share = total.div_ceil(parts).max(1);
    let mut ranges = Vec::with_capacity(parts);
    let mut start = 0;
    let mut load = 0;
    for (i, weight) in weights.iter().enumerate() {
        load += weight;
        if load >= share && ranges.len() + 1 < parts {
            ranges.push(start..i + 1);
            start = i + 1;
            load = 0;
        }
    }
    if start < weights.len() || ranges.is_empty() {
        ranges.push(start..weights.len());
    }
    ranges
}

/// Splits `len` items into at most `parts` contiguous, non-empty ranges of similar length.
pub(crate) fn split_even(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.clamp(1, len.max(1));
    let size = len.div_ceil(parts).max(1);
    let mut ranges: Vec<Range<usize>> = (0..len)
        .step_by(size)
        .map(|start| start..(start + size).min(len))
        .collect();
    if ranges.is_empty() {
        ranges.push(0..0);
    }
    ranges
}

/// Like [`map_ranges`], handing each range's items to `work` mutably.
pub(crate) fn map_chunks_mut<T: Send, R: Send>(
    items: &mut [T],
    ranges: &[Range<usize>],
    work: impl Fn(&mut [T]) -> R + Sync,
) -> Vec<R> {
    let mut chunks = Vec::with_capacity(ranges.len());
    let mut rest = items;
    for range in ranges {
        let (chunk, tail) = rest.split_at_mut(range.len().min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    let mut chunks = chunks.into_iter();
    let Some(first) = chunks.next() else {
        return Vec::new();
    };
    if chunks.len() == 0 {
        return vec![work(first)];
    }
    thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || work(chunk)))
            .collect();
        let mut out = Vec::with_capacity(ranges.len());
        out.push(work(first));
        for handle in handles {
            match handle.join() {
                Ok(result) => out.push(result),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// Runs `work` on every range, the first on this thread and the others on scoped threads;
/// returns the results in range order. A panic in a worker is resumed here.
pub(crate) fn map_ranges<T: Send>(
    ranges: &[Range<usize>],
    work: impl Fn(Range<usize>) -> T + Sync,
) -> Vec<T> {
    let Some((first, rest)) = ranges.split_first() else {
        return Vec::new();
    };
    if rest.is_empty() {
        return vec![work(first.clone())];
    }
    thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = rest
            .iter()
            .map(|range| scope.spawn(move || work(range.clone())))
            .collect();
        let mut out = Vec::with_capacity(ranges.len());
        out.push(work(first.clone()));
        for handle in handles {
            match handle.join() {
                Ok(result) => out.push(result),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_everything_in_order_with_similar_weight() {
        assert_eq!(split(&[1, 1, 1, 1], 2), vec![0..2, 2..4]);
        assert_eq!(split(&[10, 1, 1, 1, 1], 2), vec![0..1, 1..5]);
        assert_eq!(split(&[1, 1, 1], 8), vec![0..1, 1..2, 2..3]);
        assert_eq!(split(&[], 3), vec![0..0]);
        assert_eq!(split(&[5, 5], 1), vec![0..2]);
    }

    #[test]
    fn results_come_back_in_range_order() {
        let ranges = split(&[1; 100], 4);
        let sums = map_ranges(&ranges, |r| r.sum::<usize>());
        assert_eq!(sums.iter().sum::<usize>(), (0..100).sum::<usize>());
        assert_eq!(sums.len(), 4);
        assert!(sums.is_sorted());
        assert_eq!(workers(10), 1);
        assert_eq!(split_even(10, 3), vec![0..4, 4..8, 8..10]);
        assert_eq!(split_even(2, 4), vec![0..1, 1..2]);
        assert_eq!(split_even(0, 4), vec![0..0]);
        let mut items: Vec<usize> = (0..10).collect();
        let lens = map_chunks_mut(&mut items, &split_even(10, 3), |chunk| {
            chunk.iter_mut().for_each(|x| *x *= 2);
            chunk.len()
        });
        assert_eq!(lens, vec![4, 4, 2]);
        assert_eq!(items, (0..10).map(|x| x * 2).collect::<Vec<_>>());
    }
}
