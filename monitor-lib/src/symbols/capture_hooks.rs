//! Whether an ELF object calls epcache's capture hooks: the cheap test, on its dynamic symbols
//! alone, that picks the shared libraries whose debug information the runtime reads.

use std::path::Path;

use object::{Object, ObjectSymbol, ReadCache};

/// Whether `path` has an undefined dynamic symbol of the capture ABI (a TSan or
/// SanitizerCoverage hook, or one of epcache's own): a library built with capture. Only the
/// dynamic symbol table is read, not the whole file, so a large library built without capture
/// (a debug build of a solver) costs the program's start next to nothing. An unreadable file
/// answers `false`.
pub fn calls_capture_hooks(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let cache = ReadCache::new(file);
    let Ok(object) = object::File::parse(&cache) else {
        return false;
    };
    object.dynamic_symbols().any(|symbol| {
        symbol.is_undefined()
            && symbol.name().is_ok_and(|name| {
                ["__tsan_", "__sanitizer_cov_", "epcache_"]
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
            })
    })
}
