//! The load bias of an ELF file in a running process (a PIE loads at a random base), from `/proc/PID/maps`.

use std::path::Path;

use super::SymbolError;
use super::maps::parse_maps_line;

/// How far the running copy of `exe` in process `pid` (`None`: this process) is shifted from its
/// link-time addresses: add it to a [`DebugInfo`](super::DebugInfo) address.
pub fn load_bias(pid: Option<u32>, exe: &Path, first_load_vaddr: u64) -> Result<u64, SymbolError> {
    let maps = match pid {
        Some(pid) => format!("/proc/{pid}/maps"),
        None => "/proc/self/maps".to_owned(),
    };
    let text = std::fs::read_to_string(&maps).map_err(|source| SymbolError::Io {
        path: maps.clone(),
        source,
    })?;
    let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
    let exe_text = exe.to_string_lossy();
    // `/proc/PID/exe` of a program whose file was removed reads "... (deleted)", as its
    // mappings do; a live path must not match a deleted file's mapping, whose DWARF may differ.
    let (wanted, wanted_deleted) = match exe_text.strip_suffix(" (deleted)") {
        Some(path) => (path, true),
        None => (&*exe_text, false),
    };
    // The kernel writes a newline in a mapped path as `\012`.
    let wanted = wanted.replace('\n', "\\012");
    for mapping in text.lines().filter_map(parse_maps_line) {
        if mapping.path != wanted || mapping.deleted != wanted_deleted || mapping.offset != 0 {
            continue;
        }
        // The mapping at file offset 0 holds the first loadable segment, page-aligned.
        return Ok(mapping.start.wrapping_sub(first_load_vaddr & !0xfff));
    }
    Err(SymbolError::NotMapped {
        exe: exe_text.into_owned(),
        pid: pid.map_or("self".to_owned(), |p| p.to_string()),
        maps,
    })
}
