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

/// Whether the executable at `path` carries epcache's runtime, told by its symbol table:
/// `Some(true)` when it defines a capture hook (a TSan read hook, a SanitizerCoverage load hook)
/// or anything of epcache's (a Rust program linking epcache-monitor, whose names hold
/// `epcache`), `Some(false)` when its symbol table has none of these, `None` when it cannot be
/// told (not a readable ELF file, or a stripped one). `epcache run` asks before it starts a
/// program it is to monitor.
pub fn defines_capture_runtime(path: &Path) -> Option<bool> {
    let file = std::fs::File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let object = object::File::parse(&cache).ok()?;
    let mut symbols = object.symbols().peekable();
    symbols.peek()?;
    Some(symbols.any(|symbol| {
        symbol.is_definition()
            && symbol.name().is_ok_and(|name| {
                name.starts_with("__tsan_read")
                    || name.starts_with("__sanitizer_cov_load")
                    || name.contains("epcache")
            })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds `source` as C into `dir/name` with gcc; `None` (after saying so) without gcc,
    /// which fails the test under CI.
    fn build(dir: &Path, name: &str, source: &str) -> Option<std::path::PathBuf> {
        let c = dir.join(format!("{name}.c"));
        std::fs::write(&c, source).unwrap();
        let exe = dir.join(name);
        match std::process::Command::new("gcc")
            .arg("-o")
            .arg(&exe)
            .arg(&c)
            .status()
        {
            Ok(s) if s.success() => Some(exe),
            other => {
                epcache_test_support::tools::skipped(&format!("gcc is needed ({other:?})"));
                None
            }
        }
    }

    #[test]
    fn executables_are_told_by_their_symbols_and_scripts_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let Some(plain) = build(dir.path(), "plain", "int main(void) { return 0; }\n") else {
            return;
        };
        assert_eq!(defines_capture_runtime(&plain), Some(false));
        let hooked = build(
            dir.path(),
            "hooked",
            "void epcache_region_begin(void) {}\nint main(void) { epcache_region_begin(); return 0; }\n",
        )
        .unwrap();
        assert_eq!(defines_capture_runtime(&hooked), Some(true));
        // Stripped: nothing to tell by.
        assert!(
            std::process::Command::new("strip")
                .arg(&hooked)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(defines_capture_runtime(&hooked), None);
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(defines_capture_runtime(&script), None);
        assert_eq!(defines_capture_runtime(&dir.path().join("missing")), None);
    }
}
