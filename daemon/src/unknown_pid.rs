//! What a pid the daemon knows no target for is, in words a user can act on: no process at all,
//! another user's process (a daemon serves its own user's programs only), or a process of this
//! user that announced nothing where the daemon looks.
//!
//! Everything comes from /proc, which any process may read for its own user's processes; for
//! another user's only the owner is read, and nothing about their program is said beyond what
//! `ps` shows anyone.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use epcache_shm::discovery;
use epcache_shm::process::{self, Liveness};

/// Why `pid` is no target of a daemon watching `runtime_dir`; `announced` says whether its
/// record is in that directory (the daemon found it but could not attach).
pub(crate) fn why_not_a_target(pid: u32, runtime_dir: &Path, announced: bool) -> String {
    let proc_dir = Path::new("/proc").join(pid.to_string());
    let owner = std::fs::metadata(&proc_dir).map(|m| m.uid());
    let (Liveness::Alive { .. }, Ok(owner)) = (process::liveness(pid), owner) else {
        return format!("no process with pid {pid} is running (it may have ended)");
    };
    let name = std::fs::read_to_string(proc_dir.join("comm"))
        .map(|c| format!(" (`{}`)", c.trim_end()))
        .unwrap_or_default();
    let me = epcache_shm::current_uid();
    if owner != me {
        return format!(
            "process {pid}{name} belongs to uid {owner}, and a daemon serves only its own user's programs (this one runs as uid {me}): ask from a daemon that user started"
        );
    }
    if announced {
        return format!(
            "process {pid}{name} announced itself in {} but the daemon could not attach to it; its log says why",
            runtime_dir.display()
        );
    }
    let environ = std::fs::read(proc_dir.join("environ")).unwrap_or_default();
    if environ.is_empty() {
        // A process between fork and the end of exec shows no environment yet: where it would
        // announce itself cannot be told, and a default guessed from nothing would mislead.
        return format!(
            "process {pid}{name} runs but announced no target in {}: it may still be starting; if not, build it with `epcache cc` (Rust: link epcache-monitor) and check its EPCACHE_RUNTIME_DIR",
            runtime_dir.display()
        );
    }
    let var = |name: &str| environment_variable(&environ, name);
    if var("EPCACHE_MCC").is_some_and(|v| {
        matches!(
            v.to_string_lossy().trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "no"
        )
    }) {
        return format!(
            "process {pid}{name} runs with EPCACHE_MCC=off, which keeps tools out; run it without that"
        );
    }
    let theirs = discovery::runtime_dir_in(var);
    if !same_directory(&theirs, runtime_dir) {
        return format!(
            "process {pid}{name} would announce itself in {}, and this daemon looks in {}: start the program with EPCACHE_RUNTIME_DIR={} (or the daemon with --runtime-dir {})",
            theirs.display(),
            runtime_dir.display(),
            runtime_dir.display(),
            theirs.display()
        );
    }
    format!(
        "process {pid}{name} runs but announced no target in {}: build it with `epcache cc` (Rust: link epcache-monitor), or it may still be starting",
        runtime_dir.display()
    )
}

/// `name`'s value in a NUL-separated environment block (as /proc/PID/environ holds it).
fn environment_variable(environ: &[u8], name: &str) -> Option<OsString> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(std::ffi::OsStr::from_bytes(value).to_os_string())
    })
}

/// Whether two paths name one directory (either may be relative or reached through links).
fn same_directory(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_read_from_an_environment_block() {
        let block = b"PATH=/bin\0EPCACHE_RUNTIME_DIR=/tmp/x\0EPCACHE_MCC_X=1\0";
        assert_eq!(
            environment_variable(block, "EPCACHE_RUNTIME_DIR"),
            Some("/tmp/x".into())
        );
        assert_eq!(environment_variable(block, "EPCACHE_MCC"), None);
        assert_eq!(environment_variable(block, "HOME"), None);
    }

    #[test]
    fn a_pid_that_runs_nothing_is_said_to_run_nothing() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let why = why_not_a_target(pid, Path::new("/nonexistent"), false);
        assert!(why.starts_with("no process with pid"), "{why}");
    }

    /// `sleep 30` with `EPCACHE_RUNTIME_DIR=dir`, returned once its exec has finished: until
    /// then /proc shows the parent's environment or none.
    fn sleeper_announcing_in(dir: &Path) -> std::process::Child {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .env("EPCACHE_RUNTIME_DIR", dir)
            .spawn()
            .unwrap();
        let environ = Path::new("/proc")
            .join(child.id().to_string())
            .join("environ");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read(&environ)
            .ok()
            .and_then(|block| environment_variable(&block, "EPCACHE_RUNTIME_DIR"))
            .is_none_or(|seen| seen != dir.as_os_str())
        {
            assert!(
                std::time::Instant::now() < deadline,
                "sleep never finished its exec"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child
    }

    #[test]
    fn a_running_process_outside_the_daemons_directory_is_told_where_to_announce() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = sleeper_announcing_in(&dir.path().join("elsewhere"));
        let why = why_not_a_target(child.id(), dir.path(), false);
        let _ = child.kill();
        let _ = child.wait();
        assert!(why.contains("(`sleep`)"), "{why}");
        assert!(
            why.contains(&format!("EPCACHE_RUNTIME_DIR={}", dir.path().display())),
            "{why}"
        );
    }

    #[test]
    fn a_running_process_without_the_runtime_is_told_to_be_built_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = sleeper_announcing_in(dir.path());
        let why = why_not_a_target(child.id(), dir.path(), false);
        let _ = child.kill();
        let _ = child.wait();
        assert!(why.contains("build it with `epcache cc`"), "{why}");
    }
}
