//! `epcache cc -- <compiler command line>`: a drop-in `CC`, `CXX` or `FC` that builds a program
//! whose loads and stores feed epcache's simulator. The `epcache` command line's `cc`
//! subcommand and its `demo` are this crate's callers.
//!
//! A source compiled to an object is built twice, plainly and with `-fsanitize=thread -g` (so
//! gcc, g++ and gfortran call the TSan entry points), and the two assembly listings are merged
//! into one object in which each function chooses its copy at entry (see `dual_asm.rs`): the
//! program runs plain code until a tool arms something. Where the merge cannot be done safely the
//! source is built instrumented only, with a note on stderr; `EPCACHE_CC_DUAL=off` asks for that
//! everywhere. Link steps get epcache's static runtime (which defines the entry points) instead
//! of libtsan. A command that compiles and links at once is split: each source is compiled into a
//! temporary object, then the objects are linked, because gcc's driver links libtsan whenever
//! `-fsanitize=thread` reaches it.
//!
//! Layout:
//! - [`compile`] (`driver.rs`): one compiler command classified (query, compile, link or both),
//!   rewritten and run; the runtime library it links; the header and Fortran module it puts on
//!   the include path (from `epcache-include`);
//! - `command_line.rs`: response files expanded and equivalent spellings made one, before the
//!   command is classified;
//! - `dual_asm.rs`: the plain and instrumented listings merged into one object whose functions
//!   choose their copy at entry;
//! - `inline_capture.rs`: the inline repeat-hit test put in front of access hook calls (the
//!   sequence itself is `epcache-inline`'s);
//! - `carried_registers.rs`: which inline sites find the tag word and mask still in registers,
//!   over `asm_tokens.rs`, the symbols of an assembler line (shared with `dual_asm.rs`);
//! - `runtime_names.rs`: the runtime's variable, file and system libraries, by name;
//! - [`CcError`] (`error.rs`): why a command could not be run.
//!
//! Architecture Invariant: the driver never links the runtime into itself and reads nothing of
//! another crate's folder: the runtime is found at run time (`EPCACHE_RUNTIME`, else beside the
//! `epcache` binary or in its build's `deps/`), the header and module come from
//! `epcache-include`, and the inline sequence and the thread-block words it names from
//! `epcache-inline`. Every rewrite it cannot do safely falls back to a plainer build with a note
//! on stderr, never to a wrong one.

#![forbid(unsafe_code)]

mod asm_tokens;
mod carried_registers;
mod command_line;
mod driver;
mod dual_asm;
mod error;
mod inline_capture;
mod runtime_names;

pub use driver::{DUAL_ENV, compile, compile_os_args};
pub use error::CcError;
pub use inline_capture::INLINE_ENV;
pub use runtime_names::{RUNTIME_ENV, RUNTIME_FILE};
