//! Stepping a threaded program: a halt at one thread's region boundary stops the process. The
//! other threads stop at their next region boundary and publish nothing while it lasts, so the
//! results a tool reads at a halt are complete and stay put; `continue` lets every thread go,
//! and so does the tool going away.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use epcache_shm::layout::{
    Aggregation, Boundary, Mode, RegionIndex, RequestResult, RequestSpec, RequestTarget,
};
use epcache_shm::tool::{RequestHandle, TargetHandle};

use crate::capture_support::{available, epcache_cc, kernel, run_to, runtime_built, start_waiting};

/// Each thread takes this many turns (`ROUNDS` in the kernel).
const ROUNDS: u64 = 3;
/// Words of `cells` a turn reads and writes (`LINES` in the kernel).
const LINES: u64 = 16;
/// How long a halt is watched for a thread that should be stopped but is not.
const WATCH: Duration = Duration::from_millis(400);

/// `tests/kernels/lockstep_halts.c` built with `epcache cc -- gcc -O1 -pthread`, or `None`
/// (SKIPPED, or a failure under CI) when gcc or the runtime is missing.
fn build(dir: &Path, who: &str) -> Option<PathBuf> {
    if !available("gcc", who) || !runtime_built(who) {
        return None;
    }
    let source = kernel("lockstep_halts.c");
    epcache_cc(
        dir,
        &[
            "gcc",
            "-O1",
            "-pthread",
            source.to_str().unwrap(),
            "-o",
            "program",
        ],
    );
    Some(dir.join("program"))
}

/// The program waiting at start with a tool attached, two requests placed: the reads of
/// `cells` in `turn`, summed, and the reads of `ticks` in `tick`, per thread (each thread's
/// row counts its ticks); and the region `turn`.
struct Stepped {
    child: Child,
    tool: TargetHandle,
    turn: RegionIndex,
    turns: RequestHandle,
    ticks: RequestHandle,
}

fn start(dir: &Path, program: &Path) -> Stepped {
    let (child, tool) = start_waiting(program, &dir.join("run"), &[]);
    let regions = tool.regions().unwrap();
    let region = |name: &str| {
        regions
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no region {name} in {regions:?}"))
            .index
    };
    let structures = tool.data_structures().unwrap();
    let structure = |name: &str| {
        structures
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no data structure {name} in {structures:?}"))
            .index
    };
    let request = |region, target, aggregation| RequestSpec {
        region,
        target: RequestTarget::DataStructure(target),
        event: "PAPI_L1_DCR".parse().unwrap(),
        mode: Mode::Static,
        aggregation,
        analyses: 0,
    };
    let turn = region("turn");
    let turns = tool
        .submit(&request(turn, structure("cells"), Aggregation::Summed))
        .unwrap();
    let ticks = tool
        .submit(&request(
            region("tick"),
            structure("ticks"),
            Aggregation::PerThread,
        ))
        .unwrap();
    Stepped {
        child,
        tool,
        turn,
        turns,
        ticks,
    }
}

fn result(tool: &TargetHandle, handle: RequestHandle) -> Option<RequestResult> {
    tool.read_result(handle).unwrap()
}

/// At a halt: the ticking thread is stopped (the ticks published stay put while the halt
/// lasts) and every result is complete (each row of ticks read as many words as it counts
/// instances; `turns` finished turns read `LINES` words each).
fn check_halt(s: &Stepped, turns: u64) {
    let at_halt = result(&s.tool, s.ticks);
    std::thread::sleep(WATCH);
    let later = result(&s.tool, s.ticks);
    assert_eq!(
        at_halt, later,
        "after turn {turns}, the ticking thread went on publishing while the program was halted"
    );
    if let Some(ticks) = &later {
        for row in &ticks.rows {
            assert_eq!(row.total, row.instances, "one read per tick: {ticks:?}");
        }
    }
    let done = result(&s.tool, s.turns).expect("the turns are published");
    assert_eq!(done.rows.len(), 1, "{done:?}");
    assert_eq!(done.rows[0].instances, turns, "{done:?}");
    assert_eq!(done.rows[0].total, turns * LINES, "{done:?}");
}

/// Waits (20 s at most) for the program to end by itself; it must have finished every turn.
fn ends_having_finished(child: Child) {
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{ROUNDS} {ROUNDS}"),
        "{stderr}"
    );
}

/// Two threads take turns; the tool halts at the end of every turn. The other thread, which
/// ticks until the turn is over, stops at its next boundary: its published ticks do not move
/// while the halt lasts, and the turns' result holds exactly the finished turns. Before the
/// other threads stopped, the ticking thread published on through every halt.
#[test]
fn a_halt_stops_every_thread_and_its_results_are_complete() {
    let dir = tempfile::tempdir().unwrap();
    let who = "a_halt_stops_every_thread_and_its_results_are_complete";
    let Some(program) = build(dir.path(), who) else {
        return;
    };
    let s = start(dir.path(), &program);
    let mut halting = Vec::new();
    for turns in 1..=2 * ROUNDS {
        let halt = run_to(&s.tool, s.turn, Boundary::Exit);
        check_halt(&s, turns);
        halting.push(halt.thread);
    }
    // The halt names its thread: the two threads' turns alternate, and neither has OpenMP.
    let (odd, even) = (halting[0], halting[1]);
    assert!(
        odd.index.is_some() && odd.index != even.index,
        "{halting:?}"
    );
    for (k, thread) in halting.iter().enumerate() {
        assert_eq!(*thread, if k % 2 == 0 { odd } else { even }, "{halting:?}");
        assert_eq!(thread.openmp, None, "{halting:?}");
    }
    // Continue: no halting point, every thread goes on.
    s.tool.set_halting_point(None).unwrap();
    s.tool.release().unwrap();
    let Stepped { child, tool, .. } = s;
    ends_having_finished(child);
    drop(tool);
}

/// A tool that goes away (as a killed tool's attachment ends) while the program is halted
/// releases the halted thread and, with it, the thread stopped at its boundary.
#[test]
fn every_thread_goes_on_when_the_tool_goes_away_during_a_halt() {
    let dir = tempfile::tempdir().unwrap();
    let who = "every_thread_goes_on_when_the_tool_goes_away_during_a_halt";
    let Some(program) = build(dir.path(), who) else {
        return;
    };
    let s = start(dir.path(), &program);
    run_to(&s.tool, s.turn, Boundary::Exit);
    run_to(&s.tool, s.turn, Boundary::Exit);
    check_halt(&s, 2);
    let Stepped { child, tool, .. } = s;
    drop(tool);
    ends_having_finished(child);
}

/// Stepping to the exit of an OpenMP loop's body, with nothing requested, halts once at every
/// thread's exit of every run of the loop: a thread that reaches its exit while another is
/// halted there, or at the moment another takes the point, waits for that halt and then looks
/// at the point the next step armed.
#[test]
fn every_threads_exit_of_a_parallel_loop_halts_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let who = "every_threads_exit_of_a_parallel_loop_halts_a_step";
    if !available("gcc", who) || !runtime_built(who) {
        return;
    }
    let source = kernel("omp_axpy.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-fopenmp",
            source.to_str().unwrap(),
            "-o",
            "program",
        ],
    );
    let threads = 4;
    let (child, tool) = start_waiting(
        &dir.path().join("program"),
        &dir.path().join("run"),
        &[("OMP_NUM_THREADS", "4"), ("OMP_WAIT_POLICY", "passive")],
    );
    let body = tool
        .regions()
        .unwrap()
        .into_iter()
        .find(|r| r.name == "touch_small._omp_fn.0")
        .expect("the loop's outlined body")
        .index;
    let mut halts = Vec::new();
    let ended = loop {
        tool.set_halting_point(Some(epcache_shm::layout::HaltingPoint {
            region: Some(body),
            boundary: Boundary::Exit,
            skip: 0,
        }))
        .unwrap();
        let generation = tool.halt_generation();
        tool.release().unwrap();
        match tool.wait_for_halt(generation, Duration::from_secs(30)) {
            Ok(halt) => halts.push(halt.thread.openmp),
            Err(e) => break e,
        }
        assert!(halts.len() <= 2 * threads, "{halts:?}");
    };
    // `touch_small` runs its loop twice on a team of four.
    assert_eq!(halts.len(), 2 * threads, "{halts:?}, then {ended}");
    let mut numbers: Vec<u32> = halts.iter().map(|n| n.expect("an OpenMP number")).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [0, 0, 1, 1, 2, 2, 3, 3]);
    drop(tool);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One step, one halt: two threads cross boundaries side by side, so a step to the next
/// boundary is now and then matched by both at once, and only the thread that takes the point
/// halts. After each halt the tool arms a point no thread reaches: no halt may come.
#[test]
fn a_step_both_threads_match_at_once_halts_once() {
    let dir = tempfile::tempdir().unwrap();
    let who = "a_step_both_threads_match_at_once_halts_once";
    if !available("gcc", who) || !runtime_built(who) {
        return;
    }
    let source = kernel("both_tick.c");
    let args = [
        "gcc",
        "-O1",
        "-pthread",
        source.to_str().unwrap(),
        "-o",
        "program",
    ];
    epcache_cc(dir.path(), &args);
    let (child, tool) = start_waiting(&dir.path().join("program"), &dir.path().join("run"), &[]);
    let never = tool
        .regions()
        .unwrap()
        .into_iter()
        .find(|r| r.name == "never")
        .expect("the region `never`")
        .index;
    let unreachable = Some(epcache_shm::layout::HaltingPoint {
        region: Some(never),
        boundary: Boundary::Entry,
        skip: 0,
    });
    let mut steps = 0;
    let mut stray = Vec::new();
    let mut generation = tool.halt_generation();
    tool.set_step_point(None, 0).unwrap();
    tool.release().unwrap();
    while steps < 300 {
        let Ok(halt) = tool.wait_for_halt(generation, Duration::from_secs(30)) else {
            break;
        };
        steps += 1;
        generation = halt.generation;
        tool.set_halting_point(unreachable).unwrap();
        tool.release().unwrap();
        if let Ok(again) = tool.wait_for_halt(generation, Duration::from_millis(5)) {
            stray.push(again.position);
            generation = again.generation;
            tool.release().unwrap();
        }
        // The program runs; the next step stops it at its next boundary.
        tool.set_step_point(None, 0).unwrap();
    }
    assert!(steps >= 100, "only {steps} steps before the program ended");
    assert!(
        stray.is_empty(),
        "{} halts nobody asked for: {stray:?}",
        stray.len()
    );
    tool.set_halting_point(None).unwrap();
    if tool.halt_generation() != generation {
        tool.release().unwrap();
    }
    drop(tool);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
