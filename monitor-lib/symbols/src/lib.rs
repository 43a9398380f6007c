//! Unsafe code: mapping the running executable read-only, in `running_executable.rs` only.
//!
//! Names for addresses, from ELF and DWARF: globals and statics by the names the programmer
//! wrote (with their array shapes, or where a Fortran descriptor keeps them), and functions with
//! their file and line. The runtime reads its own executable and the shared libraries that call
//! its hooks at start-up; tools use the same reader on a program's file.
//!
//! Layout:
//! - [`DebugInfo`] (`debug_info.rs`): one ELF file's global variables and functions, names and
//!   scopes from DWARF, exact sizes from the symbol table;
//! - `dwarf_types.rs`: a DWARF type's size and an array dimension's count, which the three
//!   readers of types below share;
//! - `allocated_objects.rs`: the arrays one source line allocates (`allocate(t(n), tnew(n))`),
//!   which name the blocks of a statement that allocates several;
//! - `allocation_wrappers.rs`: which functions only pass an allocation on (the default rule
//!   behind [`DebugInfo::allocation_wrappers`]);
//! - `array_type.rs`: what a variable's array type says: a fixed shape, or how to evaluate a
//!   descriptor ([`ArrayDescriptor`], [`evaluate`]);
//! - [`CodeLines`] (`code_lines.rs`): code addresses to source lines with their chain of inlined
//!   calls, through the `addr2line` crate (per-line attribution of misses);
//! - `derived_components.rs`: a Fortran derived-type variable's ALLOCATABLE and POINTER
//!   components, each a variable of its own (`rho%val`) with its descriptor;
//! - `overloads.rs`: C++ overloads named with their parameter lists (`sum(const double*)`)
//!   where their name alone would be shared;
//! - `element_members.rs`: the members of an array's structure element, by name, offset and
//!   size ([`Member`], [`GlobalVariable::members`]), which a by-field request buckets by, and
//!   the structure a variable's pointer, ALLOCATABLE or C++ container holds
//!   ([`DebugInfo::variable_element_types`]), for a heap block;
//! - [`calls_capture_hooks`] and [`defines_capture_runtime`] (`capture_hooks.rs`): the cheap
//!   test, on dynamic symbols alone, of whether an object takes part in capture;
//! - [`load_bias`] and [`parse_maps_line`] (`load_bias.rs`, `maps.rs`): where a file is loaded
//!   in a running process, from `/proc/PID/maps`;
//! - `running_executable.rs`: `/proc/self/exe` mapped read-only, so start-up does not copy the
//!   runtime's own line tables.
//!
//! Architecture Invariant: reading never trusts the file: malformed DWARF or ELF is a
//! [`SymbolError`] naming the file, never a panic. Only `running_executable.rs` holds unsafe
//! code (`mmap`, `fstatfs`, `munmap`).

#![deny(unsafe_code)]

mod allocated_objects;
mod allocation_wrappers;
mod array_type;
mod capture_hooks;
mod code_lines;
mod debug_info;
mod derived_components;
mod dwarf_types;
mod element_members;
mod load_bias;
mod maps;
mod overloads;
#[allow(unsafe_code)]
mod running_executable;

pub use allocated_objects::{
    allocated_objects, growing_calls, is_fortran_source, named_allocations,
};
pub use allocation_wrappers::rel32_target;
pub use array_type::{
    ArrayDescriptor, ArrayShape, DescribedArray, DescriptorDim, DescriptorOp, DescriptorValue,
    Extent, ReadWord, evaluate,
};
pub use capture_hooks::{calls_capture_hooks, defines_capture_runtime};
pub use code_lines::{CodeLines, SourceFrame};
pub use debug_info::{
    ChainPosition, DebugInfo, Function, GlobalVariable, LineRow, VariableElement, is_program_unit,
};
pub use element_members::{MAX_MEMBERS, Member, StructureType};
pub use load_bias::load_bias;
pub use maps::{Mapping, parse_maps_line};

/// Why symbols could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an ELF file epcache can read: {why}")]
    Object { path: String, why: String },
    #[error(
        "{path} has no DWARF debug information; build it with -g to name its data structures and regions (a Rust crate with `-g -Cstrip=none`, or `debug = true` in its release profile: cargo strips release builds)"
    )]
    NoDebugInfo { path: String },
    #[error("malformed DWARF in {path}: {why}")]
    Dwarf { path: String, why: String },
    #[error("{exe} is not mapped in process {pid} (read from {maps}); is the pid right?")]
    NotMapped {
        exe: String,
        pid: String,
        maps: String,
    },
}
