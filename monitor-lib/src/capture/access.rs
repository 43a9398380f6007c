//! The access path: what every captured load and store runs, from the hooks (`tsan_abi.rs`,
//! `sancov_abi.rs`) and the explicit [`read()`] and [`write()`].
//!
//! While nothing may capture, a hook is one load of a global and a return. While anything may,
//! a fixed-size hook reads the thread's hook block (`hook_block.rs`) from the thread pointer
//! and, for a repeat hit of a thread that captures and has no switch to pick up, increments a
//! count and returns: no call, no register saved. Everything else is a tail call to an
//! out-of-line path, `extern "C"` only so that it cannot unwind, so the hooks need no landing
//! pad and no frame of their own. A thread whose state is stale (it switched on, another thread
//! switched off) stops capturing at its next access rather than at its next sync point; that
//! only honours the switch sooner.
//!
//! The code address of an access (for per-line attribution, `line_table.rs`) costs the hit path
//! nothing: the hooks reach `active` by a tail jump and `active` its slow paths by another, so
//! when a slow path begins the stack's top still holds the hook's return address, in the
//! instrumented code right after the call. On x86-64 a naked trampoline in front of each slow
//! path (`tsan_abi::simulate_on`, `tsan_abi::may_capture`) reads it from there into one more
//! argument. The
//! `_pc` hooks pass the address the compiler gave instead, and the explicit [`read()`] and
//! [`write()`] pass 0 (unknown). A return address that lies in the runtime itself (a slow path
//! reached by an ordinary call after all) is told apart when the report names lines.

use epcache_sim::cache::AccessKind;

use super::hook_block::ThreadState;
use super::runtime_guard::state;
use super::switches::anything_may_capture;
use super::sync::{sync, sync_point};
use super::this_thread;
use super::thread_block::{with_filter, with_hooks};
use super::tsan_abi::{may_capture, simulate_on};

/// A captured load of `size` bytes at `addr` by this thread.
#[inline(always)]
pub fn read(addr: u64, size: u32) {
    access(addr, size, AccessKind::Read);
}

/// A captured store of `size` bytes at `addr` by this thread.
#[inline(always)]
pub fn write(addr: u64, size: u32) {
    access(addr, size, AccessKind::Write);
}

/// A thread whose own state is stale (it switched on, another thread switched off) stops
/// capturing here at once rather than at its next sync point; that only honours the switch
/// sooner.
///
/// Inlined into every hook, with its size and kind constant: while anything may capture, a
/// repeat hit (see `filter.rs`) of a thread that captures and has no switch to pick up is
/// counted here, in a few thread-local loads and one increment; everything else is a tail call.
#[inline(always)]
fn access(addr: u64, size: u32, kind: AccessKind) {
    if anything_may_capture() {
        may_capture_at(addr, size, kind == AccessKind::Write, 0);
    }
}

/// A captured load of `SIZE` bytes at `addr` (the fixed-size hooks; the hook must reach
/// here by a tail jump, see the module documentation).
#[inline(always)]
pub(super) fn read_sized<const SIZE: u32>(addr: u64) {
    if anything_may_capture() {
        active::<SIZE, false>(addr);
    }
}

/// A captured store of `SIZE` bytes at `addr` (the fixed-size hooks).
#[inline(always)]
pub(super) fn write_sized<const SIZE: u32>(addr: u64) {
    if anything_may_capture() {
        active::<SIZE, true>(addr);
    }
}

/// [`read_sized`] of an access at code address `pc` (the `_pc` hooks).
#[inline(always)]
pub(super) fn read_sized_at<const SIZE: u32>(addr: u64, pc: u64) {
    if anything_may_capture() {
        active_at::<SIZE, false>(addr, pc);
    }
}

/// [`write_sized`] of an access at code address `pc` (the `_pc` hooks).
#[inline(always)]
pub(super) fn write_sized_at<const SIZE: u32>(addr: u64, pc: u64) {
    if anything_may_capture() {
        active_at::<SIZE, true>(addr, pc);
    }
}

/// Whether this thread is synced and captures, and if so whether the access is a repeat hit
/// it counted (see [`active`]).
#[inline(always)]
fn hook_hit<const SIZE: u32, const WRITE: bool>(addr: u64) -> (bool, bool) {
    with_hooks(|h| {
        let synced_on = h.synced_on();
        (
            synced_on,
            synced_on && h.filter().repeat_hit(addr, SIZE, WRITE),
        )
    })
}

/// A fixed-size access while anything may capture: a repeat hit (see `filter.rs`) of a thread
/// that captures and has no switch to pick up is counted here, in one thread-local block and
/// one increment; everything else goes on to [`may_capture`] by a tail call. The block is
/// reached from the thread pointer (`thread_block.rs`), so no register is saved around it.
#[inline(never)]
extern "C" fn active<const SIZE: u32, const WRITE: bool>(addr: u64) {
    let (synced_on, hit) = hook_hit::<SIZE, WRITE>(addr);
    if hit {
        return;
    }
    // Tail jumps, so the slow paths' trampolines find the hook's return address.
    if synced_on {
        // Nothing to sync and the thread captures: straight to the simulator.
        simulate_on(addr, SIZE, WRITE);
    } else {
        may_capture(addr, SIZE, WRITE);
    }
}

/// [`active`] of an access whose code address `pc` the hook was given.
#[inline(never)]
extern "C" fn active_at<const SIZE: u32, const WRITE: bool>(addr: u64, pc: u64) {
    let (synced_on, hit) = hook_hit::<SIZE, WRITE>(addr);
    if hit {
        return;
    }
    if synced_on {
        simulate_on_at(addr, SIZE, WRITE, pc);
    } else {
        may_capture_at(addr, SIZE, WRITE, pc);
    }
}

/// `this_thread::simulate` for a thread known to be [`ThreadState::On`], of an access at code
/// address `pc`; `extern "C"` so that it cannot unwind (see [`may_capture_at`]).
#[inline(never)]
pub(super) extern "C" fn simulate_on_at(addr: u64, size: u32, write: bool, pc: u64) {
    if !write {
        return this_thread::simulate(addr, size, AccessKind::Read, pc);
    }
    // The first write to the line a read just brought to the front of its set (`x += ...`):
    // an L1 hit whose data structure the filter knows, simulated without the rest of the path.
    if with_filter(|f| f.clean_write(addr, size)) {
        this_thread::clean_write(addr, size, pc);
    } else {
        this_thread::simulate(addr, size, AccessKind::Write, pc);
    }
}

/// The slow path of an access at code address `pc` (0: unknown). `extern "C"` only so that it
/// cannot unwind: the `extern "C"` hooks then need no unwind landing pad around the call and
/// jump to it as a tail call, with no frame of their own.
#[inline(never)]
pub(super) extern "C" fn may_capture_at(addr: u64, size: u32, write: bool, pc: u64) {
    // The switch-epoch check lives here rather than at region boundaries: only while some
    // thread may capture can a thread have a switch to pick up.
    sync_point();
    let state = state();
    if state == ThreadState::On && with_filter(|f| f.repeat_hit(addr, size, write)) {
        return;
    }
    if state != ThreadState::Off {
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        not_off(state, addr, size, kind, pc);
    }
}

#[inline(always)]
fn not_off(now: ThreadState, addr: u64, size: u32, kind: AccessKind, pc: u64) {
    match now {
        ThreadState::On => this_thread::simulate(addr, size, kind, pc),
        ThreadState::NeedsSync => {
            sync();
            if state() == ThreadState::On {
                this_thread::simulate(addr, size, kind, pc);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::sync::{disable_all, enable_all};
    use super::super::totals::totals;
    use super::*;

    // The process-wide switch and totals are shared by every test in this binary, so one test
    // exercises them, on its own threads, and checks only what its threads added.
    #[test]
    fn threads_capture_only_while_enabled_and_merge_at_exit() {
        let before = totals();
        std::thread::spawn(|| {
            enable_all();
            for a in (0..64u64).step_by(4) {
                read(0x10_0000 + a, 4);
            }
            write(0x10_0000, 4);
            disable_all();
            read(0x10_0000, 4); // not captured
        })
        .join()
        .unwrap();
        let after = totals();
        assert_eq!(after.threads, before.threads + 1);
        let l1 = &after.levels.iter().find(|(n, _)| n != "I1").unwrap().1;
        let l1_before = before
            .levels
            .iter()
            .find(|(n, _)| n != "I1")
            .map_or(0, |(_, s)| s.reads);
        assert_eq!(l1.reads - l1_before, 16);
    }
}
