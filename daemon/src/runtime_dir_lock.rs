//! One daemon per runtime directory: the programs that announce themselves there are its own.
//!
//! A daemon attaches to every program of its runtime directory and acts for them: it ends a
//! halt no tool called about for its lease, and when it stops it lets every halted or
//! start-waiting program go. A second daemon on the same directory (a TCP one for remote tools
//! beside the Unix one, say) would do both to halts and waits the first daemon's tools set:
//! its lease, counted from its own idle tools, or its shutdown, would let a program run on
//! while a tool stepping it through the other daemon still called about it. So a daemon holds
//! an exclusive lock (`flock`) on `epcached.lock` in its directory while it runs, and a second
//! one is refused with the first one's pid. The lock goes with the process, killed or not, so a
//! daemon that died leaves nothing to clean.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file's name in a runtime directory.
pub(crate) const LOCK_FILE: &str = "epcached.lock";

/// Why a daemon may not serve a runtime directory.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeDirLockError {
    /// Another daemon serves it.
    #[error(
        "another epcached{} serves the runtime directory {}: the programs announced there are its own (their halts and start waits), so ask it, or give this daemon a --runtime-dir of its own and start the programs it should serve with EPCACHE_RUNTIME_DIR set to that directory",
        .pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
        .dir.display()
    )]
    Served {
        /// The directory.
        dir: PathBuf,
        /// The other daemon's pid, as its lock file says.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// The lock on a runtime directory, held as long as the value lives.
#[derive(Debug)]
pub(crate) struct RuntimeDirLock {
    _file: File,
}

impl RuntimeDirLock {
    /// Takes the lock of `dir` (a runtime directory already checked to be this user's), writing
    /// this process's pid into the file for a second daemon's refusal.
    pub(crate) fn take(dir: &Path) -> Result<Self, RuntimeDirLockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| RuntimeDirLockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.take(32).read_to_string(&mut text);
                return Err(RuntimeDirLockError::Served {
                    dir: dir.to_owned(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_first_holders_pid_until_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let first = RuntimeDirLock::take(dir.path()).unwrap();
        let refused = RuntimeDirLock::take(dir.path()).unwrap_err();
        match &refused {
            RuntimeDirLockError::Served { pid, .. } => {
                assert_eq!(*pid, Some(std::process::id()));
            }
            other => panic!("{other}"),
        }
        assert!(refused.to_string().contains("--runtime-dir"), "{refused}");
        drop(first);
        RuntimeDirLock::take(dir.path()).expect("free once the first is gone");
    }

    #[test]
    fn a_link_in_the_lock_files_place_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(LOCK_FILE)).unwrap();
        assert!(RuntimeDirLock::take(dir.path()).is_err());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
    }
}
