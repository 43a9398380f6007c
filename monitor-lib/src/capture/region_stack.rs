//! A thread's stack of open regions, as the region boundary hooks keep it in the thread's block
//! (`thread_block.rs`), with the per-thread cache of code address to region in front of the
//! registry's lock.
//!
//! A boundary with nothing armed is a push or a pop (`boundaries.rs`), so the first
//! [`SHALLOW_FRAMES`] open regions live in a plain array of 16-byte frames in the thread
//! block: a few loads and stores with no borrow flag, no destructor registration and no
//! allocation. Deeper ones go to a vector. Beside each frame is the stack pointer of the call
//! that opened it, which tells the frames a `longjmp` left behind from live ones.
//!
//! The types here are stored in the thread block, so this module reaches no thread-local state
//! of the block itself: its callers hand it the thread's [`Frames`] and [`ThreadRegions`].

use std::cell::{Cell, RefCell};

use epcache_shm::config_table::ConfigEntry;
use epcache_shm::layout::RegionIndex;

use super::region_registry::RegionRef;

/// One open region on a thread, in 16 bytes so the fast path moves it in two words. A
/// function entered while nothing was armed is pushed with its code address only (not
/// `RESOLVED`): its region is looked up at its exit, and only if something is armed by then.
/// A resolved frame holds its region's id and configuration entry instead.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(super) struct Frame {
    /// The code address (unresolved), else the configuration entry (region << 32 | slot).
    word: u64,
    id: u32,
    flags: u32,
}

const RESOLVED: u32 = 1;
const FUNCTION: u32 = 2;
const MONITORED: u32 = 4;
const HAS_REGION: u32 = 8;
const HAS_ENTRY: u32 = 16;
const OPENED_PARENT: u32 = 32;

impl Frame {
    /// What `pop` answers for a frame it lost (only while a thread's destructors run).
    const EMPTY: Frame = Frame {
        word: 0,
        id: 0,
        flags: FUNCTION | RESOLVED,
    };

    /// A marker begun while the runtime ran on the thread: kept for balance, never resolved.
    pub(super) const UNRESOLVED_MARKER: Frame = Frame {
        word: 0,
        id: 0,
        flags: 0,
    };

    #[inline(always)]
    pub(super) fn unresolved_function(pc: u64) -> Frame {
        Frame {
            word: pc,
            id: 0,
            flags: FUNCTION,
        }
    }

    pub(super) fn resolved(region: Option<RegionRef>, function: bool, monitored: bool) -> Frame {
        let mut flags = RESOLVED;
        if function {
            flags |= FUNCTION;
        }
        if monitored {
            flags |= MONITORED;
        }
        let (mut word, mut id) = (0, 0);
        if let Some(r) = region {
            flags |= HAS_REGION;
            id = r.id;
            if let Some(e) = r.entry {
                flags |= HAS_ENTRY;
                word = u64::from(e.region.0) << 32 | u64::from(e.slot);
            }
        }
        Frame { word, id, flags }
    }

    /// The same frame, marked as having opened the frame beneath it: its parallel parent's,
    /// which closes with it (`boundaries::enter`).
    pub(super) fn opening_parent(self) -> Frame {
        Frame {
            flags: self.flags | OPENED_PARENT,
            ..self
        }
    }

    /// Whether its entry opened the frame beneath it ([`Self::opening_parent`]).
    pub(super) fn opened_parent(self) -> bool {
        self.flags & OPENED_PARENT != 0
    }

    /// Whether it is region `id`'s frame.
    fn is_region(self, id: u32) -> bool {
        self.flags & HAS_REGION != 0 && self.id == id
    }

    #[inline(always)]
    pub(super) fn function(self) -> bool {
        self.flags & FUNCTION != 0
    }

    #[inline(always)]
    pub(super) fn monitored(self) -> bool {
        self.flags & MONITORED != 0
    }

    /// Whether its exit needs more than a pop when nothing is armed: a monitored instance, or a
    /// marker a function left open.
    #[inline(always)]
    pub(super) fn plain_function(self) -> bool {
        self.flags & (FUNCTION | MONITORED) == FUNCTION
    }

    /// Whether it is a marker's frame that ends with a pop when nothing is armed: neither a
    /// function's nor a monitored instance's.
    #[inline(always)]
    pub(super) fn plain_marker(self) -> bool {
        self.flags & (FUNCTION | MONITORED) == 0
    }

    pub(super) fn is_resolved(self) -> bool {
        self.flags & RESOLVED != 0
    }

    pub(super) fn pc(self) -> u64 {
        self.word
    }

    pub(super) fn region(self) -> Option<RegionRef> {
        if self.flags & HAS_REGION == 0 {
            return None;
        }
        let entry = (self.flags & HAS_ENTRY != 0).then_some(ConfigEntry {
            region: RegionIndex((self.word >> 32) as u32),
            slot: self.word as u32,
        });
        Some(RegionRef { id: self.id, entry })
    }
}

const PC_CACHE: usize = 256;
const _: () = assert!(PC_CACHE.is_power_of_two());
/// Open regions kept in the thread-local array; deeper ones go to a vector.
pub(super) const SHALLOW_FRAMES: usize = 64;

/// The stack pointer of a frame pushed without one (Rust markers, frames pushed while the
/// runtime runs on the thread, other architectures): such a frame is never taken for one a
/// `longjmp` left behind.
pub(super) const NO_STACK: u64 = u64::MAX;
/// The stack pointer a boundary passes when it does not know its own: it closes nothing.
pub(crate) const UNKNOWN_STACK: u64 = 0;

/// A thread's open regions: the first [`SHALLOW_FRAMES`] in a plain array, so a push or pop on
/// the fast path is a few loads and stores with no borrow flag, no destructor registration and
/// no allocation.
pub(super) struct Frames {
    pub(super) depth: Cell<usize>,
    pub(super) shallow: [Cell<Frame>; SHALLOW_FRAMES],
    /// Beside each shallow frame, the stack pointer of the call that opened it: the caller's
    /// `rsp` at its call to the entry hook or the marker begin (see
    /// `boundaries::close_abandoned`).
    pub(super) stack: [Cell<u64>; SHALLOW_FRAMES],
}

/// What every region boundary reads, in the thread's block of `thread_block.rs`: the open
/// regions and a direct-mapped cache of code address → region in front of the registry's lock.
/// Empty is all zero bytes, as the block starts.
pub(super) struct ThreadRegions {
    pub(super) frames: Frames,
    /// Each slot holds the region as a marker's frame would (`Frame::resolved`, not a
    /// function), so a quiet marker begin pushes the slot's frame as it finds it. An empty slot
    /// reads as code address 0 with no region, which is what the registry answers for 0.
    pc_cache: [Cell<(u64, Frame)>; PC_CACHE],
}

impl ThreadRegions {
    /// No open region, nothing cached.
    pub(super) const fn empty() -> ThreadRegions {
        ThreadRegions {
            frames: Frames {
                depth: Cell::new(0),
                // Slots at or above the depth are never read; zero like the rest.
                shallow: [const { Cell::new(Frame::UNRESOLVED_MARKER) }; SHALLOW_FRAMES],
                stack: [const { Cell::new(0) }; SHALLOW_FRAMES],
            },
            pc_cache: [const { Cell::new((0, Frame::UNRESOLVED_MARKER)) }; PC_CACHE],
        }
    }

    /// Whether this is what [`Self::empty`] makes.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.frames.depth.get() == 0
            && self
                .pc_cache
                .iter()
                .all(|slot| slot.get().0 == 0 && slot.get().1.flags == 0)
    }

    /// The marker frame of code address `pc`'s region, if this thread's cache knows it.
    #[inline(always)]
    pub(super) fn cached_frame(&self, pc: u64) -> Option<Frame> {
        let (seen, frame) = self.pc_cache[pc_cache_slot(pc)].get();
        (seen == pc).then_some(frame)
    }

    /// Remembers `region` as code address `pc`'s.
    pub(super) fn remember(&self, pc: u64, region: Option<RegionRef>) {
        self.pc_cache[pc_cache_slot(pc)].set((pc, Frame::resolved(region, false, false)));
    }
}

#[inline(always)]
fn pc_cache_slot(pc: u64) -> usize {
    // Fibonacci hashing: the top byte of the product mixes every bit of the address, in a
    // multiply and a shift.
    (pc.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PC_CACHE.trailing_zeros())) as usize
}

thread_local! {
    /// Frames past the shallow ones, each with its stack pointer.
    static DEEP_FRAMES: RefCell<Vec<(Frame, u64)>> = const { RefCell::new(Vec::new()) };
}

impl Frames {
    /// Pushes `frame`, opened at stack pointer `sp`.
    #[inline(always)]
    pub(super) fn push(&self, frame: Frame, sp: u64) {
        let depth = self.depth.get();
        match (self.shallow.get(depth), self.stack.get(depth)) {
            (Some(slot), Some(stack)) => {
                slot.set(frame);
                stack.set(sp);
            }
            _ => push_deep(frame, sp),
        }
        self.depth.set(depth + 1);
    }

    /// Pushes `frame`, opened at stack pointer `sp`, if the fixed array has room and the
    /// innermost open frame's stack pointer is not below `live_from` (the quiet paths); `false`,
    /// having changed nothing, otherwise: the slow path then closes what a `longjmp` left.
    #[inline(always)]
    pub(super) fn push_shallow(&self, frame: Frame, sp: u64, live_from: u64) -> bool {
        let depth = self.depth.get();
        if let Some(top) = depth.checked_sub(1)
            && self.stack.get(top).is_none_or(|s| s.get() < live_from)
        {
            return false;
        }
        let (Some(slot), Some(stack)) = (self.shallow.get(depth), self.stack.get(depth)) else {
            return false;
        };
        slot.set(frame);
        stack.set(sp);
        self.depth.set(depth + 1);
        true
    }

    /// Pops the innermost frame.
    #[inline(always)]
    pub(super) fn pop(&self) -> Option<Frame> {
        self.pop_with_stack().map(|(frame, _)| frame)
    }

    /// [`Self::pop`], with the frame's stack pointer.
    #[inline(always)]
    pub(super) fn pop_with_stack(&self) -> Option<(Frame, u64)> {
        let depth = self.depth.get().checked_sub(1)?;
        self.depth.set(depth);
        Some(match (self.shallow.get(depth), self.stack.get(depth)) {
            (Some(slot), Some(stack)) => (slot.get(), stack.get()),
            _ => pop_deep(),
        })
    }

    /// Whether region `id` is open on this thread.
    pub(super) fn holds(&self, id: u32) -> bool {
        let depth = self.depth.get();
        self.shallow[..depth.min(SHALLOW_FRAMES)]
            .iter()
            .any(|f| f.get().is_region(id))
            || depth > SHALLOW_FRAMES
                && DEEP_FRAMES
                    .try_with(|f| {
                        f.try_borrow()
                            .is_ok_and(|f| f.iter().any(|(frame, _)| frame.is_region(id)))
                    })
                    .unwrap_or(false)
    }

    /// The innermost open region, left open.
    pub(super) fn top(&self) -> Option<Frame> {
        let (frame, sp) = self.pop_with_stack()?;
        self.push(frame, sp);
        Some(frame)
    }

    /// The stack pointer the innermost open region was opened at.
    pub(super) fn top_stack(&self) -> Option<u64> {
        let (frame, sp) = self.pop_with_stack()?;
        self.push(frame, sp);
        Some(sp)
    }
}

#[cold]
#[inline(never)]
fn push_deep(frame: Frame, sp: u64) {
    // Fails only while the thread's destructors run; `pop_deep` then answers a plain frame.
    let _ = DEEP_FRAMES.try_with(|f| {
        if let Ok(mut f) = f.try_borrow_mut() {
            f.push((frame, sp));
        }
    });
}

#[cold]
#[inline(never)]
fn pop_deep() -> (Frame, u64) {
    DEEP_FRAMES
        .try_with(|f| f.try_borrow_mut().ok().and_then(|mut f| f.pop()))
        .ok()
        .flatten()
        .unwrap_or((Frame::EMPTY, NO_STACK))
}
