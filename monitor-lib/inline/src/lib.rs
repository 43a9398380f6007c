//! The inline capture sequence, in one place: what `epcache cc` writes in front of each call to
//! a fixed-size TSan access hook (`__tsan_read8`, `__tsan_unaligned_write2`, ...) in the
//! instrumented copy of a function, and what the runtime it links against must hold for that
//! sequence to count exactly what the call would have.
//!
//! The sequence tests whether the access repeats a hit on one of its L1 set's most recent lines
//! by reading the thread's repeat-hit table (`capture/filter.rs` in `epcache-monitor`) at
//! thread-local addresses, counts the hit, takes the entry over and appends a record to the
//! thread's batch on a miss it can handle, and falls through to the original call otherwise.
//! Both sides depend on the same words: the runtime defines them, the sequence reads and writes
//! them. This crate is the only place their layout, names and meaning are written down, and
//! both take them from here, so a change one side does not follow fails to compile or fails a
//! test.
//!
//! Layout:
//! - [`tag_word`]: the process-wide tag word's fields (line bits, key, the table's offset mask)
//!   and how a tag and an entry's offset are made from it;
//! - [`order`]: an entry's recency order of its lines in one byte, and the tables that update
//!   it;
//! - [`layout`]: the thread-local words the sequence reads and writes, their symbols (versioned
//!   by `layout::ABI_VERSION`), a table entry's words, a batch record's words and the meta byte,
//!   the whole-line cache;
//! - [`emit`]: the sequence as AT&T assembly, every variant (access size, read or write, what the
//!   registers carry from an earlier site), and which hook calls get one;
//! - [`model`]: what a site does, in plain Rust over any memory holding those words: the path it
//!   takes and what it writes. The runtime's tests run it over its table, and this crate's
//!   tests run the assembled sequence against it (`tests/it/differential.rs`).
//!
//! Architecture Invariant: this crate has no unsafe code and no dependencies; it runs nothing
//! and touches no memory of a program. The runtime's block is laid out by the Rust compiler and
//! named to the sequence by link-time symbols (`capture/thread_block.rs`); what the sequence
//! assumes about that layout (an entry's size and the place of its words, each word's size)
//! the runtime checks against [`layout`], at compile time where `offset_of!` can, else in its
//! tests.

#![forbid(unsafe_code)]

pub mod emit;
pub mod layout;
pub mod model;
pub mod order;
pub mod tag_word;
