//! What the running program's own debug information says, read once: its functions (the
//! automatic regions), its globals (the named data structures) and the source line of any code
//! address (marker and allocation call sites), all at run-time addresses; for the executable
//! and for each shared library loaded at start that has debug information of its own.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock, RwLock};

use epcache_symbols::{DebugInfo, calls_capture_hooks, load_bias, parse_maps_line};

/// The program's debug information and where it is loaded.
#[derive(Debug)]
pub(crate) struct ProgramInfo {
    pub(crate) info: DebugInfo,
    /// Added to a link-time address to get the run-time one.
    pub(crate) bias: u64,
    /// The file of a shared library (`None` for the executable).
    pub(crate) path: Option<PathBuf>,
}

/// A source position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceLine {
    pub(crate) file: String,
    pub(crate) line: u32,
}

/// One logical frame of a call chain ([`ProgramInfo::call_frames`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallFrame {
    /// Where the call is.
    pub(crate) line: SourceLine,
    /// The function holding it (declared name when inlined, empty when unknown).
    pub(crate) function: String,
    /// The line is in a system or compiler header ([`is_library_source`]).
    pub(crate) library: bool,
}

static PROGRAM: OnceLock<Option<ProgramInfo>> = OnceLock::new();
/// The libraries read so far (see [`read_new_libraries`]), each kept for the process's life.
static LIBRARIES: RwLock<Vec<&'static ProgramInfo>> = RwLock::new(Vec::new());
static STARTED: Once = Once::new();

/// Every object with debug information: the executable first, then the shared libraries built
/// with capture (`epcache cc -- gcc -fPIC -shared`) that carry debug information, whose
/// functions are regions and globals data structures as the executable's are: those mapped
/// at start, read at the first call, and those [`read_new_libraries`] found since.
pub(crate) fn objects() -> Vec<&'static ProgramInfo> {
    STARTED.call_once(|| {
        read_new_libraries();
    });
    let libraries = LIBRARIES.read().unwrap_or_else(|e| e.into_inner());
    program()
        .into_iter()
        .chain(libraries.iter().copied())
        .collect()
}

/// The object whose functions hold run-time address `pc`, else the executable (whose line
/// table may still know an address outside every function).
pub(crate) fn object_at(pc: u64) -> Option<&'static ProgramInfo> {
    objects()
        .into_iter()
        .find(|o| {
            pc.checked_sub(o.bias)
                .is_some_and(|a| o.info.function_at(a).is_some())
        })
        .or_else(program)
}

/// Reads the libraries built with capture that are mapped now and were not read before (at
/// start, and after each `dlopen`); returns them. System libraries (under `/lib` and
/// `/usr/lib`) are not looked at.
pub(crate) fn read_new_libraries() -> Vec<&'static ProgramInfo> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let exe = std::fs::read_link("/proc/self/exe").ok();
    let mut libraries = LIBRARIES.write().unwrap_or_else(|e| e.into_inner());
    let mut seen: HashSet<&Path> = libraries.iter().filter_map(|l| l.path.as_deref()).collect();
    let mut new = Vec::new();
    for line in maps.lines() {
        let Some(mapping) = parse_maps_line(line) else {
            continue;
        };
        // A deleted or replaced file's path no longer names what is mapped.
        if mapping.deleted {
            continue;
        }
        let path = mapping.path;
        let system = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"]
            .iter()
            .any(|prefix| path.starts_with(prefix));
        // `/SYSV...` is a System V segment (the MCC's own), `/dev/...` a device.
        let not_a_file = path.starts_with("/SYSV") || path.starts_with("/dev/");
        let path = Path::new(path);
        if !path.starts_with("/")
            || not_a_file
            || system
            || exe.as_deref() == Some(path)
            || !seen.insert(path)
        {
            continue;
        }
        // Only a library built with capture is read (a debug build of some other library may
        // hold thousands of functions no hook ever enters); one without debug information is
        // passed over in silence.
        if !calls_capture_hooks(path) {
            continue;
        }
        let Ok(info) = DebugInfo::load_program(path) else {
            continue;
        };
        if info.functions.is_empty() && info.globals.is_empty() {
            continue;
        }
        if let Ok(bias) = load_bias(None, path, info.first_load_vaddr) {
            new.push(&*Box::leak(Box::new(ProgramInfo {
                info,
                bias,
                path: Some(path.to_owned()),
            })));
        }
    }
    libraries.extend(&new);
    new
}

/// The program's debug information, read at the first call; `None` (said once on stderr) when
/// the executable has none, so regions and data structures then go without source names.
pub(crate) fn program() -> Option<&'static ProgramInfo> {
    PROGRAM.get_or_init(load).as_ref()
}

fn load() -> Option<ProgramInfo> {
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let info = match DebugInfo::load_running_program(&exe) {
        Ok(info) => info,
        Err(e) => {
            // The error names the file and says to build with -g; what it costs is added here.
            eprintln!(
                "epcache: {e} (and do not strip it); until then its functions are no regions \
                 and its globals no data structures"
            );
            return None;
        }
    };
    let bias = match load_bias(None, &exe, info.first_load_vaddr) {
        Ok(bias) => bias,
        Err(e) => {
            eprintln!("epcache: {e}; globals of {} are not named", exe.display());
            return None;
        }
    };
    Some(ProgramInfo {
        info,
        bias,
        path: None,
    })
}

impl ProgramInfo {
    /// The source line of the call whose return address is `return_pc` (the call instruction
    /// ends just before it): the innermost position in the program's own sources. A call from
    /// library code inlined into the program (`std::vector`'s allocator, in a system header) is
    /// named by the program's line that the library code was inlined into; code that is all
    /// library (an out-of-line template instance) by its innermost position.
    pub(crate) fn call_site(&self, return_pc: u64) -> Option<SourceLine> {
        let pc = return_pc.checked_sub(self.bias)?.checked_sub(1)?;
        let positions = self.info.positions_at(pc);
        let &(file, line) = positions
            .iter()
            .find(|(file, _)| !is_library_source(file))
            .or_else(|| positions.first())?;
        Some(SourceLine {
            file: file.to_owned(),
            line,
        })
    }

    /// The logical frames of the call whose return address is `return_pc`, innermost first:
    /// the call's own line and the function it is in, then, for each function inlined there,
    /// the line it was inlined at and the function that holds that line, out to the compiled
    /// function. Empty when the line tables do not know the address.
    pub(crate) fn call_frames(&self, return_pc: u64) -> Vec<CallFrame> {
        let Some(pc) = return_pc
            .checked_sub(self.bias)
            .and_then(|pc| pc.checked_sub(1))
        else {
            return Vec::new();
        };
        self.info
            .inline_chain_at(pc)
            .into_iter()
            .map(|p| CallFrame {
                line: SourceLine {
                    file: p.file.to_owned(),
                    line: p.line,
                },
                function: p.function.unwrap_or_default().to_owned(),
                library: is_library_source(p.file),
            })
            .collect()
    }

    /// The function holding run-time address `pc`: its name, declaring file and first line.
    pub(crate) fn function_at(&self, pc: u64) -> Option<(&str, SourceLine)> {
        let f = self.info.function_at(pc.checked_sub(self.bias)?)?;
        let file = f
            .file
            .and_then(|id| self.info.files.get(id as usize))
            .cloned()
            .unwrap_or_default();
        Some((f.name.as_str(), SourceLine { file, line: f.line }))
    }

    /// The source path of DWARF file index `id`, empty when unknown.
    pub(crate) fn file_name(&self, id: Option<u32>) -> String {
        id.and_then(|id| self.info.files.get(id as usize))
            .cloned()
            .unwrap_or_default()
    }
}

/// Whether `path` is a system or compiler header (the C++ standard library, a library installed
/// under /usr) rather than the program's own source: its lines are not what a user looks for.
pub(crate) fn is_library_source(path: &str) -> bool {
    [
        "/usr/include/",
        "/usr/lib/",
        "/usr/lib64/",
        "/usr/local/include/",
    ]
    .iter()
    .any(|prefix| path.starts_with(prefix))
        || path.contains("/include/c++/")
}

/// The stable 32-bit id of a source path in region keys: FNV-1a of its bytes, so the same file
/// has the same id in every run of the program and in every process.
pub(crate) fn file_id(path: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in path.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_ids_are_fnv1a() {
        // Reference values of 32-bit FNV-1a.
        assert_eq!(file_id(""), 0x811c_9dc5);
        assert_eq!(file_id("a"), 0xe40c_292c);
        assert_eq!(file_id("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn standard_and_installed_headers_are_library_sources() {
        for library in [
            "/usr/include/c++/12/bits/new_allocator.h",
            "/usr/lib/gcc/x86_64-linux-gnu/12/include/mm_malloc.h",
            "/usr/local/include/eigen3/Eigen/src/Core/util/Memory.h",
            "/opt/gcc-14/include/c++/14/bits/vector.tcc",
        ] {
            assert!(is_library_source(library), "{library}");
        }
        for own in [
            "/home/me/solver/main.cpp",
            "kernel.f90",
            "/usr/src/app/grid.h",
        ] {
            assert!(!is_library_source(own), "{own}");
        }
    }
}
