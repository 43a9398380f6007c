//! `epcache run` with an embedded daemon and real programs: the synthetic target, where requests
//! from the command line give hand-checked results and an unknown array is refused by name with a
//! non-zero exit while the program still runs to its end; and C programs built with `epcache cc`:
//! an `--all-regions --json` report equal to the standalone mode's, and a request on a function
//! inlined everywhere explained with its caller.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use epcache_test_support::client as daemon_support;
use epcache_test_support::{roles, tools};

use daemon_support::synthetic::{self, A_LINES};

use crate::capture_support::{self, available, epcache_cc, run_results, runtime_built};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epcache"))
        .arg("run")
        .args(args)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(roles::rerun_args(roles::CHILD_ROLE_TEST))
        .env(synthetic::ROLE, "target")
        .env(synthetic::ITERATIONS, "2")
        .output()
        .unwrap()
}

/// A batch system's per-job `TMPDIR` can be too deep for a Unix socket's path (107 bytes): the
/// run then makes its private directory in `/tmp`, and its requests are served as anywhere.
#[test]
fn a_temporary_directory_too_deep_for_a_socket_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("d".repeat(100));
    std::fs::create_dir(&deep).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--region", "init", "--array", "A"])
        .args(["--event", "PAPI_L1_STM", "--json", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(roles::rerun_args(roles::CHILD_ROLE_TEST))
        .env(synthetic::ROLE, "target")
        .env(synthetic::ITERATIONS, "1")
        .env("TMPDIR", &deep)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("daemon for this run at unix:/tmp/epcache-run-"),
        "{stderr}"
    );
    let results = run_results(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        results[0]["total"], A_LINES,
        "one write miss per line in init"
    );
}

/// `epcache run --daemon` with a daemon that watches another runtime directory than the one
/// the program announces itself in: said within seconds, naming both, rather than after 30 s;
/// the program is ended and its record removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_watching_another_directory_is_said_at_once() {
    let watched = tempfile::tempdir().unwrap();
    let announced = tempfile::tempdir().unwrap();
    let daemon = daemon_support::start_daemon(watched.path()).await;
    let started = std::time::Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_epcache"));
    command
        .args(["run", "--daemon", &daemon.endpoint()])
        .args([
            "--region",
            "init",
            "--array",
            "A",
            "--event",
            "PAPI_L1_STM",
            "--",
        ])
        .arg(std::env::current_exe().unwrap())
        .args(roles::rerun_args(roles::CHILD_ROLE_TEST))
        .env(synthetic::ROLE, "target")
        .env(synthetic::ITERATIONS, "1")
        .env("EPCACHE_RUNTIME_DIR", announced.path());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "announced itself in {}",
            announced.path().display()
        )) && stderr.contains("--runtime-dir"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let left: Vec<_> = std::fs::read_dir(announced.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".json"))
        .collect();
    assert!(left.is_empty(), "records left: {left:?}");
    daemon.shutdown().await;
}

#[test]
fn run_places_command_line_requests_and_prints_their_results() {
    let out = run(&[
        "--region",
        "kernel",
        "--array",
        "A",
        "--event",
        "PAPI_L1_LDM",
        "--buckets",
        "25",
        "--region",
        "init",
        "--array",
        "A",
        "--event",
        "PAPI_L1_STM",
        "--buckets",
        "0",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    // The embedded daemon listens on the socket in the run's private runtime directory.
    let at = stderr
        .lines()
        .find_map(|l| l.split_once("daemon for this run at unix:"))
        .map(|(_, path)| path.trim().to_owned())
        .unwrap_or_else(|| panic!("no daemon address in: {stderr}"));
    assert!(
        at.contains("epcache-run-") && at.ends_with("/epcached.sock"),
        "{at}"
    );
    let results = run_results(&stdout);
    assert_eq!(results[0]["instances"], 2);
    assert_eq!(results[0]["total"], 2 * A_LINES);
    assert_eq!(results[0]["buckets"].as_array().unwrap().len(), 25);
    assert_eq!(
        results[1]["total"], A_LINES,
        "one write miss per line in init"
    );
}

#[test]
fn run_refuses_an_unknown_array_and_the_program_runs_to_its_end() {
    let out = run(&[
        "--region",
        "kernel",
        "--array",
        "Q",
        "--event",
        "PAPI_L1_LDM",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no data structure `Q`") && stderr.contains("nearest: A"),
        "{stderr}"
    );
    assert!(stderr.contains("runs to its end unmonitored"), "{stderr}");
    // The program's own test harness finished: it was not killed.
    assert!(stdout.contains("test result: ok. 1 passed"), "{stdout}");
}

/// Builds `tests/kernels/KERNEL.c` with `epcache cc -- gcc -O1` into `dir/program`; `false`
/// (SKIPPED, or failed under CI) when gcc or the runtime is missing.
fn build_kernel(dir: &Path, kernel: &str, program: &str, who: &str) -> bool {
    if !available("gcc", who) || !runtime_built(who) {
        return false;
    }
    let source = capture_support::kernel(&format!("{kernel}.c"));
    epcache_cc(
        dir,
        &["gcc", "-O1", "-o", program, source.to_str().unwrap()],
    );
    true
}

#[test]
fn run_all_regions_prints_the_standalone_report() {
    let dir = tempfile::tempdir().unwrap();
    if !build_kernel(dir.path(), "capture_sum", "sum", "run --all-regions") {
        return;
    }
    let spec = "D1=8K,2,32;LL=256K,8,64";

    let standalone = dir.path().join("standalone.json");
    let direct = Command::new(dir.path().join("sum"))
        .env("EPCACHE_CACHE", spec)
        .env("EPCACHE_REPORT", &standalone)
        .output()
        .unwrap();
    assert!(direct.status.success());
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&standalone).unwrap()).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", spec, "--all-regions", "--json", "--"])
        .arg(dir.path().join("sum"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The program prints its checksum first, then the report follows.
    assert!(
        stdout.starts_with(&*String::from_utf8_lossy(&direct.stdout)),
        "{stdout}"
    );
    let start = stdout.find("\n{").expect("a JSON report") + 1;
    let mut report: serde_json::Value = serde_json::from_str(&stdout[start..]).unwrap();
    let mut expected = expected;
    // Addresses move from run to run (a PIE under ASLR); everything else must be equal.
    forget_addresses(&mut report);
    forget_addresses(&mut expected);
    assert_eq!(report["levels"], expected["levels"]);
    assert_eq!(report["regions"], expected["regions"]);
    assert!(report["levels"][0]["read_misses"].as_u64().unwrap() > 0);

    // Without --json, a table: `fill` writes each of a's 4096 ints once.
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", spec, "--all-regions", "--"])
        .arg(dir.path().join("sum"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("REGION"), "{stdout}");
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let lines: Vec<&str> = stdout.lines().collect();
    let fill = lines
        .iter()
        .position(|l| l.starts_with("fill "))
        .unwrap_or_else(|| panic!("no fill row: {stdout}"));
    // Each region with where it is defined, so two of one name are told apart.
    assert_eq!(words(lines[fill])[1], "capture_sum.c:6", "{stdout}");
    assert_eq!(words(lines[fill])[2], "1", "one instance: {stdout}");
    let a = words(lines[fill + 1]);
    assert_eq!((a[0].as_str(), a[2].as_str()), ("a", "4096"), "{stdout}");
}

/// `epcache run` with `args`, then `--` and `program`.
fn epcache_run(args: &[&str], program: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epcache"))
        .arg("run")
        .args(args)
        .arg("--")
        .args(program)
        .output()
        .unwrap()
}

/// A bad cache, an event at a level the cache lacks and a histogram past the bucket cap are
/// refused before the program starts: its side effect (a file it creates) never happens.
#[test]
fn bad_input_is_refused_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let touch = [std::ffi::OsStr::new("touch"), marker.as_os_str()];
    let refused = |out: &Output, why: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("nothing was started"), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
        assert!(!marker.exists(), "the program ran: {stderr}");
    };
    refused(
        &epcache_run(&["--cache", "foo", "--all-regions"], &touch),
        "not a preset",
    );
    let from_env = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .env("EPCACHE_CACHE", "D1=32K,8,60")
        .args(["run", "--all-regions", "--"])
        .args(touch)
        .output()
        .unwrap();
    refused(&from_env, "$EPCACHE_CACHE");
    let request = |event: &str, buckets: &str| {
        epcache_run(
            &[
                "--cache",
                "D1=32K,8,64",
                "--region",
                "r",
                "--array",
                "a",
                "--event",
                event,
                "--buckets",
                buckets,
            ],
            &touch,
        )
    };
    refused(&request("PAPI_L2_DCM", "0"), "cache level 2");
    refused(&request("PAPI_L1_XYZ", "0"), "unknown event");
    refused(&request("PAPI_L1_LDM", "1025"), "at most 1024 buckets");
}

/// A program built without capture is refused before it starts when its symbols show it, and a
/// run that left no report (a script, which cannot be told beforehand) exits non-zero.
#[test]
fn a_program_without_capture_cannot_pass_for_monitored() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let source = dir.path().join("plain.c");
    std::fs::write(
        &source,
        format!(
            "#include <stdio.h>\nint main(void) {{ fclose(fopen(\"{}\", \"w\")); return 0; }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let plain = dir.path().join("plain");
    match Command::new("gcc")
        .arg("-o")
        .arg(&plain)
        .arg(&source)
        .status()
    {
        Ok(s) if s.success() => {}
        _ => {
            tools::skipped("a_program_without_capture_cannot_pass_for_monitored: gcc not found");
            return;
        }
    }
    let out = epcache_run(&["--all-regions"], &[plain.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("was not built with capture"), "{stderr}");
    assert!(!marker.exists(), "the program ran: {stderr}");

    let script = dir.path().join("plain.sh");
    std::fs::write(&script, format!("#!/bin/sh\n{} \"$@\"\n", plain.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = epcache_run(&["--all-regions"], &[script.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(marker.exists(), "the script did not run: {stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("left no report"), "{stderr}");
}

/// `--output FILE --json` puts the report in the file, whole, and leaves stdout to the program.
#[test]
fn the_report_goes_to_the_output_file_and_the_program_keeps_stdout() {
    let dir = tempfile::tempdir().unwrap();
    if !build_kernel(dir.path(), "capture_sum", "sum", "run --output") {
        return;
    }
    let file = dir.path().join("report.json");
    let out = epcache_run(
        &[
            "--cache",
            "D1=8K,2,32",
            "--all-regions",
            "--json",
            "--output",
            file.to_str().unwrap(),
        ],
        &[dir.path().join("sum").as_os_str()],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains('{'), "the report went to stdout: {stdout}");
    assert!(!stdout.trim().is_empty(), "the program's output is missing");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // One data level: the report lists D1 alone, and the table has one miss column.
    assert_eq!(report["levels"].as_array().unwrap().len(), 1);
    assert_eq!(report["levels"][0]["name"], "D1");
    let table = dir.path().join("report.txt");
    let out = epcache_run(
        &[
            "--cache",
            "D1=8K,2,32",
            "--all-regions",
            "--output",
            table.to_str().unwrap(),
        ],
        &[dir.path().join("sum").as_os_str()],
    );
    assert!(out.status.success());
    let text = std::fs::read_to_string(&table).unwrap();
    assert_eq!(
        text.lines().next().unwrap().matches("MISSES").count(),
        1,
        "{text}"
    );
}

fn forget_addresses(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("start");
            map.values_mut().for_each(forget_addresses);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(forget_addresses),
        _ => {}
    }
}

/// Ctrl-C while `epcache run --all-regions` runs a program: the terminal signals the whole
/// foreground process group, the program writes its report and dies of the signal, and
/// `epcache run` prints the report, ends with the program's status (130) and removes its
/// runtime directory. Before, it died at once: no report printed, the directory left behind.
#[test]
fn ctrl_c_during_run_still_prints_the_report() {
    interrupted_run(
        nix::sys::signal::Signal::SIGINT,
        true,
        "waiting for the program",
    );
}

/// SIGTERM to `epcache run` alone (`kill PID`, a container stop): the program did not get it,
/// so after a grace it is passed on, and the report is printed as for Ctrl-C.
#[test]
fn a_signal_to_run_alone_is_passed_on_to_the_program() {
    interrupted_run(
        nix::sys::signal::Signal::SIGTERM,
        false,
        "passing SIGTERM on",
    );
}

/// Runs `epcache run --all-regions --json` over `until_signal` in a process group of its own,
/// sends `signal` to the group or to `epcache run` alone once the program runs, and checks
/// that the report is printed, the status is the program's death by `signal`, stderr says
/// `said`, and the runtime directory is gone.
fn interrupted_run(signal: nix::sys::signal::Signal, to_group: bool, said: &str) {
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::CommandExt;

    use nix::sys::signal::{kill, killpg};
    use nix::unistd::Pid;

    let dir = tempfile::tempdir().unwrap();
    if !build_kernel(
        dir.path(),
        "until_signal",
        "until_signal",
        "run and signals",
    ) {
        return;
    }
    let temporary = dir.path().join("tmp");
    std::fs::create_dir(&temporary).unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "run",
            "--cache",
            "D1=8K,2,32;LL=256K,8,64",
            "--all-regions",
            "--json",
            "--",
        ])
        .arg(dir.path().join("until_signal"))
        .env("TMPDIR", &temporary)
        // A process group of its own, as a shell gives a foreground job.
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(run.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n", "the program did not start its loop");
    let pid = Pid::from_raw(i32::try_from(run.id()).unwrap());
    if to_group {
        killpg(pid, signal).unwrap();
    } else {
        kill(pid, signal).unwrap();
    }
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = run.wait().unwrap();
    let mut stderr = String::new();
    run.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(128 + signal as i32), "{stderr}");
    assert!(stderr.contains(said), "{stderr}");
    let start = rest.find('{').expect("the report is printed");
    let report: serde_json::Value = serde_json::from_str(&rest[start..]).unwrap();
    let sweep = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "sweep")
        .expect("a sweep region");
    assert!(sweep["instances"].as_u64().unwrap() >= 1, "{sweep}");
    let left: Vec<_> = std::fs::read_dir(&temporary).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A request on a function gcc inlined into every caller names no region (its entry and exit
/// are gone); `epcache run` says so, and what to ask for instead, read from the program's
/// DWARF. The program still runs to its end.
#[test]
fn a_region_inlined_everywhere_is_explained_with_its_caller() {
    let who = "a_region_inlined_everywhere_is_explained_with_its_caller";
    if !available("gcc", who) || !runtime_built(who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = capture_support::kernel("lines_inlined.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            "-g",
            "-o",
            "inlined",
            source.to_str().unwrap(),
        ],
    );
    let program = dir.path().join("inlined");
    let ask = |region: &str| {
        let args = ["--region", region, "--array", "t", "--event", "PAPI_L1_STM"];
        let out = epcache_run(&args, &[program.as_os_str()]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = ask("transpose");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`transpose` was inlined into `main`")
            && stderr.contains("ask for `main` instead"),
        "{stderr}"
    );
    assert!(stderr.contains("runs to its end unmonitored"), "{stderr}");
    // A misspelt name that is no function gets no such note.
    let (_, stderr) = ask("transpos");
    assert!(stderr.contains("no region `transpos`"), "{stderr}");
    assert!(!stderr.contains("was inlined"), "{stderr}");
    // `--trace` checks its region before the start: an inlined one is refused with the same
    // note and nothing runs; a misspelt one is said with the nearest names, then traced in
    // case a marker region has that name.
    let trace = |region: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["run", "--trace", region, "--overwrite", "--output"])
            .arg(dir.path().join("t.eppt"))
            .arg("--")
            .arg(&program)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = trace("transpose");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("`transpose` was inlined into `main`")
            && stderr.contains("nothing was started"),
        "{stderr}"
    );
    let (code, stderr) = trace("transpos");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("has no function of that name (nearest: ") && stderr.contains("never ran"),
        "{stderr}"
    );
}
