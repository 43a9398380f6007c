//! Whether the tools a test needs are here: a missing one skips the test loudly (`*** SKIPPED
//! ***` on stderr), or fails it under CI (`CI=true`), where everything the tests need is
//! installed. Every compiler-, Valgrind- or OpenSSL-backed test of the workspace asks here; and
//! how a test fails when a tool it ran did.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Whether the tests run under CI (`CI=true`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Says `message` loudly and answers `false` (skip the test), or fails the test under CI.
pub fn skipped(message: &str) -> bool {
    assert!(!under_ci(), "FAILED under CI: {message}");
    eprintln!("\n*** SKIPPED *** {message}\n");
    false
}

/// Whether `tool --version` runs here; `who` (the test) is named when it does not.
pub fn available(tool: &str, who: &str) -> bool {
    runs(tool)
        || skipped(&format!(
            "{who}: {tool} not found (apt-get install -y {tool})"
        ))
}

/// Whether every one of `tools` runs here; says which are missing, and `why` the test needs
/// them, when some are not.
pub fn all_available(who: &str, tools: &[&str], why: &str) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !runs(t)).collect();
    missing.is_empty()
        || skipped(&format!(
            "{who}: {} not found; {why} (apt-get install -y {})",
            missing.join(" and "),
            missing.join(" ")
        ))
}

/// Whether gcc can link fully static programs here (the C library's archive, `libc.a`, is
/// installed: glibc's static part is a separate package on some distributions).
pub fn static_libc_available(who: &str) -> bool {
    let found = Command::new("gcc")
        .arg("-print-file-name=libc.a")
        .output()
        .ok()
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .is_some_and(|path| path.is_absolute() && path.exists());
    found
        || skipped(&format!(
            "{who}: gcc has no libc.a (install glibc's static library)"
        ))
}

/// Fails with `what`, the exit status and both outputs unless `out` succeeded: for the
/// compilers and programs a test runs, whose output says why they failed.
pub fn check_output(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn runs(tool: &str) -> bool {
    // Started and ended by itself: some tools (callgrind_annotate, cg_annotate) print their
    // version and exit with a non-zero status.
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.code().is_some())
}
