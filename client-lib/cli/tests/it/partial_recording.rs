//! Recording a partial data trace in the runtime (`EPCACHE_TRACE`, `EPCACHE_TRACE_OUTPUT`) and
//! re-simulating it: under the run's cache, `epcache replay` of the recording gives exactly the
//! counts the run's standalone report gives for the traced region, for a regular C kernel, an
//! irregular one, a Fortran one and an OpenMP loop on four threads; a recording of fewer
//! instances stops after them, and threads still inside the region at exit keep what they
//! ended. Sampled miss-ratio curves of the recordings stay within the error the replay states.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::capture_support::{available, epcache_cc, kernel, region, runtime_built, skipped};

/// The standalone report's events of a region, as replay's level fields.
pub(crate) const EVENTS: [(&str, &str, &str); 8] = [
    ("PAPI_L1_DCR", "D1", "reads"),
    ("PAPI_L1_LDM", "D1", "read_misses"),
    ("PAPI_L1_DCW", "D1", "writes"),
    ("PAPI_L1_STM", "D1", "write_misses"),
    ("PAPI_L2_DCR", "LL", "reads"),
    ("PAPI_L2_LDM", "LL", "read_misses"),
    ("PAPI_L2_DCW", "LL", "writes"),
    ("PAPI_L2_STM", "LL", "write_misses"),
];

/// Builds `source` with `epcache cc -- COMPILER -O2`, runs it tracing `trace` under `cache`,
/// and returns the report and the replay of the recording (JSON).
fn record_and_replay(
    compiler: &str,
    source: &str,
    trace: &str,
    cache: &str,
) -> Option<(serde_json::Value, serde_json::Value)> {
    let (dir, report) = record(compiler, source, trace, cache)?;
    Some((report, replay(&dir.path().join("t.eppt"), cache)))
}

/// Builds `source` with `epcache cc -- COMPILER -O2`, runs it tracing `trace` under `cache`
/// into `t.eppt` of the directory returned, and returns the directory and the report.
fn record(
    compiler: &str,
    source: &str,
    trace: &str,
    cache: &str,
) -> Option<(tempfile::TempDir, serde_json::Value)> {
    let who = format!("partial recording of {source}");
    if !(available(compiler, &who) && runtime_built(&who)) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = kernel(source);
    epcache_cc(
        dir.path(),
        &[compiler, "-O2", "-o", "prog", src.to_str().unwrap()],
    );
    let (report, recording) = (dir.path().join("r.json"), dir.path().join("t.eppt"));
    run_traced(dir.path(), cache, trace, &recording, Some(&report));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    Some((dir, report))
}

/// Runs `dir`'s `prog` under `cache` tracing `trace` into `recording`, with the standalone
/// report `report` when given and the variables `env` besides, checks it succeeded and
/// returns its stderr.
fn run_traced_with(
    dir: &Path,
    cache: &str,
    trace: &str,
    recording: &Path,
    report: Option<&Path>,
    env: &[(&str, &str)],
) -> String {
    let mut command = Command::new(dir.join("prog"));
    match report {
        Some(report) => command.env("EPCACHE_REPORT", report),
        None => command.env_remove("EPCACHE_REPORT"),
    };
    let out = command
        .envs(env.iter().copied())
        .env("EPCACHE_CACHE", cache)
        .env("EPCACHE_TRACE", trace)
        .env("EPCACHE_TRACE_OUTPUT", recording)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// [`run_traced_with`] and no other variables.
fn run_traced(dir: &Path, cache: &str, trace: &str, recording: &Path, report: Option<&Path>) {
    run_traced_with(dir, cache, trace, recording, report, &[]);
}

/// `source` built by `epcache cc -- gcc -O2 FLAGS` into `prog` of the directory returned;
/// `None` (said) when gcc or the runtime is missing.
fn built_with_gcc(source: &str, flags: &[&str], who: &str) -> Option<tempfile::TempDir> {
    if !(available("gcc", who) && runtime_built(who)) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = kernel(source);
    let mut args = vec!["gcc", "-O2"];
    args.extend_from_slice(flags);
    args.extend(["-o", "prog", src.to_str().unwrap()]);
    epcache_cc(dir.path(), &args);
    Some(dir)
}

pub(crate) fn replay(trace: &Path, cache: &str) -> serde_json::Value {
    replay_with(trace, cache, &[])
}

fn replay_with(trace: &Path, cache: &str, options: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["replay", "--json", "--cache", cache])
        .args(options)
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Data structure `name`'s row in a replay's JSON.
fn replayed_structure<'a>(replayed: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    replayed["structures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no structure {name} in the replay: {replayed}"))
}

pub(crate) fn assert_exact(report: &serde_json::Value, replayed: &serde_json::Value, name: &str) {
    let events = &region(report, name)["events"];
    for (event, level, field) in EVENTS {
        assert_eq!(
            replayed["levels"][level][field], events[event],
            "region {name}: {event} live vs {level}.{field} re-simulated"
        );
    }
    assert!(events["PAPI_L1_DCR"].as_u64().unwrap() > 1000);
}

#[test]
fn regular_c_kernel_recording_replays_to_the_live_counts() {
    let cache = "D1=8K,2,32;LL=64K,8,64";
    let Some((dir, report)) = record("gcc", "partial_matmul.c", "multiply", cache) else {
        return;
    };
    let recording = dir.path().join("t.eppt");
    let replayed = replay(&recording, cache);
    assert_exact(&report, &replayed, "multiply");
    // One bit changed anywhere past the header, whatever field it falls in (a chunk, a
    // site's name, a length): refused as damage, saying where, not replayed.
    let good = std::fs::read(&recording).unwrap();
    let damaged = dir.path().join("damaged.eppt");
    for eighth in 1..8 {
        let mut bytes = good.clone();
        let at = 16 + (bytes.len() - 16) * eighth / 8;
        bytes[at] ^= 0x04;
        std::fs::write(&damaged, bytes).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["replay", "--cache", cache])
            .arg(&damaged)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "byte {at}: {stderr}");
        assert!(
            stderr.contains("damaged.eppt")
                && stderr.contains("changed or damaged after it was written"),
            "byte {at}: {stderr}"
        );
    }
    // The site table names the kernel's lines; the structures are its arrays.
    let sites = replayed["sites"].as_array().unwrap();
    assert!(
        sites.iter().any(|s| s["function"] == "multiply"
            && s["source"]
                .as_str()
                .unwrap()
                .ends_with("partial_matmul.c:11")),
        "{sites:?}"
    );
    // Each site is named by the structure it accesses: b's one load per iteration.
    assert!(
        sites
            .iter()
            .any(|s| s["structure"] == "b" && s["loads"] == 48 * 48 * 48 && s["stores"] == 0),
        "{sites:?}"
    );
    assert_eq!(replayed_structure(&replayed, "b")["accesses"], 48 * 48 * 48);
    assert!(
        replayed["compression"]["accesses_per_byte"]
            .as_f64()
            .unwrap()
            > 100.0
    );
}

/// A recording thread hands its accesses to the simulation worker on a second core whole
/// (`ThreadCapture::stage_unfiltered`), which simulates, counts and records them there: the
/// report and the recording are what the thread makes simulating them itself, and the
/// recording still replays to the live counts.
#[test]
fn a_recording_simulated_on_a_second_core_is_the_one_made_on_the_thread() {
    let who = "partial recording on a second core";
    let Some(dir) = built_with_gcc("partial_matmul.c", &[], who) else {
        return;
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 && !skipped(&format!("{who}: {cpus} CPU here; the worker needs two")) {
        return;
    }
    let cache = "D1=8K,2,32;LL=64K,8,64";
    // `always`: a busy machine must not send the accesses back to the thread.
    let [alone, shipped] = ["off", "always"].map(|pipeline| {
        let recording = dir.path().join(format!("{pipeline}.eppt"));
        let report = dir.path().join(format!("{pipeline}.json"));
        let env = [("EPCACHE_PIPELINE", pipeline)];
        run_traced_with(
            dir.path(),
            cache,
            "multiply",
            &recording,
            Some(&report),
            &env,
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        (report, replay(&recording, cache))
    });
    let on_worker = |run: &(serde_json::Value, serde_json::Value)| {
        run.0["simulated_on_second_core"].as_u64().unwrap()
    };
    assert_eq!(on_worker(&alone), 0);
    // Two loads an iteration of the 48^3 loop (221,184), all but the last batch's shipped.
    assert!(on_worker(&shipped) > 200_000, "{}", on_worker(&shipped));
    assert_eq!(alone.0["levels"], shipped.0["levels"]);
    assert_eq!(
        region(&alone.0, "multiply")["events"],
        region(&shipped.0, "multiply")["events"]
    );
    for field in ["levels", "structures", "records"] {
        assert_eq!(alone.1[field], shipped.1[field], "the replays' {field}");
    }
    // The same descriptors (the bytes may differ by where each run's program was loaded).
    for field in ["accesses", "descriptors", "raw_accesses"] {
        let (a, b) = (&alone.1["compression"], &shipped.1["compression"]);
        assert_eq!(a[field], b[field], "the recordings' {field}");
    }
    assert_exact(&shipped.0, &shipped.1, "multiply");
}

/// `EPCACHE_TRACE` alone, with no `EPCACHE_REPORT`, switches capture on and records the same
/// trace: its replay gives the first level's counts (which no load address changes) of the
/// recording made beside a report.
#[test]
fn the_environment_alone_records_without_a_report() {
    let cache = "D1=8K,2,32;LL=64K,8,64";
    let Some((dir, _)) = record("gcc", "partial_matmul.c", "multiply", cache) else {
        return;
    };
    let alone = dir.path().join("alone.eppt");
    run_traced(dir.path(), cache, "multiply", &alone, None);
    assert!(alone.exists(), "no trace written without a report");
    let (beside, alone) = (
        replay(&dir.path().join("t.eppt"), cache),
        replay(&alone, cache),
    );
    assert_eq!(alone["levels"]["D1"], beside["levels"]["D1"]);
    assert_eq!(
        alone["levels"]["LL"]["reads"],
        beside["levels"]["LL"]["reads"]
    );
    assert!(alone["levels"]["D1"]["reads"].as_u64().unwrap() > 1000);
}

#[test]
fn irregular_c_kernel_recording_replays_to_the_live_counts() {
    let Some((report, replayed)) = record_and_replay(
        "gcc",
        "partial_gather.c",
        "gather",
        "D1=4K,4,64;LL=64K,8,64",
    ) else {
        return;
    };
    assert_exact(&report, &replayed, "gather");
    // x is gathered at random: its accesses stay raw.
    assert!(replayed["compression"]["raw_accesses"].as_u64().unwrap() >= 40_000);
}

#[test]
fn fortran_recording_replays_to_the_live_counts_and_stops_after_its_instances() {
    let cache = "D1=4K,4,32;LL=32K,8,64";
    let Some((report, replayed)) =
        record_and_replay("gfortran", "partial_sweep.f90", "sweep", cache)
    else {
        return;
    };
    assert_eq!(region(&report, "sweep")["instances"], 3);
    assert_exact(&report, &replayed, "sweep");
    // Two of the three instances: the recording ends after the second, whose counts are two
    // thirds of the three (every sweep makes the same accesses).
    let (report, two) = record_and_replay("gfortran", "partial_sweep.f90", "sweep:2", cache)
        .expect("the tools were there a moment ago");
    let live = &region(&report, "sweep")["events"];
    let records = &two["records"];
    let recorded = records["loads"].as_u64().unwrap() + records["stores"].as_u64().unwrap();
    let all = live["PAPI_L1_DCR"].as_u64().unwrap() + live["PAPI_L1_DCW"].as_u64().unwrap();
    assert_eq!(recorded * 3, all * 2);
}

/// `epcache run OPTIONS --output OUTPUT -- DIR/prog`, in `dir`.
fn epcache_run_trace(dir: &Path, options: &[&str], output: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_epcache"))
        .arg("run")
        .args(options)
        .arg("--output")
        .arg(output)
        .arg("--")
        .arg(dir.join("prog"))
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `same_name_a.c` and `same_name_b.c` built together by `epcache cc -- gcc -O2` into
/// `dir/prog`: two static functions named `init`, one in each file.
pub(crate) fn build_same_names(dir: &Path) {
    let (a, b) = (kernel("same_name_a.c"), kernel("same_name_b.c"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    epcache_cc(dir, &["gcc", "-O2", "-o", "prog", a, b]);
}

#[test]
fn epcache_run_trace_records_what_the_environment_does() {
    let cache = "D1=8K,2,32;LL=64K,8,64";
    let who = "epcache run --trace";
    if !(available("gcc", who) && runtime_built(who)) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = kernel("partial_matmul.c");
    epcache_cc(
        dir.path(),
        &["gcc", "-O2", "-o", "prog", src.to_str().unwrap()],
    );
    let trace = dir.path().join("run.eppt");
    let traced = ["--cache", cache, "--trace", "multiply"];
    let out = epcache_run_trace(
        dir.path(),
        &[&traced[..], &["--instances", "1"]].concat(),
        &trace,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("recorded 1 instance(s) of `multiply`"),
        "{stderr}"
    );
    // The same program run alone with its report: the same counts, re-simulated.
    let (report, _) = record_and_replay("gcc", "partial_matmul.c", "multiply", cache).unwrap();
    let replayed = replay(&trace, cache);
    assert_exact(&report, &replayed, "multiply");
    // The accesses said to be in the instances are the ones the replay counts.
    let records = &replayed["records"];
    let counted = records["loads"].as_u64().unwrap()
        + records["stores"].as_u64().unwrap()
        + records["modifies"].as_u64().unwrap();
    let said = if stderr.contains(" in the instances;") {
        let before = stderr.split(" in the instances;").next().unwrap();
        before.rsplit('(').next().unwrap().replace(',', "")
    } else {
        let before = stderr.split(" accesses in ").next().unwrap();
        before.rsplit(' ').next().unwrap().replace(',', "")
    };
    assert_eq!(said.parse::<u64>().unwrap(), counted, "{stderr}");
    // A region that never runs is said, with exit status 2.
    let out = epcache_run_trace(
        dir.path(),
        &["--cache", cache, "--trace", "no_such_region"],
        &dir.path().join("none.eppt"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never ran"));
    // An output in a directory that does not exist is refused before the program starts: it
    // prints nothing, and no run's time is lost on a trace that cannot be kept.
    let out = epcache_run_trace(
        dir.path(),
        &traced,
        &dir.path().join("missing").join("t.eppt"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("does not exist") && stderr.contains("nothing was started"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "the program ran: {:?}", out.stdout);
    // The trace recorded above is not replaced unasked, nor written through a link.
    let link = dir.path().join("link.eppt");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    let before = std::fs::read(&trace).unwrap();
    for (output, overwrite, said) in [
        (&trace, &[][..], "--overwrite"),
        (&link, &["--overwrite"][..], "symbolic link"),
    ] {
        let out = epcache_run_trace(dir.path(), &[&traced[..], overwrite].concat(), output);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(said) && stderr.contains("nothing was started"),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace changed");
}

/// A standalone run never writes its trace into a file another process is writing (two ranks
/// given one `EPCACHE_TRACE_OUTPUT` would interleave their chunks), nor through a symbolic
/// link: it says so, records nothing, and the program runs to its end; `epcache run --trace`
/// then says its program traced nothing.
#[test]
fn a_trace_file_in_use_or_behind_a_link_is_left_alone() {
    let cache = "D1=8K,2,32;LL=64K,8,64";
    let Some(dir) = built_with_gcc("partial_matmul.c", &[], "a trace file in use") else {
        return;
    };
    let busy = dir.path().join("busy.eppt");
    std::fs::write(&busy, b"another recording").unwrap();
    let holder = std::fs::File::open(&busy).unwrap();
    holder.lock().unwrap();
    let stderr = run_traced_with(dir.path(), cache, "multiply", &busy, None, &[]);
    assert!(stderr.contains("another process is writing"), "{stderr}");
    assert_eq!(std::fs::read(&busy).unwrap(), b"another recording");
    drop(holder);

    let elsewhere = dir.path().join("elsewhere.txt");
    std::fs::write(&elsewhere, b"not a trace").unwrap();
    let link = dir.path().join("link.eppt");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let stderr = run_traced_with(dir.path(), cache, "multiply", &link, None, &[]);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"not a trace");

    // Unlocked, the same file is replaced by a whole trace, which is said.
    let stderr = run_traced_with(dir.path(), cache, "multiply", &busy, None, &[]);
    assert!(
        stderr.contains("replacing the existing") && stderr.contains("(17 bytes)"),
        "{stderr}"
    );
    assert!(replay(&busy, cache)["records"]["loads"].as_u64().unwrap() > 1000);

    // `epcache run --trace` onto a file another process is writing says that its program
    // traced nothing (status 2), and never sums up the other process's trace as its own.
    let whole = std::fs::read(&busy).unwrap();
    let holder = std::fs::File::open(&busy).unwrap();
    holder.lock().unwrap();
    let out = epcache_run_trace(
        dir.path(),
        &["--cache", cache, "--trace", "multiply", "--overwrite"],
        &busy,
    );
    drop(holder);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the program could not write the trace")
            && stderr.contains("another process is writing")
            && !stderr.contains("recorded"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&busy).unwrap(), whole);
}

/// A recording process killed outright (SIGKILL: the out-of-memory killer, a batch system's
/// time limit) leaves a trace without its end, whose replay says so and counts the whole
/// instances its thread had handed to the file: a sweep of 32 KiB through an 8 KiB first
/// level misses each of its 1,024 lines of 32 bytes once, so whole sweeps make a multiple of
/// 1,024 read misses, and every load has its store.
#[test]
fn a_killed_recording_leaves_its_ended_instances_readable() {
    let cache = "D1=8K,2,32;LL=64K,8,64";
    let Some(dir) = built_with_gcc("until_signal.c", &["-fno-inline"], "a killed recording") else {
        return;
    };
    // Recording goes on for ever: killed once the file holds `bytes`, it replays (with a
    // warning) what reached the file.
    let killed_at = |region: &str, bytes: u64| {
        let trace = dir.path().join(format!("{region}.eppt"));
        let mut child = Command::new(dir.path().join("prog"))
            .env_remove("EPCACHE_REPORT")
            .env("EPCACHE_CACHE", cache)
            .env("EPCACHE_TRACE", region)
            .env("EPCACHE_TRACE_OUTPUT", &trace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready.trim(), "ready");
        let started = std::time::Instant::now();
        while std::fs::metadata(&trace).map_or(0, |m| m.len()) < bytes {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "the trace of {region} never grew"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["replay", "--json", "--cache", cache])
            .arg(&trace)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("was never finished"), "{stderr}");
        let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(replayed["never_finished_at_byte"].as_u64().is_some());
        replayed
    };
    // `main` is one instance that never ends: its safe points inside it keep what came before
    // the last one, counted, and the thread is said to be cut.
    let replayed = killed_at("main", 1);
    assert!(
        replayed["levels"]["D1"]["reads"].as_u64().unwrap() >= 1 << 22,
        "{replayed}"
    );
    assert_eq!(replayed["unfinished_threads"], serde_json::json!([0]));
    // The sweeps: several safe points' worth of whole instances.
    let replayed = killed_at("sweep", 4096);
    let d1 = &replayed["levels"]["D1"];
    let misses = d1["read_misses"].as_u64().unwrap();
    assert!(misses >= 1024 && misses.is_multiple_of(1024), "{d1}");
    assert_eq!(d1["reads"], d1["writes"], "{d1}");
    assert_eq!(d1["write_misses"], 0, "{d1}");
    // The sites were described as the thread handed the file its bodies, not at the close the
    // kill prevented: the sweep's load and store are named by their line and their array.
    let sweep_sites: Vec<&serde_json::Value> = replayed["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["accesses"].as_u64() > Some(0))
        .collect();
    assert_eq!(sweep_sites.len(), 2, "{}", replayed["sites"]);
    for site in sweep_sites {
        assert!(
            site["source"]
                .as_str()
                .is_some_and(|s| s.ends_with("until_signal.c:9")),
            "{site}"
        );
        assert_eq!(site["function"], "sweep", "{site}");
        assert_eq!(site["structure"], "a", "{site}");
    }
}

/// Two static functions named `init` in two files: `EPCACHE_TRACE=init` records both and says
/// so, `init@FILE` records the one of that file (one instance in `same_name_a.c`, two in
/// `same_name_b.c`).
#[test]
fn regions_of_one_name_are_told_apart_by_their_file() {
    let who = "regions of one name";
    if !(available("gcc", who) && runtime_built(who)) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    build_same_names(dir.path());
    for (trace, instances, warned) in [
        ("init", 3, true),
        ("init@same_name_b.c", 2, false),
        ("init@kernels/same_name_a.c", 1, false),
    ] {
        let out = epcache_run_trace(
            dir.path(),
            &["--json", "--overwrite", "--trace", trace],
            &dir.path().join("t.eppt"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{trace}: {stderr}");
        // The program prints one line before the summary.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary: serde_json::Value =
            serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
        assert_eq!(summary["instances"], instances, "{trace}: {summary}");
        assert_eq!(
            stderr.contains("two regions answer to `init`"),
            warned,
            "{trace}: {stderr}"
        );
        if warned {
            assert!(stderr.contains("init@same_name_"), "{stderr}");
        }
    }
    // A file none of them is in: said, with where the regions of that name are.
    let out = epcache_run_trace(
        dir.path(),
        &["--overwrite", "--trace", "init@nosuch.c"],
        &dir.path().join("t.eppt"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no region `init` is in a file `nosuch.c` names")
            && stderr.contains("same_name_a.c:")
            && stderr.contains("same_name_b.c:"),
        "{stderr}"
    );
}

/// The mean absolute difference of two curve sets' miss ratios at the points both have.
fn mean_absolute_error(exact: &serde_json::Value, sampled: &serde_json::Value) -> f64 {
    let (mut sum, mut n) = (0.0, 0);
    for curve in sampled.as_array().unwrap() {
        let Some(twin) = exact
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["structure"] == curve["structure"])
        else {
            continue;
        };
        for p in curve["points"].as_array().unwrap() {
            if let Some(q) = twin["points"]
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["size"] == p["size"])
            {
                sum +=
                    (p["miss_ratio"].as_f64().unwrap() - q["miss_ratio"].as_f64().unwrap()).abs();
                n += 1;
            }
        }
    }
    assert!(n > 0, "no common point");
    sum / f64::from(n)
}

/// SHARDS-sampled curves of recorded traces (a regular, an irregular and a Fortran kernel) stay
/// within the error `epcache replay --mrc-sample` states for their sample, and say how they were
/// made; set-associative sampling is refused with the way out.
#[test]
fn sampled_curves_stay_within_the_stated_error() {
    let cache = "D1=8K,2,32;LL=64K,8,64";
    for (compiler, source, region) in [
        ("gcc", "partial_matmul.c", "multiply"),
        ("gcc", "partial_gather.c", "gather"),
        ("gfortran", "partial_sweep.f90", "sweep"),
    ] {
        let Some((dir, _)) = record(compiler, source, region, cache) else {
            return;
        };
        let trace = dir.path().join("t.eppt");
        let exact = replay_with(&trace, cache, &["--mrc", "full,32"]);
        assert!(exact.get("mrc_sample").is_none());
        for rate in ["0.5", "0.1"] {
            let sampled = replay_with(&trace, cache, &["--mrc", "full,32", "--mrc-sample", rate]);
            let sample = &sampled["mrc_sample"];
            assert_eq!(sample["method"], "SHARDS fixed-rate");
            let stated = sample["expected_mean_absolute_error"].as_f64().unwrap();
            let error = mean_absolute_error(&exact["mrc"], &sampled["mrc"]);
            eprintln!(
                "{source} at {rate}: {} lines sampled, mean absolute error {error:.4} (stated {stated})",
                sample["sampled_lines"]
            );
            assert!(error <= stated, "{source} at {rate}: {error} > {stated}");
            // Each structure's access count is exact; only misses are estimated.
            assert_eq!(
                sampled["mrc"].as_array().unwrap().last().unwrap()["accesses"],
                exact["mrc"].as_array().unwrap().last().unwrap()["accesses"]
            );
        }
        let text = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args([
                "replay",
                "--cache",
                cache,
                "--mrc",
                "full,32",
                "--mrc-sample",
                "0.1",
            ])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&text.stdout).contains("sampled (SHARDS, rate"));
        let refused = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args([
                "replay",
                "--cache",
                cache,
                "--mrc",
                "2,32",
                "--mrc-sample",
                "0.1",
            ])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(!refused.status.success());
        assert!(String::from_utf8_lossy(&refused.stderr).contains("--mrc full,32"));
    }
}

/// Every thread of an OpenMP team records its share of a traced parallel loop (its outlined
/// body), each from its own first access, and the trace replays, each thread on caches of its
/// own, to the region's live counts, which add the threads up.
#[test]
fn every_thread_of_an_openmp_region_is_recorded_and_replays_to_the_live_counts() {
    let who = "partial recording of an OpenMP region";
    let Some(dir) = built_with_gcc("omp_axpy.c", &["-fopenmp"], who) else {
        return;
    };
    let cache = "D1=32K,8,64;LL=8M,16,64";
    // `axpy`'s loop runs once; `touch_small`'s twice, each thread's second pass hitting the
    // lines its first brought in: the threads' bodies, ended at each instance, keep their
    // caches warm across the bodies.
    for region in ["axpy._omp_fn.0", "touch_small._omp_fn.0"] {
        let (recording, report) = (dir.path().join("t.eppt"), dir.path().join("r.json"));
        let env = [("OMP_NUM_THREADS", "4")];
        let stderr = run_traced_with(dir.path(), cache, region, &recording, Some(&report), &env);
        assert!(!stderr.contains("does not record"), "{stderr}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let replayed = replay(&recording, cache);
        assert_eq!(replayed["threads"], 4, "{region}: {}", replayed["threads"]);
        assert_eq!(replayed["unfinished_threads"], serde_json::json!([]));
        assert_exact(&report, &replayed, region);
        if region == "axpy._omp_fn.0" {
            // Every thread's share of `a[i] += s * b[i]` over a million elements.
            let n = 1_000_000;
            let (a, b) = (
                replayed_structure(&replayed, "a"),
                replayed_structure(&replayed, "b"),
            );
            assert_eq!((&a["loads"], &a["stores"]), (&n.into(), &n.into()));
            assert_eq!((&b["loads"], &b["stores"]), (&n.into(), &0.into()));
            // Each thread's static quarter: a load of `a` and of `b` and a store of `a` each,
            // and one load of `s` from the block libgomp passes the outlined body.
            let per_thread: Vec<_> = replayed["per_thread"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["records"]["loads"].clone(),
                        t["records"]["stores"].clone(),
                    )
                })
                .collect();
            let quarter = n / 4;
            assert_eq!(
                per_thread,
                vec![((2 * quarter + 1).into(), quarter.into()); 4],
                "{}",
                replayed["per_thread"]
            );
        } else {
            let small = replayed_structure(&replayed, "small");
            assert_eq!(small["loads"], 2 * 2048);
            // 2048 doubles in 256 lines: each thread's loads miss its quarter's lines in the
            // first pass only (its stores and second pass hit them).
            assert_eq!(small["levels"]["D1"]["misses"], 256, "{small}");
        }
    }
    // One instance of `touch_small`, which every thread of the team enters twice (the
    // workers for their parts of its loop): the second instances are left out as asked, which
    // is no thread failing to record.
    let recording = dir.path().join("one.eppt");
    let env = [("OMP_NUM_THREADS", "4")];
    let stderr = run_traced_with(dir.path(), cache, "touch_small:1", &recording, None, &env);
    assert!(!stderr.contains("does not record"), "{stderr}");
    let replayed = replay(&recording, cache);
    // One pass over `small`, each thread's quarter: the function's instance holds its
    // team's accesses, as the outlined body's region does.
    assert_eq!(replayed_structure(&replayed, "small")["loads"], 2048);
}

#[test]
fn threads_still_inside_the_region_at_exit_leave_their_ended_instances_and_are_said() {
    let who = "partial recording at an exit with threads";
    // Not inlined: `sweep_x` stays a region of its own inside the runner's endless loop.
    let flags = ["-fno-inline", "-pthread"];
    let Some(dir) = built_with_gcc("exit_with_threads.c", &flags, who) else {
        return;
    };
    let cache = "D1=32K,8,64;LL=8M,16,64";
    let trace = |region: &str| {
        let recording = dir.path().join(format!("{region}.eppt"));
        let stderr = run_traced_with(dir.path(), cache, region, &recording, None, &[]);
        (replay(&recording, cache), stderr)
    };
    // The blocked thread never leaves its instance: the trace is closed at exit, finished,
    // with nothing counted, and says why.
    let (replayed, stderr) = trace("sweep_y_then_block");
    assert!(
        stderr.contains("1 thread(s) were inside an instance of `sweep_y_then_block`"),
        "{stderr}"
    );
    assert!(!stderr.contains("never ran"), "{stderr}");
    assert_eq!(replayed["records"]["loads"], 0, "{replayed}");
    // The replay says it too, from the recording: its counts lack the instance the run had.
    let notes = replayed["recording_notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("1 thread(s) were inside an instance of `sweep_y_then_block`")),
        "{replayed}"
    );
    // The sweeping thread ends an instance (a body of the file) at each sweep: at least the
    // ten main waited for are there, whole, whatever it was doing at exit.
    let (replayed, stderr) = trace("sweep_x");
    let loads = replayed["records"]["loads"].as_u64().unwrap();
    assert!(
        loads >= 10 * 4096 && loads % 4096 == 0,
        "{loads} loads; {stderr}"
    );
    assert_eq!(replayed["records"]["stores"].as_u64().unwrap(), loads);
    assert_eq!(replayed["unfinished_threads"], serde_json::json!([]));
}
