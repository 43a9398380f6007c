//! The target's side of the trace block (`layout::TraceOrder`): take the order a tool left while
//! the program waited at its start, and say what became of it.

use std::sync::atomic::Ordering;

use super::Mcc;
use crate::layout::{
    self, TRACE_STATE_WORD, Table, TraceOrder, TraceOutcome, TraceState, trace_generation,
    trace_state_word,
};

/// An order the target took: it is `Recording` now, and the target must end it with
/// [`Mcc::trace_ended`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenTrace {
    /// The order, checked.
    pub order: TraceOrder,
    /// The traced region's name, for messages.
    pub region_name: String,
    /// The block's generation, for [`Mcc::trace_ended`].
    pub generation: u32,
}

impl Mcc {
    /// The trace order taken when the start wait ended, once: `None` when there was none (or
    /// the tool took it back first, or the program did not wait), `Some(Err(why))` when it was
    /// malformed (it is then `Failed` with `why`, and nothing is recorded).
    pub fn taken_trace(&self) -> Option<Result<TakenTrace, String>> {
        self.taken_trace
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Takes the pending trace order, if a tool left one (see [`Mcc::taken_trace`]). The start
    /// wait calls it as it ends, while the state still says `WaitingForTool`.
    pub(super) fn take_trace_order(&self) -> Option<Result<TakenTrace, String>> {
        let view = self.segment.view();
        let words = self.layout.entry_words(view, Table::Trace, 0).ok()?;
        let head = words[TRACE_STATE_WORD].load(Ordering::Acquire);
        if TraceState::from_word(head) != Ok(TraceState::Pending) {
            return None;
        }
        let generation = trace_generation(head);
        // Decided by CAS: the tool may be taking it back at the same moment.
        words[TRACE_STATE_WORD]
            .compare_exchange(
                head,
                trace_state_word(TraceState::Recording, generation),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .ok()?;
        let checked = TraceOrder::load(words)
            .map_err(|e| e.to_string())
            .and_then(|order| {
                let regions = self.tables().regions as usize;
                if order.region.0 as usize >= regions {
                    return Err(format!(
                        "region {} does not exist (the program has {regions})",
                        order.region.0
                    ));
                }
                let name = layout::read_region(view, &self.layout, order.region.0 as usize)
                    .map_err(|e| e.to_string())?
                    .name;
                Ok(TakenTrace {
                    order,
                    region_name: name,
                    generation,
                })
            });
        if let Err(why) = &checked {
            self.trace_ended(
                generation,
                &TraceOutcome {
                    message: format!("the trace order is malformed: {why}; nothing is recorded"),
                    ..TraceOutcome::default()
                },
                false,
            );
        }
        Some(checked)
    }

    /// Says what became of the order of `generation`: `written` (the file is there) or not,
    /// with `outcome`. Does nothing if the block moved on to another order.
    pub fn trace_ended(&self, generation: u32, outcome: &TraceOutcome, written: bool) {
        let view = self.segment.view();
        let Ok(words) = self.layout.entry_words(view, Table::Trace, 0) else {
            return;
        };
        let recording = trace_state_word(TraceState::Recording, generation);
        if words[TRACE_STATE_WORD].load(Ordering::Acquire) != recording {
            return;
        }
        outcome.store(words);
        let state = if written {
            TraceState::Written
        } else {
            TraceState::Failed
        };
        // Release: a tool that sees the state sees the outcome.
        words[TRACE_STATE_WORD].store(trace_state_word(state, generation), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{RegionIndex, RegionKind, TargetState};
    use crate::target::MccOptions;
    use crate::tool::{TargetHandle, ToolError};

    fn order(path: &str) -> TraceOrder {
        TraceOrder {
            region: RegionIndex(0),
            instances: 2,
            access_budget: 0,
            ranges: Vec::new(),
            path: path.into(),
            overwrite: false,
        }
    }

    /// The whole exchange over a real segment: refused unless the target waits at start, one
    /// order at a time, taken once, its outcome read back; a late order is taken back by the
    /// tool and never by the target; a forged order fails with a message, not the program.
    #[test]
    fn a_trace_order_is_taken_once_at_start_and_its_outcome_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mcc = Mcc::create(MccOptions {
            program: "trace-order".into(),
            runtime_dir: Some(dir.path().to_owned()),
            ..MccOptions::default()
        })
        .unwrap();
        mcc.register_region(1, 20, RegionKind::Function, "kernel", "k.c")
            .unwrap();
        let tool = TargetHandle::attach(mcc.shm_id()).unwrap();
        assert!(matches!(
            tool.start_trace(&order("/tmp/t.eppt")),
            Err(ToolError::TraceNotAtStart {
                state: TargetState::Starting,
                ..
            })
        ));
        mcc.set_state(TargetState::WaitingForTool);
        assert!(matches!(
            tool.start_trace(&TraceOrder {
                region: RegionIndex(1),
                ..order("/tmp/t.eppt")
            }),
            Err(ToolError::NoSuchRegion { index: 1, count: 1 })
        ));
        let e = tool.start_trace(&order("t.eppt")).unwrap_err();
        assert!(e.to_string().contains("absolute"), "{e}");

        let handle = tool.start_trace(&order("/tmp/t.eppt")).unwrap();
        assert!(matches!(
            tool.start_trace(&order("/tmp/u.eppt")),
            Err(ToolError::TraceBusy { .. })
        ));
        let taken = mcc.take_trace_order().unwrap().unwrap();
        assert_eq!(taken.region_name, "kernel");
        assert_eq!(taken.order, order("/tmp/t.eppt"));
        assert!(mcc.take_trace_order().is_none(), "taken once");
        assert!(!tool.refuse_trace(handle).unwrap(), "the target took it");
        let status = tool.trace_status(handle).unwrap().unwrap();
        assert_eq!(status.state, TraceState::Recording);
        let outcome = TraceOutcome {
            accesses: 42,
            instances: 2,
            complete: true,
            budget_reached: false,
            message: String::new(),
        };
        mcc.trace_ended(taken.generation, &outcome, true);
        let status = tool.trace_status(handle).unwrap().unwrap();
        assert_eq!(
            (status.state, status.outcome),
            (TraceState::Written, outcome)
        );
        assert_eq!(status.order, Some(order("/tmp/t.eppt")));

        // Late: the tool takes it back, and the target, released afterwards, finds nothing;
        // an order placed once the target runs is refused at once.
        let late = tool.start_trace(&order("/tmp/v.eppt")).unwrap();
        assert!(tool.trace_status(handle).unwrap().is_none(), "replaced");
        assert!(tool.refuse_trace(late).unwrap());
        assert!(mcc.take_trace_order().is_none());
        assert_eq!(
            tool.trace_status(late).unwrap().unwrap().state,
            TraceState::Refused
        );
        mcc.set_state(TargetState::Running);
        assert!(matches!(
            tool.start_trace(&order("/tmp/v.eppt")),
            Err(ToolError::TraceNotAtStart { .. })
        ));
        mcc.set_state(TargetState::WaitingForTool);

        // Forged after the tool's checks: the target fails it and says why.
        let forged = tool.start_trace(&order("/tmp/w.eppt")).unwrap();
        let words = mcc
            .layout
            .entry_words(mcc.segment.view(), Table::Trace, 0)
            .unwrap();
        words[layout::TRACE_PATH_LEN_WORD].store(1 << 20, Ordering::Relaxed);
        assert!(mcc.take_trace_order().unwrap().is_err());
        let status = tool.trace_status(forged).unwrap().unwrap();
        assert_eq!(status.state, TraceState::Failed);
        assert!(status.outcome.message.contains("malformed"), "{status:?}");
    }

    /// The start wait takes the order as it ends, before the state says `Running`, and the
    /// runtime gets it once.
    #[test]
    fn the_start_wait_takes_the_order_before_the_program_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mcc = std::sync::Arc::new(
            Mcc::create(MccOptions {
                program: "trace-wait".into(),
                runtime_dir: Some(dir.path().to_owned()),
                ..MccOptions::default()
            })
            .unwrap(),
        );
        mcc.register_region(1, 20, RegionKind::Function, "kernel", "k.c")
            .unwrap();
        let tool = TargetHandle::attach(mcc.shm_id()).unwrap();
        let waiting = std::sync::Arc::clone(&mcc);
        let waiter =
            std::thread::spawn(move || waiting.wait_for_tool(std::time::Duration::from_secs(30)));
        while tool.state().unwrap() != TargetState::WaitingForTool {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let handle = tool.start_trace(&order("/tmp/t.eppt")).unwrap();
        tool.release().unwrap();
        assert_eq!(waiter.join().unwrap(), crate::target::HaltOutcome::Released);
        assert_eq!(
            tool.trace_status(handle).unwrap().unwrap().state,
            TraceState::Recording
        );
        assert_eq!(mcc.taken_trace().unwrap().unwrap().region_name, "kernel");
        assert!(mcc.taken_trace().is_none());
    }
}
