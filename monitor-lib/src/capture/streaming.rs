//! Stores that bypass the writing core's caches, for what a thread hands to the simulation
//! worker on another core (`thread_capture.rs`, `worker.rs`).
//!
//! A thread fills a buffer, the worker reads it, and the buffer comes back to be filled again.
//! With ordinary stores, every line the thread writes again must first be taken back from the
//! worker's caches. Where the two cores share no cache, each such line costs a round trip
//! between them; the thread's store buffer fills with stores waiting on those lines, and the
//! thread stalls at whatever store comes next (its own stack, its thread-local block). On the
//! 2-core VMs here that happens for minutes at a time, as the host places the two vCPUs, and a
//! pipelined run then took longer than the same run on one core (docs/performance.md,
//! "Timed" and "Recording a partial trace"). A non-temporal store (`movnti`) writes around the
//! caches through a write-combining buffer without reading the line first, so the thread
//! never waits for the worker's copy; the worker reads the buffer from memory, in order, which
//! the hardware prefetcher streams.
//!
//! Non-temporal stores are weakly ordered: [`publish`] orders them before the hand-off that
//! follows. Only x86_64 has them here; elsewhere the stores are ordinary ones.

use std::sync::atomic::{Ordering, fence};

/// Writes `words` into `slot` with non-temporal stores.
#[inline(always)]
pub(super) fn store<const N: usize>(slot: &mut [u64; N], words: [u64; N]) {
    #[cfg(target_arch = "x86_64")]
    {
        let base = slot.as_mut_ptr().cast::<i64>();
        for (i, word) in words.into_iter().enumerate() {
            // SAFETY: `slot` is an exclusively borrowed, 8-byte aligned `[u64; N]` and `i < N`,
            // so `base + i` is a valid, aligned `i64` no other reference reads or writes.
            unsafe { core::arch::x86_64::_mm_stream_si64(base.add(i), word as i64) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *slot = words;
    }
}

/// Makes every non-temporal store this thread made visible before anything it stores after
/// (the hand-off of the buffer they filled): a full fence, which orders them on x86_64
/// (`mfence`), where a release store alone does not.
#[inline]
pub(super) fn publish() {
    fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_words_read_back_after_the_fence() {
        let mut buffer = vec![[0u64; 3]; 1000];
        for (i, slot) in buffer.iter_mut().enumerate() {
            let i = i as u64;
            store(slot, [i, !i, i << 32]);
        }
        publish();
        let written = std::thread::spawn(move || buffer).join().unwrap();
        for (i, slot) in written.iter().enumerate() {
            let i = i as u64;
            assert_eq!(*slot, [i, !i, i << 32]);
        }
    }
}
