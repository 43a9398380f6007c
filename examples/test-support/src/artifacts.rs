//! Libraries cargo built for this test run that the tests hand to compilers: the runtime's
//! staticlib `epcache cc` links, and its rlib the Rust capture programs link.
//!
//! `cargo test` builds a dependency's staticlib and rlib into `target/<profile>/deps` under a
//! hashed name and copies neither beside the binaries (only a build of the crate itself does),
//! so the tests take the newest one there.

use std::path::{Path, PathBuf};

/// The runtime's staticlib of the profile the binary at `beside` (the `epcache` binary,
/// `CARGO_BIN_EXE_epcache`) was built in: the newest of `libepcache_monitor.a` beside it and
/// those under its `deps/`.
pub fn runtime_library(beside: &Path) -> Option<PathBuf> {
    let profile = beside.parent()?;
    let copy = profile.join("libepcache_monitor.a");
    newest_in_deps(profile, "libepcache_monitor-", ".a")
        .into_iter()
        .chain(copy.is_file().then_some(copy))
        .max_by_key(|p| modified(p))
}

/// The newest file under `profile/deps` whose name starts with `prefix` and ends with `suffix`.
pub fn newest_in_deps(profile: &Path, prefix: &str, suffix: &str) -> Option<PathBuf> {
    std::fs::read_dir(profile.join("deps"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .max_by_key(|p| modified(p))
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
