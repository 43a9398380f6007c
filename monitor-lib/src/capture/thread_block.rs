//! The region stack's per-thread block, addressed at a link-time offset from the thread pointer.
//!
//! Rust's `thread_local!` in a position-independent library compiles to general-dynamic
//! accesses. The linker turns each into one load of the thread pointer, but the optimiser saw a
//! call to `__tls_get_addr` and saved registers around it: a quiet region boundary is a handful
//! of loads and stores, and those saves were a third of it. This block sits in the executable's
//! static TLS (`.tbss`, zero at every thread's start) and is reached with the local-exec
//! sequence, which the optimiser sees as two instructions clobbering one register.
//!
//! The runtime is linked into executables only (`epcache cc`, test and tool binaries): a
//! shared object cannot use the local-exec relocation, and such a link fails saying so.

use super::regions::ThreadRegions;

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 6",
    // Global so every codegen unit of the crate resolves it; hidden so it never leaves the
    // executable's own symbols.
    ".globl epcache_monitor_thread_regions",
    ".hidden epcache_monitor_thread_regions",
    ".type epcache_monitor_thread_regions, @object",
    ".size epcache_monitor_thread_regions, {size}",
    "epcache_monitor_thread_regions:",
    ".zero {size}",
    ".popsection",
    size = const core::mem::size_of::<ThreadRegions>(),
);

/// Calls `f` with this thread's block.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&ThreadRegions) -> R) -> R {
    const _: () = assert!(core::mem::align_of::<ThreadRegions>() <= 64);
    let block: *const ThreadRegions;
    // SAFETY: on x86_64 Linux `fs:0` holds the thread pointer itself, and the block's offset
    // from it is fixed when the executable is linked; the two instructions read only that word
    // (constant for the thread's life, hence `pure` and `nomem`) and write only `block`.
    unsafe {
        core::arch::asm!(
            "mov {block}, qword ptr fs:[0]",
            "lea {block}, [{block} + epcache_monitor_thread_regions@TPOFF]",
            block = out(reg) block,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    // SAFETY: `block` is this thread's copy, aligned as the section directive asks and as
    // large as the type, zero when the thread started, which is the type's empty value (tested
    // below), and valid until the thread's control block is freed after the thread ends. The
    // type is all `Cell`s, so the shared reference allows its updates; it is `!Sync`, so the
    // reference cannot reach another thread, and it does not outlive `f`.
    f(unsafe { &*block })
}

#[cfg(not(target_arch = "x86_64"))]
thread_local! {
    static BLOCK: ThreadRegions = const { ThreadRegions::empty() };
}

/// Calls `f` with this thread's block.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&ThreadRegions) -> R) -> R {
    BLOCK.with(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_block_is_all_zero_bytes_as_the_loader_gives_it() {
        let empty = ThreadRegions::empty();
        let size = core::mem::size_of::<ThreadRegions>();
        // SAFETY: `empty` lives for the whole borrow, and its type has no padding (all
        // integers in `Cell`s, checked by the size assertion in `regions.rs`), so every
        // byte is initialised.
        let bytes = unsafe { core::slice::from_raw_parts((&raw const empty).cast::<u8>(), size) };
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn each_thread_has_its_own_block() {
        with(|b| b.frames.depth.set(7));
        let other = std::thread::spawn(|| with(|b| b.frames.depth.get()))
            .join()
            .unwrap();
        assert_eq!(other, 0);
        assert_eq!(with(|b| b.frames.depth.replace(0)), 7);
    }
}
