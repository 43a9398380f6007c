//! The tool's side of the trace block (`layout::TraceOrder`): ask a target waiting at its start
//! to record a partial trace, read what became of it, and take back an order the target left
//! behind when it went on before taking it.

use std::sync::atomic::Ordering;

use super::{TargetHandle, ToolError};
use crate::layout::{
    self, TRACE_STATE_WORD, Table, TargetState, TraceOrder, TraceOutcome, TraceState,
    trace_generation, trace_state_word,
};

/// An order placed: the generation that tells it apart from later ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceHandle {
    /// The block's generation the order was written with.
    pub generation: u32,
}

/// Where an order is, and what the target said of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceStatus {
    /// The block's state.
    pub state: TraceState,
    /// The target's outcome; meaningful once `Written` or `Failed`.
    pub outcome: TraceOutcome,
    /// The order as the block holds it; `None` if its words do not check.
    pub order: Option<TraceOrder>,
}

impl TargetHandle {
    fn trace_words(&self) -> Result<&[std::sync::atomic::AtomicU64], ToolError> {
        self.layout
            .entry_words(self.segment.view(), Table::Trace, 0)
            .map_err(|e| self.corrupt(e))
    }

    /// Asks the target, which must be waiting at its start, to record `order` once released.
    /// The region index is checked here; the target checks everything again.
    pub fn start_trace(&self, order: &TraceOrder) -> Result<TraceHandle, ToolError> {
        let count = self.count(Table::Regions, layout::header::REGION_COUNT)?;
        if order.region.0 as usize >= count {
            return Err(ToolError::NoSuchRegion {
                index: order.region.0,
                count,
            });
        }
        order
            .check()
            .map_err(|e| ToolError::InvalidRequest { why: e.to_string() })?;
        let target = self.state()?;
        if target != TargetState::WaitingForTool {
            return Err(ToolError::TraceNotAtStart {
                pid: self.pid,
                state: target,
            });
        }
        let words = self.trace_words()?;
        let head = words[TRACE_STATE_WORD].load(Ordering::Acquire);
        let state = TraceState::from_word(head).map_err(|e| self.corrupt(e))?;
        if !state.is_settled() {
            return Err(ToolError::TraceBusy {
                pid: self.pid,
                state,
            });
        }
        let generation = trace_generation(head).wrapping_add(1);
        if words[TRACE_STATE_WORD]
            .compare_exchange(
                head,
                trace_state_word(TraceState::Claimed, generation),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return Err(ToolError::TraceBusy {
                pid: self.pid,
                state: TraceState::Claimed,
            });
        }
        if let Err(e) = order.store(words) {
            words[TRACE_STATE_WORD].store(
                trace_state_word(TraceState::Refused, generation),
                Ordering::Release,
            );
            return Err(ToolError::InvalidRequest { why: e.to_string() });
        }
        // Release: the target that sees Pending (Acquire) sees the order.
        words[TRACE_STATE_WORD].store(
            trace_state_word(TraceState::Pending, generation),
            Ordering::Release,
        );
        let handle = TraceHandle { generation };
        // The target may have left its wait while the order was written: then it never takes
        // it, and the order is taken back at once.
        let now = self.state()?;
        if now != TargetState::WaitingForTool && self.refuse_trace(handle)? {
            return Err(ToolError::TraceNotAtStart {
                pid: self.pid,
                state: now,
            });
        }
        Ok(handle)
    }

    /// Where the order `handle` is; `None` once a later order replaced it.
    pub fn trace_status(&self, handle: TraceHandle) -> Result<Option<TraceStatus>, ToolError> {
        let words = self.trace_words()?;
        let head = words[TRACE_STATE_WORD].load(Ordering::Acquire);
        if trace_generation(head) != handle.generation {
            return Ok(None);
        }
        let state = TraceState::from_word(head).map_err(|e| self.corrupt(e))?;
        Ok(Some(TraceStatus {
            state,
            outcome: TraceOutcome::load(words),
            order: TraceOrder::load(words).ok(),
        }))
    }

    /// Takes back the order `handle` if the target has not taken it; `true` when it did so,
    /// `false` when the target took it first (or it is no longer pending).
    pub fn refuse_trace(&self, handle: TraceHandle) -> Result<bool, ToolError> {
        let words = self.trace_words()?;
        Ok(words[TRACE_STATE_WORD]
            .compare_exchange(
                trace_state_word(TraceState::Pending, handle.generation),
                trace_state_word(TraceState::Refused, handle.generation),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok())
    }
}
