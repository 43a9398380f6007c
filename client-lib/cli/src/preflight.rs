//! What `epcache run` checks before it starts a program: the cache resolves, every event exists
//! at a level that cache has, histograms fit a result block, `--output` can be written (as
//! `epcache replay` checks `--svg`), and the program carries the capture runtime. A mistake
//! found here costs the user nothing; found after the launch, it costs a run.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use epcache_shm::layout::Capacities;
use epcache_sim::cache::{CoreMap, HierarchySpec, Machine};
use epcache_sim::monitor::Event;

/// The cache the program will simulate, as it will resolve it: `--cache`, else
/// `$EPCACHE_CACHE`, else the runtime's default (`host`, else `cachegrind`). Returns its text and
/// the hierarchy, after printing the spec's warnings on stderr.
pub(crate) fn cache(given: Option<&str>) -> anyhow::Result<(String, HierarchySpec)> {
    let from_env = std::env::var("EPCACHE_CACHE")
        .ok()
        .filter(|t| !t.is_empty());
    let (text, origin) = match (given, from_env) {
        (Some(text), _) => (text.to_owned(), "--cache"),
        (None, Some(text)) => (text, "$EPCACHE_CACHE"),
        (None, None) => {
            return HierarchySpec::parse("host")
                .map(|spec| ("host".to_owned(), spec))
                .or_else(|_| HierarchySpec::parse("cachegrind").map(|s| ("cachegrind".to_owned(), s)))
                .context("neither this machine's caches nor the cachegrind preset resolve; give --cache SPEC");
        }
    };
    let spec = HierarchySpec::parse(&text).with_context(|| {
        format!(
            "the cache of {origin} cannot be simulated; nothing was started (see `epcache replay --help` for the spec syntax and presets)"
        )
    })?;
    for warning in spec.warnings() {
        eprintln!("epcache: warning: the cache `{text}` ({origin}): {warning}");
    }
    Ok((text, spec))
}

/// Checks every requested event against `spec`'s data levels.
pub(crate) fn events<'a>(
    names: impl IntoIterator<Item = &'a String>,
    spec: &HierarchySpec,
) -> anyhow::Result<()> {
    for name in names {
        Event::for_hierarchy(name, spec)
            .with_context(|| format!("--event {name}: nothing was started"))?;
    }
    Ok(())
}

/// Checks the machine asked for (`--cores`, else `EPCACHE_CORES` as the program will inherit
/// it; `source` names it as the user gave it, `--cores ` or `EPCACHE_CORES=`, before its value
/// `text`): that it parses, that the cache can be a machine of that many cores, and that a
/// coherence event is asked for only of a machine of two cores or more (without one it would
/// count nothing).
pub(crate) fn cores<'a>(
    asked: Option<(&str, &str)>,
    spec: &HierarchySpec,
    events: impl IntoIterator<Item = &'a String>,
) -> anyhow::Result<()> {
    let host = std::thread::available_parallelism().map_or(1, usize::from);
    let map = match asked {
        None => None,
        Some((source, text)) => match CoreMap::parse(text, host) {
            Err(e) => bail!("{source}{text}: {e}; nothing was started"),
            Ok(Some(map)) => {
                Machine::check(spec, map.cores).with_context(|| {
                    format!(
                        "{source}{text}: the cache cannot be a machine of {} cores; nothing was started",
                        map.cores
                    )
                })?;
                Some(map)
            }
            Ok(None) => None,
        },
    };
    if let Some(map) = map.filter(|m| m.cores > 1) {
        for name in events {
            if let Some(why) = name
                .parse::<Event>()
                .ok()
                .and_then(|e| e.never_counts_on(spec, map.cores))
            {
                bail!("--event {name}: {why}; nothing was started");
            }
        }
        return Ok(());
    }
    for name in events {
        if name.parse::<Event>().is_ok_and(|e| e.is_coherence()) {
            bail!(
                "--event {name} counts coherence events, which only threads simulated as the cores of one machine have; add --cores N (N of at least 2, or `host`); nothing was started"
            );
        }
    }
    Ok(())
}

/// The most buckets one histogram can have: a request's result block holds this many.
pub(crate) fn max_buckets() -> u32 {
    Capacities::default().buckets_per_slot
}

/// Checks that no histogram asks for more buckets than a result block holds.
pub(crate) fn buckets(counts: &[u32], then: &str) -> anyhow::Result<()> {
    let max = max_buckets();
    if let Some(n) = counts.iter().find(|&&n| n > max) {
        bail!(
            "--buckets {n}: a histogram has at most {max} buckets (one result block); ask for fewer, or for wider buckets; {then}"
        );
    }
    Ok(())
}

/// Refuses an output file that is `other` itself (the program measured, the report read):
/// writing it would destroy what the command works from. `then` says what was not done.
pub(crate) fn not_the_same_file(
    flag: &str,
    path: &Path,
    (what, other): (&str, &Path),
    then: &str,
) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(o), Ok(p)) = (std::fs::metadata(other), std::fs::metadata(path))
        && (o.dev(), o.ino()) == (p.dev(), p.ino())
    {
        bail!(
            "{flag} {} is {what} itself; give another file; {then}",
            path.display()
        );
    }
    Ok(())
}

/// Checks that the file `flag` names (`--output`, `--svg`) can be written: not a directory, its
/// directory exists and takes a new file, and an existing file may be written. Found after the
/// work, the results, the recorded trace or the plot would be lost with the work's time.
pub(crate) fn output(flag: &str, path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    if path.is_dir() {
        bail!("{flag} {shown} is a directory; give the name of a file in it; nothing was started");
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{flag} {shown}: the directory {} does not exist; create it or choose another; nothing was started",
            dir.display()
        );
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| {
                format!("{flag} {shown} exists and cannot be written; nothing was started")
            })?;
    } else {
        tempfile::NamedTempFile::new_in(dir).with_context(|| {
            format!(
                "{flag} {shown}: cannot create a file in {}; choose a directory you may write; nothing was started",
                dir.display()
            )
        })?;
    }
    Ok(())
}

/// Checks the file `epcache run --trace` records into: not a symbolic link (the runtime never
/// writes through one), and not an existing file unless `overwrite`, as `epcache trace record`
/// and the daemon ask.
pub(crate) fn new_trace_file(path: &Path, overwrite: bool) -> anyhow::Result<()> {
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => bail!(
            "--output {shown} is a symbolic link, which a trace is never written through; name the file itself; nothing was started"
        ),
        Ok(_) if !overwrite => bail!(
            "--output {shown} exists; add --overwrite to replace it, or name another file; nothing was started"
        ),
        _ => Ok(()),
    }
}

/// Where `program` is, as the launch will find it: a path as given, else the first match on
/// `$PATH`.
pub(crate) fn locate(program: &OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(path))
        .find(|candidate| candidate.is_file())
}

/// Says, before the program starts, of each request on an allocation site (`--array FILE:LINE`)
/// whose file has code in the program but whose line has none, that no block can be allocated
/// there, with the nearest lines that have code: the request would wait for ever. Only said:
/// a program without line tables, or a name that is no site, is left to the daemon.
pub(crate) fn allocation_lines(program: &OsStr, requests: &[epcache_client::Request]) {
    let sites: Vec<(Option<&str>, &str, u32)> = requests
        .iter()
        .filter_map(|r| match &r.data {
            epcache_client::DataRef::Name(name) => {
                let (file, line) = name.rsplit_once(':')?;
                // One array of a statement allocating several: `t@heat.f90:6`.
                let (array, file) = match file.rsplit_once('@') {
                    Some((array, file)) => (Some(array), file),
                    None => (None, file),
                };
                Some((array, file, line.parse().ok().filter(|&l| l > 0)?))
            }
            _ => None,
        })
        .filter(|(_, file, _)| file.contains('.'))
        .collect();
    if sites.is_empty() {
        return;
    }
    let Some(path) = locate(program) else {
        return;
    };
    let (Ok(lines), Ok(info)) = (
        epcache_symbols::CodeLines::load(&path),
        epcache_symbols::DebugInfo::load_program(&path),
    ) else {
        return;
    };
    for (array, file, line) in sites {
        if let Some(array) = array {
            other_arrays_allocated(&info, array, file, line);
        }
        let Ok(mut with_code) = lines.lines_of_file(file) else {
            continue;
        };
        // A call inlined away (an allocation wrapper) is in no line table row of its line,
        // only in its inlined copy's call line.
        let base = file.rsplit('/').next().unwrap_or(file);
        with_code.extend(
            info.inlined
                .iter()
                .filter(|c| {
                    info.files
                        .get(c.file as usize)
                        .is_some_and(|f| f.rsplit('/').next() == Some(base))
                })
                .map(|c| c.line),
        );
        if with_code.is_empty() || with_code.contains(&line) {
            continue;
        }
        let before = with_code.range(..line).next_back();
        let after = with_code.range(line..).next();
        let near: Vec<String> = [before, after]
            .into_iter()
            .flatten()
            .map(|l| format!("{file}:{l}"))
            .collect();
        eprintln!(
            "epcache: warning: {file}:{line} has no code in the program, so no block is allocated there and its request will measure nothing; lines with code nearest to it: {}",
            near.join(", ")
        );
    }
}

/// Says, before the program starts, of each request naming a global that is a C++ container
/// keeping its elements on the heap (`std::vector`), that it counts the container's own few
/// bytes, and where its elements are: a heap block named by the line allocating it.
pub(crate) fn container_globals(program: &OsStr, requests: &[epcache_client::Request]) {
    let names: Vec<&str> = requests
        .iter()
        .filter_map(|r| match &r.data {
            // Not an allocation site (`grid.c:40`, `t@heat.f90:6`).
            epcache_client::DataRef::Name(name)
                if !name.contains('@')
                    && name
                        .rsplit_once(':')
                        .is_none_or(|(_, line)| line.parse::<u32>().is_err()) =>
            {
                Some(name.as_str())
            }
            _ => None,
        })
        .collect();
    if names.is_empty() {
        return;
    }
    let Some(info) =
        locate(program).and_then(|p| epcache_symbols::DebugInfo::load_program(&p).ok())
    else {
        return;
    };
    for name in names {
        let Some(global) = info
            .globals
            .iter()
            .find(|g| g.qualified_name == name || g.name == name)
        else {
            continue;
        };
        let Some(container) = &global.container else {
            continue;
        };
        let declared = global
            .file
            .and_then(|f| info.files.get(f as usize))
            .map(|f| format!("{}:{}", f.rsplit('/').next().unwrap_or(f), global.line));
        let at = declared.map_or_else(String::new, |site| {
            format!(" (`--array {site}` when its declaration sizes it)")
        });
        eprintln!(
            "epcache: warning: `{name}` is a C++ `{container}`: a request on it counts the accesses to the {}-byte object itself, not to its elements, which are a heap block named by the line that allocates them{at}; `epcache run --all-regions` lists the lines",
            global.size
        );
    }
}

/// Says, before the program starts, of a request for `array@file:line` whose line, read from
/// the program's source, allocates other arrays only, which ones: the line's block would be
/// counted under the name asked for. Nothing when the source cannot be read or its line
/// allocates through a call the reading does not know (a wrapper).
fn other_arrays_allocated(info: &epcache_symbols::DebugInfo, array: &str, file: &str, line: u32) {
    let base = file.rsplit('/').next().unwrap_or(file);
    if let Some(grown) = crate::allocated_arrays::grown_together(info, file, line) {
        let which = if grown.iter().any(|g| g == array) {
            "which may be another's"
        } else {
            "and it is none of them"
        };
        eprintln!(
            "epcache: warning: {base}:{line} grows {} through member calls, whose blocks epcache cannot tell apart: `{array}@{base}:{line}` counts the line's latest block, {which}; put each on a line of its own, or ask for `{base}:{line}` (all of them)",
            crate::output::quoted(grown, " and ")
        );
        return;
    }
    let Some(allocated) = crate::allocated_arrays::allocated_instead(info, array, file, line)
    else {
        return;
    };
    let asks: Vec<String> = allocated
        .iter()
        .map(|o| format!("`{o}@{base}:{line}`"))
        .collect();
    eprintln!(
        "epcache: warning: {base}:{line} allocates {}, not `{array}`: the request would count that line's block under the name `{array}`; ask for {}",
        crate::output::quoted(&allocated, " and "),
        asks.join(" or ")
    );
}

/// The region `--trace` names, looked for among the program's functions before it starts: one
/// inlined everywhere, which never runs as a region, is refused with where it was inlined; a
/// name no function has is said with the nearest names (a marker region of that name, which
/// only the run can tell, would still be traced). Without debug information nothing is said.
pub(crate) fn traced_region(program: &OsStr, region: &str) -> anyhow::Result<()> {
    let Some(path) = locate(program) else {
        return Ok(());
    };
    let Ok(info) = epcache_symbols::DebugInfo::load_program(&path) else {
        return Ok(());
    };
    let name = region.rsplit_once('@').map_or(region, |(name, _)| name);
    let names = info.functions.iter().map(|f| f.name.as_str());
    if info.functions.is_empty() || !epcache_shm::region_names::find(names.clone(), name).is_empty()
    {
        return Ok(());
    }
    if let Some(note) = crate::inlined_regions::note(&path, name) {
        bail!("--trace {region}: {note}; nothing was started");
    }
    eprintln!(
        "epcache: warning: --trace {region}: {} has no function of that name (nearest: {}); only a marker region so named would be traced",
        program.to_string_lossy(),
        epcache_daemon::nearest(name, names).join(", ")
    );
    Ok(())
}

/// Says before the program starts of each request on a region that is no function with code of
/// the program but was inlined into others, why it will never run as a region and what to ask
/// for instead; the request stays (a marker region of that name would still serve it).
pub(crate) fn inlined_request_regions(program: &OsStr, requests: &[epcache_client::Request]) {
    let names: Vec<&str> = requests
        .iter()
        .filter_map(|r| match &r.region {
            epcache_client::RegionRef::Name(name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    if names.is_empty() {
        return;
    }
    let Some(path) = locate(program) else {
        return;
    };
    let Ok(info) = epcache_symbols::DebugInfo::load_program(&path) else {
        return;
    };
    let functions = || info.functions.iter().map(|f| f.name.as_str());
    let mut said = Vec::new();
    for name in names {
        if said.contains(&name) || info.functions.is_empty() {
            continue;
        }
        said.push(name);
        // A function is listed once per range of its code (a dual build has two copies).
        let mut found: Vec<&str> = epcache_shm::region_names::find(functions(), name)
            .into_iter()
            .map(|i| info.functions[i].name.as_str())
            .collect();
        found.sort_unstable();
        found.dedup();
        if let [region] = found.as_slice() {
            if let Some(note) = crate::inlined_regions::also_inlined(&info, region) {
                eprintln!("epcache: warning: --region {name}: {note}");
            }
        } else if found.is_empty()
            && let Some(note) = crate::inlined_regions::note(&path, name)
        {
            eprintln!(
                "epcache: warning: --region {name}: {note}; the request waits for a marker region of that name, and says after the run if none came"
            );
        }
    }
}

/// Refuses a program whose symbol table shows it was built without capture: it would run
/// unmonitored and report nothing. Scripts and stripped programs cannot be told and pass; the
/// run then checks that a report came back.
pub(crate) fn built_with_capture(program: &OsStr) -> anyhow::Result<()> {
    let Some(path) = locate(program) else {
        let shown = program.to_string_lossy();
        if Path::new(program).components().count() > 1 {
            if Path::new(program).is_dir() {
                bail!("`{shown}` is a directory, not a program; nothing was started");
            }
            bail!("there is no program file `{shown}`; check the path; nothing was started");
        }
        bail!(
            "cannot find the program `{shown}` on PATH; give its path (./{shown}) or put it on PATH; nothing was started"
        );
    };
    if epcache_symbols::defines_capture_runtime(&path) == Some(false) {
        bail!(
            "{} was not built with capture (it defines none of epcache's hooks), so it would run unmonitored; build it with `epcache cc -- <your compiler command>` (or link epcache-monitor into a Rust program built with the SanitizerCoverage flags); nothing was started",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_cache_or_a_missing_level_is_refused_with_the_reason() {
        let err = cache(Some("foo")).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("--cache") && text.contains("nothing was started"),
            "{text}"
        );
        assert!(text.contains("not a preset"), "{text}");
        let (text, spec) = cache(Some("D1=32K,8,64")).unwrap();
        assert_eq!(text, "D1=32K,8,64");
        assert!(events([&"PAPI_L1_LDM".to_owned()], &spec).is_ok());
        let err = events([&"PAPI_L2_DCM".to_owned()], &spec).unwrap_err();
        assert!(format!("{err:#}").contains("cache level 2"), "{err:#}");
        assert!(buckets(&[max_buckets()], "nothing was started").is_ok());
        let err = buckets(&[max_buckets() + 1], "nothing was started").unwrap_err();
        assert!(err.to_string().contains("at most 1024 buckets"), "{err}");
    }

    #[test]
    fn an_output_that_cannot_be_written_is_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        assert!(output("--output", &dir.path().join("t.eppt")).is_ok());
        let err = output("--output", &dir.path().join("missing/t.eppt")).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("does not exist") && text.contains("nothing was started"),
            "{text}"
        );
        let err = output("--svg", dir.path()).unwrap_err();
        assert!(err.to_string().starts_with("--svg "), "{err}");
        assert!(err.to_string().contains("is a directory"), "{err}");
        // A file named without a folder is in the current directory.
        assert!(output("--output", Path::new("epcache-preflight-output-check")).is_ok());
    }

    #[test]
    fn a_trace_never_replaces_a_file_unasked_nor_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.eppt");
        assert!(new_trace_file(&trace, false).is_ok());
        std::fs::write(&trace, b"an earlier trace").unwrap();
        let err = new_trace_file(&trace, false).unwrap_err().to_string();
        assert!(
            err.contains("exists") && err.contains("--overwrite"),
            "{err}"
        );
        assert!(new_trace_file(&trace, true).is_ok());
        let link = dir.path().join("link.eppt");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
        for overwrite in [false, true] {
            let err = new_trace_file(&link, overwrite).unwrap_err().to_string();
            assert!(err.contains("symbolic link"), "{err}");
        }
    }

    #[test]
    fn a_program_that_is_not_there_is_refused() {
        let err = built_with_capture(OsStr::new("./no-such-program-here")).unwrap_err();
        assert!(
            err.to_string()
                .contains("there is no program file `./no-such-program-here`"),
            "{err}"
        );
        assert!(
            !err.to_string().contains(".//"),
            "a path is not prefixed again: {err}"
        );
        assert!(err.to_string().contains("nothing was started"), "{err}");
        let err = built_with_capture(OsStr::new("/tmp"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`/tmp` is a directory"), "{err}");
        let err = built_with_capture(OsStr::new("no-such-program-on-path-x")).unwrap_err();
        assert!(err.to_string().contains("cannot find the program"), "{err}");
        assert!(
            err.to_string().contains("(./no-such-program-on-path-x)"),
            "{err}"
        );
    }
}
