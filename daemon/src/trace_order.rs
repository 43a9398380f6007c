//! A StartTrace call made into a trace order (`epcache_shm::layout::TraceOrder`): the region and
//! data structures resolved, the counts and the path checked, so that a refused call has not
//! touched the segment. The target checks the order again and creates the file itself.
//!
//! The path is checked as the target will see it: absolute and plain (no `.` or `..`), in a
//! directory that exists and is reached through no symbolic link, naming no existing file
//! unless the call allows replacing it (and never a symbolic link). These checks look at the
//! daemon's view of the file system, which is the target's when both see the same root
//! (`/proc/PID/root` is the daemon's `/`); a daemon in another mount namespace checks only the
//! form and leaves the rest to the target, which fails the order with the reason.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use epcache_proto::v1;
use epcache_shm::layout::{
    DataStructureInfo, MAX_TRACE_RANGES, RegionInfo, SiteBlock, TraceOrder, check_trace_path,
};
use epcache_sim::ranges::AddressRange;

use crate::error::{DaemonError, echo};
use crate::resolve::{self, Data};

/// The order `call` asks for, and the traced region's name.
pub(crate) fn resolve(
    call: &v1::StartTraceRequest,
    regions: &[RegionInfo],
    structures: &[DataStructureInfo],
) -> Result<(TraceOrder, String), DaemonError> {
    let pid = call.pid;
    let region = resolve::region(pid, call.region.as_ref(), regions)?;
    if call.data_structures.len() > MAX_TRACE_RANGES {
        return Err(DaemonError::InvalidArgument(format!(
            "{} data structures selected; a trace records at most {MAX_TRACE_RANGES} of them (or every access, with none selected)",
            call.data_structures.len()
        )));
    }
    let mut ranges: Vec<AddressRange> = Vec::with_capacity(call.data_structures.len());
    for selector in &call.data_structures {
        match resolve::data(pid, Some(selector), regions, structures, SiteBlock::Latest)? {
            Data::Fixed { range, .. } => ranges.push(range),
            Data::InTarget {
                structure, site, ..
            } => {
                let what = structure
                    .map(|s| s.name)
                    .or(site.map(|(f, l)| format!("{f}:{l}")));
                return Err(DaemonError::InvalidArgument(format!(
                    "`{}` has no bytes yet (an allocatable or heap blocks are placed later); a trace is asked for at the program's start, so it can select globals and address ranges only",
                    echo(&what.unwrap_or_default())
                )));
            }
        }
    }
    check_path(pid, &call.output, call.overwrite)?;
    let order = TraceOrder {
        region: region.index,
        instances: call.instances,
        access_budget: call.access_budget,
        ranges,
        path: call.output.clone(),
        overwrite: call.overwrite,
    };
    Ok((order, region.name.clone()))
}

/// Checks the output path as the module says.
fn check_path(pid: u32, output: &str, overwrite: bool) -> Result<(), DaemonError> {
    let bad = |why: String| DaemonError::InvalidArgument(format!("trace output {why}"));
    check_trace_path(output).map_err(|e| DaemonError::InvalidArgument(e.to_string()))?;
    if !same_root(pid) {
        return Ok(());
    }
    let path = Path::new(output);
    let parent = path.parent().unwrap_or(Path::new("/"));
    match std::fs::canonicalize(parent) {
        Ok(real) if real == parent => {}
        Ok(real) => {
            return Err(bad(format!(
                "`{}`: its directory is reached through a symbolic link (it is `{}`); give the real path",
                echo(output),
                echo(&real.to_string_lossy())
            )));
        }
        Err(e) => {
            return Err(bad(format!(
                "`{}`: its directory cannot be used ({e}); create it first",
                echo(output)
            )));
        }
    }
    if !parent.is_dir() {
        return Err(bad(format!(
            "`{}`: its parent is not a directory",
            echo(output)
        )));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(bad(format!(
            "`{}` is a symbolic link; name the file itself",
            echo(output)
        ))),
        Ok(m) if !m.is_file() => Err(bad(format!(
            "`{}` exists and is not a regular file",
            echo(output)
        ))),
        Ok(_) if !overwrite => Err(bad(format!(
            "`{}` exists; ask to overwrite it (`epcache trace record --overwrite`, the MRI's `overwrite`), or name another file",
            echo(output)
        ))),
        _ => Ok(()),
    }
}

/// Whether the target sees the daemon's root directory (the same mount namespace's `/`).
fn same_root(pid: u32) -> bool {
    match (
        std::fs::metadata(format!("/proc/{pid}/root")),
        std::fs::metadata("/"),
    ) {
        (Ok(theirs), Ok(ours)) => theirs.dev() == ours.dev() && theirs.ino() == ours.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked_before_the_segment_is_touched() {
        let me = std::process::id();
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let file = dir.join("t.eppt");
        let text = |p: &Path| p.to_str().unwrap().to_owned();
        check_path(me, &text(&file), false).unwrap();
        for (path, overwrite, why) in [
            ("t.eppt".to_owned(), false, "absolute"),
            (text(&dir.join("none/t.eppt")), false, "create it first"),
            (format!("{}/../t.eppt", dir.display()), false, ".."),
        ] {
            let e = check_path(me, &path, overwrite).unwrap_err().to_string();
            assert!(e.contains(why), "{path}: {e}");
        }
        std::fs::write(&file, b"x").unwrap();
        let e = check_path(me, &text(&file), false).unwrap_err().to_string();
        assert!(e.contains("exists"), "{e}");
        check_path(me, &text(&file), true).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let e = check_path(me, &text(&link), true).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let linked_dir = dir.join("d");
        std::os::unix::fs::symlink("/tmp", &linked_dir).unwrap();
        let e = check_path(me, &text(&linked_dir.join("t.eppt")), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }
}
