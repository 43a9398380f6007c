//! What a data structure's type says is published with it (issue 25, for histogram axes in the
//! array's own terms): a C program's `double grid[100][50]` (row-major, from 0) and a Fortran
//! module's `real a(100,100)` (column-major, from 1) and `w(-2:2,0:3)`, as a tool reads them from
//! the running program's data-structure table and as the standalone report writes them.

use std::time::Duration;

use epcache_shm::layout::{DataStructureKind, Dimension, Shape};

use crate::capture_support::{
    self, available, epcache_cc, region, run_with_report, runtime_built, start_waiting, structure,
};

const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";

const C_SOURCE: &str = r#"#include <stdio.h>
double grid[100][50];
int main(void)
{
    for (int i = 0; i < 100; i++)
        for (int j = 0; j < 50; j++)
            grid[i][j] = i + j;
    printf("%g\n", grid[99][49]);
    return 0;
}
"#;

const FORTRAN_SOURCE: &str = r#"module grids
  implicit none
  real :: a(100,100)
  real(8) :: w(-2:2, 0:3)
end module grids

program shapes
  use grids
  implicit none
  a = 1.0
  w = 2.0d0
  print '(F0.1)', a(100,100) + w(2,3)
end program shapes
"#;

fn dims(d: &[(i64, u64)]) -> Vec<Dimension> {
    d.iter()
        .map(|&(lower, extent)| Dimension { lower, extent })
        .collect()
}

/// Builds `source` (saved as `file`) with `epcache cc -- COMPILER -O1`; runs it waiting for a
/// tool and checks what the data-structure table says of each `(name, shape)`; then checks the
/// standalone report's shapes of the same structures in region `program`.
fn check(compiler: &str, file: &str, source: &str, expected: &[(&str, Shape)]) {
    if !available(compiler, "data_shapes") || !runtime_built("data_shapes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), source).unwrap();
    epcache_cc(dir.path(), &[compiler, "-O1", file, "-o", "shapes"]);
    let program = dir.path().join("shapes");

    let runtime_dir = tempfile::tempdir().unwrap();
    let (mut child, tool) =
        start_waiting(&program, runtime_dir.path(), &[("EPCACHE_CACHE", CACHE)]);
    let published = tool.data_structures().unwrap();
    tool.release().unwrap();
    for (name, shape) in expected {
        let entry = published
            .iter()
            .find(|d| d.name == *name)
            .unwrap_or_else(|| panic!("{name} is not published: {published:#?}"));
        assert_eq!(entry.kind, DataStructureKind::Global);
        assert_eq!(entry.details.shape.as_ref(), Some(shape), "{name}");
        let elements: u64 = shape.dims.iter().map(|d| d.extent).product();
        assert_eq!(entry.range.len(), shape.element_bytes * elements, "{name}");
    }
    assert!(
        capture_support::wait_within(&mut child, Duration::from_secs(30))
            .is_some_and(|s| s.success())
    );

    let (_, report) = run_with_report(dir.path(), &program, CACHE);
    let program_region = region(&report, "program");
    for (name, shape) in expected {
        let reported = &structure(program_region, name)["shape"];
        assert_eq!(reported["element_bytes"], shape.element_bytes, "{name}");
        assert_eq!(reported["column_major"], shape.column_major, "{name}");
        let reported_dims: Vec<(i64, u64)> = reported["dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["lower"].as_i64().unwrap(), d["extent"].as_u64().unwrap()))
            .collect();
        let expected_dims: Vec<(i64, u64)> =
            shape.dims.iter().map(|d| (d.lower, d.extent)).collect();
        assert_eq!(reported_dims, expected_dims, "{name}");
    }
}

#[test]
fn a_c_matrix_is_published_row_major_from_zero() {
    check(
        "gcc",
        "grid.c",
        C_SOURCE,
        &[(
            "grid",
            Shape {
                element_bytes: 8,
                dims: dims(&[(0, 100), (0, 50)]),
                column_major: false,
            },
        )],
    );
}

#[test]
fn fortran_arrays_are_published_column_major_with_their_bounds() {
    check(
        "gfortran",
        "shapes.f90",
        FORTRAN_SOURCE,
        &[
            (
                "grids::a",
                Shape {
                    element_bytes: 4,
                    dims: dims(&[(1, 100), (1, 100)]),
                    column_major: true,
                },
            ),
            (
                "grids::w",
                Shape {
                    element_bytes: 8,
                    dims: dims(&[(-2, 5), (0, 4)]),
                    column_major: true,
                },
            ),
        ],
    );
}

/// What the shape is for: `epcache run`'s histogram over `double grid[100][50]` names its
/// buckets by rows of the matrix, not by byte offsets.
#[test]
fn a_histogram_over_a_matrix_is_labelled_by_its_rows() {
    if !available("gcc", "data_shapes") || !runtime_built("data_shapes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grid.c"), C_SOURCE).unwrap();
    epcache_cc(dir.path(), &["gcc", "-O1", "grid.c", "-o", "grid"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "run",
            "--cache",
            CACHE,
            "--region",
            "main",
            "--array",
            "grid",
            "--event",
            "PAPI_L1_STM",
            "--buckets",
            "10",
            "--",
        ])
        .arg(dir.path().join("grid"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Ten buckets of 4000 bytes: ten rows of 50 doubles each.
    for rows in ["[0..9][*]", "[40..49][*]", "[90..99][*]"] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(rows)),
            "no bucket labelled {rows}:\n{stdout}"
        );
    }
    assert!(
        !stdout.contains("+0.."),
        "byte offsets instead of rows:\n{stdout}"
    );
}

const HEAP_C_SOURCE: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    double *v = malloc(1024 * sizeof *v);
    for (int i = 0; i < 1024; i++)
        v[i] = i;
    printf("%g\n", v[1023]);
    free(v);
    return 0;
}
"#;

const HEAP_FORTRAN_SOURCE: &str = r#"program heap
  implicit none
  real(8), allocatable :: x(:)
  allocate(x(1024))
  x = 1.0d0
  print '(F0.1)', sum(x)
end program heap
"#;

/// A heap block's type is unknown to the target, but the variable holding it says its elements:
/// a histogram over `double *v = malloc(..)` is labelled by elements from 0, over a Fortran
/// `allocate(x(1024))` from 1, not by byte offsets.
#[test]
fn a_histogram_over_a_heap_array_is_labelled_by_its_elements() {
    for (compiler, file, source, array, first, last) in [
        (
            "gcc",
            "heap.c",
            HEAP_C_SOURCE,
            "heap.c:5",
            "[0..255]",
            "[768..1023]",
        ),
        (
            "gfortran",
            "heap.f90",
            HEAP_FORTRAN_SOURCE,
            "x@heap.f90:4",
            "(1:256)",
            "(769:1024)",
        ),
    ] {
        if !available(compiler, "data_shapes") || !runtime_built("data_shapes") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(file), source).unwrap();
        epcache_cc(dir.path(), &[compiler, "-O1", "-g", file, "-o", "heap"]);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args([
                "run", "--cache", CACHE, "--region", "main", "--array", array,
            ])
            .args(["--event", "PAPI_L1_DCW", "--buckets", "4", "--"])
            .arg(dir.path().join("heap"))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for label in [first, last] {
            assert!(
                stdout.lines().any(|l| l.trim_start().starts_with(label)),
                "{file}: no bucket labelled {label}:\n{stdout}"
            );
        }
    }
}
