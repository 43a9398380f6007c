//! A Fortran COMMON block through `epcache cc -- gfortran` and the standalone report: its two members are two data structures, `blk::x` and `blk::y`, of 8000 bytes each, and each member's reads and writes (hand counts) are attributed to it, whichever of the two subroutines declaring the block made them.

use crate::capture_support::{
    available, epcache_cc, region, run_with_report, runtime_built, structure,
};

/// `/blk/` declared in two subroutines, in Fortran's two spellings. At -O0 every array
/// reference is a load or store; the loop indices are non-escaping locals gcc does not
/// instrument.
const PROGRAM: &str = r#"subroutine fill()
  real(8) :: x, y
  common /blk/ x(1000), y(1000)
  integer :: i
  do i = 1, 1000
    x(i) = i
  end do
end subroutine

subroutine total(s)
  real(8) x(1000), y(1000)
  common /blk/ x, y
  real(8) :: s
  integer :: i
  do i = 1, 1000
    y(i) = 2 * x(i)
  end do
  s = 0
  do i = 1, 1000
    s = s + y(i)
  end do
end subroutine

program common_report
  real(8) :: s
  call fill()
  call total(s)
  print '(f0.1)', s
end program
"#;

const N: u64 = 1000;

fn event(data: &serde_json::Value, name: &str) -> u64 {
    data["events"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in {data}"))
}

/// (reads, writes) of data structure `name` in region `function`, (0, 0) if it was not touched.
fn reads_writes(report: &serde_json::Value, function: &str, name: &str) -> (u64, u64) {
    let r = region(report, function);
    let touched = r["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["name"] == name);
    if !touched {
        return (0, 0);
    }
    let d = structure(r, name);
    (event(d, "PAPI_L1_DCR"), event(d, "PAPI_L1_DCW"))
}

#[test]
fn common_members_are_two_data_structures_with_their_own_accesses() {
    let who = "common_members_are_two_data_structures_with_their_own_accesses";
    if !available("gfortran", who) || !runtime_built(who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("common_report.f90"), PROGRAM).unwrap();
    epcache_cc(
        dir.path(),
        &[
            "gfortran",
            "-O0",
            "common_report.f90",
            "-o",
            "common_report",
        ],
    );
    let program = dir.path().join("common_report");
    let (stdout, report) = run_with_report(dir.path(), &program, "D1=8K,2,32;LL=1M,8,64");
    // s = sum of 2i for i = 1..1000.
    assert_eq!(stdout.trim(), format!("{}.0", N * (N + 1)));

    let whole = region(&report, "common_report");
    let names: Vec<String> = whole["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{} ({} bytes)", d["name"], d["bytes"]))
        .collect();
    println!("data structures: {}", names.join(", "));
    for member in ["blk::x", "blk::y"] {
        let d = structure(whole, member);
        assert_eq!(d["kind"], "global", "{d}");
        assert_eq!(d["bytes"], 8_000, "{member}: {d}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n.contains("fill::") || n.contains("total::")),
        "a member named after a procedure: {names:?}"
    );

    // fill writes x(i); total reads x(i) and writes y(i), then reads y(i).
    assert_eq!(reads_writes(&report, "fill", "blk::x"), (0, N), "x in fill");
    assert_eq!(reads_writes(&report, "fill", "blk::y"), (0, 0), "y in fill");
    assert_eq!(
        reads_writes(&report, "total", "blk::x"),
        (N, 0),
        "x in total"
    );
    assert_eq!(
        reads_writes(&report, "total", "blk::y"),
        (N, N),
        "y in total"
    );
    assert_eq!(
        reads_writes(&report, "common_report", "blk::y"),
        (N, N),
        "y over the run"
    );
}
