//! The runtime's one MCC: created at process start unless `EPCACHE_MCC=off`, published with the
//! simulated model, finished at exit so a waiting tool learns of it at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::shm::target::{Mcc, MccError, MccOptions};

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
    super::gate_abi::forget_segment();
}

/// Creates the segment and its discovery record, unless switched off; says on stderr why not
/// when it cannot, and the program runs on unmonitored by tools.
pub(crate) fn create(cache_spec: &str, counters: u32) -> Option<&'static Mcc> {
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
                if let Err(e) = mcc.publish_model(cache_spec, counters) {
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
        super::gate_abi::publish_tool_sequence(word);
    }
}

/// Says once that a table of the segment is full: later regions or structures stay local.
pub(crate) fn full_once(e: &MccError) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("epcache: {e}; tools will not see what did not fit");
    }
}
