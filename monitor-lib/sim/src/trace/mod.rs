//! Access traces: Valgrind lackey logs, epcache's compact binary format, and partial data
//! traces.
//!
//! Lackey and `.epct` yield the same [`TraceRecord`]s, so replay does not care where a trace
//! came from; a partial trace ([`partial`]) holds data accesses with their code addresses,
//! compressed into regular section descriptors.

pub mod epct;
pub mod lackey;
pub mod partial;

pub use epct::{EpctError, EpctReader, EpctWriter};
pub use lackey::{LackeyError, LackeyReader};

/// What one traced memory operation was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceKind {
    /// An instruction fetch (lackey's `I`).
    Instr,
    /// A data load (`L`).
    Load,
    /// A data store (`S`).
    Store,
    /// A load and a store of the same bytes by one instruction (`M`), such as `add [mem], reg`.
    Modify,
}

impl TraceKind {
    /// Whether the record belongs to the instruction stream rather than the data stream.
    #[inline]
    pub fn is_instr(self) -> bool {
        self == TraceKind::Instr
    }
}

/// One traced memory operation: `size` bytes at `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceRecord {
    pub kind: TraceKind,
    pub addr: u64,
    pub size: u32,
}

/// Passes one item of a record stream on, and marks the stream finished at its end or at its
/// first error: after a malformed record the position in the input means nothing, so both
/// readers stop there rather than guess where the next record starts.
pub(crate) fn end_at_error<T, E>(
    item: Option<Result<T, E>>,
    finished: &mut bool,
) -> Option<Result<T, E>> {
    if !matches!(item, Some(Ok(_))) {
        *finished = true;
    }
    item
}
