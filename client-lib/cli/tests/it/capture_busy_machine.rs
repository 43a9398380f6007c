//! A second core that never hurts (`monitor-lib/src/capture/worker.rs`): when the program and
//! its simulation thread share their cores with other CPU-bound processes, the program's thread
//! notices that it or the simulation thread waits for a core, stops handing batches on and
//! simulates them itself, tries again later; the report counts the fallbacks, and the counts are
//! exactly those of a run on one core. Deterministic by construction, not by timing: the program is pinned to two
//! CPUs and a busy loop is pinned to each, so either thread waits about half the time whenever
//! it runs, far above the threshold.

use std::process::{Child, Command, Stdio};

use crate::capture_support::{available, counts_of, epcache_cc, kernel, runtime_built, skipped};

const CACHE: &str = "D1=32K,8,64;LL=1M,8,64";

/// The first two CPUs this process may run on, from `Cpus_allowed_list` (`0-3,6`).
fn two_cpus() -> Option<(u32, u32)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim()
        .to_owned();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((lo, hi)) => cpus.extend(lo.parse::<u32>().ok()?..=hi.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some((*cpus.first()?, *cpus.get(1)?))
}

/// A busy loop pinned to one CPU, killed when dropped.
struct Spinner(Child);

impl Spinner {
    fn on(cpu: u32) -> Spinner {
        Spinner(
            Command::new("taskset")
                .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
                .stdin(Stdio::null())
                .spawn()
                .expect("starting a busy loop"),
        )
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(
    program: &std::path::Path,
    cpus: &str,
    pipeline: &str,
    dir: &std::path::Path,
) -> serde_json::Value {
    run_with(program, cpus, pipeline, dir, "40", &[])
}

/// [`run`] of `sweeps` sweeps with the variables `env` besides.
fn run_with(
    program: &std::path::Path,
    cpus: &str,
    pipeline: &str,
    dir: &std::path::Path,
    sweeps: &str,
    env: &[(&str, &std::path::Path)],
) -> serde_json::Value {
    let report = dir.join(format!("report-{pipeline}.json"));
    let out = Command::new("taskset")
        .args(["-c", cpus])
        .arg(program)
        .arg(sweeps)
        .envs(env.iter().copied())
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", CACHE)
        .env("EPCACHE_PIPELINE", pipeline)
        .env("EPCACHE_MCC", "off")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
}

/// The stencil built in a new directory, and the two CPUs to pin it to; `None` (said) when a
/// tool or the second CPU is missing.
fn stencil_and_cpus() -> Option<(tempfile::TempDir, std::path::PathBuf, (u32, u32))> {
    if !available("gcc", "capture_busy_machine")
        || !available("taskset", "capture_busy_machine")
        || !runtime_built("capture_busy_machine")
    {
        return None;
    }
    let Some(cpus) = two_cpus() else {
        skipped("capture_busy_machine: fewer than two CPUs here; the simulation thread needs two");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("stencil_sweeps.c");
    epcache_cc(
        dir.path(),
        &["gcc", "-O2", source.to_str().unwrap(), "-o", "stencil"],
    );
    let program = dir.path().join("stencil");
    Some((dir, program, cpus))
}

#[test]
fn beside_busy_processes_the_program_simulates_on_its_own_thread_and_counts_alike() {
    let Some((dir, program, (first, second))) = stencil_and_cpus() else {
        return;
    };
    let cpus = format!("{first},{second}");
    let busy = {
        let _spinners = [Spinner::on(first), Spinner::on(second)];
        run(&program, &cpus, "on", dir.path())
    };
    let handled = &busy["handled"];
    // It falls back, tries the worker again a while later, finds the machine still busy and
    // falls back again (the run lasts seconds; the first waits are 100 and 200 ms).
    assert!(
        handled["pipeline_fallbacks"].as_u64().unwrap() >= 2,
        "beside a busy loop on each of its CPUs the program did not fall back, try again and \
         fall back again: {handled}"
    );
    let one_core = run(&program, &cpus, "off", dir.path());
    assert_eq!(one_core["handled"]["pipeline_fallbacks"], 0);
    assert_eq!(counts_of(busy), counts_of(one_core));
}

/// A thread recording a partial trace hands its accesses to the worker whole
/// (`ThreadCapture::stage_unfiltered`); beside busy processes it falls back and tries again
/// the same way, and counts and records what a run on one core does.
#[test]
fn beside_busy_processes_a_recording_thread_simulates_on_its_own_thread_too() {
    let Some((dir, program, (first, second))) = stencil_and_cpus() else {
        return;
    };
    let cpus = format!("{first},{second}");
    let record = |pipeline: &str| {
        let recording = dir.path().join(format!("{pipeline}.eppt"));
        let env = [
            ("EPCACHE_TRACE", std::path::Path::new("sweep:200")),
            ("EPCACHE_TRACE_OUTPUT", &recording),
        ];
        let report = run_with(&program, &cpus, pipeline, dir.path(), "100", &env);
        (report, std::fs::metadata(&recording).unwrap().len())
    };
    let (busy, busy_bytes) = {
        let _spinners = [Spinner::on(first), Spinner::on(second)];
        record("on")
    };
    let handled = &busy["handled"];
    assert!(
        handled["pipeline_fallbacks"].as_u64().unwrap() >= 2,
        "recording beside a busy loop on each of its CPUs, the program did not fall back, try \
         again and fall back again: {handled}"
    );
    let (one_core, one_core_bytes) = record("off");
    assert_eq!(counts_of(busy), counts_of(one_core));
    assert_eq!(busy_bytes, one_core_bytes, "the recordings' sizes");
}
