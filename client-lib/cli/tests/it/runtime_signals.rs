//! A standalone run ended by a signal: SIGINT or SIGTERM to a real program built with
//! `epcache cc` still leaves the whole report, written at the program's next captured access,
//! and the program still dies of the signal; a second signal ends a program that makes no
//! captured access at once, without the report; a signal the program inherited ignored stays
//! ignored. A crash (SIGSEGV, a failed `assert`, glibc's abort on a corrupted heap) leaves the
//! report too, and the program still dies of its signal, even when the report cannot be
//! written (a watchdog ends it). A program whose `epcache run` is killed ends too.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::capture_support::{
    available, epcache_cc, kernel, region, runtime_built, structure, wait_within,
};

/// Builds `until_signal.c` into `dir/until_signal`; `None` when gcc or the runtime is missing
/// (which fails under CI).
fn build(dir: &Path) -> Option<PathBuf> {
    build_kernel(dir, "until_signal")
}

/// Builds `kernels/NAME.c` with `-pthread` into `dir/NAME`; `None` as for [`build`].
fn build_kernel(dir: &Path, name: &str) -> Option<PathBuf> {
    if !available("gcc", "runtime_signals") || !runtime_built("runtime_signals") {
        return None;
    }
    let source = kernel(&format!("{name}.c"));
    epcache_cc(
        dir,
        &[
            "gcc",
            "-O1",
            "-pthread",
            source.to_str().unwrap(),
            "-o",
            name,
        ],
    );
    Some(dir.join(name))
}

/// Starts `program` in standalone mode and waits for its first sweep ("ready").
fn start(dir: &Path, program: &Path, args: &[&str]) -> Child {
    start_command(dir, Command::new(program).args(args))
}

/// [`start`] for a prepared command.
fn start_command(dir: &Path, command: &mut Command) -> Child {
    start_without_report(dir, command.env("EPCACHE_REPORT", dir.join("report.json")))
}

/// [`start_command`] with no standalone report asked for.
fn start_without_report(dir: &Path, command: &mut Command) -> Child {
    let mut child = command
        .env("EPCACHE_CACHE", "D1=32K,8,64;LL=8M,16,64")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the instrumented program");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n", "the program did not start its loop");
    child
}

fn send(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Waits up to a minute for `child` to end (it is killed and the test fails past that).
fn wait_ended(child: &mut Child) -> (ExitStatus, String) {
    let status = wait_within(child, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the program did not end within a minute of its signal"));
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("report.json"))
        .expect("the signalled program wrote its report");
    serde_json::from_str(&text).expect("the report is whole JSON")
}

/// No temporary report file is left beside the report.
fn no_partial_files(dir: &Path) {
    let partial: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".partial"))
        .collect();
    assert!(partial.is_empty(), "left behind: {partial:?}");
}

#[test]
fn an_interrupted_run_writes_its_report_and_dies_of_the_signal() {
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let Some(program) = build(dir.path()) else {
            return;
        };
        let mut child = start(dir.path(), &program, &[]);
        send(&child, signal);
        let (status, stderr) = wait_ended(&mut child);
        assert_eq!(
            status.signal(),
            Some(signal as i32),
            "{signal}: the program must still die of its signal ({status}); stderr:\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("{signal}: the report is written")),
            "{signal}: the deferral is said on stderr:\n{stderr}"
        );
        let report = report(dir.path());
        // Each sweep reads and writes each of a's 4096 elements once; the signal came after
        // the first one finished, and the sweep it interrupted is counted up to the access
        // that took the signal (which is not counted): a read or the write after it.
        let sweep = region(&report, "sweep");
        let a = structure(sweep, "a");
        let reads = a["events"]["PAPI_L1_DCR"].as_u64().unwrap();
        let writes = a["events"]["PAPI_L1_DCW"].as_u64().unwrap();
        assert!(reads >= 4096, "{signal}: reads of a: {reads}");
        assert!(
            reads == writes || reads == writes + 1,
            "{signal}: a += 1.0 reads and writes alike: {reads} reads, {writes} writes"
        );
        no_partial_files(dir.path());
    }
}

/// A partial trace without a report is finished at the signal's safe point too: a whole file
/// (no warning on replay) whose sweeps the replay counts, and the program dies of its signal.
#[test]
fn an_interrupted_recording_without_a_report_is_finished() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        return;
    };
    let trace = dir.path().join("t.eppt");
    let mut child = start_without_report(
        dir.path(),
        Command::new(&program)
            .env_remove("EPCACHE_REPORT")
            .env("EPCACHE_TRACE", "sweep")
            .env("EPCACHE_TRACE_OUTPUT", &trace),
    );
    send(&child, Signal::SIGTERM);
    let (status, stderr) = wait_ended(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{stderr}");
    assert!(
        stderr.contains("SIGTERM: the trace is finished"),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["replay", "--json", "--cache", "D1=32K,8,64;LL=8M,16,64"])
        .arg(&trace)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !said.contains("never finished"),
        "{said}"
    );
    let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(replayed["never_finished_at_byte"].is_null(), "{replayed}");
    assert!(replayed["records"]["loads"].as_u64().unwrap() >= 4096);
}

#[test]
fn a_second_signal_ends_a_program_that_makes_no_captured_access() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        return;
    };
    // Blocked reading stdin, the program makes no captured access: the first signal waits.
    let mut child = start(dir.path(), &program, &["block"]);
    send(&child, Signal::SIGTERM);
    still_running(
        &mut child,
        "the first signal must wait for a captured access, not end the blocked program",
    );
    let stderr = ended_by_sigterm(&mut child);
    assert!(
        stderr.contains("second signal: ending without the report"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("report.json").exists(),
        "no report was due: the program never reached a safe point"
    );
}

/// A signal the program was started with ignored (`trap '' INT`, `nohup`) stays ignored: the
/// runtime holds only signals whose action is still the default. The others are still held.
#[test]
fn an_inherited_ignore_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        return;
    };
    let mut child = start_command(
        dir.path(),
        Command::new("sh")
            .arg("-c")
            .arg("trap '' INT; exec \"$0\"")
            .arg(&program),
    );
    send(&child, Signal::SIGINT);
    still_running(&mut child, "an ignored SIGINT must not end the program");
    let stderr = ended_by_sigterm(&mut child);
    assert!(!stderr.contains("SIGINT"), "SIGINT was ignored: {stderr}");
    report(dir.path());
}

/// `child` has not ended 300 ms after a signal that must not end it.
fn still_running(child: &mut Child, why: &str) {
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "{why}");
}

/// Sends SIGTERM, which the program must die of; returns its stderr.
fn ended_by_sigterm(child: &mut Child) -> String {
    send(child, Signal::SIGTERM);
    let (status, stderr) = wait_ended(child);
    assert_eq!(
        status.signal(),
        Some(Signal::SIGTERM as i32),
        "{status}; {stderr}"
    );
    stderr
}

/// A signal that a worker thread takes while the main thread is blocked joining it: the worker
/// writes the report, which still has what the main thread counted before it blocked (handed
/// on in `pthread_join`) and its regions, as well as the worker's own.
#[test]
fn a_report_written_by_a_worker_has_the_blocked_main_threads_counts() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "join_signal") else {
        return;
    };
    let mut child = start(dir.path(), &program, &[]);
    let stderr = ended_by_sigterm(&mut child);
    let report = report(dir.path());
    assert_eq!(report["threads"], 2, "{stderr}");
    let x = structure(region(&report, "sweep_x"), "X");
    assert_eq!(x["events"]["PAPI_L1_DCR"], 4096, "the main thread's sweep");
    assert_eq!(x["events"]["PAPI_L1_DCW"], 4096);
    // `main` is still open (blocked in the join): what it counted so far, X's sweep, is there.
    let main_x = structure(region(&report, "main"), "X");
    assert_eq!(main_x["events"]["PAPI_L1_DCR"], 4096);
    let y = structure(region(&report, "sweep_y"), "Y");
    assert!(y["events"]["PAPI_L1_DCR"].as_u64().unwrap() >= 4096);
}

/// A held SIGTERM whose safe point is a function's return (the program raises it as that
/// function's last act): the thread ends there, and every region, the returning one included,
/// is closed with its own counts. The exit's sync point used to run after its frame was popped,
/// so the outer regions closed the wrong snapshots (a debug assertion aborted the program).
#[test]
fn a_signal_held_until_a_return_closes_every_region_with_its_own_counts() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "signal_at_return") else {
        return;
    };
    let report_path = dir.path().join("report.json");
    let (status, stderr) = crash(dir.path(), &program, "", &report_path);
    assert_eq!(
        status.signal(),
        Some(Signal::SIGTERM as i32),
        "{status}; {stderr}"
    );
    let report = report(dir.path());
    // Two sweeps ran before the return (one in main, one in sweep_then_stop); the third never.
    for (name, sweeps) in [("sweep", 2), ("sweep_then_stop", 1), ("main", 2)] {
        let a = structure(region(&report, name), "A");
        for event in ["PAPI_L1_DCR", "PAPI_L1_DCW"] {
            assert_eq!(
                a["events"][event].as_u64(),
                Some(4096 * sweeps),
                "{name}: {event} of A; stderr:\n{stderr}"
            );
        }
    }
}

/// A Fortran crash: gfortran's backtrace handler, installed at the main program's start,
/// took the crash signals, and the report was lost. The crash handler now goes back in front
/// of it (the `_gfortran_set_options` wrap) and hands the crash on: the report is written,
/// gfortran still prints its backtrace, and the program dies of the signal.
#[test]
fn a_fortran_crash_leaves_its_report_and_gfortrans_backtrace() {
    if !available("gfortran", "runtime_signals") || !runtime_built("runtime_signals") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("fortran_crash.f90");
    epcache_cc(
        dir.path(),
        &[
            "gfortran",
            "-O1",
            "-g",
            source.to_str().unwrap(),
            "-o",
            "fortran_crash",
        ],
    );
    let report_path = dir.path().join("report.json");
    let (status, stderr) = crash(
        dir.path(),
        &dir.path().join("fortran_crash"),
        "",
        &report_path,
    );
    assert_eq!(
        status.signal(),
        Some(Signal::SIGSEGV as i32),
        "{status}; {stderr}"
    );
    assert!(stderr.contains("writing the report"), "{stderr}");
    assert!(
        stderr.contains("Program received signal SIGSEGV"),
        "gfortran's backtrace handler still runs: {stderr}"
    );
    let report = report(dir.path());
    let a = structure(region(&report, "sweep"), "kernel::a");
    assert_eq!(a["events"]["PAPI_L1_DCR"], 4096, "{stderr}");
    assert_eq!(a["events"]["PAPI_L1_DCW"], 4096);
}

/// A Fortran program built with `-fno-backtrace` (gfortran installs no handler) whose C part
/// handles its own SIGSEGV, installed before main: the crash handler must not take that one's
/// place after gfortran's start-up. It did (found by review): the first, handled fault wrote a
/// crash report with one sweep and the program's handler got a raised signal.
#[test]
fn a_handler_the_fortran_program_installed_itself_is_left_alone() {
    if !available("gfortran", "runtime_signals") || !runtime_built("runtime_signals") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (c, fortran) = (kernel("guard_handler.c"), kernel("guard_main.f90"));
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-g",
            "-c",
            c.to_str().unwrap(),
            "-o",
            "guard_handler.o",
        ],
    );
    epcache_cc(
        dir.path(),
        &[
            "gfortran",
            "-O1",
            "-g",
            "-fno-backtrace",
            fortran.to_str().unwrap(),
            "guard_handler.o",
            "-o",
            "guard",
        ],
    );
    let report_path = dir.path().join("report.json");
    let out = Command::new(dir.path().join("guard"))
        .env("EPCACHE_REPORT", &report_path)
        .env("EPCACHE_CACHE", "D1=32K,8,64;LL=8M,16,64")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "end",
        "{stderr}"
    );
    assert!(!stderr.contains("epcache: SIGSEGV"), "{stderr}");
    let report = report(dir.path());
    let a = structure(region(&report, "sweep"), "guarded::a");
    assert_eq!(a["events"]["PAPI_L1_DCW"], 11 * 4096, "{stderr}");
}

/// Runs the crash kernel with `how` (its report going to `report`), to its end.
fn crash(dir: &Path, program: &Path, how: &str, report: &Path) -> (ExitStatus, String) {
    let mut child = Command::new(program)
        .arg(how)
        .env("EPCACHE_REPORT", report)
        .env("EPCACHE_CACHE", "D1=32K,8,64;LL=8M,16,64")
        .current_dir(dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the instrumented program");
    wait_ended(&mut child)
}

#[test]
fn a_crashing_program_leaves_its_report_and_dies_of_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "crash") else {
        return;
    };
    for (how, signal) in [
        ("segv", Signal::SIGSEGV),
        ("assert", Signal::SIGABRT),
        ("double_free", Signal::SIGABRT),
    ] {
        let _ = std::fs::remove_file(dir.path().join("report.json"));
        let (status, stderr) = crash(dir.path(), &program, how, &dir.path().join("report.json"));
        assert_eq!(
            status.signal(),
            Some(signal as i32),
            "{how}: {status}\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("epcache: {signal}: writing the report")),
            "{how}: {stderr}"
        );
        let report = report(dir.path());
        let x = structure(region(&report, "sweep"), "X");
        assert_eq!(x["events"]["PAPI_L1_DCW"], 4096, "{how}");
        // The crashing function's region is in it, ended where it crashed.
        assert_eq!(region(&report, "crash")["instances"], 1, "{how}");
        no_partial_files(dir.path());
    }
}

/// A stack overflow leaves no stack to run a handler on: the crash handler runs on the
/// alternate stack the runtime gave the main thread, and writes the report (before, the program
/// died of the SIGSEGV without one). The recursion is in code built without capture; in
/// instrumented code the overflow most often faults inside the runtime's region entry, where
/// the handler declines to write (said on stderr).
#[test]
fn a_stack_overflow_leaves_its_report() {
    let dir = tempfile::tempdir().unwrap();
    if !available("gcc", "runtime_signals") || !runtime_built("runtime_signals") {
        return;
    }
    let plain = kernel("stack_overflow_plain.c");
    let status = Command::new("gcc")
        .args(["-O1", "-c", plain.to_str().unwrap(), "-o", "deeper.o"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let source = kernel("stack_overflow.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            source.to_str().unwrap(),
            "deeper.o",
            "-o",
            "overflow",
        ],
    );
    // The argument is not read: the program overflows whatever it is.
    let program = dir.path().join("overflow");
    let (status, stderr) = crash(dir.path(), &program, "-", &dir.path().join("report.json"));
    assert_eq!(
        status.signal(),
        Some(Signal::SIGSEGV as i32),
        "{status}\n{stderr}"
    );
    assert!(
        stderr.contains("epcache: SIGSEGV: writing the report"),
        "{stderr}"
    );
    let report = report(dir.path());
    let sweep = region(&report, "sweep");
    assert_eq!(sweep["instances"], 2);
    assert_eq!(structure(sweep, "X")["events"]["PAPI_L1_DCW"], 2 * 4096);
    no_partial_files(dir.path());
}

/// A report that cannot be written (its path is a FIFO nobody reads, so the write blocks, as a
/// report waiting for an allocator lock the crash left held would) does not keep a crashed
/// program alive: the watchdog ends it by its own signal.
#[test]
fn a_crash_whose_report_blocks_still_ends_by_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "crash") else {
        return;
    };
    let fifo = dir.path().join("report.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let started = Instant::now();
    let (status, stderr) = crash(dir.path(), &program, "segv", &fifo);
    assert_eq!(
        status.signal(),
        Some(Signal::SIGSEGV as i32),
        "{status}\n{stderr}"
    );
    assert!(
        stderr.contains("the report was not written in time"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// The process whose parent is `parent`, once there is one (within a minute).
fn child_of(parent: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`: the command may hold spaces, the fields after it not.
            let ppid: u32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == parent).then_some(pid)
        });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < deadline, "pid {parent} started no program");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` still runs (a zombie nobody reaped has ended).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_owned())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// `epcache run` killed by SIGKILL (a batch system's limit, a closed session) takes its program
/// with it, both running its standalone report and waiting at start for its requests: the
/// program gets SIGTERM from the kernel. The next `epcache run` removes the directories the
/// killed runs left in the temporary directory.
#[test]
fn a_program_does_not_outlive_its_killed_epcache_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        return;
    };
    let temporary = dir.path().join("tmp");
    std::fs::create_dir(&temporary).unwrap();
    let runs_left = || {
        std::fs::read_dir(&temporary)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("epcache-run-"))
            .count()
    };
    let ways: [&[&str]; 2] = [
        &["--all-regions"],
        &[
            "--region",
            "sweep",
            "--array",
            "a",
            "--event",
            "PAPI_L1_DCA",
        ],
    ];
    for way in ways {
        let mut run = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["run", "--cache", "D1=32K,8,64;LL=8M,16,64"])
            .args(way)
            .arg("--")
            .arg(&program)
            .current_dir(dir.path())
            .env("TMPDIR", &temporary)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child_of(run.id());
        if way == ways[0] {
            // Running its loop.
            let mut line = String::new();
            BufReader::new(run.stdout.as_mut().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line, "ready\n");
        }
        run.kill().unwrap();
        run.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let still = running(pid);
        if still {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        assert!(
            !still,
            "{way:?}: the program ran on after epcache run was killed"
        );
    }
    // The second run swept the first's directory; its own is left.
    assert_eq!(runs_left(), 1, "a killed run leaves its directory");
    let next = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--all-regions", "--", "true"])
        .env("TMPDIR", &temporary)
        .output()
        .unwrap();
    assert_eq!(
        runs_left(),
        0,
        "the next run sweeps them: {}",
        String::from_utf8_lossy(&next.stderr)
    );
}

/// A signal that reaches a thread an OpenMP team waits for at its barrier: the master, which
/// made its sweep and waits there, still hands its counts on, since the signalled thread runs
/// on (uncounted) to the barrier and the master then reaches its next sync point.
#[test]
fn a_thread_waiting_at_a_barrier_for_the_signalled_one_is_still_reported() {
    let dir = tempfile::tempdir().unwrap();
    if !available("gcc", "runtime_signals") || !runtime_built("runtime_signals") {
        return;
    }
    let source = kernel("omp_signal_barrier.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-fopenmp",
            source.to_str().unwrap(),
            "-o",
            "barrier",
        ],
    );
    let mut child = start(dir.path(), &dir.path().join("barrier"), &[]);
    send(&child, Signal::SIGTERM);
    let (status, stderr) = wait_ended(&mut child);
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{stderr}");
    let report = report(dir.path());
    assert_eq!(
        (&report["threads"], &report["threads_unreported"]),
        (&2.into(), &0.into()),
        "{stderr}"
    );
    // The master's sweep of `a` before the barrier.
    let a = structure(region(&report, "main"), "a");
    assert!(a["events"]["PAPI_L1_DCR"].as_u64().unwrap() >= 4096, "{a}");
}
