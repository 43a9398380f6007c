//! How tools find targets: each target writes a small record file, named by its pid, into a
//! per-user runtime directory, and removes it at normal exit. Records are hints: a tool skips and
//! deletes records of dead processes and checks the segment a record names before believing it.
//!
//! Nothing in the directory is trusted: it must belong to this user and be writable by nobody
//! else ([`check_runtime_dir`]), and a record is read only if it is a regular file of at most
//! [`MAX_RECORD_BYTES`], opened without following a symbolic link and without blocking (a FIFO
//! or a device named `N.json` is skipped, never read).

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::process;
use super::sysv::current_uid;

/// What a target publishes about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TargetRecord {
    /// The target's pid.
    pub pid: u32,
    /// Its start time, so a reused pid is not mistaken for it.
    pub start_time: u64,
    /// Its segment's System V id.
    pub shm_id: i32,
    /// Its program name.
    pub program: String,
}

/// A runtime directory or record problem.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The directory could not be created or read.
    #[error("runtime directory {}: {source}; set EPCACHE_RUNTIME_DIR to a directory you own", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The directory belongs to someone else, who could plant records.
    #[error("runtime directory {} belongs to uid {owner}, not to this user (uid {me}); set EPCACHE_RUNTIME_DIR to a directory you own", dir.display())]
    NotOwner {
        /// The directory.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
        /// The current uid.
        me: u32,
    },
    /// Other users may write into the directory, so they could plant records or a socket.
    #[error("runtime directory {} has mode {mode:o}: other users may create files in it (plant target records, or a daemon socket); run `chmod 700 {}`, or set EPCACHE_RUNTIME_DIR (epcached: --runtime-dir) to a directory only you can write", dir.display(), dir.display())]
    TooOpen {
        /// The directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The path is not a directory.
    #[error("runtime directory {} is not a directory; set EPCACHE_RUNTIME_DIR (epcached: --runtime-dir) to a directory you own", dir.display())]
    NotADirectory {
        /// The path.
        dir: PathBuf,
    },
    /// A record could not be written.
    #[error("writing target record {}: {source}", path.display())]
    Write {
        /// The record file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// `$EPCACHE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/epcache`, else `/tmp/epcache-<uid>`.
pub fn runtime_dir() -> PathBuf {
    runtime_dir_in(|name| std::env::var_os(name))
}

/// The runtime directory a process with this environment uses (`var` looks a variable up): the
/// rule of [`runtime_dir`], for another process's environment.
pub fn runtime_dir_in(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    if let Some(dir) = var("EPCACHE_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return dir.into();
    }
    if let Some(dir) = var("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("epcache");
    }
    PathBuf::from(format!("/tmp/epcache-{}", current_uid()))
}

/// The largest record accepted: a real one is well under 1 KiB (a program name of up to a few
/// hundred bytes and three numbers).
pub const MAX_RECORD_BYTES: u64 = 4096;

/// Checks that `dir` is a directory this user owns and nobody else may write into. A directory
/// only readable by others is tightened to 0700 (nothing could have been planted in it).
pub fn check_runtime_dir(dir: &Path) -> Result<(), DiscoveryError> {
    let io = |source| DiscoveryError::Dir {
        dir: dir.to_owned(),
        source,
    };
    let meta = std::fs::metadata(dir).map_err(io)?;
    if !meta.is_dir() {
        return Err(DiscoveryError::NotADirectory {
            dir: dir.to_owned(),
        });
    }
    let me = current_uid();
    if meta.uid() != me {
        return Err(DiscoveryError::NotOwner {
            dir: dir.to_owned(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(DiscoveryError::TooOpen {
            dir: dir.to_owned(),
            mode,
        });
    }
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

/// Creates `dir` with mode 0700 if missing, then [`check_runtime_dir`]: this user owns it and
/// nobody else may write into it.
pub fn ensure_runtime_dir(dir: &Path) -> Result<(), DiscoveryError> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(DiscoveryError::Dir {
                dir: dir.to_owned(),
                source,
            });
        }
    }
    check_runtime_dir(dir)
}

/// The file name of the daemon's socket in a runtime directory.
pub const DAEMON_SOCKET: &str = "epcached.sock";

/// Where the daemon serving runtime directory `dir` listens by default: `DIR/epcached.sock`.
pub fn daemon_socket(dir: &Path) -> PathBuf {
    dir.join(DAEMON_SOCKET)
}

/// The longest path a Unix socket may have (`sun_path` holds 108 bytes with its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Where to make a private runtime directory whose name is `name_bytes` long, for a daemon of
/// its own to listen in: the temporary directory (`TMPDIR`), or `/tmp` when the daemon's socket
/// there would be longer than a socket's path may be (a batch system's deep per-job `TMPDIR`).
pub fn private_parent(name_bytes: usize) -> PathBuf {
    parent_fitting(std::env::temp_dir(), name_bytes)
}

fn parent_fitting(temporary: PathBuf, name_bytes: usize) -> PathBuf {
    let socket = temporary.as_os_str().len() + 1 + name_bytes + 1 + DAEMON_SOCKET.len();
    if socket <= MAX_SOCKET_PATH {
        temporary
    } else {
        PathBuf::from("/tmp")
    }
}

/// The record file of `pid` in `dir`.
pub fn record_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.json"))
}

/// Writes `record` into `dir` (created if needed) atomically: a reader never sees half a record.
pub fn write_record(dir: &Path, record: &TargetRecord) -> Result<PathBuf, DiscoveryError> {
    ensure_runtime_dir(dir)?;
    let path = record_path(dir, record.pid);
    let tmp = dir.join(format!(".{}.tmp", record.pid));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(serde_json::to_string(record)?.as_bytes())?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|source| DiscoveryError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Reads the record at `path` if it is one: a regular file owned by this user, of at most
/// [`MAX_RECORD_BYTES`], holding the record of `pid`. The open neither follows a symbolic link
/// nor blocks (on a FIFO), and at most the cap is read (of a device that never ends).
fn read_record(path: &Path, pid: u32) -> Option<TargetRecord> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_RECORD_BYTES || meta.uid() != current_uid() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_RECORD_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() as u64 > MAX_RECORD_BYTES {
        return None;
    }
    serde_json::from_str::<TargetRecord>(&text)
        .ok()
        .filter(|r| r.pid == pid)
}

/// The records in `dir` whose process is alive, sorted by pid. Records of dead processes and
/// anything else named like a record (unreadable, too large, not a regular file) are deleted. A
/// missing directory means no targets; one that another user owns or may write into is refused
/// ([`check_runtime_dir`]).
pub fn list_targets(dir: &Path) -> Result<Vec<TargetRecord>, DiscoveryError> {
    match check_runtime_dir(dir) {
        Ok(()) => {}
        Err(DiscoveryError::Dir { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    }
    let entries = std::fs::read_dir(dir).map_err(|source| DiscoveryError::Dir {
        dir: dir.to_owned(),
        source,
    })?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        match read_record(&path, pid) {
            Some(r) if process::is_same_process_alive(r.pid, r.start_time) => out.push(r),
            // A dead target's record, or garbage: nobody will ever remove it otherwise. (A
            // directory named like a record cannot be removed this way and is skipped.)
            _ => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    out.sort_by_key(|r| r.pid);
    Ok(out)
}

/// Waits up to `timeout` for process `pid` (a target a tool just started) to publish its
/// record in `dir`, polling every 20 ms; `None` if it has not by then.
pub fn wait_for_record(dir: &Path, pid: u32, timeout: Duration) -> Option<TargetRecord> {
    let started = Instant::now();
    loop {
        let records = list_targets(dir).unwrap_or_default();
        if let Some(r) = records.into_iter().find(|r| r.pid == pid) {
            return Some(r);
        }
        if started.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_directory_too_deep_for_a_socket_gives_way_to_tmp() {
        let short = PathBuf::from("/scratch/job1/tmp");
        assert_eq!(parent_fitting(short.clone(), 40), short);
        let deep = PathBuf::from(format!("/scratch/{}/tmp", "d".repeat(60)));
        assert_eq!(parent_fitting(deep, 40), Path::new("/tmp"));
    }

    #[test]
    fn live_records_are_listed_and_dead_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("rt");
        let me = TargetRecord {
            pid: std::process::id(),
            start_time: process::own_start_time(),
            shm_id: 42,
            program: "me".into(),
        };
        let path = write_record(&runtime, &me).unwrap();
        let mode = std::fs::metadata(&runtime).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let ghost = TargetRecord {
            pid: me.pid,
            start_time: me.start_time + 1,
            ..me.clone()
        };
        let ghost_path = record_path(&runtime, 1);
        std::fs::write(
            &ghost_path,
            serde_json::to_string(&TargetRecord { pid: 1, ..ghost }).unwrap(),
        )
        .unwrap();
        std::fs::write(runtime.join("77.json"), "not json").unwrap();
        assert_eq!(list_targets(&runtime).unwrap(), vec![me.clone()]);
        assert!(path.exists() && !ghost_path.exists() && !runtime.join("77.json").exists());
        assert!(list_targets(&dir.path().join("none")).unwrap().is_empty());
        let short = Duration::from_millis(50);
        assert_eq!(wait_for_record(&runtime, me.pid, short), Some(me));
        assert_eq!(wait_for_record(&runtime, 1, short), None);
    }

    fn live_record() -> TargetRecord {
        TargetRecord {
            pid: std::process::id(),
            start_time: process::own_start_time(),
            shm_id: 42,
            program: "me".into(),
        }
    }

    /// `list_targets(dir)` on another thread, failing the test if it does not return in 5 s.
    fn list_within_seconds(dir: &Path) -> Result<Vec<TargetRecord>, DiscoveryError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = dir.to_owned();
        std::thread::spawn(move || {
            let _ = tx.send(list_targets(&dir));
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("listing the runtime directory blocked")
    }

    #[test]
    fn only_small_regular_files_are_read_as_records() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("rt");
        ensure_runtime_dir(&runtime).unwrap();
        let me = live_record();
        let json = serde_json::to_string(&me).unwrap();
        let path = record_path(&runtime, me.pid);

        // A symbolic link to a valid record elsewhere is not followed.
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, &json).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(list_within_seconds(&runtime).unwrap().is_empty());
        assert!(
            std::fs::symlink_metadata(&path).is_err(),
            "the link is removed"
        );
        assert!(elsewhere.exists(), "what it pointed at is left alone");

        // Nor is one to a device that never ends.
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(list_within_seconds(&runtime).unwrap().is_empty());

        // A record padded past the cap is refused, though it parses.
        std::fs::write(
            &path,
            format!("{json}{}", " ".repeat(MAX_RECORD_BYTES as usize)),
        )
        .unwrap();
        assert!(list_within_seconds(&runtime).unwrap().is_empty());

        // A FIFO named like a record does not block discovery.
        let fifo = record_path(&runtime, me.pid);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
        assert!(list_within_seconds(&runtime).unwrap().is_empty());
        assert!(
            std::fs::symlink_metadata(&fifo).is_err(),
            "the FIFO is removed"
        );

        // The real thing still works.
        write_record(&runtime, &me).unwrap();
        assert_eq!(list_within_seconds(&runtime).unwrap(), vec![me]);
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("rt");
        write_record(&runtime, &live_record()).unwrap();
        for mode in [0o777, 0o1777, 0o720, 0o702] {
            std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = list_targets(&runtime).unwrap_err();
            assert!(
                matches!(err, DiscoveryError::TooOpen { .. }),
                "{mode:o}: {err}"
            );
            let text = err.to_string();
            assert!(
                text.contains(&runtime.display().to_string()) && text.contains("chmod 700"),
                "{text}"
            );
            assert!(ensure_runtime_dir(&runtime).is_err());
            assert!(write_record(&runtime, &live_record()).is_err());
        }
        // Readable (not writable) by others is only tightened.
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(list_targets(&runtime).unwrap().len(), 1);
        let mode = std::fs::metadata(&runtime).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            check_runtime_dir(&file),
            Err(DiscoveryError::NotADirectory { .. })
        ));
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("rt");
        ensure_runtime_dir(&runtime).unwrap();
        let chowned = std::process::Command::new("chown")
            .args(["65534"])
            .arg(&runtime)
            .status();
        if !chowned.is_ok_and(|s| s.success()) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "FAILED under CI: cannot give a directory to uid 65534 (needs root)"
            );
            println!("SKIPPED: cannot give a directory to uid 65534 (needs root)");
            return;
        }
        let err = list_targets(&runtime).unwrap_err();
        assert!(
            matches!(err, DiscoveryError::NotOwner { owner: 65534, .. }),
            "{err}"
        );
        assert!(ensure_runtime_dir(&runtime).is_err());
    }
}
