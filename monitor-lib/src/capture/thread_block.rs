//! The runtime's hottest per-thread data, addressed at a link-time offset from the thread pointer.
//!
//! Rust's `thread_local!` in a position-independent library compiles to general-dynamic
//! accesses. The linker turns each into one load of the thread pointer, but the optimiser saw a
//! call to `__tls_get_addr` and saved registers around it: a quiet region boundary or a
//! repeat hit in an access hook is a handful of loads and stores, and those saves were up to a
//! third of it. This block sits in the executable's static TLS (`.tbss`, zero at every thread's
//! start) and is reached with the local-exec sequence, which the optimiser sees as two
//! instructions clobbering one register.
//!
//! The runtime is linked into executables only (`epcache cc`, test and tool binaries): a
//! shared object cannot use the local-exec relocation, and such a link fails saying so.

use super::regions::ThreadRegions;
use super::state::Hot;

/// Everything in the block: what the access hooks read first, then the region stack. Both
/// are empty when all their bytes are zero (tested below).
#[repr(C)]
pub(super) struct ThreadBlock {
    pub(super) hot: Hot,
    pub(super) regions: ThreadRegions,
}

impl ThreadBlock {
    /// What a thread starts with: the empty value zero bytes stand for (the x86_64 block is
    /// never built from it, only compared with it in tests).
    #[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
    const fn empty() -> ThreadBlock {
        ThreadBlock {
            hot: Hot::new(),
            regions: ThreadRegions::empty(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 6",
    // Global so every codegen unit of the crate resolves it; hidden so it never leaves the
    // executable's own symbols.
    ".globl epcache_monitor_thread_block",
    ".hidden epcache_monitor_thread_block",
    ".type epcache_monitor_thread_block, @object",
    ".size epcache_monitor_thread_block, {size}",
    "epcache_monitor_thread_block:",
    ".zero {size}",
    ".popsection",
    size = const core::mem::size_of::<ThreadBlock>(),
);

/// Calls `f` with this thread's block.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&ThreadBlock) -> R) -> R {
    const _: () = assert!(core::mem::align_of::<ThreadBlock>() <= 64);
    let block: *const ThreadBlock;
    // SAFETY: on x86_64 Linux `fs:0` holds the thread pointer itself, and the block's offset
    // from it is fixed when the executable is linked; the two instructions read only that word
    // (constant for the thread's life, hence `pure` and `nomem`) and write only `block`.
    unsafe {
        core::arch::asm!(
            "mov {block}, qword ptr fs:[0]",
            "lea {block}, [{block} + epcache_monitor_thread_block@TPOFF]",
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
    static BLOCK: ThreadBlock = const { ThreadBlock::empty() };
}

/// Calls `f` with this thread's block.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&ThreadBlock) -> R) -> R {
    BLOCK.with(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_bytes_are_the_empty_block_as_the_loader_gives_it() {
        // SAFETY: every field of the block is an integer or a bool in a `Cell`, possibly in
        // arrays and plain structs, for all of which zero bytes are a valid value.
        let zeroed: ThreadBlock = unsafe { core::mem::MaybeUninit::zeroed().assume_init() };
        assert!(zeroed.hot.is_empty());
        assert!(zeroed.regions.is_empty());
        // And the predicates describe what the constructor makes.
        let empty = ThreadBlock::empty();
        assert!(empty.hot.is_empty());
        assert!(empty.regions.is_empty());
    }

    #[test]
    fn each_thread_has_its_own_block() {
        with(|b| b.regions.frames.depth.set(7));
        let other = std::thread::spawn(|| with(|b| b.regions.frames.depth.get()))
            .join()
            .unwrap();
        assert_eq!(other, 0);
        assert_eq!(with(|b| b.regions.frames.depth.replace(0)), 7);
    }
}
