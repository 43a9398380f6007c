//! What the DWARF tests share: building their small programs from source text with a real
//! compiler (a missing one skips loudly, or fails under CI), `nm`'s account of the symbols, and
//! the one global of a name.

use std::path::{Path, PathBuf};
use std::process::Command;

use epcache_symbols::{DebugInfo, GlobalVariable};

/// Writes `source` to `dir/file` and builds it with `command` (`["gcc", "-g", "-O2"]`) into
/// `dir`, the program named after `file` with its dot an underscore (`globals.c`:
/// `globals_c`); or says that the compiler is needed `for_what` and returns `None`.
pub(crate) fn build(
    dir: &Path,
    command: &[&str],
    file: &str,
    source: &str,
    for_what: &str,
) -> Option<PathBuf> {
    let (compiler, flags) = command.split_first().expect("a compiler to run");
    let src = dir.join(file);
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(file.replace('.', "_"));
    let status = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .current_dir(dir)
        .status();
    match status {
        Ok(s) if s.success() => Some(exe),
        other => {
            epcache_test_support::tools::skipped(&format!(
                "{compiler} is needed {for_what} (apt-get install -y {compiler}): {other:?}"
            ));
            None
        }
    }
}

/// Every symbol `nm -S` lists with a size: name, link-time address, size.
pub(crate) fn nm_sizes(exe: &Path) -> Vec<(String, u64, u64)> {
    let out = Command::new("nm")
        .arg("-S")
        .arg(exe)
        .output()
        .expect("nm (binutils) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<_> = l.split_whitespace().collect();
            (f.len() == 4).then(|| {
                (
                    f[3].to_owned(),
                    u64::from_str_radix(f[0], 16).unwrap(),
                    u64::from_str_radix(f[1], 16).unwrap(),
                )
            })
        })
        .collect()
}

/// The one global qualified as `name`; fails, listing them all, when there is not exactly one.
pub(crate) fn only<'a>(info: &'a DebugInfo, name: &str) -> &'a GlobalVariable {
    let found: Vec<_> = info
        .globals
        .iter()
        .filter(|g| g.qualified_name == name)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{name} should be one data structure: {:#?}",
        info.globals
    );
    found[0]
}
