//! Heap blocks by allocation context: a tracked block becomes a data structure named after the
//! line of the program that asked for it (`gemm.c:112`), with that line's [`SiteKey`] for
//! requests that name it before the block exists, and stops being one when freed.
//!
//! The allocator's return address starts the block's context; the rest of the thread's stack
//! (walked by the unwinder, which needs no frame pointers) continues it. Each return address is
//! resolved once into logical frames (its line and, for code inlined there, each line it was
//! inlined at, with the function holding each). Walking outwards, frames in library headers
//! (`std::vector`'s growth) and frames in allocation wrappers are seen through: the default
//! rule finds wrappers in the program's code (`epcache_symbols`' `allocation_wrappers.rs`: a
//! function returning a pointer that makes one allocator or wrapper call), and
//! `EPCACHE_ALLOC_WRAPPERS=alloc_array,xmalloc` adds the user's. The first frame left names the
//! block; the context lists the program's frames from the allocator's call out to
//! [`CONTEXT_DEPTH`] frames past that one. Blocks named by one line are one data structure,
//! whichever callers led to that line; the context shown is the one of its first block. A line
//! that allocates for calls from several lines of the program (a wrapper the rule misses: two
//! allocator calls, a block handed back through an out parameter) is said once on stderr, with
//! the `EPCACHE_ALLOC_WRAPPERS` that would name each block by its caller's line.
//!
//! Cost: the stack walk runs only for blocks of at least `MIN_TRACKED_BYTES`, at allocation,
//! never on the access path.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use epcache_shm::layout::{DataStructureDetails, SiteKey};
use epcache_sim::ranges::AddressRange;

use super::program::CallFrame;
use super::region_registry::tracking_started;
use super::runtime_guard::{RuntimeGuard, in_runtime};
use super::{allocation_statements, data, descriptors, program};

/// How the caller walks its thread's stack: fills the slice with return addresses, innermost
/// first, and says how many (the unwinder is unsafe code of the allocator entry points,
/// `alloc_abi.rs`).
pub(super) type StackWalk = fn(&mut [u64]) -> usize;

/// Frames of the program's callers a context keeps past the line that names the block.
pub(crate) const CONTEXT_DEPTH: usize = 3;

/// Return addresses walked out from an allocation: enough for library layers (`push_back` →
/// `_M_realloc_insert` → `allocate`), wrappers and the context.
const MAX_STACK_FRAMES: usize = 32;

/// The environment variable naming the program's allocation wrappers, comma-separated.
pub(crate) const WRAPPERS_VARIABLE: &str = "EPCACHE_ALLOC_WRAPPERS";

/// An allocation's name (`gauss.c:42`), key and context.
#[derive(Debug, Clone)]
struct Named {
    name: String,
    key: SiteKey,
    context: Vec<String>,
    /// The return address of the call on the named line (one call instruction of the program).
    call: u64,
    /// The function holding the named line, and the program's line that called it, if any.
    function: String,
    caller: Option<String>,
}

#[derive(Debug, Default)]
struct Sites {
    /// Return address → its logical frames, innermost first (`None`: no line information,
    /// the call is not in the program's own code).
    frames: HashMap<u64, Option<Arc<[CallFrame]>>>,
    /// Live tracked blocks by start address.
    live: HashMap<u64, ()>,
    /// Each name's first caller line (see [`Named::caller`]), and the names already said to
    /// allocate for several.
    callers: HashMap<String, String>,
    said_several_callers: HashSet<String>,
}

/// Names said to allocate for several callers, at most: a program full of them needs the
/// variable, not a page of notes.
const MAX_CALLER_NOTES: usize = 3;

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

/// A block of `bytes` at `start` was allocated from the call returning to `return_pc`.
pub(super) fn allocated(start: u64, bytes: u64, return_pc: u64, walk_stack: StackWalk) {
    if return_pc == 0 || in_runtime() || !tracking_started() {
        return;
    }
    let _busy = RuntimeGuard::enter();
    let Some(Named {
        name,
        key,
        context,
        call,
        function,
        caller,
    }) = name_allocation(return_pc, walk_stack)
    else {
        return;
    };
    let mut another_caller = None;
    let stale = {
        let mut guard = SITES.lock().unwrap_or_else(|e| e.into_inner());
        let sites = guard.get_or_insert_with(Sites::default);
        // A block freed where no wrap sees it (inside a shared library) is still listed; a
        // new block at its address replaces it.
        let stale = sites.live.insert(start, ()).is_some();
        if !stale {
            live_count(start).fetch_add(1, Ordering::Relaxed);
        }
        if let Some(caller) = caller {
            let first = sites
                .callers
                .entry(name.clone())
                .or_insert_with(|| caller.clone());
            if *first != caller
                && sites.said_several_callers.len() < MAX_CALLER_NOTES
                && sites.said_several_callers.insert(name.clone())
            {
                another_caller = Some((first.clone(), caller));
            }
        }
        stale
    };
    if let Some((first, later)) = another_caller {
        eprintln!(
            "epcache: note: `{name}` (in `{function}`) allocates for calls from {first} and \
             {later}, whose arrays therefore share its name and count together; if `{function}` \
             allocates for its callers, {WRAPPERS_VARIABLE}={function} names each block by the \
             line that called it"
        );
    }
    if stale {
        data::unregister(start);
    }
    data::register_heap_block(
        &name,
        AddressRange::new(start, bytes),
        DataStructureDetails {
            site: Some(key),
            shape: None,
        },
        &context,
        call,
    );
    descriptors::block_allocated(start, key);
}

/// The name, key and context of an allocation from the call returning to `return_pc`; `None`
/// when that call is not in code with line information (not tracked).
fn name_allocation(return_pc: u64, walk_stack: StackWalk) -> Option<Named> {
    let innermost = frames_at(return_pc)?;
    let mut chain: Vec<CallFrame> = innermost.to_vec();
    // The return address each frame of the chain was resolved from.
    let mut calls: Vec<u64> = vec![return_pc; chain.len()];
    let mut stack = [0u64; MAX_STACK_FRAMES];
    let count = walk_stack(&mut stack);
    if let Some(from) = stack[..count].iter().position(|&pc| pc == return_pc) {
        for &pc in &stack[from + 1..count] {
            // Code without line information (the C library's start, a callback's caller) ends
            // what the program's own frames say.
            let Some(frames) = frames_at(pc) else { break };
            chain.extend(frames.iter().cloned());
            calls.resize(chain.len(), pc);
        }
    }
    let wrappers = wrappers();
    let is_wrapper = |f: &CallFrame| {
        let plain = f.function.rsplit("::").next().unwrap_or(&f.function);
        wrappers.contains(f.function.as_str()) || wrappers.contains(plain)
    };
    let seen_through = |f: &CallFrame| f.library || is_wrapper(f);
    // All library or wrappers: the innermost line of the program's own, else the innermost.
    let asking = chain
        .iter()
        .position(|f| !seen_through(f))
        .or_else(|| chain.iter().position(|f| !f.library))
        .unwrap_or(0);
    let shown = |f: &CallFrame| {
        let file = f.line.file.rsplit('/').next().unwrap_or(&f.line.file);
        format!("{file}:{}", f.line.line)
    };
    let named = &chain[asking];
    let file = named
        .line
        .file
        .rsplit('/')
        .next()
        .unwrap_or(&named.line.file);
    // One of several arrays a statement allocates, when the call can tell which: a call whose
    // innermost position is the named line, or whose frames inside the named one at the same
    // call are the program's own wrappers inlined into it (`vec_new` around `xmalloc`); not a
    // library's code inlined there.
    let inside = (0..asking).filter(|&k| calls[k] == calls[asking]);
    let depth = inside.clone().count();
    let own_wrappers = inside
        .clone()
        .all(|k| !chain[k].library && is_wrapper(&chain[k]));
    let array = own_wrappers
        .then(|| {
            allocation_statements::array_of_call(
                calls[asking],
                &named.line.file,
                named.line.line,
                depth,
            )
        })
        .flatten();
    let own = |frames: &[CallFrame]| -> Vec<String> {
        frames.iter().filter(|f| !f.library).map(shown).collect()
    };
    let mut context = own(&chain[..asking]);
    context.push(shown(named));
    context.extend(own(&chain[asking + 1..]).into_iter().take(CONTEXT_DEPTH));
    let (name, key) = match &array {
        Some(array) => (
            format!("{array}@{}", shown(named)),
            SiteKey::of_object(file, named.line.line, array),
        ),
        None => (shown(named), SiteKey::new(file, named.line.line)),
    };
    let caller = chain[asking + 1..].iter().find(|f| !f.library).map(shown);
    Some(Named {
        name,
        key,
        context,
        call: calls[asking],
        function: named.function.clone(),
        caller,
    })
}

/// The logical frames of the call returning to `return_pc`, resolved once per address.
fn frames_at(return_pc: u64) -> Option<Arc<[CallFrame]>> {
    let mut guard = SITES.lock().unwrap_or_else(|e| e.into_inner());
    let sites = guard.get_or_insert_with(Sites::default);
    sites
        .frames
        .entry(return_pc)
        .or_insert_with(|| {
            let program = program::object_at(return_pc.wrapping_sub(1))?;
            let frames = program.call_frames(return_pc);
            (!frames.is_empty()).then(|| frames.into())
        })
        .clone()
}

/// The functions seen through: the default rule's wrappers of every object with debug
/// information, and those `EPCACHE_ALLOC_WRAPPERS` names.
fn wrappers() -> &'static HashSet<String> {
    static WRAPPERS: OnceLock<HashSet<String>> = OnceLock::new();
    WRAPPERS.get_or_init(|| {
        let mut all: HashSet<String> = program::objects()
            .iter()
            .flat_map(|o| o.info.allocation_wrappers.iter().cloned())
            .collect();
        all.extend(user_wrappers());
        all
    })
}

/// The names in `EPCACHE_ALLOC_WRAPPERS`, each trimmed, empty ones dropped.
fn user_wrappers() -> Vec<String> {
    std::env::var(WRAPPERS_VARIABLE)
        .map(|list| parse_wrapper_list(&list))
        .unwrap_or_default()
}

fn parse_wrapper_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Says on stderr which names of `EPCACHE_ALLOC_WRAPPERS` are no function of the program (by
/// its debug information), at start-up; a program without debug information is not checked.
pub(super) fn check_wrapper_list() {
    let names = user_wrappers();
    if names.is_empty() {
        return;
    }
    let objects = program::objects();
    if objects.is_empty() {
        return;
    }
    for name in unknown_wrappers(&names, &objects) {
        eprintln!(
            "epcache: {WRAPPERS_VARIABLE} names `{name}`, which is no function of this program \
             with debug information; it is ignored (give functions by their names in the \
             source, e.g. {WRAPPERS_VARIABLE}=alloc_array,xmalloc)"
        );
    }
}

/// The names among `names` that no object's functions (compiled or inlined) carry, plainly or
/// as the last part of a qualified C++ name.
fn unknown_wrappers<'n>(names: &'n [String], objects: &[&program::ProgramInfo]) -> Vec<&'n str> {
    let known = |name: &str| {
        objects.iter().any(|o| {
            o.info.inlined_functions.iter().any(|f| f == name)
                || o.info
                    .functions
                    .iter()
                    .any(|f| f.name == name || f.name.rsplit("::").next() == Some(name))
        })
    };
    names
        .iter()
        .map(String::as_str)
        .filter(|name| !known(name))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_list_is_split_at_commas_and_trimmed() {
        assert_eq!(
            parse_wrapper_list(" alloc_array, xmalloc ,,"),
            ["alloc_array", "xmalloc"]
        );
        assert!(parse_wrapper_list("").is_empty());
    }
}
