//! Fortran ALLOCATABLE and POINTER arrays, followed through their descriptors: each is a data
//! structure whose bytes are the data its descriptor points to (`symbols::ArrayDescriptor`
//! says where the descriptor keeps it), placed again whenever the runtime looks, so that a
//! module's `u` is the array the program uses rather than its 64-byte descriptor.
//!
//! The runtime looks where it already syncs: when a tracked heap block is allocated, at the
//! entry of a region with requests (before they are bound), and at the sync points just after
//! an allocation. The last matters because the program stores the new block's address into the
//! descriptor only after `malloc` returned, and then touches the block: while some descriptor
//! is unallocated and the new block is nobody's, each thread's next access syncs again
//! (at most [`CLAIM_TRIES`] times), so the descriptor is read again right after the store and
//! the block's accesses are the allocatable's from the first. A site whose block no descriptor
//! took in all those tries (a local array's, a temporary's) is not looked after again: a loop
//! allocating temporaries pays once, not at every allocation.
//!
//! The descriptors are read from `/proc/self/mem` (no unsafe code here), only within each
//! descriptor's own bytes: whatever the DWARF expressions say, nothing else is read.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use epcache_shm::layout::{Dimension, MAX_SHAPE_RANK, Shape, SiteKey};
use epcache_sim::ranges::AddressRange;
use epcache_symbols::{ArrayDescriptor, ArrayShape};

use super::data::{self, AllocatableId, MIN_TRACKED_BYTES, Placement};
use super::switches;

/// Sync points after an allocation at which the descriptors are read again, while the new
/// block is still nobody's: the program stores its address and bounds in the few accesses
/// after `malloc` (each sync point is the next access of some thread).
const CLAIM_TRIES: u32 = 32;

/// Descriptors read in one piece when they lie within this many bytes of each other (module
/// variables sit together in `.bss`).
const ONE_READ: u64 = 64 << 10;

/// One followed allocatable.
#[derive(Debug)]
struct Followed {
    id: AllocatableId,
    /// Run-time address and size of its descriptor.
    address: u64,
    bytes: u64,
    descriptor: &'static ArrayDescriptor,
}

static FOLLOWED: Mutex<Vec<Followed>> = Mutex::new(Vec::new());
/// Whether any descriptor is followed: a C program never pays for any of this.
static ANY: AtomicBool = AtomicBool::new(false);
/// Sync points left at which to look again for the owner of [`CLAIM_BLOCK`].
static CLAIM_TRIES_LEFT: AtomicU32 = AtomicU32::new(0);
/// The block allocated last, while no descriptor has taken it.
static CLAIM_BLOCK: AtomicU64 = AtomicU64::new(0);
/// The allocation site of [`CLAIM_BLOCK`], and the sites whose blocks no descriptor took in
/// all the tries: their later blocks are not looked after.
static SITES: Mutex<Sites> = Mutex::new(Sites {
    claiming: None,
    unclaimed: None,
});

#[derive(Debug)]
struct Sites {
    claiming: Option<SiteKey>,
    unclaimed: Option<HashSet<SiteKey>>,
}

fn sites() -> std::sync::MutexGuard<'static, Sites> {
    SITES.lock().unwrap_or_else(|e| e.into_inner())
}

fn followed() -> std::sync::MutexGuard<'static, Vec<Followed>> {
    FOLLOWED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Follows the allocatable `name` whose descriptor lies at run-time `address` (`bytes` long).
pub(crate) fn follow(name: &str, address: u64, bytes: u64, descriptor: &'static ArrayDescriptor) {
    let shape = Shape {
        element_bytes: descriptor.element_bytes,
        dims: Vec::new(),
        column_major: descriptor.column_major,
    };
    let Some(id) = data::register_allocatable(name, shape) else {
        return;
    };
    // ALLOCATABLEs are looked at before POINTERs: when a pointer is associated with an
    // allocatable's data, the allocatable owns the bytes and the pointer is their alias
    // (`data::place_allocatable`), whichever the look finds first.
    let mut followed = followed();
    let at = if descriptor.pointer {
        followed.len()
    } else {
        followed.partition_point(|f| !f.descriptor.pointer)
    };
    followed.insert(
        at,
        Followed {
            id,
            address,
            bytes,
            descriptor,
        },
    );
    drop(followed);
    ANY.store(true, Ordering::Release);
    // A library opened late may hold allocated arrays already.
    look();
}

/// What one look at the descriptors found.
#[derive(Debug, Default)]
struct Looked {
    /// Some descriptor says unallocated (unassociated).
    unallocated: bool,
    /// Where the allocated ones' data starts.
    starts: Vec<u64>,
}

/// Reads every followed descriptor and places its allocatable.
pub(crate) fn check() {
    look();
}

fn look() -> Looked {
    let mut looked = Looked::default();
    if !ANY.load(Ordering::Acquire) || switches::forked_child() {
        return looked;
    }
    let followed = followed();
    let memory = Memory::read(&followed);
    for f in followed.iter() {
        let read = |addr: u64, size: u8| memory.word(f, addr, size);
        // A POINTER at a strided section (`row => a(5,:)`, `p => x(1:n:2)`) spans bytes it
        // does not hold: a request over the span would count the gaps' accesses too, so it is
        // left unplaced (its requests wait, saying why) rather than measured wrong.
        let placement = f
            .descriptor
            .array(f.address, &read)
            .filter(|a| a.bytes > 0 && contiguous(a))
            .map(|a| Placement {
                range: AddressRange::new(a.start, a.bytes),
                shape: shape(&a.shape),
                heap_block_expected: a.bytes >= MIN_TRACKED_BYTES as u64,
            });
        match &placement {
            Some(p) => looked.starts.push(p.range.start),
            None => looked.unallocated = true,
        }
        data::place_allocatable(f.id, placement);
    }
    looked
}

/// A tracked heap block was just registered at `start`, allocated at `site`: allocatables are
/// placed anew (a block allocated before this one now has its owner's address stored), and
/// while some descriptor is unallocated the next sync points look again for this block's
/// owner, unless the site's blocks were never anyone's.
pub(crate) fn block_allocated(start: u64, site: SiteKey) {
    if !ANY.load(Ordering::Acquire) {
        return;
    }
    if look().unallocated {
        let mut sites = sites();
        if sites.unclaimed.as_ref().is_some_and(|s| s.contains(&site)) {
            return;
        }
        sites.claiming = Some(site);
        CLAIM_BLOCK.store(start, Ordering::Relaxed);
        CLAIM_TRIES_LEFT.store(CLAIM_TRIES, Ordering::Release);
    }
}

/// Whether a sync point should look for a new block's owner ([`retry_claim`]).
#[inline]
pub(crate) fn claim_due() -> bool {
    CLAIM_TRIES_LEFT.load(Ordering::Relaxed) != 0
}

/// At a sync point after an allocation: reads the descriptors again; while the block is still
/// nobody's, some descriptor may still take it (one is unallocated, or one points at it with
/// its bounds not yet written) and tries are left, sends every thread's next access to its
/// sync point once more.
pub(crate) fn retry_claim() {
    if CLAIM_TRIES_LEFT.load(Ordering::Acquire) == 0 {
        return;
    }
    let looked = look();
    let block = CLAIM_BLOCK.load(Ordering::Relaxed);
    let may_take = looked.unallocated || looked.starts.contains(&block);
    let unclaimed = data::is_unclaimed_block(block);
    if !unclaimed {
        // Taken, or freed first.
        CLAIM_TRIES_LEFT.store(0, Ordering::Relaxed);
        return;
    }
    let left = CLAIM_TRIES_LEFT
        .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| n.checked_sub(1))
        .unwrap_or(0);
    if may_take && left > 1 {
        switches::data_changed();
        return;
    }
    // Nobody took it: the site allocates for no followed array.
    CLAIM_TRIES_LEFT.store(0, Ordering::Relaxed);
    let mut sites = sites();
    if let Some(site) = sites.claiming.take() {
        sites
            .unclaimed
            .get_or_insert_with(HashSet::new)
            .insert(site);
    }
}

/// Whether the array's elements fill its span with no gap.
fn contiguous(array: &epcache_symbols::DescribedArray) -> bool {
    let elements = array
        .shape
        .dims
        .iter()
        .try_fold(1u64, |n, d| n.checked_mul(d.count));
    elements.and_then(|n| n.checked_mul(array.shape.element_bytes)) == Some(array.bytes)
}

/// A publishable shape from what the descriptor says.
fn shape(array: &ArrayShape) -> Shape {
    Shape {
        element_bytes: array.element_bytes,
        dims: if array.dims.len() <= MAX_SHAPE_RANK {
            array
                .dims
                .iter()
                .map(|d| Dimension {
                    lower: d.lower,
                    extent: d.count,
                })
                .collect()
        } else {
            Vec::new()
        },
        column_major: array.column_major,
    }
}

/// The descriptors' bytes as read at one moment.
struct Memory {
    /// `(address, bytes)` of the span read, or `None` when `/proc/self/mem` cannot be read.
    span: Option<(u64, Vec<u8>)>,
    /// Descriptors outside the span, read one by one.
    each: Vec<Option<(u64, Vec<u8>)>>,
}

impl Memory {
    fn read(followed: &[Followed]) -> Memory {
        let Some(mem) = self_memory() else {
            return Memory {
                span: None,
                each: Vec::new(),
            };
        };
        let read = |address: u64, bytes: u64| {
            let mut buf = vec![0u8; usize::try_from(bytes).ok()?];
            mem.read_exact_at(&mut buf, address).ok()?;
            Some((address, buf))
        };
        let low = followed.iter().map(|f| f.address).min().unwrap_or(0);
        let high = followed
            .iter()
            .map(|f| f.address.saturating_add(f.bytes))
            .max()
            .unwrap_or(0);
        if high.saturating_sub(low) <= ONE_READ {
            return Memory {
                span: read(low, high - low),
                each: Vec::new(),
            };
        }
        Memory {
            span: None,
            each: followed.iter().map(|f| read(f.address, f.bytes)).collect(),
        }
    }

    /// The `size`-byte little-endian word at `addr`, when it lies within `f`'s descriptor.
    fn word(&self, f: &Followed, addr: u64, size: u8) -> Option<u64> {
        let end = addr.checked_add(u64::from(size))?;
        if addr < f.address || end > f.address.checked_add(f.bytes)? || size > 8 {
            return None;
        }
        let (base, bytes) = match &self.span {
            Some((base, bytes)) => (*base, bytes),
            None => self
                .each
                .iter()
                .flatten()
                .find(|(base, _)| *base == f.address)
                .map(|(base, bytes)| (*base, bytes))?,
        };
        let from = usize::try_from(addr.checked_sub(base)?).ok()?;
        let slice = bytes.get(from..from + usize::from(size))?;
        let mut word = [0u8; 8];
        word[..slice.len()].copy_from_slice(slice);
        Some(u64::from_le_bytes(word))
    }
}

/// The process's own memory, opened once; `None` (said once) when it cannot be.
fn self_memory() -> Option<&'static File> {
    static MEM: OnceLock<Option<File>> = OnceLock::new();
    MEM.get_or_init(|| match File::open("/proc/self/mem") {
        Ok(file) => Some(file),
        Err(e) => {
            eprintln!(
                "epcache: cannot read /proc/self/mem ({e}); Fortran allocatable arrays are not \
                 followed to their data and go by their allocation sites"
            );
            None
        }
    })
    .as_ref()
}
