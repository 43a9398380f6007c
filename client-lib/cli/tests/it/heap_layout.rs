//! A monitored program's heap is laid out as the plain program's: the runtime allocates from a
//! heap of its own (epcache-monitor `runtime_heap.rs`), so where a program's `malloc` or
//! ALLOCATE puts its arrays relative to one another, and so which cache sets they share, does
//! not change when it is
//! monitored on one core, standalone or recording. With the simulation on a second core, the
//! thread that runs it is started (and ended when idle) by the program's threads, and the C
//! library's bookkeeping for a thread takes a few hundred bytes of the program's heap: offsets
//! then stay within a kilobyte of the plain run's. Blocks the C library maps on their own
//! (128 KiB and more) go to pages the kernel picks, with or without the runtime.

use std::path::Path;
use std::process::Command;

use crate::capture_support::{available, epcache_cc, kernel, runtime_built};

/// The program's output (its blocks' offsets from the first), run with `env`.
fn offsets(program: &Path, env: &[(&str, &str)]) -> String {
    let out = Command::new(program)
        .envs(env.iter().copied())
        .current_dir(program.parent().unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {out:?}", program.display());
    String::from_utf8(out.stdout).unwrap()
}

fn same_layout_monitored_or_not(compiler: &str, source: &str) {
    let who = format!("heap layout of {source}");
    if !(available(compiler, &who) && runtime_built(&who)) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = kernel(source);
    let src = src.to_str().unwrap();
    let plain = dir.path().join("plain");
    let built = Command::new(compiler)
        .args(["-O1", "-g", src, "-o"])
        .arg(&plain)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    epcache_cc(dir.path(), &[compiler, "-O1", "-g", "-o", "monitored", src]);
    let monitored = dir.path().join("monitored");
    let native = offsets(&plain, &[]);
    assert!(native.lines().count() >= 3, "{native}");
    let cache = ("EPCACHE_CACHE", "D1=8K,2,32;LL=1M,8,64");
    let report = ("EPCACHE_REPORT", "r.json");
    let one_core = ("EPCACHE_PIPELINE", "off");
    let exact: [(&str, Vec<(&str, &str)>); 4] = [
        ("unmonitored", vec![]),
        ("standalone report, one core", vec![cache, report, one_core]),
        (
            "recording main, one core",
            vec![
                cache,
                report,
                one_core,
                ("EPCACHE_TRACE", "main"),
                ("EPCACHE_TRACE_OUTPUT", "t.eppt"),
            ],
        ),
        (
            "MCC off, one core",
            vec![cache, report, one_core, ("EPCACHE_MCC", "off")],
        ),
    ];
    for (label, env) in exact {
        assert_eq!(
            offsets(&monitored, &env),
            native,
            "{source}, {label}: the blocks' offsets differ from the plain build's"
        );
    }
    let two_cores = offsets(&monitored, &[cache, report, ("EPCACHE_PIPELINE", "always")]);
    within_a_kilobyte(&two_cores, &native, &format!("{source} on two cores"));
    let run = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "run",
            "--cache",
            cache.1,
            "--all-regions",
            "--output",
            "run.txt",
            "--",
        ])
        .arg(&monitored)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let run = String::from_utf8(run.stdout).unwrap();
    within_a_kilobyte(&run, &native, &format!("{source} under epcache run"));
}

/// Each number of `got` within 1024 of `native`'s, line by line.
fn within_a_kilobyte(got: &str, native: &str, what: &str) {
    let numbers = |text: &str| -> Vec<i64> {
        text.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    let (got_n, native_n) = (numbers(got), numbers(native));
    assert_eq!(
        got_n.len(),
        native_n.len(),
        "{what}: {got} against {native}"
    );
    for (g, n) in got_n.iter().zip(&native_n) {
        assert!(
            (g - n).abs() <= 1024,
            "{what}: the blocks' offsets are far from the plain build's:\n{got}\nagainst\n{native}"
        );
    }
}

#[test]
fn a_c_programs_heap_is_laid_out_as_without_the_runtime() {
    same_layout_monitored_or_not("gcc", "heap_layout.c");
}

#[test]
fn a_fortran_programs_allocatables_are_laid_out_as_without_the_runtime() {
    same_layout_monitored_or_not("gfortran", "heap_layout.f90");
}
