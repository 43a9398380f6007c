//! Heap blocks by allocation site: a tracked block becomes a data structure named after the
//! source line of its allocation (`gauss.c:42`), with that line's [`SiteKey`] for requests that
//! name the site before the block exists, and stops being one when freed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use epcache_shm::layout::{DataStructureDetails, DataStructureKind, SiteKey};
use epcache_sim::ranges::AddressRange;

use super::region_registry::tracking_started;
use super::runtime_guard::{RuntimeGuard, in_runtime};
use super::{data, descriptors, program};

/// How the caller walks its thread's stack: fills the slice with return addresses, innermost
/// first, and says how many (the unwinder is unsafe code of the allocator entry points,
/// `alloc_abi.rs`).
pub(super) type StackWalk = fn(&mut [u64]) -> usize;

/// What a return address says about the blocks allocated from its call.
#[derive(Debug, Clone)]
enum Site {
    /// No line information (the call is not in the program's own code): not tracked.
    Unknown,
    /// A line of the program's own sources.
    Program(Line),
    /// Library code only (an out-of-line template instance such as `std::vector`'s growth):
    /// its callers decide, this line is the last resort.
    Library(Line),
}

/// An allocation's source line: its name (`gauss.c:42`) and key.
#[derive(Debug, Clone)]
struct Line {
    name: String,
    key: SiteKey,
}

#[derive(Debug, Default)]
struct Sites {
    /// Return address → what its call site is.
    names: HashMap<u64, Site>,
    /// Live tracked blocks by start address.
    live: HashMap<u64, ()>,
}

static SITES: Mutex<Option<Sites>> = Mutex::new(None);

/// Live tracked blocks counted by a hash of their start: a zero count proves a block untracked
/// without the lock, which keeps the many small `operator delete` calls of a C++ program cheap.
/// Changed only under the `SITES` lock; read without it, where a stale count at worst sends a
/// delete to the lock.
static LIVE_BY_HASH: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];

fn live_count(start: u64) -> &'static AtomicU32 {
    // Blocks are at least 16-byte aligned; Fibonacci hashing spreads the rest.
    let hash = (start >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54;
    &LIVE_BY_HASH[hash as usize % LIVE_BY_HASH.len()]
}

/// Whether the block at `start` may be tracked (false: certainly not).
pub(super) fn maybe_tracked(start: u64) -> bool {
    live_count(start).load(Ordering::Relaxed) != 0
}

/// How many frames out from an allocation in library code the program's own caller is looked
/// for (`push_back` → `_M_realloc_insert` → `allocate` takes two).
const MAX_CALLER_FRAMES: usize = 16;

/// A block of `bytes` at `start` was allocated from the call returning to `return_pc`.
pub(super) fn allocated(start: u64, bytes: u64, return_pc: u64, walk_stack: StackWalk) {
    if return_pc == 0 || in_runtime() || !tracking_started() {
        return;
    }
    let _busy = RuntimeGuard::enter();
    let name = match site(return_pc) {
        Site::Unknown => None,
        Site::Program(name) => Some(name),
        Site::Library(fallback) => Some(caller_site(return_pc, walk_stack).unwrap_or(fallback)),
    };
    if let Some(Line { name, key }) = name {
        let stale = {
            let mut guard = SITES.lock().unwrap_or_else(|e| e.into_inner());
            let sites = guard.get_or_insert_with(Sites::default);
            // A block freed where no wrap sees it (inside a shared library) is still listed; a
            // new block at its address replaces it.
            let stale = sites.live.insert(start, ()).is_some();
            if !stale {
                live_count(start).fetch_add(1, Ordering::Relaxed);
            }
            stale
        };
        if stale {
            data::unregister(start);
        }
        data::register_with(
            &name,
            AddressRange::new(start, bytes),
            DataStructureKind::AllocationSite,
            DataStructureDetails {
                site: Some(key),
                shape: None,
            },
        );
        descriptors::block_allocated(start, key);
    }
}

/// What the call returning to `return_pc` is, resolved once per address.
fn site(return_pc: u64) -> Site {
    let mut guard = SITES.lock().unwrap_or_else(|e| e.into_inner());
    let sites = guard.get_or_insert_with(Sites::default);
    sites
        .names
        .entry(return_pc)
        .or_insert_with(|| {
            let Some(program) = program::object_at(return_pc.wrapping_sub(1)) else {
                return Site::Unknown;
            };
            let Some(line) = program.call_site(return_pc) else {
                return Site::Unknown;
            };
            let file = line.file.rsplit('/').next().unwrap_or(&line.file);
            let name = Line {
                name: format!("{file}:{}", line.line),
                key: SiteKey::new(file, line.line),
            };
            if program.in_library_code(return_pc) {
                Site::Library(name)
            } else {
                Site::Program(name)
            }
        })
        .clone()
}

/// The program's own call site nearest outside the library code that returns to `return_pc`,
/// from the stack of this allocation.
fn caller_site(return_pc: u64, walk_stack: StackWalk) -> Option<Line> {
    let mut frames = [0u64; MAX_CALLER_FRAMES + 8];
    let count = walk_stack(&mut frames);
    let frames = &frames[..count];
    let from = frames.iter().position(|&pc| pc == return_pc)?;
    frames[from + 1..].iter().find_map(|&pc| match site(pc) {
        Site::Program(name) => Some(name),
        Site::Unknown | Site::Library(_) => None,
    })
}

/// The block at `start` is being freed.
pub(super) fn freed(start: u64) {
    // Before tracking started no block was listed; in a forked child the lock may be held by a
    // thread that is not there.
    if in_runtime() || !tracking_started() {
        return;
    }
    let _busy = RuntimeGuard::enter();
    let tracked = SITES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .is_some_and(|s| {
            let removed = s.live.remove(&start).is_some();
            if removed {
                live_count(start).fetch_sub(1, Ordering::Relaxed);
            }
            removed
        });
    if tracked {
        data::unregister(start);
    }
}
