//! The trace block: one per segment ([`super::Table::Trace`]), where a tool asks the target to
//! record a partial data trace of a region (the MRI's "trace" request) and the target says what
//! became of it.
//!
//! A trace is recorded from the recording thread's first access, so that re-simulating it gives
//! exactly the live counts: the target reads the block once, when its start wait
//! (`EPCACHE_WAIT`) ends, before any of its threads captured anything, and while its state word
//! still says `WaitingForTool`. A request written later is never taken; the tool refuses to
//! write one unless the target waits at start, and turns one still pending once the state says
//! otherwise (the target left its wait while the tool wrote) into `Refused`: the target takes
//! orders only before it changes that state, so the tool's conclusion is never premature.
//!
//! The protocol: the tool claims the block by CAS (free or finished to `Claimed`, generation
//! plus one), writes the order, then stores `Pending` (Release). The target, when released from
//! its start wait, validates the order and moves it by CAS from `Pending` to `Recording` (or
//! stores `Failed` with a message), and once the trace is written stores the outcome words and
//! then `Written` or `Failed` (Release). The tool's late refusal is a CAS from `Pending` to
//! `Refused`, so exactly one of the two sides decides.
//!
//! Everything the target reads here is checked ([`TraceOrder::load`]): a bad word fails the
//! order with a message, never the program.

use std::sync::atomic::{AtomicU64, Ordering};

use epcache_sim::ranges::AddressRange;

use super::{LayoutError, RegionIndex};

/// Word 0: the [`TraceState`] (low 32 bits) and the generation (high 32).
pub const TRACE_STATE_WORD: usize = 0;
/// Word 1: the region index (low 32 bits) and the order's flags (high 32, [`TRACE_OVERWRITE`]).
pub(super) const TRACE_REGION_WORD: usize = 1;
/// Word 2: instances to record; 0 records every one.
pub(super) const TRACE_INSTANCES_WORD: usize = 2;
/// Word 3: accesses to record at most; 0 sets no budget.
pub(super) const TRACE_BUDGET_WORD: usize = 3;
/// Word 4: how many address ranges follow; 0 records the accesses to every data structure.
pub(super) const TRACE_RANGE_COUNT_WORD: usize = 4;
/// Words 5 to 20: the ranges, start and end of each.
pub(super) const TRACE_RANGES_WORD: usize = 5;
/// Most data structures one order selects.
pub const MAX_TRACE_RANGES: usize = 8;
/// The path's length in bytes.
pub const TRACE_PATH_LEN_WORD: usize = TRACE_RANGES_WORD + 2 * MAX_TRACE_RANGES;
/// The path's bytes, eight to a word (little-endian).
pub(super) const TRACE_PATH_WORD: usize = TRACE_PATH_LEN_WORD + 1;
/// Longest path an order carries (Linux's `PATH_MAX` less its terminating NUL).
pub const MAX_TRACE_PATH_BYTES: usize = 4095;
const PATH_WORDS: usize = MAX_TRACE_PATH_BYTES.div_ceil(8);
/// The target's outcome: accesses recorded.
pub(super) const TRACE_ACCESSES_WORD: usize = TRACE_PATH_WORD + PATH_WORDS;
/// The target's outcome: instances recorded (begun).
pub(super) const TRACE_RECORDED_INSTANCES_WORD: usize = TRACE_ACCESSES_WORD + 1;
/// The target's outcome flags: bit 0 complete, bit 1 the budget cut it short.
pub(super) const TRACE_OUTCOME_FLAGS_WORD: usize = TRACE_ACCESSES_WORD + 2;
/// The target's message's length in bytes.
pub(super) const TRACE_MESSAGE_LEN_WORD: usize = TRACE_ACCESSES_WORD + 3;
/// The target's message, eight bytes to a word.
pub(super) const TRACE_MESSAGE_WORD: usize = TRACE_ACCESSES_WORD + 4;
/// Longest message the target leaves (longer ones are cut at a character boundary).
pub const MAX_TRACE_MESSAGE_BYTES: usize = 512;
/// Words of the block.
pub const TRACE_BLOCK_WORDS: usize = TRACE_MESSAGE_WORD + MAX_TRACE_MESSAGE_BYTES / 8;

/// Order flag: replace the file if it exists.
pub(super) const TRACE_OVERWRITE: u32 = 1;
const KNOWN_FLAGS: u32 = TRACE_OVERWRITE;

const COMPLETE: u64 = 1;
const BUDGET_REACHED: u64 = 2;

/// Where a trace order is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum TraceState {
    /// Never used.
    Free = 0,
    /// A tool is writing an order.
    Claimed = 1,
    /// The order waits for the target to leave its start wait.
    Pending = 2,
    /// The target accepted it and records.
    Recording = 3,
    /// The trace file is written (the outcome says whether it holds all that was asked).
    Written = 4,
    /// The target could not record or write it (the message says why).
    Failed = 5,
    /// The tool took it back: the target had left its start wait.
    Refused = 6,
}

impl TraceState {
    /// Decodes word 0's low half.
    pub fn from_word(word: u64) -> Result<TraceState, LayoutError> {
        Ok(match word as u32 {
            0 => TraceState::Free,
            1 => TraceState::Claimed,
            2 => TraceState::Pending,
            3 => TraceState::Recording,
            4 => TraceState::Written,
            5 => TraceState::Failed,
            6 => TraceState::Refused,
            other => {
                return Err(LayoutError::BadEnum {
                    what: "trace state",
                    value: other.into(),
                });
            }
        })
    }

    /// Whether a new order may replace the block's: nothing is being asked or recorded.
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            TraceState::Free | TraceState::Written | TraceState::Failed | TraceState::Refused
        )
    }
}

/// Word 0 for `state` at `generation`.
pub fn trace_state_word(state: TraceState, generation: u32) -> u64 {
    state as u64 | u64::from(generation) << 32
}

/// The generation word 0 carries.
pub fn trace_generation(word: u64) -> u32 {
    (word >> 32) as u32
}

/// What a tool asks the target to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOrder {
    /// The region whose instances are counted.
    pub region: RegionIndex,
    /// Instances to record; 0 records every one.
    pub instances: u64,
    /// Accesses to record at most; 0 sets no budget.
    pub access_budget: u64,
    /// The data structures whose accesses are recorded; empty records every access.
    pub ranges: Vec<AddressRange>,
    /// The absolute path of the file to write.
    pub path: String,
    /// Whether an existing file may be replaced.
    pub overwrite: bool,
}

/// Why an order cannot be carried in the block (or came out of it malformed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceOrderError {
    /// Too many data structures.
    #[error(
        "{0} data structures selected; a trace order carries at most {MAX_TRACE_RANGES} (or none, for all)"
    )]
    TooManyRanges(u64),
    /// An empty or inverted range.
    #[error("data structure range {index} [{start:#x}, {end:#x}) is empty")]
    EmptyRange {
        /// Which range.
        index: usize,
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
    },
    /// A path that is not a plain absolute path of at most the length carried.
    #[error("trace path: {0}")]
    Path(String),
    /// Flags this build does not know.
    #[error(
        "trace order flags {0:#x} hold unknown bits; the segment is corrupt or from a newer epcache"
    )]
    Flags(u32),
}

impl From<TraceOrderError> for LayoutError {
    fn from(e: TraceOrderError) -> Self {
        LayoutError::BadFields { why: e.to_string() }
    }
}

/// Checks a path as an order carries it: absolute, at most [`MAX_TRACE_PATH_BYTES`], no NUL,
/// no `.` or `..` component, not ending in `/`.
pub fn check_trace_path(path: &str) -> Result<(), TraceOrderError> {
    let bad = |why: &str| Err(TraceOrderError::Path(format!("`{path}` {why}")));
    if path.len() > MAX_TRACE_PATH_BYTES {
        return bad(&format!("is longer than {MAX_TRACE_PATH_BYTES} bytes"));
    }
    if !path.starts_with('/') {
        return bad("is not absolute; give the full path of the file to write");
    }
    if path.contains('\0') {
        return bad("holds a NUL byte");
    }
    if path.ends_with('/') {
        return bad("names a directory; give a file name after it");
    }
    if path.split('/').any(|c| c == "." || c == "..") {
        return bad("has a `.` or `..` component; give the path without them");
    }
    Ok(())
}

impl TraceOrder {
    /// Checks the order's own contents (the region index is checked against the target's
    /// region table by whoever knows it).
    pub fn check(&self) -> Result<(), TraceOrderError> {
        if self.ranges.len() > MAX_TRACE_RANGES {
            return Err(TraceOrderError::TooManyRanges(self.ranges.len() as u64));
        }
        for (index, r) in self.ranges.iter().enumerate() {
            if r.end <= r.start {
                return Err(TraceOrderError::EmptyRange {
                    index,
                    start: r.start,
                    end: r.end,
                });
            }
        }
        check_trace_path(&self.path)
    }

    /// Writes the order into the block's words (not word 0, which the caller owns).
    pub fn store(&self, words: &[AtomicU64]) -> Result<(), TraceOrderError> {
        self.check()?;
        let flags = if self.overwrite { TRACE_OVERWRITE } else { 0 };
        words[TRACE_REGION_WORD].store(
            u64::from(self.region.0) | u64::from(flags) << 32,
            Ordering::Relaxed,
        );
        words[TRACE_INSTANCES_WORD].store(self.instances, Ordering::Relaxed);
        words[TRACE_BUDGET_WORD].store(self.access_budget, Ordering::Relaxed);
        words[TRACE_RANGE_COUNT_WORD].store(self.ranges.len() as u64, Ordering::Relaxed);
        for (i, r) in self.ranges.iter().enumerate() {
            words[TRACE_RANGES_WORD + 2 * i].store(r.start, Ordering::Relaxed);
            words[TRACE_RANGES_WORD + 2 * i + 1].store(r.end, Ordering::Relaxed);
        }
        words[TRACE_PATH_LEN_WORD].store(self.path.len() as u64, Ordering::Relaxed);
        store_bytes(
            &words[TRACE_PATH_WORD..TRACE_PATH_WORD + PATH_WORDS],
            self.path.as_bytes(),
        );
        Ok(())
    }

    /// Reads and checks an order from the block's words.
    pub fn load(words: &[AtomicU64]) -> Result<TraceOrder, TraceOrderError> {
        let region = words[TRACE_REGION_WORD].load(Ordering::Relaxed);
        let flags = (region >> 32) as u32;
        if flags & !KNOWN_FLAGS != 0 {
            return Err(TraceOrderError::Flags(flags));
        }
        let count = words[TRACE_RANGE_COUNT_WORD].load(Ordering::Relaxed);
        if count > MAX_TRACE_RANGES as u64 {
            return Err(TraceOrderError::TooManyRanges(count));
        }
        let ranges = (0..count as usize)
            .map(|i| AddressRange {
                start: words[TRACE_RANGES_WORD + 2 * i].load(Ordering::Relaxed),
                end: words[TRACE_RANGES_WORD + 2 * i + 1].load(Ordering::Relaxed),
            })
            .collect();
        let len = words[TRACE_PATH_LEN_WORD].load(Ordering::Relaxed);
        if len > MAX_TRACE_PATH_BYTES as u64 {
            return Err(TraceOrderError::Path(format!(
                "{len} bytes long, more than the {MAX_TRACE_PATH_BYTES} an order carries"
            )));
        }
        let bytes = load_bytes(
            &words[TRACE_PATH_WORD..TRACE_PATH_WORD + PATH_WORDS],
            len as usize,
        );
        let path = String::from_utf8(bytes)
            .map_err(|_| TraceOrderError::Path("the path is not UTF-8".into()))?;
        let order = TraceOrder {
            region: RegionIndex(region as u32),
            instances: words[TRACE_INSTANCES_WORD].load(Ordering::Relaxed),
            access_budget: words[TRACE_BUDGET_WORD].load(Ordering::Relaxed),
            ranges,
            path,
            overwrite: flags & TRACE_OVERWRITE != 0,
        };
        order.check()?;
        Ok(order)
    }
}

/// What became of a trace order, as the target leaves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceOutcome {
    /// Accesses written to the trace.
    pub accesses: u64,
    /// Instances of the region the trace holds (begun; the last may be cut by the budget).
    pub instances: u64,
    /// Whether it holds everything asked: the instances asked for (or, asked for all, every
    /// instance until the recording thread or the program ended), not cut by the budget.
    pub complete: bool,
    /// Whether the access budget ended the recording.
    pub budget_reached: bool,
    /// What went wrong, or a note; empty when nothing needs saying.
    pub message: String,
}

impl TraceOutcome {
    /// Writes the outcome words (the caller stores the state after them, with Release).
    pub fn store(&self, words: &[AtomicU64]) {
        words[TRACE_ACCESSES_WORD].store(self.accesses, Ordering::Relaxed);
        words[TRACE_RECORDED_INSTANCES_WORD].store(self.instances, Ordering::Relaxed);
        let flags = if self.complete { COMPLETE } else { 0 }
            | if self.budget_reached {
                BUDGET_REACHED
            } else {
                0
            };
        words[TRACE_OUTCOME_FLAGS_WORD].store(flags, Ordering::Relaxed);
        let mut end = self.message.len().min(MAX_TRACE_MESSAGE_BYTES);
        while !self.message.is_char_boundary(end) {
            end -= 1;
        }
        words[TRACE_MESSAGE_LEN_WORD].store(end as u64, Ordering::Relaxed);
        store_bytes(
            &words[TRACE_MESSAGE_WORD..TRACE_BLOCK_WORDS],
            &self.message.as_bytes()[..end],
        );
    }

    /// Reads the outcome words; a malformed message is replaced by one saying so.
    pub fn load(words: &[AtomicU64]) -> TraceOutcome {
        let flags = words[TRACE_OUTCOME_FLAGS_WORD].load(Ordering::Relaxed);
        let len = words[TRACE_MESSAGE_LEN_WORD].load(Ordering::Relaxed);
        let message = if len > MAX_TRACE_MESSAGE_BYTES as u64 {
            format!("(the target's message claims {len} bytes; the segment is corrupt)")
        } else {
            String::from_utf8(load_bytes(
                &words[TRACE_MESSAGE_WORD..TRACE_BLOCK_WORDS],
                len as usize,
            ))
            .unwrap_or_else(|_| "(the target's message is not UTF-8)".into())
        };
        TraceOutcome {
            accesses: words[TRACE_ACCESSES_WORD].load(Ordering::Relaxed),
            instances: words[TRACE_RECORDED_INSTANCES_WORD].load(Ordering::Relaxed),
            complete: flags & COMPLETE != 0,
            budget_reached: flags & BUDGET_REACHED != 0,
            message,
        }
    }
}

fn store_bytes(words: &[AtomicU64], bytes: &[u8]) {
    for (word, chunk) in words.iter().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        word.store(u64::from_le_bytes(b), Ordering::Relaxed);
    }
}

fn load_bytes(words: &[AtomicU64], len: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = words
        .iter()
        .take(len.div_ceil(8))
        .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
        .collect();
    bytes.truncate(len);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Vec<AtomicU64> {
        (0..TRACE_BLOCK_WORDS).map(|_| AtomicU64::new(0)).collect()
    }

    fn order() -> TraceOrder {
        TraceOrder {
            region: RegionIndex(7),
            instances: 2,
            access_budget: 1000,
            ranges: vec![AddressRange {
                start: 0x1000,
                end: 0x2000,
            }],
            path: "/tmp/dir/trace é.eppt".into(),
            overwrite: true,
        }
    }

    #[test]
    fn an_order_and_an_outcome_round_trip() {
        let words = block();
        order().store(&words).unwrap();
        assert_eq!(TraceOrder::load(&words).unwrap(), order());
        let outcome = TraceOutcome {
            accesses: 123,
            instances: 2,
            complete: true,
            budget_reached: false,
            message: "é".repeat(400),
        };
        outcome.store(&words);
        let back = TraceOutcome::load(&words);
        // Cut at a character boundary within the room.
        assert_eq!(back.message.len(), MAX_TRACE_MESSAGE_BYTES);
        assert_eq!(
            (back.accesses, back.instances, back.complete),
            (123, 2, true)
        );
        // The outcome does not touch the order.
        assert_eq!(TraceOrder::load(&words).unwrap(), order());
    }

    #[test]
    fn bad_words_are_refused_never_trusted() {
        let words = block();
        order().store(&words).unwrap();
        words[TRACE_PATH_LEN_WORD].store(u64::MAX, Ordering::Relaxed);
        assert!(matches!(
            TraceOrder::load(&words),
            Err(TraceOrderError::Path(_))
        ));
        order().store(&words).unwrap();
        words[TRACE_RANGE_COUNT_WORD].store(9, Ordering::Relaxed);
        assert_eq!(
            TraceOrder::load(&words),
            Err(TraceOrderError::TooManyRanges(9))
        );
        order().store(&words).unwrap();
        words[TRACE_RANGES_WORD + 1].store(0x1000, Ordering::Relaxed);
        assert!(matches!(
            TraceOrder::load(&words),
            Err(TraceOrderError::EmptyRange { .. })
        ));
        order().store(&words).unwrap();
        words[TRACE_REGION_WORD].store(7 | 0x80 << 32, Ordering::Relaxed);
        assert_eq!(TraceOrder::load(&words), Err(TraceOrderError::Flags(0x80)));
        // A path the tool did not check: relative, `..`, invalid UTF-8.
        for (bytes, why) in [
            (&b"rel/t.eppt"[..], "absolute"),
            (&b"/tmp/../etc/t"[..], ".."),
            (&b"/tmp/\xff"[..], "UTF-8"),
            (&b"/tmp/"[..], "directory"),
        ] {
            order().store(&words).unwrap();
            words[TRACE_PATH_LEN_WORD].store(bytes.len() as u64, Ordering::Relaxed);
            store_bytes(&words[TRACE_PATH_WORD..], bytes);
            let e = TraceOrder::load(&words).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        words[TRACE_STATE_WORD].store(99, Ordering::Relaxed);
        assert!(TraceState::from_word(words[0].load(Ordering::Relaxed)).is_err());
        words[TRACE_MESSAGE_LEN_WORD].store(1 << 40, Ordering::Relaxed);
        assert!(TraceOutcome::load(&words).message.contains("corrupt"));
    }
}
