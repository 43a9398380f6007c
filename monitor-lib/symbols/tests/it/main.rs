//! epcache-symbols' integration tests, one binary: names, sizes, lines and load biases from real
//! gcc, g++ and gfortran builds (`symbols_from_dwarf.rs`), array shapes and Fortran descriptors
//! (`array_shapes_from_dwarf.rs`), source lines with inlined calls against binutils
//! (`code_lines.rs`), COMMON blocks and empty arrays (`fortran_common.rs`), and hand-written
//! DWARF a reader must survive (`odd_dwarf.rs`), the members of an array of structures
//! (`struct_members_from_dwarf.rs`); `programs.rs` builds their
//! programs.

mod array_shapes_from_dwarf;
mod code_lines;
mod fortran_common;
mod odd_dwarf;
mod programs;
mod struct_members_from_dwarf;
mod symbols_from_dwarf;
