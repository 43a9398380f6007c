//! The runtime's own heap, apart from the program's: every allocation the runtime makes (its
//! tables, its names, its simulators) comes from here, never from the C library's `malloc`.
//!
//! Why: where a program's arrays lie decides which cache sets they share, and so its conflict
//! misses. Had the runtime allocated from the program's heap, each of the program's `malloc`s
//! would be followed by the runtime's own (a heap block's registration, its name), and the next
//! array would start a kilobyte or more later than in the program run alone: three 32 KiB
//! arrays of a triad, back to back in the program's heap and sharing every set of a 2-way
//! 8 KiB L1, would miss a quarter less in the monitored run than in the program. With the
//! runtime's heap elsewhere, the program's `malloc` sees exactly the calls it makes, in order.
//!
//! How: Doug Lea's allocator (the `dlmalloc` crate) behind one lock, taking its memory from one
//! address range reserved, inaccessible, at the first allocation and made accessible piece by
//! piece as the heap grows. Consecutive pieces are adjacent, so the allocator keeps one
//! growing segment, and the program's own memory maps (glibc maps large arrays on their own)
//! never fall between the runtime's. The memory is kept until the process ends (the runtime's
//! peak, as the report's `state_bytes` counts most of it). Should the reservation be refused
//! (an address-space limit) or run out, a piece is mapped wherever the kernel puts it.
//!
//! Forks: handlers registered with the first allocation take the lock around `fork`, so a child
//! never inherits it held by a thread it does not have.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use dlmalloc::Dlmalloc;

/// Address space reserved for the heap, tried from the largest down: reserving costs no memory,
/// only addresses, but a process may have a limit on those (`ulimit -v`).
const RESERVATIONS: [usize; 4] = [1 << 40, 1 << 36, 1 << 32, 1 << 28];

/// The C library's page size on every target the runtime is built for.
const PAGE: usize = 4096;

/// The allocator for everything the runtime (and a Rust program linking it) allocates.
pub(crate) struct RuntimeHeap;

/// Hands the allocator its memory from the reservation, in adjacent pieces. Used under the
/// heap's lock only: its state is in statics so that tests can see where the heap is.
struct Reservation;

/// The reservation's start, and one past its end (both 0 when none could be made).
static RESERVED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// The first address of the reservation not handed out yet.
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// Whether the reservation was tried.
static TRIED: AtomicBool = AtomicBool::new(false);

impl Reservation {
    /// Reserves the largest range of [`RESERVATIONS`] the kernel grants, inaccessible.
    fn reserve() {
        TRIED.store(true, Ordering::Relaxed);
        for bytes in RESERVATIONS {
            // SAFETY: a new anonymous mapping at an address the kernel chooses replaces nothing.
            let at = unsafe {
                libc::mmap(
                    ptr::null_mut(),
                    bytes,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if at != libc::MAP_FAILED {
                RESERVED[0].store(at as usize, Ordering::Relaxed);
                RESERVED[1].store(at as usize + bytes, Ordering::Relaxed);
                NEXT.store(at as usize, Ordering::Relaxed);
                return;
            }
        }
    }

    /// The next `bytes` of the reservation, made accessible; `None` when it cannot give them.
    fn take(bytes: usize) -> Option<*mut u8> {
        if !TRIED.load(Ordering::Relaxed) {
            Self::reserve();
        }
        let start = NEXT.load(Ordering::Relaxed);
        if start == 0 || RESERVED[1].load(Ordering::Relaxed) - start < bytes {
            return None;
        }
        // SAFETY: [start, start + bytes) lies inside the reservation, past everything handed out:
        // no one uses it, and only its protection changes.
        let made = unsafe {
            libc::mprotect(
                start as *mut c_void,
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        (made == 0).then(|| {
            NEXT.store(start + bytes, Ordering::Relaxed);
            start as *mut u8
        })
    }
}

/// Whether `address` lies in the memory the heap has taken from its reservation.
#[cfg(test)]
fn in_reservation(address: usize) -> bool {
    (RESERVED[0].load(Ordering::Relaxed)..NEXT.load(Ordering::Relaxed)).contains(&address)
}

// SAFETY: the allocator's memory is its own: regions from `alloc` are new, zeroed, page-aligned
// and never handed out twice, and none is ever released (`free` and `free_part` say so).
unsafe impl dlmalloc::Allocator for Reservation {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let size = size.next_multiple_of(PAGE);
        if let Some(at) = Self::take(size) {
            return (at, size, 0);
        }
        // SAFETY: a new anonymous mapping at an address the kernel chooses replaces nothing.
        let at = unsafe {
            libc::mmap(
                ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            (ptr::null_mut(), 0, 0)
        } else {
            (at.cast(), size, 0)
        }
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        true
    }

    fn page_size(&self) -> usize {
        PAGE
    }
}

/// The heap and its lock.
struct Locked {
    lock: UnsafeCell<libc::pthread_mutex_t>,
    heap: UnsafeCell<Dlmalloc<Reservation>>,
}

// SAFETY: `heap` is touched only by a thread holding `lock` (`with_heap`).
unsafe impl Sync for Locked {}

static HEAP: Locked = Locked {
    lock: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
    heap: UnsafeCell::new(Dlmalloc::new_with_allocator(Reservation)),
};

/// Whether the fork handlers are registered.
static FORK_HANDLERS: AtomicBool = AtomicBool::new(false);

extern "C" fn lock_heap() {
    // SAFETY: the mutex is a static initialised by its initializer, and never moved.
    unsafe { libc::pthread_mutex_lock(HEAP.lock.get()) };
}

extern "C" fn unlock_heap() {
    // SAFETY: called after `lock_heap` by the thread that holds the lock (in a forked child, the
    // one thread there, which took it before the fork).
    unsafe { libc::pthread_mutex_unlock(HEAP.lock.get()) };
}

/// Runs `f` on the heap under its lock.
fn with_heap<R>(f: impl FnOnce(&mut Dlmalloc<Reservation>) -> R) -> R {
    lock_heap();
    // SAFETY: the lock is held, so no other thread touches the heap until `unlock_heap`.
    let result = f(unsafe { &mut *HEAP.heap.get() });
    // Under the lock: a load and, once, a store, no atomic exchange on every allocation.
    if !FORK_HANDLERS.load(Ordering::Relaxed) {
        FORK_HANDLERS.store(true, Ordering::Relaxed);
        // SAFETY: the handlers are functions of this module; registered once, with the lock
        // held, so no fork can run a prepare handler while they are being registered.
        unsafe { libc::pthread_atfork(Some(lock_heap), Some(unlock_heap), Some(unlock_heap)) };
    }
    unlock_heap();
    result
}

// SAFETY: each method forwards to the allocator under the lock, with the layout the caller
// guarantees; blocks are released with the layout they were allocated with.
unsafe impl GlobalAlloc for RuntimeHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller guarantees for `GlobalAlloc::alloc`.
        with_heap(|h| unsafe { h.malloc(layout.size(), layout.align()) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller guarantees for `GlobalAlloc::alloc_zeroed`.
        with_heap(|h| unsafe { h.calloc(layout.size(), layout.align()) })
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: `block` came from this allocator with `layout` (`GlobalAlloc::dealloc`).
        with_heap(|h| unsafe { h.free(block, layout.size(), layout.align()) })
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `block` came from this allocator with `layout` (`GlobalAlloc::realloc`).
        with_heap(|h| unsafe { h.realloc(block, layout.size(), layout.align(), new_size) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the runtime allocates lies in the reservation, small or large, from any thread.
    #[test]
    fn the_runtime_allocates_from_its_reservation() {
        let small = Box::new(7u64);
        let large = vec![1u8; 3 << 20];
        let other = std::thread::spawn(|| {
            let b = Box::new([0u32; 100]);
            &*b as *const [u32; 100] as usize
        })
        .join()
        .unwrap();
        for address in [
            &*small as *const u64 as usize,
            large.as_ptr() as usize,
            other,
        ] {
            assert!(
                in_reservation(address),
                "{address:#x} is not in the runtime's heap"
            );
        }
    }
}
