//! Replaying a trace on several threads at once, each simulating its own slice of the
//! hierarchy's sets ([`SetShards`]), with exactly the totals of one thread's replay.
//!
//! A thread of its own reads the trace, [`CHUNK`] records at a time, while the copies simulate
//! the chunk before (two chunks wait at most). Each copy of the hierarchy simulates, on a
//! thread of its own, the chunk's accesses whose lines its slice owns, in the chunk's order;
//! the calling thread simulates the first slice itself. An access whose bytes lie in two slices
//! (`SetShards::of_access` is `None`) needs both copies at once, so the threads stop before it
//! and it is simulated across the copies on the calling thread (`cache::simulate_across`); a
//! chunk with more than [`MOST_STOPS`] of them (a code loop that straddles a border on every
//! iteration) is simulated on the calling thread alone, each access in its owner's copy. At the
//! end the copies' sets and totals are gathered into the caller's hierarchy, which then holds
//! what one replay would have left in it. With one slice this is one simulating thread beside
//! the reading one.
//!
//! Reading a binary trace costs about as much as simulating it under a two-level cache, so the
//! reading thread bounds what more simulating threads gain: they pay for deep caches and
//! general replacement policies on idle cores (`docs/performance.md`).

use std::sync::mpsc;

use crate::cache::{Hierarchy, Op, SetShards, simulate_across};
use crate::replay::{PROGRESS_EVERY, ReplaySummary, push_ops, setting_for, summarize_stats};
use crate::trace::TraceRecord;

/// Records read before the copies simulate them.
pub const CHUNK: usize = 1 << 16;

/// Accesses across slices a chunk may have and still be simulated by the threads.
pub const MOST_STOPS: usize = 8;

/// [`crate::replay::replay_with_progress`] with the hierarchy simulated in `shards` copies, on
/// as many threads; the totals are exactly those of one replay.
pub fn replay_in_shards<E: Send>(
    records: impl IntoIterator<Item = Result<TraceRecord, E>, IntoIter: Send>,
    hierarchy: &mut Hierarchy,
    compat: bool,
    shards: &SetShards,
    mut on_progress: impl FnMut(u64),
) -> Result<ReplaySummary, E> {
    let (clamp_to, counts) = setting_for(hierarchy, compat);
    let mut copies: Vec<Hierarchy> = (1..shards.count())
        .map(|_| {
            let mut copy = hierarchy.clone();
            copy.reset_stats();
            copy
        })
        .collect();
    let mut records = records.into_iter();
    let counts = std::thread::scope(|scope| {
        // Chunks read and not yet simulated: two, so the reader reads one while the copies
        // simulate the other; simulated ones come back to be filled again.
        let (full, read_chunks) = mpsc::sync_channel::<(Vec<Op>, usize)>(2);
        let (emptied, empty_chunks) = mpsc::channel::<Vec<Op>>();
        let reader = scope.spawn(move || {
            let mut counts = counts;
            loop {
                let mut ops = empty_chunks
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(2 * CHUNK));
                ops.clear();
                let mut read = 0;
                for record in records.by_ref().take(CHUNK) {
                    match record {
                        Ok(record) => push_ops(&mut ops, record, compat, clamp_to, &mut counts),
                        Err(e) => {
                            // What was read before the error is simulated, as one replay would.
                            let _ = full.send((ops, read));
                            return Err(e);
                        }
                    }
                    read += 1;
                }
                // The simulating side stops taking chunks only when it is gone.
                if full.send((ops, read)).is_err() || read < CHUNK {
                    return Ok(counts);
                }
            }
        });
        let mut done = 0u64;
        for (ops, read) in read_chunks {
            let mut all: Vec<&mut Hierarchy> = std::iter::once(&mut *hierarchy)
                .chain(copies.iter_mut())
                .collect();
            simulate_chunk(shards, &mut all, &ops);
            done += read as u64;
            if read > 0 && done.is_multiple_of(PROGRESS_EVERY) {
                on_progress(done);
            }
            let _ = emptied.send(ops);
        }
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    let gathered: Vec<Option<&Hierarchy>> = std::iter::once(None)
        .chain(copies.iter().map(Some))
        .collect();
    shards.gather(hierarchy, &gathered);
    Ok(summarize_stats(
        hierarchy,
        hierarchy.stats(),
        compat,
        counts,
    ))
}

/// Simulates `ops` in order, each in the copy (`copies[s]` is slice `s`'s) that owns it.
fn simulate_chunk(shards: &SetShards, copies: &mut [&mut Hierarchy], ops: &[Op]) {
    let stops: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| shards.of_access(op.addr, op.size).is_none())
        .map(|(index, _)| index)
        .collect();
    if stops.len() > MOST_STOPS || copies.len() == 1 {
        for op in ops {
            simulate_in_owner(shards, copies, *op);
        }
        return;
    }
    let mut start = 0;
    for stop in stops.into_iter().chain([ops.len()]) {
        simulate_side_by_side(shards, copies, &ops[start..stop]);
        if let Some(&op) = ops.get(stop) {
            simulate_in_owner(shards, copies, op);
        }
        start = stop + 1;
    }
}

/// Simulates `ops`, none of which lies in two slices, each copy on its own thread (the first
/// on this one) taking the ones its slice owns.
fn simulate_side_by_side(shards: &SetShards, copies: &mut [&mut Hierarchy], ops: &[Op]) {
    if ops.is_empty() {
        return;
    }
    let take_own = |shard: usize, copy: &mut Hierarchy| {
        for op in ops.iter().filter(|op| shards.of(op.addr) == shard) {
            op.simulate(copy);
        }
    };
    let Some((first, rest)) = copies.split_first_mut() else {
        return;
    };
    std::thread::scope(|scope| {
        for (index, copy) in rest.iter_mut().enumerate() {
            scope.spawn(move || take_own(index + 1, copy));
        }
        take_own(0, first);
    });
}

/// Simulates one access in the copy that owns it, or across the copies when it lies in more
/// than one slice.
fn simulate_in_owner(shards: &SetShards, copies: &mut [&mut Hierarchy], op: Op) {
    match shards.of_access(op.addr, op.size) {
        Some(shard) => op.simulate(copies[shard]),
        None => simulate_across(shards, copies, op),
    }
}

#[cfg(test)]
mod tests;
