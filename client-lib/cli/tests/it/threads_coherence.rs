//! Threads as cores of one machine (`EPCACHE_CORES`): real OpenMP and pthread programs built
//! with `epcache cc`, their standalone reports' coherence events per data structure, against
//! hand counts where the interleaving is fixed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::capture_support::{available, epcache_cc, kernel, region, runtime_built, structure};

/// Private L1 and L2 per core, an L3 both cores share.
const MACHINE: &str = "D1=32K,8,64;L2=256K,8,64;L3=8M,16,64,shared";

/// `kernel` built with `epcache cc -- gcc -O1 [flags]` into `dir`, or `None` (SKIPPED, or a
/// failure under CI) when gcc or the runtime is missing.
fn build(dir: &Path, kernel_name: &str, flags: &[&str], who: &str) -> Option<PathBuf> {
    if !available("gcc", who) || !runtime_built(who) {
        return None;
    }
    let source = kernel(kernel_name);
    let mut line = vec!["gcc", "-O1"];
    line.extend_from_slice(flags);
    line.extend_from_slice(&[source.to_str().unwrap(), "-o", "program"]);
    epcache_cc(dir, &line);
    Some(dir.join("program"))
}

/// Runs `program` with a standalone report and `env`; its stdout and report.
fn run(dir: &Path, program: &Path, env: &[(&str, &str)]) -> (String, serde_json::Value) {
    let (stdout, _, report) = run_with_stderr(dir, program, env);
    (stdout, report)
}

/// The report of `program` run with `env` and a hierarchy of its own, after checking that on
/// a machine of two cores (`EPCACHE_CORES=2`) it printed the same and counted the same levels.
fn alone_as_on_a_machine(dir: &Path, program: &Path, env: &[(&str, &str)]) -> serde_json::Value {
    let with = |cores| [env, &[("EPCACHE_CORES", cores)]].concat();
    let (machine_stdout, on_machine) = run(dir, program, &with("2"));
    let (own_stdout, own) = run(dir, program, &with("off"));
    assert_eq!(machine_stdout, own_stdout);
    assert_eq!(on_machine["cores"], 2, "{on_machine:#}");
    assert_eq!(
        on_machine["levels"], own["levels"],
        "on the machine {:#} against its own {:#}",
        on_machine["levels"], own["levels"]
    );
    own
}

/// [`run`], with the program's stderr.
fn run_with_stderr(
    dir: &Path,
    program: &Path,
    env: &[(&str, &str)],
) -> (String, String, serde_json::Value) {
    let report = dir.join("report.json");
    let out = Command::new(program)
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", MACHINE)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("running the program");
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&report).expect("the report was written");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        serde_json::from_str(&text).expect("the report is JSON"),
    )
}

fn event(events: &serde_json::Value, name: &str) -> u64 {
    events[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no event {name} in {events:#}"))
}

/// What the whole run counted for data structure `name`.
fn program_events<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    &structure(region(report, "program"), name)["events"]
}

/// Two threads take turns under a barrier, so the order of their accesses is fixed: in each
/// turn one thread reads and writes its own word of `packed` and the word `same`. Turn 0 is a
/// cold miss; turn 1's read misses cold too (and downgrades the first core's copy), its write
/// invalidates it; from turn 2 on every turn's read misses at L1 and L2 on a line the other
/// core's write took away, never at the shared L3, and every write invalidates the other's
/// copy. `packed`'s words are disjoint (false sharing), `same`'s the same (true sharing).
#[test]
fn lock_step_threads_count_exactly_the_hand_computed_coherence_events() {
    let dir = tempfile::tempdir().unwrap();
    let who = "lock_step_threads_count_exactly_the_hand_computed_coherence_events";
    let Some(program) = build(dir.path(), "lockstep_sharing.c", &["-pthread"], who) else {
        return;
    };
    let (stdout, report) = run(dir.path(), &program, &[("EPCACHE_CORES", "2")]);
    assert_eq!(stdout.trim(), "500 500 1000");
    assert_eq!(report["cores"], 2, "{report:#}");
    const TURNS: u64 = 2 * 500;
    // Each turn begins with the other thread's accesses: the machine's one order switched
    // thread at every turn at least.
    let interleaving = &report["cores_interleaving"];
    assert!(
        event(interleaving, "thread_switches") >= TURNS - 1
            && event(interleaving, "accesses") > 4 * TURNS,
        "{interleaving}"
    );
    // The threads' function: main's reads for its printf come after, outside it.
    let turns = region(&report, "take_turns");
    assert_eq!(turns["instances"], 2);
    let packed = &structure(turns, "packed")["events"];
    assert_eq!(event(packed, "PAPI_L1_DCR"), TURNS);
    assert_eq!(event(packed, "PAPI_L1_LDM"), TURNS, "{packed:#}");
    assert_eq!(event(packed, "PAPI_L1_STM"), 0, "{packed:#}");
    assert_eq!(event(packed, "PAPI_CA_INV"), TURNS - 1, "{packed:#}");
    for level in [1, 2] {
        let name = |e: &str| format!("EPC_L{level}_{e}");
        assert_eq!(event(packed, &name("COHM")), TURNS - 2, "{packed:#}");
        assert_eq!(event(packed, &name("FSM")), TURNS - 2, "{packed:#}");
        assert_eq!(event(packed, &name("TSM")), 0, "{packed:#}");
    }
    assert_eq!(event(packed, "EPC_L3_COHM"), 0);
    assert_eq!(
        event(packed, "PAPI_L3_LDM"),
        1,
        "one cold miss in the shared L3"
    );
    let same = &structure(turns, "same")["events"];
    assert_eq!(event(same, "PAPI_CA_INV"), TURNS - 1, "{same:#}");
    for level in [1, 2] {
        assert_eq!(event(same, &format!("EPC_L{level}_TSM")), TURNS - 2);
        assert_eq!(event(same, &format!("EPC_L{level}_FSM")), 0);
    }
    // One row per thread, without an OpenMP number (no OpenMP here), on cores 0 and 1 in some
    // order (main took core 0, the two threads cores 1 and 0 as they started).
    assert_eq!(turns["threads"], 2);
    let rows = turns["per_thread"].as_array().expect("rows per thread");
    assert!(
        rows.iter().all(|r| r.get("openmp_thread").is_none()),
        "{rows:#?}"
    );
    let mut cores: Vec<u64> = rows.iter().map(|r| r["core"].as_u64().unwrap()).collect();
    cores.sort_unstable();
    assert_eq!(cores, [0, 1]);
    // The whole run holds them, and main's reads after the join on top: at most one more
    // coherence miss per line, none of them an invalidation.
    let all = program_events(&report, "packed");
    assert_eq!(event(all, "PAPI_CA_INV"), TURNS - 1);
    assert!(
        (TURNS - 2..=TURNS - 1).contains(&event(all, "EPC_L1_FSM")),
        "{all:#}"
    );
    let whole_run = &region(&report, "program")["events"];
    assert_eq!(event(whole_run, "PAPI_CA_INV"), 2 * (TURNS - 1));
}

/// The same program with every thread simulating a hierarchy of its own (no `EPCACHE_CORES`):
/// no coherence event, no `cores`, and the report keeps its old shape.
/// One thread on a machine of two cores counts what a hierarchy of its own counts, write-backs
/// included (they happen in the machine, not in the thread's outcomes): an in-place LU of
/// 200x200 doubles (320 KB, past L1 and L2) writes dirty lines back at both.
#[test]
fn one_thread_on_a_machine_counts_what_its_own_hierarchy_counts_write_backs_too() {
    let dir = tempfile::tempdir().unwrap();
    let who = "one_thread_on_a_machine_counts_what_its_own_hierarchy_counts_write_backs_too";
    let Some(program) = build(dir.path(), "lu.c", &["-DLU_N=200"], who) else {
        return;
    };
    let own = alone_as_on_a_machine(dir.path(), &program, &[]);
    for level in 0..2 {
        let writebacks = own["levels"][level]["writebacks"].as_u64().unwrap();
        assert!(writebacks > 1_000, "level {level}: {:#}", own["levels"]);
    }
}

#[test]
fn accesses_wider_than_a_machines_line_count_per_line_as_a_hierarchy_does() {
    // The memory intrinsics count 64-byte pieces; under 32-byte lines each is wider than a
    // line, so a thread on the machine simulates it at once, line by line
    // (`Core::wide_access_on_machine`), and counts what its own hierarchy would.
    let dir = tempfile::tempdir().unwrap();
    let who = "accesses_wider_than_a_machines_line_count_per_line_as_a_hierarchy_does";
    let Some(program) = build(dir.path(), "mem_intrinsics.c", &[], who) else {
        return;
    };
    let cache = ("EPCACHE_CACHE", "D1=4K,4,32;L2=64K,8,32,shared");
    let own = alone_as_on_a_machine(dir.path(), &program, &[cache]);
    // Each 64-byte piece is one access over two lines: memset and memcpy of 8 KiB write 256
    // pieces each, the memmove 255.
    assert_eq!(
        own["levels"][0]["writes"],
        256 + 256 + 255,
        "{:#}",
        own["levels"]
    );
}

#[test]
fn without_cores_threads_keep_hierarchies_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let who = "without_cores_threads_keep_hierarchies_of_their_own";
    let Some(program) = build(dir.path(), "lockstep_sharing.c", &["-pthread"], who) else {
        return;
    };
    let (_, stderr, report) = run_with_stderr(dir.path(), &program, &[]);
    assert!(report.get("cores").is_none(), "{report:#}");
    // The user is told, once, and how to make the threads cores.
    assert_eq!(
        stderr
            .matches("each thread simulates a cache hierarchy of its own")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("EPCACHE_CORES=N"), "{stderr}");
    let (_, quiet, _) = run_with_stderr(dir.path(), &program, &[("EPCACHE_CORES", "off")]);
    assert!(!quiet.contains("hierarchy of its own"), "{quiet}");
    let (_, on_cores, _) = run_with_stderr(dir.path(), &program, &[("EPCACHE_CORES", "2")]);
    assert!(!on_cores.contains("hierarchy of its own"), "{on_cores}");
    // A machine that cannot be made is said, with what happens instead: the threads' own
    // hierarchies count as without one.
    let (_, bad, fallen_back) = run_with_stderr(dir.path(), &program, &[("EPCACHE_CORES", "two")]);
    assert!(
        bad.contains("EPCACHE_CORES=two") && bad.contains("a cache of its own instead"),
        "{bad}"
    );
    assert!(!bad.contains("nothing is captured"), "{bad}");
    let refused = fallen_back["cores_refused"].as_str().unwrap_or_default();
    assert!(refused.starts_with("EPCACHE_CORES=two"), "{fallen_back:#}");
    assert!(report.get("cores_refused").is_none(), "{report:#}");
    assert_eq!(
        event(program_events(&fallen_back, "packed"), "PAPI_L1_LDM"),
        3,
        "{fallen_back:#}"
    );
    let packed = program_events(&report, "packed");
    assert!(packed.get("EPC_L1_FSM").is_none(), "{packed:#}");
    // Each thread's private hierarchy misses once on the line, then always hits; main's
    // reads for its printf miss once in its own.
    assert_eq!(event(packed, "PAPI_L1_LDM"), 3, "{packed:#}");
    let turns = region(&report, "take_turns");
    assert_eq!(
        event(&structure(turns, "packed")["events"], "PAPI_L1_LDM"),
        2
    );
}

/// OpenMP counters side by side in one line against counters padded to a line each, and a
/// counter both threads add to under `omp critical`, on a machine of two cores. The program's
/// rounds end at barriers, so the line changes hands at least once a round (2,000 rounds of
/// the counters, 200 of the locked one) however the host schedules the threads; while both run
/// side by side, at nearly every write.
#[test]
fn openmp_false_sharing_shows_on_packed_counters_and_not_on_padded_ones() {
    let dir = tempfile::tempdir().unwrap();
    let who = "openmp_false_sharing_shows_on_packed_counters_and_not_on_padded_ones";
    let Some(program) = build(dir.path(), "omp_false_sharing.c", &["-fopenmp"], who) else {
        return;
    };
    let (stdout, report) = run(
        dir.path(),
        &program,
        &[("EPCACHE_CORES", "2"), ("OMP_NUM_THREADS", "2")],
    );
    assert_eq!(stdout.trim(), "400000 400000 40000");
    let packed = program_events(&report, "packed");
    let padded = program_events(&report, "padded");
    let (packed_fsm, padded_fsm) = (event(packed, "EPC_L1_FSM"), event(padded, "EPC_L1_FSM"));
    eprintln!(
        "false sharing: packed {packed_fsm} (of {} writes), padded {padded_fsm}",
        event(packed, "PAPI_L1_DCW")
    );
    assert!(packed_fsm >= 1000, "{packed:#}");
    assert!(
        packed_fsm >= 1000 * padded_fsm,
        "packed {packed:#}\npadded {padded:#}"
    );
    assert_eq!(padded_fsm, 0, "{padded:#}");
    assert_eq!(event(packed, "EPC_L1_TSM"), 0, "{packed:#}");
    // The false-sharing misses are L1 misses of the packed counters.
    assert!(event(packed, "PAPI_L1_DCM") >= packed_fsm);
    // The counter under the lock changes hands as the lock does: true sharing only.
    let shared = program_events(&report, "shared_total");
    assert!(event(shared, "EPC_L1_TSM") > 0, "{shared:#}");
    assert_eq!(event(shared, "EPC_L1_FSM"), 0, "{shared:#}");
    // Per region: the packed loop's region holds the packed counters' false sharing (all but
    // main's read for its printf, which may find the line taken by the other core).
    let packed_loop = region(&report, "count_packed._omp_fn.0");
    assert_eq!(packed_loop["instances"], 2, "one instance per thread");
    let in_loop = event(&structure(packed_loop, "packed")["events"], "EPC_L1_FSM");
    assert!(
        (packed_fsm - 1..=packed_fsm).contains(&in_loop),
        "{packed_loop:#}"
    );
}

/// A thread that never hands its counts on (a detached server thread, still running at exit)
/// leaves the whole run's coherence events as it leaves its accesses: the `program` row counts
/// what the other threads counted, its coherence misses a part of its misses, each of them
/// exactly what the two reported threads' own regions (`main`, `produce`) sum to.
#[test]
fn a_thread_that_never_reports_leaves_out_its_coherence_events_too() {
    let dir = tempfile::tempdir().unwrap();
    let who = "a_thread_that_never_reports_leaves_out_its_coherence_events_too";
    let Some(program) = build(dir.path(), "detached_consumer.c", &["-pthread"], who) else {
        return;
    };
    let (stdout, report) = run(dir.path(), &program, &[("EPCACHE_CORES", "2")]);
    assert_eq!(stdout.trim(), "20000 199990000");
    assert_eq!(report["threads_unreported"], 1, "{report:#}");
    let whole = &region(&report, "program")["events"];
    let reported = [
        &region(&report, "main")["events"],
        &region(&report, "produce")["events"],
    ];
    for name in [
        "PAPI_L1_DCM",
        "EPC_L1_COHM",
        "EPC_L1_FSM",
        "EPC_L1_TSM",
        "PAPI_CA_INV",
        "EPC_L2_COHM",
    ] {
        let sum: u64 = reported.iter().map(|events| event(events, name)).sum();
        assert_eq!(event(whole, name), sum, "{name}: {whole:#}");
    }
    assert!(event(whole, "EPC_L1_COHM") > 0, "{whole:#}");
    assert!(
        event(whole, "EPC_L1_COHM") <= event(whole, "PAPI_L1_DCM"),
        "{whole:#}"
    );
    assert_eq!(
        event(whole, "EPC_L1_FSM") + event(whole, "EPC_L1_TSM"),
        event(whole, "EPC_L1_COHM")
    );
}

/// `program` started under an embedded daemon on a machine of two cores of [`MACHINE`], with
/// `env` too, waiting for a tool's requests.
async fn launch_on_two_cores(program: &Path, env: &[(&str, &str)]) -> epcache_client::LocalTarget {
    let mut launch = epcache_client::Launch::new(program, "coherence-test").cache(MACHINE);
    launch.env.push(("EPCACHE_CORES".into(), "2".into()));
    for (k, v) in env {
        launch.env.push(((*k).into(), (*v).into()));
    }
    launch.show_output = false;
    epcache_client::LocalTarget::launch(launch).await.unwrap()
}

/// A tool's requests count coherence events like any other: through an embedded daemon, a
/// summed count, one result per thread, and a histogram, of `EPC_L1_FSM` on the lock-step
/// program's `packed` while the threads take turns (each thread's reads from its second turn
/// on: 499 each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_count_coherence_events_per_thread_and_in_histograms() {
    use epcache_client::{Aggregation, Analysis, Request};
    let dir = tempfile::tempdir().unwrap();
    let who = "requests_count_coherence_events_per_thread_and_in_histograms";
    let Some(program) = build(dir.path(), "lockstep_sharing.c", &["-pthread", "-g"], who) else {
        return;
    };
    let mut target = launch_on_two_cores(&program, &[]).await;
    let pid = target.pid();
    // Tools see the machine before they place coherence requests.
    let described = target.client().describe(pid).await.unwrap();
    assert_eq!(described.cores, Some(2));
    let listed = target.client().targets().await.unwrap();
    let this = listed.iter().find(|t| t.pid == pid).unwrap();
    assert_eq!(this.cores, Some(2));
    let placed = target
        .client()
        .requests(
            pid,
            &[
                Request::count("take_turns", "packed", "EPC_L1_FSM"),
                Request::count("take_turns", "packed", "EPC_L1_FSM")
                    .aggregation(Aggregation::PerThread),
                Request::histogram("take_turns", "packed", "EPC_L1_FSM", 1),
                Request::count("take_turns", "same", "EPC_L1_TSM"),
                Request::count("take_turns", "packed", "PAPI_CA_INV"),
                Request::count("take_turns", "packed", "PAPI_CA_INV").analysis(Analysis::Reuse),
            ],
        )
        .await
        .unwrap();
    assert!(target.run_to_end().await.unwrap().success());
    let results = target.client().results(pid, &[]).await.unwrap();
    let result = |i: usize| {
        results
            .iter()
            .find(|r| r.request.id == placed[i].id)
            .unwrap()
    };
    assert_eq!((result(0).total, result(0).instances), (998, 2));
    let mut rows: Vec<u64> = result(1).threads.iter().map(|r| r.total).collect();
    rows.sort_unstable();
    assert_eq!(rows, [499, 499], "{:?}", result(1));
    assert_eq!(result(2).total, 998);
    assert_eq!(
        result(2).buckets.iter().map(|b| b.count).sum::<u64>(),
        998,
        "the histogram sums to the static count"
    );
    assert_eq!(result(3).total, 998);
    assert_eq!(result(4).total, 999);
    // The analyses follow one hierarchy, not a machine: the request counts, and says why it
    // has no report rather than reporting an analysis of nothing.
    assert_eq!(result(5).total, 999);
    assert!(result(5).analysis.is_none(), "{:?}", result(5));
    let why = result(5).analysis_missing.as_deref().unwrap_or_default();
    assert!(why.contains("EPCACHE_CORES=off"), "{why:?}");
    target.finish().await.unwrap();
}

/// A per-thread request's rows name each thread by its OpenMP number too: the padded counters'
/// OpenMP region, where thread `t` writes its own counter 200,000 times, gives one row per
/// thread, numbered 0 and 1, each with 200,000 writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_thread_results_carry_each_threads_openmp_number() {
    use epcache_client::{Aggregation, Request};
    let dir = tempfile::tempdir().unwrap();
    let who = "per_thread_results_carry_each_threads_openmp_number";
    let Some(program) = build(dir.path(), "omp_false_sharing.c", &["-fopenmp", "-g"], who) else {
        return;
    };
    let mut target = launch_on_two_cores(&program, &[("OMP_NUM_THREADS", "2")]).await;
    let pid = target.pid();
    let placed = target
        .client()
        .requests(
            pid,
            &[
                Request::count("count_padded._omp_fn.0", "padded", "PAPI_L1_DCW")
                    .aggregation(Aggregation::PerThread),
            ],
        )
        .await
        .unwrap();
    assert!(target.run_to_end().await.unwrap().success());
    let results = target.client().results(pid, &[]).await.unwrap();
    let result = results
        .iter()
        .find(|r| r.request.id == placed[0].id)
        .unwrap();
    let mut rows: Vec<(Option<u32>, u64)> = result
        .threads
        .iter()
        .map(|t| (t.openmp_thread, t.total))
        .collect();
    rows.sort_unstable();
    assert_eq!(
        rows,
        [(Some(0), 200_000), (Some(1), 200_000)],
        "{result:#?}"
    );
    assert!(result.threads.iter().all(|t| t.thread_id.is_some()));
    assert!(
        result.threads[0].label().contains(", OpenMP "),
        "{}",
        result.threads[0].label()
    );
    target.finish().await.unwrap();
}

/// `epcache run --aggregation per-thread` asks its requests per thread too: the padded
/// counters' OpenMP region gives one row per OpenMP thread, 200,000 writes each, in the JSON
/// results of the run.
#[test]
fn epcache_run_asks_per_thread_results_too() {
    let dir = tempfile::tempdir().unwrap();
    let who = "epcache_run_asks_per_thread_results_too";
    let Some(program) = build(dir.path(), "omp_false_sharing.c", &["-fopenmp", "-g"], who) else {
        return;
    };
    let results = dir.path().join("results.json");
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cores", "2", "--cache", MACHINE])
        .args(["--region", "count_padded._omp_fn.0", "--array", "padded"])
        .args([
            "--event",
            "PAPI_L1_DCW",
            "--aggregation",
            "per-thread",
            "--json",
        ])
        .arg("--output")
        .arg(&results)
        .arg("--")
        .arg(&program)
        .env("OMP_NUM_THREADS", "2")
        .current_dir(dir.path())
        .output()
        .unwrap();
    epcache_test_support::tools::check_output("epcache run --aggregation per-thread", &out);
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    let result = &results[0];
    assert_eq!(result["request"]["aggregation"], "per-thread", "{result:#}");
    let mut rows: Vec<(u64, u64)> = result["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["openmp_thread"].as_u64().unwrap(),
                t["total"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort_unstable();
    assert_eq!(rows, [(0, 200_000), (1, 200_000)], "{result:#}");
    // No coherence event was asked for: nothing is said of the interleaving.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("took turns"), "{said}");
}

/// A request counting a coherence event gets, at the program's end, how finely the threads
/// took turns on the machine, which such counts depend on (a request's results have no room
/// for it, and the standalone report says it under its table).
#[test]
fn a_coherence_request_is_told_how_the_threads_interleaved() {
    let dir = tempfile::tempdir().unwrap();
    let who = "a_coherence_request_is_told_how_the_threads_interleaved";
    let Some(program) = build(dir.path(), "omp_false_sharing.c", &["-fopenmp"], who) else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cores", "2", "--cache", MACHINE])
        .args(["--region", "count_packed._omp_fn.0", "--array", "packed"])
        .args(["--event", "EPC_L1_FSM", "--json"])
        .arg("--")
        .arg(&program)
        .env("OMP_NUM_THREADS", "2")
        .current_dir(dir.path())
        .output()
        .unwrap();
    epcache_test_support::tools::check_output("epcache run --event EPC_L1_FSM", &out);
    let said = String::from_utf8_lossy(&out.stderr);
    let switches = said
        .split_once("the threads took turns every ")
        .and_then(|(_, rest)| rest.split_once(" switches in "))
        .and_then(|(before, _)| before.rsplit_once('(').map(|(_, n)| n.to_owned()))
        .unwrap_or_else(|| panic!("no word of the interleaving in\n{said}"));
    assert!(
        switches.parse::<u64>().unwrap() > 0,
        "two threads on the machine switch at least once: {said}"
    );
}
