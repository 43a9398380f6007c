//! The load bias of an ELF file in a running process (a PIE loads at a random base), from `/proc/PID/maps`.

use std::path::Path;

use super::SymbolError;

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
    for line in text.lines() {
        // start-end perms offset dev inode path
        let mut fields = line.split_whitespace();
        let (Some(range), Some(_), Some(offset)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = fields.nth(2).unwrap_or("");
        if path != exe_text || u64::from_str_radix(offset, 16) != Ok(0) {
            continue;
        }
        let start = range
            .split('-')
            .next()
            .and_then(|s| u64::from_str_radix(s, 16).ok());
        if let Some(start) = start {
            // The mapping at file offset 0 holds the first loadable segment, page-aligned.
            return Ok(start.wrapping_sub(first_load_vaddr & !0xfff));
        }
    }
    Err(SymbolError::NotMapped {
        exe: exe_text.into_owned(),
        pid: pid.map_or("self".to_owned(), |p| p.to_string()),
        maps,
    })
}
