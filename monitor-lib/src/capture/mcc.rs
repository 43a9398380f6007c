//! The runtime's one MCC: created at process start unless `EPCACHE_MCC=off`, published with the
//! simulated model, finished at exit so a waiting tool learns of it at once; and what its tools
//! have armed, as region boundaries see it.
//!
//! A region boundary with nothing armed must cost a few loads (`boundaries.rs`): so the runtime
//! remembers the tool sequence it last looked at ([`quiet`] compares it with the segment's,
//! reached through `gate_abi.rs`), and looks at the request slots and the halting point again
//! only when a tool has bumped the sequence ([`armed`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use epcache_shm::layout::PublishedModel;
use epcache_shm::target::{Mcc, MccError, MccOptions};

use super::{gate_abi, switches};

/// Environment variable that switches the segment off (`off`, `0`, `no`).
pub const MCC_ENV: &str = "EPCACHE_MCC";

static MCC: OnceLock<Option<Mcc>> = OnceLock::new();
/// Set in a child that `fork` made: the segment it inherited is the parent's.
static PARENTS: AtomicBool = AtomicBool::new(false);

/// The MCC, once [`create`] ran and succeeded, and only in the process that created it.
#[inline]
pub(crate) fn get() -> Option<&'static Mcc> {
    if PARENTS.load(Ordering::Relaxed) {
        return None;
    }
    MCC.get().and_then(Option::as_ref)
}

/// In a child of `fork`: leaves the inherited segment to the parent. The child publishes no
/// regions or results into it, halts at none of its halting points, and never finishes it;
/// dual-compiled code and quiet boundaries stop reading its words. The attachment itself stays
/// until the child execs or exits (the words the gate pointed at must stay mapped).
pub(crate) fn leave_to_parent() {
    PARENTS.store(true, Ordering::Relaxed);
    gate_abi::forget_segment();
}

/// Creates the segment and its discovery record, unless switched off; says on stderr why not
/// when it cannot, and the program runs on unmonitored by tools.
pub(crate) fn create(model: &PublishedModel) -> Option<&'static Mcc> {
    MCC.get_or_init(|| {
        let off = std::env::var(MCC_ENV)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no"));
        if off {
            return None;
        }
        let program = std::fs::read_link("/proc/self/exe")
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".into());
        let options = MccOptions {
            program,
            ..MccOptions::default()
        };
        match Mcc::create(options) {
            Ok(mcc) => {
                // Tools wait while the state says `Starting`, as `Mcc::create` leaves it; the
                // caller ends it (`Mcc::ready`) once regions and data structures are registered.
                if let Err(e) = mcc.publish_model(model) {
                    eprintln!("epcache: cannot publish the cache model to tools: {e}");
                }
                Some(mcc)
            }
            Err(e) => {
                eprintln!(
                    "epcache: no segment for tools ({e}); the program runs without remote monitoring (set {MCC_ENV}=off to silence this)"
                );
                None
            }
        }
    })
    .as_ref()
}

/// Hands the region boundaries the tool-sequence word (once region tracking starts): until
/// then `gate_abi::tool_sequence` is a stand-in and every boundary takes the slow path.
pub(crate) fn publish_tool_sequence() {
    if let Some(word) = get().and_then(Mcc::tool_sequence) {
        gate_abi::publish_tool_sequence(word);
    }
}

/// Says once that a table of the segment is full: later regions or structures stay local.
pub(crate) fn full_once(e: &MccError) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!(
            "epcache: {e}: tools (epcache request, describe) will not see the regions or data structures that did not fit; the program's own report (epcache run --all-regions, EPCACHE_REPORT) still counts them"
        );
    }
}

/// What the runtime last found about the tool's wishes: the tool sequence it looked at (zero
/// extended) when nothing was armed; that sequence with [`ARMED`] set when a request or a
/// halting point was there; [`UNKNOWN`] before the first look and after a halt; [`HALTING`]
/// during a halt. A boundary
/// compares this word with the segment's sequence: equal means nothing is armed, and the
/// boundary only keeps the thread's stack of open regions.
static ARMED_AT: AtomicU64 = AtomicU64::new(UNKNOWN);
const ARMED: u64 = 1 << 33;
const UNKNOWN: u64 = u64::MAX;
/// While a thread is halted at a halting point: no sequence equals it, so every boundary of
/// every thread takes the slow path, where a thread stops while another is halted
/// (`boundaries.rs`), and [`armed`] leaves it in place.
const HALTING: u64 = u64::MAX - 1;

/// Whether nothing is armed: no request waits or is served, no halting point or step is set,
/// and the standalone report is off. One load of the segment's tool sequence and one of
/// [`ARMED_AT`]; a tool that changes anything bumps the sequence, so the next boundary of
/// every thread takes the slow path and [`armed`] looks again. Until region tracking started
/// the word read is a stand-in and `ARMED_AT` is [`UNKNOWN`], which no 32-bit sequence
/// equals (every boundary slow), so a quiet boundary implies tracking. (A child of `fork`
/// compares the stand-in with zero: tracking, and nothing can be armed.)
#[inline(always)]
pub(super) fn quiet() -> bool {
    let seq = gate_abi::tool_sequence().load(Ordering::Relaxed);
    ARMED_AT.load(Ordering::Relaxed) == u64::from(seq)
}

/// Whether anything is armed, looking at the request slots and the halting point only when the
/// tool sequence moved since the last look.
#[inline(never)]
pub(super) fn armed() -> bool {
    if switches::standalone() || switches::trace_asked() {
        return true;
    }
    // No segment of this process's own (switched off, or the parent's after a fork): no tool
    // can arm anything here, and the standalone report was looked at above.
    let (Some(m), Some(seq)) = (get(), gate_abi::published_tool_sequence()) else {
        return false;
    };
    // Acquire: whatever the tool changed before this bump is seen by the look below. A change
    // after it bumps the sequence again, so a look that missed it is never taken as current.
    let now = u64::from(seq.load(Ordering::Acquire));
    let known = ARMED_AT.load(Ordering::Relaxed);
    if known != UNKNOWN && known & !ARMED == now {
        return known & ARMED != 0;
    }
    let armed = m.anything_armed();
    // Only over what was looked at: a halt that began meanwhile keeps its word.
    if known != HALTING {
        let _ = ARMED_AT.compare_exchange(
            known,
            if armed { now | ARMED } else { now },
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    armed
}

/// A thread is about to halt: every boundary of every thread takes the slow path until
/// [`look_again`] (see [`HALTING`]).
pub(super) fn hold_slow_paths() {
    ARMED_AT.store(HALTING, Ordering::Relaxed);
}

/// In a child of `fork`, which has left the segment to its parent and makes no report: nothing
/// can be armed any more, and the stand-in sequence word (zero) says so to quiet boundaries.
pub(super) fn nothing_armed_from_now() {
    ARMED_AT.store(0, Ordering::Relaxed);
}

/// The target halted at a boundary (which disarmed the halting point it matched): look again at
/// the next one, rather than keep the slow path until the tool changes something.
pub(super) fn look_again() {
    ARMED_AT.store(UNKNOWN, Ordering::Relaxed);
}
