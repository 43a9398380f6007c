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
    // The path as given first (the runtime's is `/proc/self/exe` read, canonical already), then
    // canonicalised: `realpath` allocates from the C library's heap, whose layout the monitored
    // program's arrays must find as they would without the runtime.
    let found = bias_in(&text, &exe.to_string_lossy(), first_load_vaddr).or_else(|| {
        let canonical = std::fs::canonicalize(exe).ok()?;
        bias_in(&text, &canonical.to_string_lossy(), first_load_vaddr)
    });
    found.ok_or_else(|| SymbolError::NotMapped {
        exe: exe.to_string_lossy().into_owned(),
        pid: pid.map_or("self".to_owned(), |p| p.to_string()),
        maps,
    })
}

/// The load bias of the file at `exe_text` among the mappings of `maps`, if it is mapped.
fn bias_in(maps: &str, exe_text: &str, first_load_vaddr: u64) -> Option<u64> {
    // `/proc/PID/exe` of a program whose file was removed reads "... (deleted)", as its
    // mappings do; a live path must not match a deleted file's mapping, whose DWARF may differ.
    let (wanted, wanted_deleted) = match exe_text.strip_suffix(" (deleted)") {
        Some(path) => (path, true),
        None => (exe_text, false),
    };
    // The kernel writes a newline in a mapped path as `\012`.
    let wanted = wanted.replace('\n', "\\012");
    maps.lines()
        .filter_map(parse_maps_line)
        .find(|m| m.path == wanted && m.deleted == wanted_deleted && m.offset == 0)
        // The mapping at file offset 0 holds the first loadable segment, page-aligned.
        .map(|m| m.start.wrapping_sub(first_load_vaddr & !0xfff))
}
