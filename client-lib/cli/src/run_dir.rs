//! The private directory an `epcache run` keeps its embedded daemon's socket, the program's
//! record and the standalone report in, and the sweep of those that runs killed by SIGKILL
//! left behind.
//!
//! A run removes its directory when it ends, but a SIGKILL (an out-of-memory kill, a batch
//! system's time limit) gives it no chance. The directory's name carries the run's pid and start
//! time, so a later run can tell a dead run's directory from a live one's without asking
//! anything that could hang (a socket, a lock), and a reused pid is not mistaken for the run.
//! Only directories of this user are touched, and only once no process whose record lies in
//! them is alive: a program that outlived its run keeps its directory.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Context;
use epcache_shm::process;

/// What every run's directory name starts with, before `PID-START-` and a random tail.
const PREFIX: &str = "epcache-run-";

/// A fresh private (mode 0700) directory for this run, removed when the value drops; old runs'
/// directories are swept first. It lies in the temporary directory (`TMPDIR`), or in `/tmp`
/// when the daemon's socket would not fit a socket's path there (a batch system's long
/// per-job `TMPDIR`).
pub(crate) fn create() -> anyhow::Result<tempfile::TempDir> {
    let prefix = format!(
        "{PREFIX}{}-{}-",
        std::process::id(),
        process::own_start_time()
    );
    // The directory's random tail is six characters.
    let parent = epcache_shm::discovery::private_parent(prefix.len() + 6);
    sweep(&parent);
    tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(&parent)
        .with_context(|| format!("creating a runtime directory in {}", parent.display()))
}

/// Removes the directories in `parent` that runs now dead left, as the module's doc says;
/// anything it cannot read or remove stays, silently (it is someone else's, or in use).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let me = epcache_shm::current_uid();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start_time)) = name.to_str().and_then(run_of) else {
            continue;
        };
        let path = entry.path();
        // Not followed: a link named like a run's directory is nobody's directory to sweep.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || process::is_same_process_alive(pid, start_time) {
            continue;
        }
        if holds_live_record(&path) {
            continue;
        }
        let _ = std::fs::remove_dir_all(&path);
    }
}

/// The pid and start time in a run directory's name, `epcache-run-PID-START-RANDOM`.
fn run_of(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(PREFIX)?.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let start_time = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((pid, start_time))
}

/// Whether a program's record (`PID.json`) in `dir` names a process that is still alive.
fn holds_live_record(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    entries.flatten().any(|entry| {
        entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| process::liveness(pid) != process::Liveness::Dead)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that ran and has ended (reaped), so nothing alive holds it for a while.
    fn ended_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn names_carry_the_run_and_nothing_else_matches() {
        assert_eq!(run_of("epcache-run-412-99-AbC1"), Some((412, 99)));
        assert_eq!(run_of("epcache-run-AbC1x"), None);
        assert_eq!(run_of("epcache-run-412-99"), None);
        assert_eq!(run_of("epcache-0"), None);
    }

    #[test]
    fn a_dead_runs_directory_goes_and_live_ones_stay() {
        let parent = tempfile::tempdir().unwrap();
        let dead = parent.path().join(format!("{PREFIX}{}-5-x", ended_pid()));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("report.json"), "{}").unwrap();

        let me = std::process::id();
        let live = parent
            .path()
            .join(format!("{PREFIX}{me}-{}-y", process::own_start_time()));
        std::fs::create_dir(&live).unwrap();
        // This pid, but another start time: a reused pid, so the run is dead.
        let reused = parent.path().join(format!("{PREFIX}{me}-1-z"));
        std::fs::create_dir(&reused).unwrap();
        // A dead run whose program still runs (its record names this process).
        let outlived = parent.path().join(format!("{PREFIX}{}-5-w", ended_pid()));
        std::fs::create_dir(&outlived).unwrap();
        std::fs::write(outlived.join(format!("{me}.json")), "{}").unwrap();
        let other = parent.path().join("epcache-run-elsewhere");
        std::fs::create_dir(&other).unwrap();

        sweep(parent.path());
        assert!(!dead.exists() && !reused.exists());
        assert!(live.exists() && outlived.exists() && other.exists());
    }

    #[test]
    fn a_link_named_like_a_run_is_left_alone() {
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("kept");
        std::fs::create_dir(&target).unwrap();
        let link = parent.path().join(format!("{PREFIX}{}-5-l", ended_pid()));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        sweep(parent.path());
        assert!(link.exists() && target.exists());
    }
}
