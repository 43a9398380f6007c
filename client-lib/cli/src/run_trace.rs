//! `epcache run --trace REGION [--instances N] --output FILE`: what the program is told
//! (`EPCACHE_TRACE`) and what is said of the recording once it ended.

use std::path::Path;

use epcache_sim::trace::partial::{Mark, PartialTrace, ThreadTrace};

use crate::numbers::grouped;
use crate::output::shell_word;

/// `EPCACHE_TRACE`'s value: the region, and the number of instances when one is given.
pub(crate) fn trace_env(region: &str, instances: Option<u64>) -> String {
    match instances {
        Some(n) => format!("{region}:{n}"),
        None => region.to_owned(),
    }
}

/// What a recording holds, as `epcache run --trace` reports it (the JSON of `--json`).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Recording {
    pub(crate) region: String,
    pub(crate) path: String,
    /// Instances recorded, all threads together, and threads that recorded one.
    pub(crate) instances: usize,
    pub(crate) threads: usize,
    /// Accesses in the trace, and those inside the instances (the others warm the caches).
    pub(crate) accesses: u64,
    pub(crate) counted_accesses: u64,
    pub(crate) bytes: u64,
    pub(crate) accesses_per_byte: f64,
    pub(crate) described_share: f64,
    /// Where the file stops when the program was killed before the trace's end.
    pub(crate) never_finished_at_byte: Option<u64>,
    /// The command that re-simulates it under the run's cache.
    pub(crate) replay: String,
}

impl Recording {
    /// The summary line for stderr.
    pub(crate) fn summary(&self) -> String {
        let threads = match self.threads {
            1 => String::new(),
            n => format!(" on {n} threads"),
        };
        let in_instances = if self.counted_accesses == self.accesses {
            String::new()
        } else {
            format!(
                " ({} in the instances; the others only warm the caches for them)",
                grouped(self.counted_accesses)
            )
        };
        format!(
            "recorded {} instance(s) of `{}`{threads} in {}: {} accesses{in_instances} in {} bytes ({:.1} per byte), {:.1}% in descriptors; replay it with `{}`",
            self.instances,
            self.region,
            self.path,
            grouped(self.accesses),
            grouped(self.bytes),
            self.accesses_per_byte,
            100.0 * self.described_share,
            self.replay,
        )
    }
}

/// The trace file the program's report says it wrote (`report::TraceFileReport` of the
/// runtime): `None` when the report says nothing of one (no thread tried to create it, or the
/// program left no report), else its device and inode, or why it could not be written.
fn traced_file(report: &Path) -> Option<Result<(u64, u64), String>> {
    let text = std::fs::read_to_string(report).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let file = value.get("trace_file")?;
    Some(if file["written"] == true {
        Ok((file["device"].as_u64()?, file["inode"].as_u64()?))
    } else {
        Err(file["error"]
            .as_str()
            .unwrap_or("the report does not say why")
            .to_owned())
    })
}

/// Whether the file at `output` is the one the program's report (at `report`) says it wrote:
/// another process may have written the same path meanwhile (its runtime refuses to write a
/// file another one is writing, and says so, but the other's file stays there).
fn check_own_file(output: &Path, report: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let name = output.display();
    match traced_file(report) {
        None => Ok(()),
        Some(Err(why)) => Err(format!(
            "the program could not write the trace {name} ({why}); nothing was traced"
        )),
        Some(Ok(written)) => match std::fs::metadata(output) {
            Ok(m) if (m.dev(), m.ino()) == written => Ok(()),
            _ => Err(format!(
                "{name} is not the trace this program wrote: another process replaced it while the program ran; give each run a file of its own"
            )),
        },
    }
}

/// Reads the recording the program left at `output` (warning on stderr when it was never
/// finished) and says what it holds and how to replay it under `cache`, the one it ran with;
/// `Err` with the reason when there is none, when the file is not the one the program's report
/// (at `report`) says it wrote, or when the region never ran.
pub(crate) fn check_recording(
    region: &str,
    output: &Path,
    cache: &str,
    report: &Path,
) -> Result<Recording, String> {
    check_own_file(output, report)?;
    let name = output.display();
    let trace = std::fs::File::open(output)
        .map_err(|e| e.to_string())
        .and_then(|f| PartialTrace::read(f).map_err(|e| e.to_string()))
        .map_err(|why| {
            format!("the program left no trace at {name} ({why}): was it built with `epcache cc`?")
        })?;
    if let Some(at) = trace.never_finished() {
        eprintln!(
            "epcache: warning: the trace {name} was never finished (no END record; its last whole record ends at byte {at} of {}: the program was killed before its end); what its threads had recorded up to their last safe point is readable",
            trace.stats().bytes
        );
    }
    let per_thread: Vec<usize> = trace
        .threads()
        .iter()
        .map(|t| t.marks().iter().filter(|(_, m)| *m == Mark::Begin).count())
        .filter(|&n| n > 0)
        .collect();
    let instances: usize = per_thread.iter().sum();
    if instances == 0 {
        return Err(match region.rsplit_once('@') {
            Some((_, file)) => format!(
                "no instance of `{region}` was recorded, so the trace {name} counts nothing (the program said why above; is `{file}` a source file of that region, as `epcache run --all-regions` shows?)"
            ),
            None => format!(
                "region `{region}` never ran, so the trace {name} counts nothing (is it the name `epcache run --all-regions` shows?)"
            ),
        });
    }
    let stats = trace.stats();
    Ok(Recording {
        region: region.to_owned(),
        path: name.to_string(),
        instances,
        threads: per_thread.len(),
        accesses: stats.accesses,
        counted_accesses: trace
            .threads()
            .iter()
            .map(ThreadTrace::counted_accesses)
            .sum(),
        bytes: stats.bytes,
        accesses_per_byte: stats.accesses_per_byte(),
        described_share: stats.described_share(),
        never_finished_at_byte: trace.never_finished(),
        replay: format!(
            "epcache replay --cache {} {}",
            shell_word(cache),
            shell_word(&name.to_string())
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report whose `trace_file` says `written` with the inode of `file` (or not written).
    fn report_of(dir: &Path, file: &Path, written: bool) -> std::path::PathBuf {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(file).unwrap();
        let report = dir.join("report.json");
        let trace_file = if written {
            serde_json::json!({ "path": file, "written": true, "device": m.dev(), "inode": m.ino() })
        } else {
            serde_json::json!({ "path": file, "written": false, "device": 0, "inode": 0, "error": "cannot create it: Text file busy" })
        };
        std::fs::write(
            &report,
            serde_json::json!({ "trace_file": trace_file }).to_string(),
        )
        .unwrap();
        report
    }

    #[test]
    fn only_the_file_the_program_wrote_is_taken_for_its_trace() {
        let dir = tempfile::tempdir().unwrap();
        let (ours, other) = (dir.path().join("t.eppt"), dir.path().join("o.eppt"));
        std::fs::write(&ours, b"ours").unwrap();
        std::fs::write(&other, b"theirs").unwrap();
        let report = report_of(dir.path(), &ours, true);
        assert_eq!(check_own_file(&ours, &report), Ok(()));
        // Another process's file now at the path.
        std::fs::rename(&other, &ours).unwrap();
        let why = check_own_file(&ours, &report).unwrap_err();
        assert!(why.contains("is not the trace this program wrote"), "{why}");
        let report = report_of(dir.path(), &ours, false);
        let why = check_own_file(&ours, &report).unwrap_err();
        assert!(
            why.contains("could not write the trace") && why.contains("Text file busy"),
            "{why}"
        );
        // No report, or one without a trace file: nothing to check.
        assert_eq!(check_own_file(&ours, &dir.path().join("none.json")), Ok(()));
    }
}
