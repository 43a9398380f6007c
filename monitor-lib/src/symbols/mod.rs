//! Names for addresses: globals and statics by the names the programmer wrote, and functions with their file and line, from ELF and DWARF.

mod array_type;
mod capture_hooks;
mod debug_info;
mod load_bias;
mod maps;
#[allow(unsafe_code)]
mod running_executable;

pub use array_type::{
    ArrayDescriptor, ArrayShape, DescribedArray, DescriptorDim, DescriptorOp, DescriptorValue,
    Extent, ReadWord, evaluate,
};
pub use capture_hooks::{calls_capture_hooks, defines_capture_runtime};
pub use debug_info::{DebugInfo, Function, GlobalVariable, LineRow, is_program_unit};
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
