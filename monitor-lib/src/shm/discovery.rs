//! How tools find targets: each target writes a small record file, named by its pid, into a
//! per-user runtime directory, and removes it at normal exit. Records are hints: a tool skips and
//! deletes records of dead processes and checks the segment a record names before believing it.

use std::io::Write;
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
    if let Some(dir) = std::env::var_os("EPCACHE_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return dir.into();
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("epcache");
    }
    PathBuf::from(format!("/tmp/epcache-{}", current_uid()))
}

/// Creates `dir` with mode 0700 if missing, and checks this user owns it.
pub fn ensure_runtime_dir(dir: &Path) -> Result<(), DiscoveryError> {
    let io = |source| DiscoveryError::Dir {
        dir: dir.to_owned(),
        source,
    };
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let meta = std::fs::metadata(dir).map_err(io)?;
    let me = current_uid();
    if meta.uid() != me {
        return Err(DiscoveryError::NotOwner {
            dir: dir.to_owned(),
            owner: meta.uid(),
            me,
        });
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
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

/// The records in `dir` whose process is alive, sorted by pid. Records of dead processes and
/// unreadable records are deleted. A missing directory means no targets.
pub fn list_targets(dir: &Path) -> Result<Vec<TargetRecord>, DiscoveryError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(DiscoveryError::Dir {
                dir: dir.to_owned(),
                source,
            });
        }
    };
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
        let record = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str::<TargetRecord>(&text).ok())
            .filter(|r| r.pid == pid);
        match record {
            Some(r) if process::is_same_process_alive(r.pid, r.start_time) => out.push(r),
            // A dead target's record, or garbage: nobody will ever remove it otherwise.
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
}
