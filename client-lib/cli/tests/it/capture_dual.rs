//! `epcache cc`'s dual build against real gcc and Valgrind: every function built plain and
//! instrumented, chosen at entry. The program must behave exactly like a plain build, count
//! exactly like an instrumented-only build when monitored, and run the plain code when idle.

use std::path::Path;
use std::process::Command;

use crate::capture_support::{
    self, available, epcache_cc, epcache_cc_with, kernel, run_with_report, runtime_built,
};

const CACHE: &str = "D1=32K,8,64;L2=256K,8,64";

fn run(program: &Path, env: &[(&str, &str)]) -> String {
    let out = Command::new(program)
        .envs(env.iter().copied())
        .output()
        .expect("running the program");
    assert!(
        out.status.success(),
        "{} failed: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Instructions the program executes, by Callgrind (deterministic, unlike time).
fn instructions(program: &Path, env: &[(&str, &str)]) -> u64 {
    instructions_in(program, env, None)
}

/// Instructions the program executes inside `function` (and what it calls) when given, else
/// in all.
fn instructions_in(program: &Path, env: &[(&str, &str)], function: Option<&str>) -> u64 {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .args(function.map(|f| format!("--toggle-collect={f}")))
        .arg(program)
        .envs(env.iter().copied())
        .output()
        .expect("running valgrind");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("Collected :"))
        .unwrap_or_else(|| panic!("no instruction count from callgrind:\n{stderr}"));
    line.rsplit(':')
        .next()
        .unwrap()
        .trim()
        .replace(',', "")
        .parse()
        .expect("a count")
}

/// Builds `program` with `compiler` and `args`, without epcache: the reference build.
fn build_plainly(compiler: &str, args: &[&str], program: &Path) {
    let status = Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(program)
        .status()
        .unwrap();
    assert!(status.success(), "plain {compiler} build of {args:?}");
}

struct Builds {
    _dir: tempfile::TempDir,
    plain: std::path::PathBuf,
    dual: std::path::PathBuf,
    instrumented: std::path::PathBuf,
    dual_note: String,
}

fn build(who: &str) -> Option<Builds> {
    if !available("gcc", who) || !runtime_built(who) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("dual_mix.c");
    let source = source.to_str().unwrap();
    let plain = dir.path().join("plain");
    build_plainly("gcc", &["-O2", "-DPLAIN_BUILD", source], &plain);
    // Two steps, as make does: compile with -c, then link.
    let dual_out = epcache_cc_with(
        dir.path(),
        &[("EPCACHE_CC_VERBOSE", "1")],
        &["gcc", "-O2", "-c", source, "-o", "dual.o"],
    );
    epcache_cc(dir.path(), &["gcc", "-O2", "dual.o", "-o", "dual"]);
    epcache_cc_with(
        dir.path(),
        &[("EPCACHE_CC_DUAL", "off")],
        &["gcc", "-O2", source, "-o", "instrumented"],
    );
    Some(Builds {
        plain,
        dual: dir.path().join("dual"),
        instrumented: dir.path().join("instrumented"),
        dual_note: String::from_utf8_lossy(&dual_out.stderr).into_owned(),
        _dir: dir,
    })
}

/// A report's regions without the data structures' start addresses (the per-line rows stay: a
/// miss counts for its line whichever path found it).
fn without_addresses(regions: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut regions = regions.as_array().expect("regions").clone();
    for region in &mut regions {
        for structure in region["data_structures"]
            .as_array_mut()
            .expect("structures")
        {
            structure.as_object_mut().unwrap().remove("start");
        }
    }
    regions
}

/// What two builds of one program must agree on exactly, whatever their code and stack layouts:
/// by region name, its reads and writes and its data structures' counts (heap blocks, whose
/// places do not depend on the code); a miss on the stack may fall elsewhere.
fn accesses_and_structures(regions: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = without_addresses(regions)
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "name": r["name"],
                "reads": r["events"]["PAPI_L1_DCR"],
                "writes": r["events"]["PAPI_L1_DCW"],
                "data_structures": r["data_structures"],
            })
        })
        .collect();
    out.sort_by_key(|r| r["name"].to_string());
    out
}

#[test]
fn a_dual_build_behaves_like_plain_and_counts_like_instrumented() {
    let Some(b) = build("capture_dual") else {
        return;
    };
    // Every function gcc kept got two copies; main calls a marker, so it always runs
    // instrumented. (pick and counter are inlined at -O2.)
    assert!(
        b.dual_note.contains("1 always run instrumented"),
        "{}",
        b.dual_note
    );
    let symbols = Command::new("nm").arg(&b.dual).output().unwrap();
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    for f in ["mm", "init", "fib", "main"] {
        assert!(
            symbols.contains(&format!(" {f}.captured\n")),
            "no instrumented copy of {f}:\n{symbols}"
        );
    }

    // Two debug units describe the source, one per copy; each global is still one variable,
    // and each function has both copies' code.
    let info = epcache_symbols::DebugInfo::load_program(&b.dual).expect("DWARF");
    for g in ["A", "B", "C", "calls"] {
        assert_eq!(
            info.globals.iter().filter(|v| v.name == g).count(),
            1,
            "global {g}"
        );
    }
    assert_eq!(info.functions.iter().filter(|f| f.name == "mm").count(), 2);

    let expected = run(&b.plain, &[]);
    assert_eq!(run(&b.dual, &[("EPCACHE_MCC", "off")]), expected);
    assert_eq!(run(&b.dual, &[]), expected, "idle, with a segment");
    let (dual_out, dual_report) = run_with_report(b._dir.path(), &b.dual, CACHE);
    let (instrumented_out, instrumented_report) =
        run_with_report(b._dir.path(), &b.instrumented, CACHE);
    assert_eq!(dual_out, expected, "monitored");
    assert_eq!(instrumented_out, expected);
    // The instrumented copies are the instrumented build's code: every count is equal (the
    // two programs' addresses differ).
    let dual_regions = without_addresses(&dual_report["regions"]);
    let instrumented_regions = without_addresses(&instrumented_report["regions"]);
    assert_eq!(dual_regions.len(), instrumented_regions.len());
    for (dual, instrumented) in dual_regions.iter().zip(&instrumented_regions) {
        assert_eq!(
            dual, instrumented,
            "region {} of the dual build differs from the instrumented-only build's",
            dual["name"]
        );
    }
    let names: Vec<&str> = dual_report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // fib's out-of-line instance declares nothing itself (its abstract origin does).
    let fib = capture_support::region(&dual_report, "fib");
    assert!(
        fib["file"].as_str().unwrap().ends_with("dual_mix.c"),
        "{fib}"
    );
    assert_eq!(fib["line"], 59);
    for f in ["mm", "init", "fib", "tail"] {
        assert_eq!(
            names.iter().filter(|n| **n == f).count(),
            1,
            "region {f} once in {names:?}"
        );
    }
}

#[test]
fn an_idle_dual_build_runs_the_plain_code() {
    let Some(b) = build("capture_dual idle") else {
        return;
    };
    if !available("valgrind", "capture_dual idle") {
        return;
    }
    // Without a segment nothing can arm, so the gate stays closed from the start.
    let off = [("EPCACHE_MCC", "off")];
    let plain = instructions(&b.plain, &[]);
    let dual = instructions(&b.dual, &off);
    let instrumented = instructions(&b.instrumented, &off);
    eprintln!("instructions: plain {plain}, dual idle {dual}, instrumented idle {instrumented}");
    assert!(
        (dual as f64) < plain as f64 * 1.15,
        "the idle dual build ran {dual} instructions, the plain build {plain}"
    );
    assert!(
        instrumented > plain * 2,
        "the instrumented-only build should pay its hooks: {instrumented} vs {plain}"
    );
}

#[test]
fn cpp_exceptions_templates_and_virtual_calls_behave_like_plain() {
    let who = "capture_dual C++";
    if !available("g++", who) || !runtime_built(who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("dual_exceptions.cpp");
    let source = source.to_str().unwrap();
    let plain = dir.path().join("plain");
    build_plainly("g++", &["-O2", source], &plain);
    let built = epcache_cc_with(
        dir.path(),
        &[("EPCACHE_CC_VERBOSE", "1")],
        &["g++", "-O2", source, "-o", "dual"],
    );
    let notes = String::from_utf8_lossy(&built.stderr);
    assert!(notes.contains("choose their copy at entry"), "{notes}");
    assert!(!notes.contains("instrumented only"), "{notes}");
    let dual = dir.path().join("dual");
    let expected = run(&plain, &[]);
    assert_eq!(expected.trim(), "37 999500 9 4 15");
    assert_eq!(run(&dual, &[]), expected, "idle");
    let (monitored, report) = run_with_report(dir.path(), &dual, CACHE);
    assert_eq!(monitored, expected, "monitored (every copy instrumented)");
    let main = capture_support::region(&report, "main");
    assert!(
        main["events"]["PAPI_L1_DCR"].as_u64().unwrap() > 10_000,
        "{main}"
    );
}

/// Builds C++ kernel `source` with `epcache cc -- g++ -O2` merged (checking it was) and
/// instrumented only, runs the merged one idle (it prints `idle_output`) and both with a
/// report; returns the two reports.
fn merged_and_alone(
    dir: &Path,
    source: &str,
    idle_output: &str,
) -> (serde_json::Value, serde_json::Value) {
    let source = kernel(source);
    let source = source.to_str().unwrap();
    let built = epcache_cc_with(
        dir,
        &[("EPCACHE_CC_VERBOSE", "1")],
        &["g++", "-O2", source, "-o", "dual"],
    );
    let notes = String::from_utf8_lossy(&built.stderr);
    assert!(notes.contains("choose their copy at entry"), "{notes}");
    assert!(!notes.contains("instrumented only"), "{notes}");
    epcache_cc_with(
        dir,
        &[("EPCACHE_CC_DUAL", "off")],
        &["g++", "-O2", source, "-o", "instrumented"],
    );
    let dual = dir.join("dual");
    assert_eq!(run(&dual, &[]).trim(), idle_output, "idle");
    let (_, merged) = run_with_report(dir, &dual, CACHE);
    let (_, alone) = run_with_report(dir, &dir.join("instrumented"), CACHE);
    (merged, alone)
}

/// C++ whose plain compilation has no exception tables is merged too (the personality word
/// only the instrumented copy has does not decline it, so it does not run instrumented when
/// idle), and counts what its instrumented-only build counts.
#[test]
fn cpp_without_exception_handling_is_merged() {
    let who = "capture_dual C++ without exceptions";
    if !available("g++", who) || !runtime_built(who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (merged, alone) = merged_and_alone(dir.path(), "dual_no_exceptions.cpp", "7960000");
    assert_eq!(
        without_addresses(&merged["regions"]),
        without_addresses(&alone["regions"])
    );
    let main = capture_support::region(&merged, "main");
    assert_eq!(main["events"]["PAPI_L1_DCR"], 40_000, "{main}");
}

/// C++ whose plain compilation inlined a constructor everywhere while the instrumented one
/// keeps it out of line with its complete-object alias (`std::vector(n, value)`) is merged too
/// (the alias only one listing had declined it), and counts the accesses and arrays its
/// instrumented-only build counts.
#[test]
fn cpp_with_an_alias_only_the_instrumented_copy_has_is_merged() {
    let who = "capture_dual C++ constructor alias";
    if !available("g++", who) || !runtime_built(who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (merged, alone) = merged_and_alone(dir.path(), "lambdas.cpp", "65536.0");
    // The two builds meet the vector's constructor and destructor in another order, and the
    // vectors themselves (three pointers each) lie on main's stack, whose frame differs.
    let (merged, alone) = (
        accesses_and_structures(&merged["regions"]),
        accesses_and_structures(&alone["regions"]),
    );
    assert_eq!(merged.len(), 6, "{merged:#?}");
    assert!(
        merged == alone,
        "the two builds' reports differ:\n{merged:#?}\n{alone:#?}"
    );
}

#[test]
fn inline_repeat_hits_count_exactly_what_the_hook_calls_count() {
    let who = "capture_dual inline";
    if !available("gcc", who) || !available("valgrind", who) || !runtime_built(who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("access_sizes.c");
    let source = source.to_str().unwrap();
    let plain = dir.path().join("plain");
    build_plainly("gcc", &["-O2", source, "-lpthread"], &plain);
    // Loads and stores of 1, 2, 4, 8 and 16 bytes in `scan` and `lane`: 10 inline sites at
    // least (gcc 12 writes 20), and most take the mask, in loops the word too, from the site
    // before them (13 of the 20), which the counts below then check on real code.
    capture_support::build_inline_and_calls(dir.path(), "gcc", source, 10, 8);
    epcache_cc_with(
        dir.path(),
        &[("EPCACHE_CC_DUAL", "off")],
        &["gcc", "-O2", source, "-lpthread", "-o", "instrumented"],
    );

    // A small L1 with 64-byte lines: the packed structure's fields straddle lines, and lines
    // are evicted (dirty ones too) between rounds.
    let cache = "D1=32K,8,64;L2=256K,8,64";
    let expected = run(&plain, &[]);
    let mut reports = Vec::new();
    for build in ["inline", "calls", "instrumented"] {
        let (out, report) = run_with_report(dir.path(), &dir.path().join(build), cache);
        assert_eq!(out, expected, "{build} prints what the plain build prints");
        reports.push((build, without_addresses(&report["regions"])));
    }
    let (_, inline) = &reports[0];
    for (build, regions) in &reports[1..] {
        assert_eq!(
            inline, regions,
            "the inline build counts differently from the {build} build"
        );
    }
    let lane = inline
        .iter()
        .find(|r| r["name"] == "lane")
        .expect("region lane");
    assert_eq!(
        lane["events"]["PAPI_L1_DCR"], 163_840,
        "two threads read their 4096-double lane 20 times"
    );

    // And the inline test does answer the repeat hits: in `lane` (whose thread reads and
    // writes each 64-byte line 8 times, so 14 of every 16 accesses are repeat hits, 286,720 in
    // all) Callgrind counts fewer instructions than when every access calls its hook. Had the
    // test never answered, it would only add instructions.
    let report = [("EPCACHE_REPORT", "/dev/null"), ("EPCACHE_CACHE", cache)];
    let kernel = Some("lane.captured");
    let with_inline = instructions_in(&dir.path().join("inline"), &report, kernel);
    let with_calls = instructions_in(&dir.path().join("calls"), &report, kernel);
    let saved_per_hit = (with_calls as f64 - with_inline as f64) / 286_720.0;
    eprintln!(
        "instructions in lane, monitored: inline {with_inline}, calls {with_calls} \
         ({saved_per_hit:.1} fewer per repeat hit)"
    );
    assert!(
        saved_per_hit > 5.0,
        "inline {with_inline} vs calls {with_calls}"
    );
}

/// A caller keeping a value in a call-clobbered register across a call to a local function
/// (gcc's interprocedural register allocation) still finds it after the call when the callee
/// is dual-built: the suite bench's Jacobi kernel (`benches/suite_kernels/jacobi2d.c`, whose
/// 2 MiB-aligned grids make gcc -O2 keep `main`'s loop counter in `r11` across calls to `sweep`)
/// would, without `-fno-ipa-ra`, run its loop far past its end, since the callee's
/// copy-choosing entry uses `r11`.
#[test]
fn a_caller_keeps_its_registers_across_a_dual_built_local_function() {
    if !available(
        "gcc",
        "a_caller_keeps_its_registers_across_a_dual_built_local_function",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/suite_kernels/jacobi2d.c");
    let include = format!("-I{}", source.parent().unwrap().display());
    let plain = dir.path().join("plain");
    build_plainly("gcc", &["-O2", &include, source.to_str().unwrap()], &plain);
    let dual = dir.path().join("dual");
    let out = epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            &include,
            source.to_str().unwrap(),
            "-o",
            dual.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let mut child = Command::new(&dual)
        .arg("3")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!(
                "the dual build of ipa_ra_loop.c ran 3 repetitions for over 30 s (plain: milliseconds)"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dual_output = child.wait_with_output().unwrap();
    let plain_output = Command::new(&plain).arg("3").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&dual_output.stdout),
        String::from_utf8_lossy(&plain_output.stdout)
    );
}
