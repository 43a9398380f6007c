//! Fortran programs through `epcache cc -- gfortran`, compiled and linked in separate steps and in
//! one: marker regions from the `epcache` module keyed by the line of their begin call, the
//! subroutines as function regions, module arrays named from DWARF, an ALLOCATABLE array
//! registered by the program, and every kernel's reads and writes equal to hand counts.

use std::path::{Path, PathBuf};

use crate::capture_support::{
    available, epcache_cc, kernel, region, run_with_report, runtime_built, structure,
};

const SOURCE: &str = "gauss_markers.f90";
/// The matrix order in `gauss_markers.f90`.
const N: u64 = 60;
/// Lines of the kernel's `epcache_region_begin` calls and subroutine statements.
const ELIMINATION_LINE: u64 = 56;
const SUBSTITUTION_LINE: u64 = 60;
const ELIM_LINE: u64 = 11;
const BACK_SUBST_LINE: u64 = 25;
/// Optimisation level: -O0 keeps every array reference of the source a load or store, so the
/// hand counts below are the source's (gcc never instruments the non-escaping locals).
const OPT: &str = "-O0";
const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";

fn gfortran_and_runtime(who: &str) -> bool {
    available("gfortran", who) && runtime_built(who)
}

/// `epcache cc -- gfortran -c`, then `epcache cc -- gfortran` on the object.
fn build_in_two_steps(dir: &Path) -> PathBuf {
    let source = kernel(SOURCE);
    epcache_cc(
        dir,
        &[
            "gfortran",
            OPT,
            "-c",
            source.to_str().unwrap(),
            "-o",
            "gauss_markers.o",
        ],
    );
    epcache_cc(dir, &["gfortran", "gauss_markers.o", "-o", "two_steps"]);
    dir.join("two_steps")
}

/// `epcache cc -- gfortran source -o program`.
fn build_in_one_step(dir: &Path) -> PathBuf {
    let source = kernel(SOURCE);
    epcache_cc(
        dir,
        &["gfortran", OPT, source.to_str().unwrap(), "-o", "one_step"],
    );
    dir.join("one_step")
}

fn event(counts: &serde_json::Value, name: &str) -> u64 {
    counts["events"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in {counts}"))
}

/// Reads and writes of one array in one kernel, counted by hand from the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    reads: u64,
    writes: u64,
}

impl std::ops::Add for Counts {
    type Output = Counts;
    fn add(self, o: Counts) -> Counts {
        Counts {
            reads: self.reads + o.reads,
            writes: self.writes + o.writes,
        }
    }
}

fn counts(value: &serde_json::Value) -> Counts {
    Counts {
        reads: event(value, "PAPI_L1_DCR"),
        writes: event(value, "PAPI_L1_DCW"),
    }
}

/// `elim`: for each k, m = n - k rows and columns below and right of the pivot.
/// The update `a(i,j) = a(i,j) - a(i,k) * a(k,j) / a(k,k)` runs m*m times (4 reads, 1 write of
/// a); `rhs(i) = rhs(i) - a(i,k) * rhs(k) / a(k,k)` m times (2 reads of a, 2 reads and 1 write
/// of rhs).
fn elim_counts() -> (Counts, Counts) {
    let ms = (1..N).map(|k| N - k);
    let a = Counts {
        reads: ms.clone().map(|m| 4 * m * m + 2 * m).sum(),
        writes: ms.clone().map(|m| m * m).sum(),
    };
    let rhs = Counts {
        reads: ms.clone().map(|m| 2 * m).sum(),
        writes: ms.sum(),
    };
    (a, rhs)
}

/// `back_subst`: for each i (from n down), `x(i) = rhs(i)` (1 read of rhs, 1 write of x), then
/// n - i updates `x(i) = x(i) - a(i,j) * x(j)` (2 reads of x, 1 of a, 1 write of x), then
/// `x(i) = x(i) / a(i,i)` (1 read of x and of a, 1 write of x).
fn back_subst_counts() -> (Counts, Counts, Counts) {
    let rest = |i: u64| N - i;
    let a = Counts {
        reads: (1..=N).map(|i| rest(i) + 1).sum(),
        writes: 0,
    };
    let rhs = Counts {
        reads: N,
        writes: 0,
    };
    let x = Counts {
        reads: (1..=N).map(|i| 2 * rest(i) + 1).sum(),
        writes: (1..=N).map(|i| rest(i) + 2).sum(),
    };
    (a, rhs, x)
}

/// The kernel's answer, computed here in the same order of operations.
fn expected_x1() -> String {
    let n = N as usize;
    let mut a = vec![vec![0f64; n + 1]; n + 1];
    let mut rhs = vec![0f64; n + 1];
    for j in 1..=n {
        for (i, row) in a.iter_mut().enumerate().skip(1) {
            row[j] = 1.0 / (i + j) as f64;
        }
        a[j][j] = n as f64;
        rhs[j] = 1.0;
    }
    for k in 1..n {
        for j in k + 1..=n {
            for i in k + 1..=n {
                a[i][j] -= a[i][k] * a[k][j] / a[k][k];
            }
        }
        for i in k + 1..=n {
            rhs[i] -= a[i][k] * rhs[k] / a[k][k];
        }
    }
    let mut x = vec![0f64; n + 1];
    for i in (1..=n).rev() {
        x[i] = rhs[i];
        for j in i + 1..=n {
            x[i] -= a[i][j] * x[j];
        }
        x[i] /= a[i][i];
    }
    format!("{:.9}", x[1])
}

/// Everything the report must say about one build of the kernel.
fn check(label: &str, dir: &Path, program: &Path) {
    let (stdout, report) = run_with_report(dir, program, CACHE);
    assert_eq!(stdout.trim(), expected_x1(), "{label}: wrong solution");

    for (name, line) in [
        ("elimination", ELIMINATION_LINE),
        ("substitution", SUBSTITUTION_LINE),
    ] {
        let marker = region(&report, name);
        println!(
            "{label}: marker {name} at {}:{} ({})",
            marker["file"], marker["line"], marker["kind"]
        );
        assert_eq!(marker["kind"], "marker", "{label}: {marker}");
        assert_eq!(marker["line"], line, "{label}: line of {name}'s begin call");
        assert!(
            marker["file"].as_str().unwrap().ends_with(SOURCE),
            "{label}: {marker}"
        );
        assert_eq!(marker["instances"], 1, "{label}: {name}");
    }
    for (name, line) in [("elim", ELIM_LINE), ("back_subst", BACK_SUBST_LINE)] {
        let function = region(&report, name);
        println!(
            "{label}: function {name} at {}:{}",
            function["file"], function["line"]
        );
        assert_eq!(function["kind"], "function", "{label}: {function}");
        assert_eq!(function["line"], line, "{label}: first line of {name}");
        assert!(
            function["file"].as_str().unwrap().ends_with(SOURCE),
            "{label}: {function}"
        );
        assert_eq!(function["instances"], 1, "{label}: {name}");
    }

    // The module arrays, as DWARF names them, and the registered allocatable.
    let program_region = region(&report, "program");
    let found: Vec<String> = program_region["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{} ({}, {} bytes)", d["name"], d["kind"], d["bytes"]))
        .collect();
    println!("{label}: data structures: {}", found.join(", "));
    let elim = region(&report, "elim");
    let a = structure(elim, "gauss_mod::a");
    assert_eq!(a["kind"], "global", "{label}: {a}");
    assert_eq!(a["bytes"], N * N * 8, "{label}: {a}");
    let rhs = structure(elim, "gauss_mod::rhs");
    assert_eq!(rhs["kind"], "global", "{label}: {rhs}");
    assert_eq!(rhs["bytes"], N * 8, "{label}: {rhs}");
    let back = region(&report, "back_subst");
    let x = structure(back, "x");
    assert_eq!(
        x["kind"], "heap",
        "{label}: the registered allocatable: {x}"
    );
    assert_eq!(x["bytes"], N * 8, "{label}: {x}");

    // Hand counts, per array and for the whole function region (nothing else is touched: the
    // loop indices are registers or non-escaping locals).
    let (a_elim, rhs_elim) = elim_counts();
    assert_eq!(counts(a), a_elim, "{label}: a in elim");
    assert_eq!(counts(rhs), rhs_elim, "{label}: rhs in elim");
    assert_eq!(counts(elim), a_elim + rhs_elim, "{label}: all of elim");
    let (a_back, rhs_back, x_back) = back_subst_counts();
    assert_eq!(
        counts(structure(back, "gauss_mod::a")),
        a_back,
        "{label}: a in back_subst"
    );
    assert_eq!(
        counts(structure(back, "gauss_mod::rhs")),
        rhs_back,
        "{label}: rhs in back_subst"
    );
    assert_eq!(counts(x), x_back, "{label}: x in back_subst");
    assert_eq!(
        counts(back),
        a_back + rhs_back + x_back,
        "{label}: all of back_subst"
    );
    // The registered array is touched only inside back_subst: the whole run counts the same.
    assert_eq!(
        counts(structure(program_region, "x")),
        x_back,
        "{label}: x over the run"
    );

    // Each marker encloses exactly its subroutine's call: the same counts, array by array.
    for (marker, function, arrays) in [
        ("elimination", elim, &["gauss_mod::a", "gauss_mod::rhs"][..]),
        (
            "substitution",
            back,
            &["gauss_mod::a", "gauss_mod::rhs", "x"][..],
        ),
    ] {
        let marker = region(&report, marker);
        for array in arrays {
            assert_eq!(
                structure(marker, array)["events"],
                structure(function, array)["events"],
                "{label}: {} and {} disagree on {array}",
                marker["name"],
                function["name"]
            );
        }
    }
}

#[test]
fn compiled_then_linked_separately() {
    if !gfortran_and_runtime("compiled_then_linked_separately") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build_in_two_steps(dir.path());
    check("two steps", dir.path(), &program);
}

#[test]
fn compiled_and_linked_in_one_step() {
    if !gfortran_and_runtime("compiled_and_linked_in_one_step") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build_in_one_step(dir.path());
    check("one step", dir.path(), &program);
}
