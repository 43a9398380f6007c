//! The process's named data structures: globals from DWARF, heap arrays the program registers,
//! heap blocks by allocation site, Fortran allocatables placed over the data their descriptors
//! point to, each published in the MCC's data-structure table with its allocation site and
//! shape, and a sorted snapshot threads use to attribute an address to a structure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use epcache_shm::layout::{DataStructureDetails, DataStructureIndex, DataStructureKind, Shape};
use epcache_sim::ranges::AddressRange;

use super::{mcc, switches};

/// Heap blocks smaller than this are not named (`heap.rs`): they are rarely the arrays a user
/// asks about, and every one would be a table entry.
pub(super) const MIN_TRACKED_BYTES: usize = 4096;

/// One named data structure.
#[derive(Debug, Clone)]
pub(crate) struct DataStructure {
    pub(crate) name: String,
    pub(crate) range: AddressRange,
    pub(crate) kind: DataStructureKind,
    pub(crate) live: bool,
    /// The size of the largest block the entry stood for: an allocation site's entry is taken
    /// over by the site's later blocks, whose sizes may differ.
    pub(crate) largest_bytes: u64,
    /// Its allocation site and shape, as published.
    pub(crate) details: DataStructureDetails,
    /// Its bytes are another live structure's (a Fortran POINTER associated with another array,
    /// or with a slice of a pool): published, so requests and tools see where it points, but
    /// left out of the lookup, so accesses count for the structure that owns the bytes.
    pub(crate) alias: bool,
    /// A heap block's allocation context (`file:line` frames, innermost first), as its site's
    /// first block had it; empty for other structures.
    pub(crate) context: Vec<String>,
    /// A heap block's allocation call (the return address on its named line), 0 for others.
    call: u64,
    /// Blocks of two allocation calls on this entry's line were live at once: two arrays
    /// allocated in one statement (`allocate(t(n), tnew(n))`) share the line's name, and its
    /// counts are theirs together.
    pub(crate) several_arrays: bool,
    /// Its index in the MCC's table, when the MCC has one and it had room.
    mcc_index: Option<DataStructureIndex>,
}

/// An allocatable (or pointer) array followed through its descriptor ([`register_allocatable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AllocatableId(usize);

/// Where an allocatable's descriptor says its data is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) range: AddressRange,
    pub(crate) shape: Shape,
    /// The data is large enough to be a tracked heap block: with no live one there, it is one
    /// freed a moment ago that the descriptor still points to.
    pub(crate) heap_block_expected: bool,
}

/// An allocatable's entries, oldest first: one more each time it is allocated at a size no
/// earlier entry had (so each region's counts come with the size it used), at most
/// [`MAX_ENTRIES_PER_ALLOCATABLE`].
#[derive(Debug, Default)]
struct Allocatable {
    entries: Vec<usize>,
}

/// Past this many entries an allocatable allocated at yet another size takes over its last
/// entry (whose bytes then are the largest it held): a loop growing an array does not fill the
/// MCC's table.
const MAX_ENTRIES_PER_ALLOCATABLE: usize = 16;

#[derive(Debug, Default)]
struct Registry {
    entries: Vec<DataStructure>,
    /// Live structures sorted by start, changed in place of the old and shared with threads.
    lookup: Option<Arc<Lookup>>,
    /// Per heap-block name, how many live blocks each allocation call of its line holds: a
    /// second call with a live block means several arrays share the name ([`note_call`]).
    live_calls: BTreeMap<String, BTreeMap<u64, u32>>,
    /// The heap-block names whose entries say several arrays share them.
    several_names: BTreeSet<String>,
    /// Entries of freed heap blocks by allocation site, for the site's next block to take
    /// over: a loop that allocates and frees then keeps one entry (and one MCC slot) per block
    /// it holds at once, not one per allocation, so registering stays cheap and the table
    /// does not fill.
    freed_by_site: BTreeMap<String, Vec<usize>>,
    allocatables: Vec<Allocatable>,
}

pub(crate) use super::span_lookup::Lookup;

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    entries: Vec::new(),
    lookup: None,
    live_calls: BTreeMap::new(),
    several_names: BTreeSet::new(),
    freed_by_site: BTreeMap::new(),
    allocatables: Vec::new(),
});
/// Bumped on every change, so threads refresh their snapshot of the lookup cheaply.
static GENERATION: AtomicU64 = AtomicU64::new(1);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `name` over `range`; an empty range or a zero address is ignored.
pub(crate) fn register(name: &str, range: AddressRange, kind: DataStructureKind) {
    register_with(name, range, kind, DataStructureDetails::default());
}

/// [`register`] with the structure's allocation site and shape.
pub(crate) fn register_with(
    name: &str,
    range: AddressRange,
    kind: DataStructureKind,
    details: DataStructureDetails,
) {
    register_with_context(name, range, kind, details, &[], 0);
}

/// Registers a tracked heap block named by its allocation context ([`super::heap`]): `name`
/// is the line that asked for it, `context` the frames (published with the site's first
/// block; its later blocks take over the entry and keep it).
pub(crate) fn register_heap_block(
    name: &str,
    range: AddressRange,
    details: DataStructureDetails,
    context: &[String],
    call: u64,
) {
    register_with_context(
        name,
        range,
        DataStructureKind::AllocationSite,
        details,
        context,
        call,
    );
}

/// Registers `name` over `range`; a heap block also with its allocation context and its
/// allocation `call` (0 for other structures).
fn register_with_context(
    name: &str,
    range: AddressRange,
    kind: DataStructureKind,
    details: DataStructureDetails,
    context: &[String],
    call: u64,
) {
    // A forked child is not monitored, and its copy of the lock may be held by a thread that
    // did not survive the fork (see `switches::forked_child`).
    if range.is_empty() || range.start == 0 || switches::forked_child() {
        return;
    }
    let mut reg = registry();
    if kind == DataStructureKind::AllocationSite
        && let Some(index) = reg.freed_by_site.get_mut(name).and_then(Vec::pop)
    {
        let entry = &mut reg.entries[index];
        entry.range = range;
        entry.live = true;
        entry.largest_bytes = entry.largest_bytes.max(range.len());
        entry.details = details;
        if let (Some(m), Some(mcc_index)) = (mcc::get(), entry.mcc_index) {
            m.reuse_data_structure(mcc_index, range, &entry.details);
        }
        note_call(&mut reg, index, call);
        added(&mut reg, index);
        return;
    }
    let index = push_entry(&mut reg, name, range, kind, true, details);
    if !context.is_empty() {
        let entry = &mut reg.entries[index];
        entry.context = context.to_vec();
        if let (Some(m), Some(mcc_index)) = (mcc::get(), entry.mcc_index)
            && let Err(e) = m.set_context(mcc_index, context)
        {
            mcc::full_once(&e);
        }
    }
    note_call(&mut reg, index, call);
    added(&mut reg, index);
}

/// Keeps the allocation `call` of the heap block entry `index` now holds (live); when another
/// call of its line holds a live block too, several arrays share the name, and every entry of
/// the name says so.
fn note_call(reg: &mut Registry, index: usize, call: u64) {
    if call == 0 {
        return;
    }
    reg.entries[index].call = call;
    let name = reg.entries[index].name.clone();
    let calls = reg.live_calls.entry(name.clone()).or_default();
    *calls.entry(call).or_default() += 1;
    let together = calls.iter().any(|(&c, &live)| c != call && live > 0);
    if together && reg.several_names.insert(name.clone()) {
        for d in reg.entries.iter_mut().filter(|d| d.name == name) {
            d.several_arrays = true;
        }
    }
    if reg.several_names.contains(&name) {
        reg.entries[index].several_arrays = true;
    }
}

/// Appends an entry and publishes it; its index.
fn push_entry(
    reg: &mut Registry,
    name: &str,
    range: AddressRange,
    kind: DataStructureKind,
    live: bool,
    details: DataStructureDetails,
) -> usize {
    let mcc_index = mcc::get().and_then(|m| {
        m.register_data_structure_with(name, range, kind, live, &details)
            .map_err(|e| mcc::full_once(&e))
            .ok()
    });
    reg.entries.push(DataStructure {
        name: name.to_owned(),
        range,
        kind,
        live,
        largest_bytes: if live { range.len() } else { 0 },
        details,
        alias: false,
        context: Vec::new(),
        call: 0,
        several_arrays: false,
        mcc_index,
    });
    reg.entries.len() - 1
}

/// Registers the allocatable (or pointer) array `name`, not allocated yet, whose elements
/// `shape` describes (its dimensions come with each allocation): its entry is named now, so
/// that a tool can ask for it before the program allocates it.
pub(crate) fn register_allocatable(name: &str, shape: Shape) -> Option<AllocatableId> {
    if switches::forked_child() {
        return None;
    }
    let mut reg = registry();
    let details = DataStructureDetails {
        site: None,
        shape: Some(shape),
    };
    let index = push_entry(
        &mut reg,
        name,
        AddressRange::new(0, 0),
        DataStructureKind::Allocatable,
        false,
        details,
    );
    reg.allocatables.push(Allocatable {
        entries: vec![index],
    });
    Some(AllocatableId(reg.allocatables.len() - 1))
}

/// Places allocatable `id` where its descriptor says its data is now (`None`: unallocated).
///
/// Its data is usually a heap block, registered a moment before by its allocation site: that
/// entry is taken off (it goes back to its site's entries for reuse) and the allocatable's
/// takes its bytes and its site. Data that lies over another live structure (a pointer
/// associated with another array, or with a slice of a pool) is that structure's: the
/// allocatable is placed there as an alias ([`DataStructure::alias`]), which requests measure
/// and the report leaves to the owner. Data over a block just freed is left unallocated. Data
/// of a size its current entry never had goes into a new entry of the same name, which follows
/// the old one for requests (`Mcc::set_successor`); the report shows each region the entry, and
/// so the size, it used.
pub(crate) fn place_allocatable(id: AllocatableId, now: Option<Placement>) {
    if switches::forked_child() {
        return;
    }
    let mut reg = registry();
    let Some(&current) = reg.allocatables.get(id.0).and_then(|a| a.entries.last()) else {
        return;
    };
    let now = now.filter(|p| !p.range.is_empty() && p.range.start != 0);
    let Some(now) = now else {
        if reg.entries[current].live {
            set_dead(&mut reg, current);
            rebuild(&mut reg);
        }
        return;
    };
    {
        let entry = &mut reg.entries[current];
        if entry.live && entry.range == now.range && !entry.alias {
            if entry.details.shape.as_ref() != Some(&now.shape) {
                entry.details.shape = Some(now.shape);
                if let (Some(m), Some(mcc_index)) = (mcc::get(), entry.mcc_index) {
                    m.reuse_data_structure(mcc_index, entry.range, &entry.details);
                }
            }
            return;
        }
    }
    let block =
        reg.entries.iter().enumerate().position(|(i, d)| {
            i != current && d.live && !d.alias && d.range.start == now.range.start
        });
    let mut alias = false;
    let site = match block {
        // The descriptor is still being written (its address stored, its bounds not yet):
        // looked at again later.
        Some(i)
            if reg.entries[i].kind == DataStructureKind::AllocationSite
                && reg.entries[i].range.len() != now.range.len() =>
        {
            return;
        }
        Some(i) if reg.entries[i].kind == DataStructureKind::AllocationSite => {
            set_dead(&mut reg, i);
            let name = reg.entries[i].name.clone();
            reg.freed_by_site.entry(name).or_default().push(i);
            reg.entries[i].details.site
        }
        Some(_) => {
            alias = true;
            None
        }
        // Its own block, read while the descriptor was being written.
        None if reg.entries[current].live
            && !reg.entries[current].alias
            && reg.entries[current].range.start == now.range.start =>
        {
            return;
        }
        None => {
            let overlaps = reg.entries.iter().enumerate().any(|(i, d)| {
                i != current
                    && d.live
                    && !d.alias
                    && d.range.start < now.range.end
                    && now.range.start < d.range.end
            });
            if overlaps {
                alias = true;
            } else if now.heap_block_expected {
                return leave_unallocated(&mut reg, current);
            }
            None
        }
    };
    if alias && reg.entries[current].live && reg.entries[current].range == now.range {
        return;
    }
    if reg.entries[current].live {
        set_dead(&mut reg, current);
    }
    let details = DataStructureDetails {
        site,
        shape: Some(now.shape),
    };
    let held = reg.entries[current].largest_bytes;
    let entries = reg.allocatables[id.0].entries.len();
    if held == 0 || held == now.range.len() || entries >= MAX_ENTRIES_PER_ALLOCATABLE {
        let entry = &mut reg.entries[current];
        entry.range = now.range;
        entry.live = true;
        entry.alias = alias;
        entry.largest_bytes = held.max(now.range.len());
        entry.details = details;
        if let (Some(m), Some(mcc_index)) = (mcc::get(), entry.mcc_index) {
            m.reuse_data_structure(mcc_index, now.range, &entry.details);
        }
    } else {
        let name = reg.entries[current].name.clone();
        let next = push_entry(
            &mut reg,
            &name,
            now.range,
            DataStructureKind::Allocatable,
            true,
            details,
        );
        reg.entries[next].alias = alias;
        if let (Some(m), Some(old), Some(new)) = (
            mcc::get(),
            reg.entries[current].mcc_index,
            reg.entries[next].mcc_index,
        ) {
            m.set_successor(old, new);
        }
        reg.allocatables[id.0].entries.push(next);
    }
    rebuild(&mut reg);
}

fn leave_unallocated(reg: &mut Registry, current: usize) {
    if reg.entries[current].live {
        set_dead(reg, current);
        rebuild(reg);
    }
}

fn set_dead(reg: &mut Registry, index: usize) {
    let entry = &mut reg.entries[index];
    entry.live = false;
    if entry.call != 0
        && let Some(live) = reg
            .live_calls
            .get_mut(&entry.name)
            .and_then(|calls| calls.get_mut(&entry.call))
    {
        *live = live.saturating_sub(1);
    }
    if let (Some(m), Some(mcc_index)) = (mcc::get(), entry.mcc_index) {
        m.unregister_data_structure(mcc_index);
    }
}

/// Whether the block at `start` is a live heap block no allocatable has taken yet.
pub(crate) fn is_unclaimed_block(start: u64) -> bool {
    let reg = registry();
    let Some(lookup) = &reg.lookup else {
        return false;
    };
    lookup
        .starting_at(start)
        .any(|(_, _, i)| reg.entries[i as usize].kind == DataStructureKind::AllocationSite)
}

/// Marks the live structure starting at `start` as gone (a freed heap array): the last
/// registered, if several start there.
pub(crate) fn unregister(start: u64) {
    if switches::forked_child() {
        return;
    }
    let mut reg = registry();
    // The lookup holds exactly the live structures that are no alias.
    let Some(span) = reg
        .lookup
        .as_ref()
        .and_then(|l| l.starting_at(start).max_by_key(|&(_, _, i)| i))
    else {
        return;
    };
    let index = span.2 as usize;
    set_dead(&mut reg, index);
    let entry = &reg.entries[index];
    if entry.kind == DataStructureKind::AllocationSite {
        let name = entry.name.clone();
        reg.freed_by_site.entry(name).or_default().push(index);
    }
    match reg.lookup.as_ref().and_then(|l| l.without(span)) {
        Some(next) => publish(&mut reg, next),
        None => rebuild(&mut reg),
    }
}

/// Adds entry `index`, just made live, to the lookup (unless it is an alias, which the lookup
/// leaves out).
fn added(reg: &mut Registry, index: usize) {
    let entry = &reg.entries[index];
    if entry.alias || !entry.live {
        rebuild(reg);
        return;
    }
    let span = (entry.range.start, entry.range.end, index as u32);
    let next = reg
        .lookup
        .as_deref()
        .map_or_else(|| Lookup::of_spans(vec![span]), |lookup| lookup.with(span));
    publish(reg, next);
}

/// The lookup made afresh from every live structure that is no alias.
fn rebuild(reg: &mut Registry) {
    let mut spans: Vec<(u64, u64, u32)> = reg
        .entries
        .iter()
        .enumerate()
        .filter(|(_, d)| d.live && !d.alias)
        .map(|(i, d)| (d.range.start, d.range.end, i as u32))
        .collect();
    spans.sort_unstable();
    publish(reg, Lookup::of_spans(spans));
}

/// Makes `lookup` the one threads take from now on.
fn publish(reg: &mut Registry, lookup: Lookup) {
    reg.lookup = Some(Arc::new(lookup));
    GENERATION.fetch_add(1, Ordering::Release);
    // After the generation: a thread that sees the new epoch sees the new generation.
    switches::data_changed();
}

/// The current generation; a thread whose snapshot is older calls [`snapshot`].
#[inline]
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// The lookup as of now, with its generation.
pub(crate) fn snapshot() -> (u64, Arc<Lookup>) {
    let reg = registry();
    (generation(), reg.lookup.clone().unwrap_or_default())
}

/// Every structure registered so far, live or not, by index.
pub(crate) fn all() -> Vec<DataStructure> {
    registry().entries.clone()
}
