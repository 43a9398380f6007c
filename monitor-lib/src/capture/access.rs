//! The access path: what every captured load and store runs, from the hooks (`tsan_abi.rs`,
//! `sancov_abi.rs`) and the explicit [`read()`] and [`write()`].
//!
//! While nothing may capture, a hook is one load of a global and a return. While anything may,
//! a fixed-size hook answers a repeat hit itself (`tsan_abi.rs`: a few thread-local loads and
//! an increment) and leaves everything else to the slow paths here, [`simulate_on_at`] and
//! [`may_capture_at`], `extern "C"` only so that they cannot unwind, so the hooks need no
//! landing pad and no frame of their own. A thread whose state is stale (it switched on,
//! another thread switched off) stops capturing at its next access rather than at its next
//! sync point; that only honours the switch sooner.
//!
//! Each slow path takes the access's code address (for per-line attribution, `line_table.rs`):
//! the hook's return address, which `tsan_abi.rs` reads off the stack at no cost to the hit
//! path; the address the compiler gave to a `_pc` hook; 0 (unknown) from the explicit
//! [`read()`] and [`write()`].

use epcache_sim::cache::AccessKind;

use super::hook_block::ThreadState;
use super::runtime_guard::state;
use super::switches::anything_may_capture;
use super::sync::{sync, sync_point};
use super::this_thread;
use super::thread_block::with_filter;

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

/// `this_thread::simulate` for a thread known to be [`ThreadState::On`], of an access at code
/// address `pc`; `extern "C"` so that it cannot unwind (see [`may_capture_at`]).
#[inline(never)]
pub(super) extern "C" fn simulate_on_at(addr: u64, size: u32, write: bool, pc: u64) {
    if !write {
        return this_thread::simulate(addr, size, AccessKind::Read, pc);
    }
    // The first write to the line a read just brought to the front of its set (`x += ...`):
    // an L1 hit whose data structure the filter knows, simulated without the rest of the path.
    if let Some(slot) = with_filter(|f| f.clean_write(addr, size)) {
        this_thread::clean_write(addr, size, slot, pc);
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
