//! The thread's state byte as the runtime changes it: a [`RuntimeGuard`] marks the thread as
//! running the runtime (or the program's call into the allocator), and dropping it puts back
//! the state it found.
//!
//! The runtime must never recurse into itself through the code it calls (the hooks return while
//! the byte says so, see `hook_block.rs`), and must never leave a thread marked busy: its hooks
//! would then ignore the thread for the rest of its life. A guard makes the second a property
//! of scope, whatever path leaves it (an early return, `?`, an unwinding panic), where a
//! manual set and reset is one forgotten line away from it. A guard costs what the manual pair
//! did: a store of the byte on entry (with the two words that follow the state, see
//! [`HookBlock::set_state`]) and a store on drop; a guard made with [`RuntimeGuard::enter_capturing`]
//! knows the state it restores at compile time, so the access path loads nothing more.
//!
//! Guards nest: an inner one restores what the outer one set. Only a guard writes
//! [`ThreadState::Busy`] or [`ThreadState::Allocating`]; the sync point's decision between
//! [`ThreadState::On`] and [`ThreadState::Off`] is [`settle`], or [`RuntimeGuard::leave_settled`]
//! for a runtime call that decides it on its way out.
//!
//! A guard belongs to its thread (it is not `Send`): dropped on another, it would restore that
//! thread's byte. Where a guard is never dropped, on purpose:
//! - [`RuntimeGuard::stay`]: the simulation worker (none of its work is the program's) and a
//!   thread that ended without its thread-local destructors (anything it runs later is not
//!   counted); dropping theirs would let the hooks count what they then run;
//! - a path that never returns while a guard is live: a signal handler that ends the process
//!   (a second held signal, a crash inside the runtime) over a guarded scope dies with the
//!   thread busy, which it is; a thread that handed its counts on at a held signal
//!   (`process_end::end_for_signal`) runs on busy, counting nothing, until the process ends;
//! - a fork child inherits the forking thread's byte as it was; the runtime never forks, so
//!   that is the program's state, never a guard's, and the child's handler
//!   (`process_end::after_fork_in_child`) takes its own.
//!
//! Paths that end the process after the report (`process_end::end_for_signal`, the crash
//! handler, the `_exit` wrap) drop the report's guard before they end it. A signal handler that
//! interrupts a guarded scope finds the thread busy, so its own instrumented code is not
//! counted, and a guard it takes (the crash handler's report) restores busy when dropped; a
//! handler that leaves by `siglongjmp` out of the runtime leaves the thread busy for good (as it
//! leaves any Rust frame it jumps over undone).

use std::marker::PhantomData;

use super::hook_block::{HookBlock, ThreadState};
use super::thread_block;

/// The thread's state.
#[inline(always)]
pub(super) fn state() -> ThreadState {
    thread_block::with_hooks(HookBlock::state)
}

/// Whether the runtime itself, or the program's call into the allocator, is running on this
/// thread (hooks must return).
#[inline]
pub(crate) fn in_runtime() -> bool {
    state().in_runtime()
}

/// The sync point's decision for a thread outside the runtime: it captures, or not.
#[inline(always)]
pub(super) fn settle(captures: bool) {
    let state = if captures {
        ThreadState::On
    } else {
        ThreadState::Off
    };
    thread_block::with_hooks(|h| h.set_state(state));
}

/// The thread runs the runtime (or the program's allocator call) until this is dropped, which
/// restores the state found at the start.
#[derive(Debug)]
#[must_use = "the thread leaves the runtime when the guard is dropped: bind it"]
pub(super) struct RuntimeGuard {
    /// What the thread's state was, and is again at the drop.
    found: ThreadState,
    /// Not `Send`: the byte is the thread's own.
    _thread: PhantomData<*const ()>,
}

impl RuntimeGuard {
    /// Marks the thread as running the runtime.
    #[inline(always)]
    pub(super) fn enter() -> RuntimeGuard {
        RuntimeGuard {
            found: thread_block::with_hooks(|h| h.replace_state(ThreadState::Busy)),
            _thread: PhantomData,
        }
    }

    /// [`Self::enter`] for a thread known to capture ([`ThreadState::On`]): the state to
    /// restore is a constant, so the access path reads nothing to make the guard.
    #[inline(always)]
    pub(super) fn enter_capturing() -> RuntimeGuard {
        thread_block::with_hooks(|h| h.set_state(ThreadState::Busy));
        RuntimeGuard {
            found: ThreadState::On,
            _thread: PhantomData,
        }
    }

    /// Marks the thread as inside the program's call to the C library's allocator, unless the
    /// call is the runtime's own (then it stays [`ThreadState::Busy`]).
    #[inline(always)]
    pub(super) fn enter_allocator() -> RuntimeGuard {
        let found = state();
        if found != ThreadState::Busy {
            thread_block::with_hooks(|h| h.set_state(ThreadState::Allocating));
        }
        RuntimeGuard {
            found,
            _thread: PhantomData,
        }
    }

    /// Leaves the runtime capturing or not, as the caller decided on its way out, unless the
    /// guard was made inside the runtime: then the thread stays in it (the outer guard leaves).
    pub(super) fn leave_settled(mut self, captures: bool) {
        if !self.found.in_runtime() {
            self.found = if captures {
                ThreadState::On
            } else {
                ThreadState::Off
            };
        }
    }

    /// The thread stays in the runtime for good (see the module's list of who does this).
    pub(super) fn stay(self) {
        std::mem::forget(self);
    }
}

impl Drop for RuntimeGuard {
    #[inline(always)]
    fn drop(&mut self) {
        let found = self.found;
        thread_block::with_hooks(|h| h.set_state(found));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own, whose state starts as every thread's does.
    fn on_fresh_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    #[test]
    fn a_guard_restores_what_it_found_on_every_way_out() {
        on_fresh_thread(|| {
            settle(true);
            let early = |leave_early: bool| -> Option<()> {
                let _guard = RuntimeGuard::enter();
                assert_eq!(state(), ThreadState::Busy);
                if leave_early {
                    return None;
                }
                Some(())
            };
            assert_eq!(early(true), None);
            assert_eq!(
                state(),
                ThreadState::On,
                "an early return left the thread busy"
            );
            assert_eq!(early(false), Some(()));
            assert_eq!(state(), ThreadState::On);
            let unwound = std::panic::catch_unwind(|| {
                let _guard = RuntimeGuard::enter();
                panic!("a bug inside the runtime");
            });
            assert!(unwound.is_err());
            assert_eq!(
                state(),
                ThreadState::On,
                "an unwinding panic left the thread busy"
            );
        });
    }

    #[test]
    fn nested_guards_restore_in_turn_and_a_settled_leave_inside_stays_busy() {
        on_fresh_thread(|| {
            settle(false);
            let outer = RuntimeGuard::enter();
            {
                let inner = RuntimeGuard::enter();
                assert_eq!(state(), ThreadState::Busy);
                inner.leave_settled(true);
            }
            assert_eq!(
                state(),
                ThreadState::Busy,
                "the inner guard left the outer runtime"
            );
            drop(outer);
            assert_eq!(state(), ThreadState::Off);
            RuntimeGuard::enter().leave_settled(true);
            assert_eq!(
                state(),
                ThreadState::On,
                "a settled leave outside the runtime decides"
            );
        });
    }

    #[test]
    fn the_allocator_guard_marks_only_a_thread_outside_the_runtime() {
        on_fresh_thread(|| {
            settle(true);
            {
                let _allocating = RuntimeGuard::enter_allocator();
                assert_eq!(state(), ThreadState::Allocating);
                assert!(in_runtime());
            }
            assert_eq!(state(), ThreadState::On);
            let _busy = RuntimeGuard::enter();
            {
                let _allocating = RuntimeGuard::enter_allocator();
                assert_eq!(state(), ThreadState::Busy, "the runtime's own allocation");
            }
            assert_eq!(state(), ThreadState::Busy);
        });
    }

    #[test]
    fn the_capturing_guard_restores_on_and_a_stay_never_leaves() {
        on_fresh_thread(|| {
            settle(true);
            {
                let _busy = RuntimeGuard::enter_capturing();
                assert_eq!(state(), ThreadState::Busy);
            }
            assert_eq!(state(), ThreadState::On);
            RuntimeGuard::enter().stay();
            assert_eq!(state(), ThreadState::Busy);
        });
    }
}
