//! The process-wide words that code built by `epcache cc` reads through exported symbols: the
//! gate that dual-compiled functions look at on entry (see `dual_asm.rs` in `epcache-cc` for
//! the code that reads it), and the tag word of the inline repeat-hit test (`tag_key.rs` says
//! what it holds). Also the pointer to the segment's tool sequence that every quiet region
//! boundary reads, kept the same way: one load and a dereference, where a `OnceLock` would add
//! a test of its state.
//!
//! The gate is a pointer to a word that is nonzero while the functions' instrumented copies
//! must run (see `dual_asm.rs` in the `epcache` binary for the code that reads it). It starts at
//! a word that stays zero, so a dual-compiled program runs its plain code until the runtime
//! decides otherwise: at start-up it points the gate at the segment's
//! [`epcache_shm::layout::header::CAPTURE_HINT`] (which tools set while they arm anything), or at
//! a word that stays one when the standalone report or the explicit API wants every access.
//! Everything it can point at lives for the whole process (statics, and a segment the runtime
//! never detaches), so generated code may follow it at any time from any thread.
//!
//! The program's own `omp_get_thread_num` is reached here too, by a weak reference to its
//! symbol (as the generated code reaches these words by theirs): a thread's OpenMP number
//! names its rows in the standalone report, and a program without OpenMP leaves the reference
//! unresolved, null, and is never called.
//!
//! This module imports nothing of the runtime: every layer may read these words.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

static CLOSED: AtomicU32 = AtomicU32::new(0);
static OPEN: AtomicU32 = AtomicU32::new(1);

/// What the generated code loads: `movq epcache_capture_gate(%rip), %r11; cmpl $0, (%r11)`.
// SAFETY: the exported name is unique to epcache (its `epcache_` prefix) and the symbol is a
// pointer-sized atomic whose every value points at a live `AtomicU32`, which is all the
// generated code assumes.
#[unsafe(export_name = "epcache_capture_gate")]
static GATE: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::addr_of!(CLOSED).cast_mut());

/// The process-wide tag word (`tag_key.rs` says what it holds), under a fixed name so the
/// inline repeat-hit test ORs it into every tag it computes and takes the table's offset mask
/// from it. It starts with key 1 and no shape (the first filter to switch on sets it).
// SAFETY: the name is the runtime's own (`epcache_inline_`), so no other symbol of the
// program can clash with it.
#[unsafe(export_name = epcache_inline::abi_symbol!(tag_word))]
pub(super) static TAG_WORD: AtomicU64 = AtomicU64::new(epcache_inline::tag_word::word_of(1, 0, 0));

/// Where the gate points when no explicit switch holds it open.
static RESTING: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::addr_of!(CLOSED).cast_mut());

/// Where [`tool_sequence`] points until the segment's word is published (and again in a child
/// of `fork`): a zero word, which the armed state boundaries compare it with equals only in
/// such a child, where nothing can be armed (see `mcc::quiet`).
static NO_SEQUENCE: AtomicU32 = AtomicU32::new(0);
static SEQUENCE: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::addr_of!(NO_SEQUENCE).cast_mut());

/// The segment's tool-sequence word once published, else a word that stays zero.
#[inline(always)]
pub(crate) fn tool_sequence() -> &'static AtomicU32 {
    // SAFETY: SEQUENCE only ever holds the address of `NO_SEQUENCE` or of the segment's word,
    // which the runtime never detaches; both live as long as the process.
    unsafe { &*SEQUENCE.load(Ordering::Acquire) }
}

/// The segment's tool-sequence word, once published (region tracking started).
pub(crate) fn published_tool_sequence() -> Option<&'static AtomicU32> {
    let word = tool_sequence();
    (!std::ptr::eq(word, &NO_SEQUENCE)).then_some(word)
}

/// Makes [`tool_sequence`] the segment's word from now on.
pub(crate) fn publish_tool_sequence(word: &'static AtomicU32) {
    SEQUENCE.store(std::ptr::from_ref(word).cast_mut(), Ordering::Release);
}

/// Stops following the segment's words (in a child of `fork`, whose segment is its parent's):
/// the gate closes unless an explicit switch holds it open, and quiet boundaries compare with
/// the stand-in sequence word again.
pub(crate) fn forget_segment() {
    let closed = std::ptr::addr_of!(CLOSED).cast_mut();
    let followed = RESTING.swap(closed, Ordering::SeqCst);
    let _ = GATE.compare_exchange(followed, closed, Ordering::SeqCst, Ordering::SeqCst);
    SEQUENCE.store(
        std::ptr::addr_of!(NO_SEQUENCE).cast_mut(),
        Ordering::Release,
    );
}

fn point_at(word: &'static AtomicU32) {
    GATE.store(std::ptr::from_ref(word).cast_mut(), Ordering::SeqCst);
}

/// Makes the gate follow `word` (the segment's capture hint) from now on, and when released.
pub(crate) fn follow(word: &'static AtomicU32) {
    RESTING.store(std::ptr::from_ref(word).cast_mut(), Ordering::SeqCst);
    point_at(word);
}

/// Holds the gate open: every dual-compiled function runs instrumented.
pub(crate) fn hold_open() {
    point_at(&OPEN);
}

/// Lets the gate go back to the word it follows (or to closed).
pub(crate) fn release() {
    GATE.store(RESTING.load(Ordering::SeqCst), Ordering::SeqCst);
}

/// Whether the gate is open now.
#[cfg(test)]
pub(crate) fn is_open() -> bool {
    let word = GATE.load(Ordering::SeqCst);
    // SAFETY: GATE only ever holds pointers to the statics above or to a word of the segment,
    // which the runtime never detaches; all live as long as the process.
    unsafe { (*word).load(Ordering::SeqCst) != 0 }
}

/// The address of the program's `omp_get_thread_num` (weakly referenced: 0 when the program
/// does not link an OpenMP runtime).
// SAFETY: the body only loads the address the dynamic linker put in the GOT for the weak
// reference (or 0) into the return register and returns; it touches no memory of its own.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
extern "C" fn omp_get_thread_num_address() -> usize {
    core::arch::naked_asm!(
        ".weak omp_get_thread_num",
        "mov rax, qword ptr [rip + omp_get_thread_num@GOTPCREL]",
        "ret",
    );
}

/// The calling thread's OpenMP thread number in the innermost parallel region it is in (0
/// outside any), when the program has OpenMP.
#[cfg(target_arch = "x86_64")]
pub(super) fn openmp_thread_number() -> Option<u32> {
    let address = omp_get_thread_num_address();
    if address == 0 {
        return None;
    }
    // SAFETY: a nonzero address is where the dynamic linker resolved the weak reference to
    // `omp_get_thread_num`, which every OpenMP runtime defines as `int omp_get_thread_num(void)`
    // (OpenMP API 5.2, 3.2.4); it takes no lock and reads only the calling thread's state.
    let get: extern "C" fn() -> std::ffi::c_int = unsafe { std::mem::transmute(address) };
    u32::try_from(get()).ok()
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn openmp_thread_number() -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_follows_its_word_and_is_held_open_until_released() {
        static HINT: AtomicU32 = AtomicU32::new(0);
        follow(&HINT);
        assert!(!is_open());
        HINT.store(1, Ordering::SeqCst);
        assert!(is_open(), "a tool's hint opens it");
        HINT.store(0, Ordering::SeqCst);
        hold_open();
        assert!(is_open());
        release();
        assert!(!is_open(), "released, it follows the hint again");
    }
}
