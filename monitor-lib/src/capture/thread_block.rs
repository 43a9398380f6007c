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
//!
//! The block holds the hooks' words (`hook_block.rs`, with the filter) and the region stack
//! (`region_stack.rs`), so this module sits above those types and below everything that
//! reaches them through it. It also registers the thread-end callback
//! ([`call_at_thread_end`]), which needs the same unsafe code as the block (the C library's
//! thread-specific data).

use super::filter::Filter;
use super::hook_block::HookBlock;
use super::region_stack::{Frames, ThreadRegions};

/// Everything in the block: what the access hooks read first, then the region stack. Both
/// are empty when all their bytes are zero (tested below).
#[repr(C)]
pub(super) struct ThreadBlock {
    pub(super) hooks: HookBlock,
    pub(super) regions: ThreadRegions,
}

impl ThreadBlock {
    /// What a thread starts with: the empty value zero bytes stand for (the x86_64 block is
    /// never built from it, only compared with it in tests).
    #[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
    const fn empty() -> ThreadBlock {
        ThreadBlock {
            hooks: HookBlock::new(),
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

// The inline capture ABI (`epcache_inline::layout`): what the repeat-hit test `epcache cc`
// writes into instrumented code before each call to a fixed-size `__tsan_readN`/`__tsan_writeN`
// reads and counts (`epcache_inline::emit` writes the sequence, `epcache_inline::model` says
// what it does).
//
// Thread-local symbols inside the block for the words it reads, reached with the local-exec
// sequence, and the process-wide tag word under its own name (`gate_abi.rs`). Their names are the
// crate's; their offsets come from this build of the runtime at link time, so the program's
// code and the runtime cannot disagree on where a word is. What the sequence assumes beyond
// the names (each word's size, an entry's words and size, the record it writes) is asserted
// where the words are defined (`filter.rs`). What a word means beyond its layout is the
// runtime's promise: `synced_word` differs from the tag word whenever the thread must not
// batch (it does not capture, or has a switch to pick up; `hook_block.rs`: a thread whose filter
// holds no key may see them equal after the keys came round, but its batch then has no room),
// a table holds tags with the current key only while its thread captures (`filter.rs`), and
// `batch_pos` and `batch_end` are 0 while the thread has no batch. A program whose runtime
// lacks the symbols fails to link, naming them.
macro_rules! inline_abi_words {
    ($($name:ident = $offset:expr),* $(,)?) => {
        /// The inline capture ABI's thread-local words this runtime defines.
        #[cfg(test)]
        const DEFINED_WORDS: &[&str] = &[$(epcache_inline::abi_symbol!($name)),*];

        #[cfg(target_arch = "x86_64")]
        core::arch::global_asm!(
            $(
                concat!(".globl ", epcache_inline::abi_symbol!($name)),
                concat!(".hidden ", epcache_inline::abi_symbol!($name)),
                concat!(".type ", epcache_inline::abi_symbol!($name), ", @tls_object"),
                concat!(
                    ".set ", epcache_inline::abi_symbol!($name),
                    ", epcache_monitor_thread_block + {", stringify!($name), "}"
                ),
            )*
            $($name = const $offset,)*
        );
    };
}

inline_abi_words!(
    synced_word = HOOKS + HookBlock::SYNCED_WORD_OFFSET,
    read_tags = FILTER + Filter::READ_TAGS_OFFSET,
    order = FILTER + Filter::ORDER_OFFSET,
    write_tags = FILTER + Filter::WRITE_TAGS_OFFSET,
    read_hits = FILTER + Filter::READ_HITS_OFFSET,
    write_hits = FILTER + Filter::WRITE_HITS_OFFSET,
    dirty_pending = FILTER + Filter::DIRTY_PENDING_OFFSET,
    order_tables = FILTER + Filter::ORDER_TABLES_OFFSET,
    batch_pos = FILTER + Filter::BATCH_POS_OFFSET,
    batch_end = FILTER + Filter::BATCH_END_OFFSET,
    in_miss = FILTER + Filter::IN_MISS_OFFSET,
    whole_lo = FILTER + Filter::WHOLE_LO_OFFSET,
    whole_hi = FILTER + Filter::WHOLE_HI_OFFSET,
    whole_structure = FILTER + Filter::WHOLE_STRUCTURE_OFFSET,
);

/// Where the hook block and its filter start in the thread block.
const HOOKS: usize = core::mem::offset_of!(ThreadBlock, hooks);
const FILTER: usize = HOOKS + HookBlock::FILTER_OFFSET;

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

/// Has `at_end` called when the calling thread ends, after its thread-local destructors if
/// they run: through a thread-specific data key, whose destructors the C library runs for
/// every thread that ends, also for the main thread ending by `pthread_exit` while another
/// thread lives, which runs no thread-local destructors (so the runtime's per-thread capture,
/// a Rust thread-local, would never hand its counts on). Once per thread; a failure only
/// leaves that case as it was.
pub(super) fn call_at_thread_end(at_end: fn()) {
    use std::sync::OnceLock;
    /// The key, and what its destructor calls.
    type EndKey = Option<(libc::pthread_key_t, fn())>;
    static KEY: OnceLock<EndKey> = OnceLock::new();
    extern "C" fn ended(_: *mut libc::c_void) {
        if let Some(Some((_, at_end))) = KEY.get() {
            at_end();
        }
    }
    let key = KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is a valid place for the new key; `ended` is a function that may run
        // at any thread's end (it only reads `KEY`, set before any value is stored).
        (unsafe { libc::pthread_key_create(&mut key, Some(ended)) } == 0).then_some((key, at_end))
    });
    if let Some((key, _)) = key {
        // SAFETY: `key` was created above; the value is a non-null marker never dereferenced,
        // which the C library requires for the destructor to run.
        unsafe {
            libc::pthread_setspecific(*key, std::ptr::NonNull::<u8>::dangling().as_ptr().cast())
        };
    }
}

/// Calls `f` with this thread's block.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn with<R>(f: impl FnOnce(&ThreadBlock) -> R) -> R {
    BLOCK.with(f)
}

/// Calls `f` with this thread's hook block (the block outlives every use: it has no
/// destructor).
#[inline(always)]
pub(super) fn with_hooks<R>(f: impl FnOnce(&HookBlock) -> R) -> R {
    with(|b| f(&b.hooks))
}

/// Calls `f` with this thread's repeat-hit filter.
#[inline(always)]
pub(super) fn with_filter<R>(f: impl FnOnce(&Filter) -> R) -> R {
    with(|b| f(b.hooks.filter()))
}

/// Calls `f` with this thread's open regions.
#[inline(always)]
pub(super) fn with_frames<R>(f: impl FnOnce(&Frames) -> R) -> R {
    with(|b| f(&b.regions.frames))
}

/// Calls `f` with this thread's regions: its open ones and its code address cache.
#[inline(always)]
pub(super) fn with_regions<R>(f: impl FnOnce(&ThreadRegions) -> R) -> R {
    with(|b| f(&b.regions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_has_no_destructor() {
        // Off x86_64 the block is a `thread_local!`, which would register a destructor and
        // panic when the runtime's thread-end handler, run after thread-local destructors,
        // reaches it (the filter's batch is a `Box`, freed by the filter itself).
        assert!(!core::mem::needs_drop::<ThreadBlock>());
    }

    #[test]
    fn zero_bytes_are_the_empty_block_as_the_loader_gives_it() {
        // SAFETY: every field of the block is an integer, a bool, a `#[repr(u8)]` enum with a
        // variant at 0 (`ThreadState::NeedsSync`) or an `Option<Box<_>>` (`None` is the null
        // pointer) in a `Cell`, possibly in arrays, `ManuallyDrop` and plain structs, for all
        // of which zero bytes are a valid value.
        let zeroed: ThreadBlock = unsafe { core::mem::MaybeUninit::zeroed().assume_init() };
        assert!(zeroed.hooks.is_empty());
        assert!(zeroed.regions.is_empty());
        // And the predicates describe what the constructor makes.
        let empty = ThreadBlock::empty();
        assert!(empty.hooks.is_empty());
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

    #[test]
    fn the_runtime_defines_every_word_of_the_inline_abi() {
        use epcache_inline::layout::{TAG_WORD_SYMBOL, ThreadWord};
        let wanted: Vec<&str> = ThreadWord::ALL.iter().map(|w| w.symbol()).collect();
        assert_eq!(DEFINED_WORDS, wanted.as_slice());
        assert!(TAG_WORD_SYMBOL.ends_with("_tag_word"));
    }
}
