//! What the access hooks read first, at the front of the thread's block (`thread_block.rs`):
//! the thread's state byte, the switch epoch and tag word it last synced to, and its repeat-hit
//! filter.
//!
//! Every hook first reads the state byte, or (the fixed-size hooks) the epoch and the word the
//! thread synced to: when the thread does not capture, that load and a branch are all a hook
//! costs. The byte is also the re-entrancy guard (`runtime_guard.rs`): while the runtime itself
//! runs on a thread it reads [`ThreadState::Busy`], so instrumented code the runtime happens to
//! call never recurses into the simulator; while the program's own call into the C library's
//! allocator runs it reads [`ThreadState::Allocating`], so a signal handler interrupting it
//! (holding the allocator's lock) does not reach into the runtime.
//!
//! A repeat hit must know in one compare each that the thread captures and has no switch to
//! pick up: so the block keeps the epoch and the word a second time, as `capturing_epoch` and
//! `synced_word`, equal to the synced ones while the state is [`ThreadState::On`] and 0
//! otherwise. The epoch is odd and no tag word is 0, so a thread that does not capture never
//! matches. The inline test reads `synced_word` (its offset is part of the inline capture ABI).
//!
//! Zero bytes are the empty block, as every thread's block starts: a thread that has not yet
//! synced, with its filter off.

use std::cell::Cell;
use std::sync::atomic::Ordering;

use super::filter::Filter;
use super::switches;
use super::tag_key::TAG_WORD;

/// Where a thread stands towards capture, in one byte the hooks read.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ThreadState {
    /// The thread has not yet looked at the process-wide switch (every thread starts here: it
    /// is the zero byte).
    NeedsSync = 0,
    /// Capture is off for this thread: hooks return after one load and a branch.
    Off = 1,
    /// Capture is on: accesses go to the thread's simulator.
    On = 2,
    /// The runtime itself is running on this thread: hooks must not re-enter it.
    Busy = 3,
    /// The program's own call into the C library's allocator is running (`alloc_abi.rs`): as
    /// [`ThreadState::Busy`] for the hooks and for a signal handler's `_exit` (the allocator
    /// may hold its lock, which the runtime's bookkeeping and report need), but a crash in it
    /// (glibc's abort on a corrupted heap) is the program's, and writes the report under the
    /// crash watchdog.
    Allocating = 4,
}

impl ThreadState {
    /// Whether the runtime, or the program's call into the allocator, runs on the thread:
    /// hooks must return.
    #[inline(always)]
    pub(super) fn in_runtime(self) -> bool {
        matches!(self, ThreadState::Busy | ThreadState::Allocating)
    }
}

/// What the access hooks read, in one block at the front of the thread's block, so a hook
/// reaches all of it from the thread pointer with no register saved.
pub(super) struct HookBlock {
    /// The thread's state byte; written only through `runtime_guard.rs`.
    state: Cell<ThreadState>,
    /// The switch epoch this thread last synced to.
    seen_epoch: Cell<u32>,
    /// `seen_epoch` while the state is [`ThreadState::On`], else 0, kept so by every write of
    /// either: one comparison with the epoch (odd, so never 0) then tells that the thread
    /// captures and has no switch to pick up, which is what a repeat hit needs.
    capturing_epoch: Cell<u32>,
    /// The tag word (`tag_key.rs`) this thread last synced to.
    seen_word: Cell<u64>,
    /// `seen_word` while the state is [`ThreadState::On`], else 0 (no tag word is 0: its key
    /// never is), kept so with `capturing_epoch`: what the inline miss path compares with the
    /// tag word.
    synced_word: Cell<u64>,
    /// The standalone mode's repeat-hit filter.
    filter: Filter,
}

impl HookBlock {
    /// Offsets the inline repeat-hit test reads (`epcache_inline::layout::ThreadWord`).
    pub(super) const SYNCED_WORD_OFFSET: usize = std::mem::offset_of!(HookBlock, synced_word);
    pub(super) const FILTER_OFFSET: usize = std::mem::offset_of!(HookBlock, filter);

    /// A thread that has not yet looked at the process-wide switch.
    pub(super) const fn new() -> HookBlock {
        HookBlock {
            state: Cell::new(ThreadState::NeedsSync),
            seen_epoch: Cell::new(0),
            capturing_epoch: Cell::new(0),
            seen_word: Cell::new(0),
            synced_word: Cell::new(0),
            filter: Filter::new(),
        }
    }

    /// Whether this is what [`Self::new`] makes.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.state.get() == ThreadState::NeedsSync
            && self.seen_epoch.get() == 0
            && self.capturing_epoch.get() == 0
            && self.seen_word.get() == 0
            && self.synced_word.get() == 0
            && self.filter.is_empty()
    }

    /// The thread's state.
    #[inline(always)]
    pub(super) fn state(&self) -> ThreadState {
        self.state.get()
    }

    /// Sets the thread's state (for `runtime_guard.rs` alone).
    #[inline(always)]
    pub(super) fn set_state(&self, state: ThreadState) {
        self.state.set(state);
        self.update_capturing_epoch();
    }

    /// Sets the thread's state and returns the one it replaces (for `runtime_guard.rs` alone).
    #[inline(always)]
    pub(super) fn replace_state(&self, state: ThreadState) -> ThreadState {
        let previous = self.state.replace(state);
        self.update_capturing_epoch();
        previous
    }

    /// The thread's repeat-hit filter.
    #[inline(always)]
    pub(super) fn filter(&self) -> &Filter {
        &self.filter
    }

    /// Keeps `capturing_epoch` and `synced_word` what they stand for after a write of the
    /// state, the epoch or the word.
    #[inline(always)]
    fn update_capturing_epoch(&self) {
        let on = self.state.get() == ThreadState::On;
        let (epoch, word) = if on {
            (self.seen_epoch.get(), self.seen_word.get())
        } else {
            (0, 0)
        };
        self.capturing_epoch.set(epoch);
        self.synced_word.set(word);
    }

    /// Whether the thread captures and has no switch to pick up: neither the epoch nor the
    /// tag word changed since it synced (the word only, where the inline miss path checks,
    /// while the filter's slot holds its key, which cannot come back meanwhile; the epoch
    /// never comes back).
    #[inline(always)]
    pub(super) fn synced_on(&self) -> bool {
        self.capturing_epoch.get() == switches::epoch(Ordering::Relaxed)
            && self.synced_word.get() == TAG_WORD.load(Ordering::Relaxed)
    }

    /// Whether the thread has a switch to pick up.
    #[inline(always)]
    pub(super) fn stale(&self) -> bool {
        self.seen_epoch.get() != switches::epoch(Ordering::Relaxed)
            || self.seen_word.get() != TAG_WORD.load(Ordering::Relaxed)
    }

    /// Takes the current epoch and tag word as synced. The filter's slot holds the word's key
    /// before the word is taken for synced: a rekey that read the slots before the store may
    /// have picked the key, and then the word or the epoch has changed by the check
    /// (`tag_key.rs`), and the thread takes them again.
    pub(super) fn sync_to_switches(&self) {
        loop {
            let epoch = switches::epoch(Ordering::SeqCst);
            let word = TAG_WORD.load(Ordering::SeqCst);
            self.filter.rekey(word);
            self.seen_epoch.set(epoch);
            self.seen_word.set(word);
            if switches::epoch(Ordering::SeqCst) == epoch && TAG_WORD.load(Ordering::SeqCst) == word
            {
                break;
            }
        }
        self.update_capturing_epoch();
    }

    /// Switches the thread's filter on, keyed with the tag word the thread synced to, and says
    /// whether it is on. If the word or the epoch changed since the sync, a rekey may have
    /// picked the key before the filter's slot held it: the thread is then sent to sync again
    /// before its next access (`tag_key.rs`).
    pub(super) fn switch_filter_on(&self, line_bits: u32, sets: u64, usable: usize) -> bool {
        let word = self.seen_word.get();
        if !self.filter.switch_on(line_bits, sets, usable, word) {
            return false;
        }
        if TAG_WORD.load(Ordering::SeqCst) != word
            || switches::epoch(Ordering::SeqCst) != self.seen_epoch.get()
        {
            self.seen_word.set(0);
            self.update_capturing_epoch();
        }
        true
    }
}
