//! Counting per field (issue 28 item 4): `epcache run --array parts --by-field` over an array of
//! `{double x, y, z; int id;}` whose measured function reads only `.x` gives every access and
//! every miss to `x` and none to `y`, `z`, `id` or the padding, and the sum is the static count
//! of the array in the standalone report of the same run; the same for a C struct, a C++ class
//! and a Fortran derived type. `epcache request PID --by-field` on a running program reads the
//! members through its pid, and `epcache histogram` draws a bar per member. An array that is no
//! array of structures is refused before the program runs on, saying so.

use std::path::Path;
use std::process::{Command, Output};

use crate::capture_support::{available, epcache_cc, region, runtime_built, structure};

const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";
/// Elements of `parts` in every program.
const N: u64 = 20_000;

const C_SOURCE: &str = r#"#include <stdio.h>
#define N 20000
struct particle { double x, y, z; int id; };
struct particle parts[N];
double plain[N];

__attribute__((noinline)) double sum_x(void)
{
    double s = 0;
    for (int i = 0; i < N; i++)
        s += parts[i].x;
    return s;
}

int main(void)
{
    for (int i = 0; i < N; i++) {
        parts[i].x = i; parts[i].y = 2 * i; parts[i].z = 3 * i; parts[i].id = i;
        plain[i] = i;
    }
    printf("%g %g\n", sum_x(), plain[N - 1]);
    return 0;
}
"#;

const CPP_SOURCE: &str = r#"#include <cstdio>
const int N = 20000;
class particle {
public:
    double x, y, z;
    int id;
    static int made;
    double norm() const { return x * x + y * y + z * z; }
};
int particle::made = 0;
particle parts[N];

__attribute__((noinline)) double sum_x()
{
    double s = 0;
    for (int i = 0; i < N; i++)
        s += parts[i].x;
    return s;
}

int main()
{
    for (int i = 0; i < N; i++) {
        parts[i].x = i; parts[i].y = 2 * i; parts[i].z = 3 * i; parts[i].id = i;
    }
    double s = sum_x();
    std::printf("%g %g\n", s, parts[1].norm() + particle::made);
    return 0;
}
"#;

const FORTRAN_SOURCE: &str = r#"module particles
  implicit none
  integer, parameter :: n = 20000
  type particle
    real(8) :: x, y, z
    integer :: id
  end type
  type(particle) :: parts(n)
contains
  function sum_x() result(s)
    real(8) :: s
    integer :: i
    s = 0
    do i = 1, n
      s = s + parts(i)%x
    end do
  end function
end module

program use_particles
  use particles
  implicit none
  integer :: i
  do i = 1, n
    parts(i)%x = i
    parts(i)%y = 2 * i
    parts(i)%z = 3 * i
    parts(i)%id = i
  end do
  print *, sum_x()
end program
"#;

/// Builds `source` (saved as `file`) with `epcache cc -- COMPILER -O1 -g` into `dir/parts`;
/// false (the test skipped) when the compiler or the runtime is missing.
fn build(dir: &Path, compiler: &str, file: &str, source: &str) -> bool {
    if !available(compiler, "by_field") || !runtime_built("by_field") {
        return false;
    }
    std::fs::write(dir.join(file), source).unwrap();
    epcache_cc(dir, &[compiler, "-O1", "-g", file, "-o", "parts"]);
    true
}

/// `epcache run --cache CACHE ARGS --json -- dir/parts`.
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE])
        .args(args)
        .args(["--json", "--"])
        .arg(dir.join("parts"))
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The results and the standalone report `epcache run --all-regions --json` prints.
fn documents(out: &Output) -> (serde_json::Value, serde_json::Value) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout
        .find("\n[")
        .unwrap_or_else(|| panic!("no results in {stdout}\n{}", stderr(out)));
    let mut docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(docs.len(), 2, "{stdout}");
    let report = docs.pop().unwrap();
    (docs.pop().unwrap(), report)
}

/// Runs the built program with a by-field request of reads and one of L1 load misses over
/// `array` during `sum_x`, and checks both against the report.
fn check(dir: &Path, array: &str) {
    check_with(dir, array, &[]);
}

/// [`check`] with more options (`--element-type`).
fn check_with(dir: &Path, array: &str, options: &[&str]) {
    let out = run(
        dir,
        &[
            options,
            &[
                "--all-regions",
                "--by-field",
                "--region",
                "sum_x",
                "--array",
                array,
                "--event",
                "PAPI_L1_DCR",
                "--region",
                "sum_x",
                "--array",
                array,
                "--event",
                "PAPI_L1_LDM",
                "--analysis",
                "reuse",
            ],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (results, report) = documents(&out);
    check_spatial_use_per_field(&results);
    let static_counts = &structure(region(&report, "sum_x"), array)["events"];
    for (result, event) in results
        .as_array()
        .unwrap()
        .iter()
        .zip(["PAPI_L1_DCR", "PAPI_L1_LDM"])
    {
        let named: Vec<(&str, u64)> = result["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["field"].as_str().unwrap(), b["count"].as_u64().unwrap()))
            .collect();
        let expected = static_counts[event].as_u64().unwrap();
        assert!(expected > 0, "{event}: {static_counts:#}");
        assert_eq!(
            named,
            [
                ("x", expected),
                ("y", 0),
                ("z", 0),
                ("id", 0),
                ("(padding)", 0)
            ],
            "{event}: {result:#}"
        );
        assert_eq!(result["total"], expected, "{event}");
        assert_eq!(result["request"]["bucket_bytes"], 32, "{event}");
    }
    // One read of `x` per element.
    assert_eq!(static_counts["PAPI_L1_DCR"], N);
}

/// Each request's reuse analysis divides its array by field: reading only `x` uses every
/// byte of `x` the lines brought in and none of `y`, `z`, `id` or the padding, which came in
/// all the same (the array's spatial use is a quarter or less).
fn check_spatial_use_per_field(results: &serde_json::Value) {
    for result in results.as_array().unwrap() {
        let ranges = result["analysis"]["ranges"].as_array().unwrap();
        let divided: Vec<&serde_json::Value> = ranges
            .iter()
            .filter(|r| r["reuse"]["fields"].is_array())
            .collect();
        assert_eq!(divided.len(), 1, "one range divided by field: {result:#}");
        let reuse = &divided[0]["reuse"];
        let fields = reuse["fields"].as_array().unwrap();
        assert_eq!(fields.len(), 5, "x, y, z, id and the padding: {reuse:#}");
        let uses: Vec<f64> = fields
            .iter()
            .map(|f| f["spatial_use"].as_f64().unwrap())
            .collect();
        assert_eq!(uses, [1.0, 0.0, 0.0, 0.0, 0.0], "{reuse:#}");
        let fetched: Vec<u64> = fields
            .iter()
            .map(|f| f["fetched_bytes"].as_u64().unwrap())
            .collect();
        // Every element's members came in with its x (id is half as big), but for the last
        // element's tail when the array's last line was never read (a heap block is only
        // 16-byte aligned).
        assert_eq!(fetched[0], 8 * N, "{reuse:#}");
        for (member, bytes) in [(1, fetched[1]), (2, fetched[2]), (3, 2 * fetched[3])] {
            assert!(fetched[0] - bytes <= 8, "member {member}: {reuse:#}");
        }
        assert!(reuse["spatial_use"].as_f64().unwrap() <= 0.25, "{reuse:#}");
    }
}

#[test]
fn a_c_struct_read_only_through_x_gives_x_every_access_and_miss() {
    let dir = tempfile::tempdir().unwrap();
    if build(dir.path(), "gcc", "parts.c", C_SOURCE) {
        check(dir.path(), "parts");
    }
}

#[test]
fn a_cpp_class_gives_the_same_shape() {
    let dir = tempfile::tempdir().unwrap();
    if build(dir.path(), "g++", "parts.cpp", CPP_SOURCE) {
        check(dir.path(), "parts");
    }
}

/// A namespace's array and a class's static array are defined by a DIE that leaves the type to
/// their declaration: the type is read from there.
#[test]
fn a_cpp_namespace_or_static_member_array_gives_the_same_shape() {
    let declared = "particle parts[N];";
    assert!(CPP_SOURCE.contains(declared));
    for (source, name) in [
        (
            CPP_SOURCE.replace(
                declared,
                "namespace box { particle parts[N]; }\nusing box::parts;",
            ),
            "box::parts",
        ),
        (
            CPP_SOURCE.replace(
                declared,
                "struct grid { static particle parts[N]; };\nparticle grid::parts[N];\n#define parts grid::parts",
            ),
            "grid::parts",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        if build(dir.path(), "g++", "parts.cpp", &source) {
            check(dir.path(), name);
        }
    }
}

#[test]
fn a_fortran_derived_type_gives_the_same_shape() {
    let dir = tempfile::tempdir().unwrap();
    if build(dir.path(), "gfortran", "parts.f90", FORTRAN_SOURCE) {
        check(dir.path(), "particles::parts");
    }
}

/// Particles held as an ALLOCATABLE component of a module's derived-type variable (`s%parts`):
/// the component's descriptor gives its element's members.
#[test]
fn a_fortran_allocatable_component_of_derived_type_divides_by_its_members() {
    let dir = tempfile::tempdir().unwrap();
    if build(dir.path(), "gfortran", "parts.f90", FORTRAN_SWARM_SOURCE) {
        check(dir.path(), "particles::s%parts");
    }
}

const FORTRAN_SWARM_SOURCE: &str = r#"module particles
  implicit none
  integer, parameter :: n = 20000
  type particle
    real(8) :: x, y, z
    integer :: id
  end type
  type swarm
    integer :: count
    type(particle), allocatable :: parts(:)
  end type
  type(swarm) :: s
contains
  function sum_x() result(t)
    real(8) :: t
    integer :: i
    t = 0
    do i = 1, n
      t = t + s%parts(i)%x
    end do
  end function
end module

program use_particles
  use particles
  implicit none
  integer :: i
  allocate(s%parts(n))
  do i = 1, n
    s%parts(i) = particle(i, 2 * i, 3 * i, i)
  end do
  print *, sum_x()
end program
"#;

/// Particles of an ALLOCATABLE module array whose type has an ALLOCATABLE component.
const FORTRAN_COMPONENT_SOURCE: &str = r#"module particles
  implicit none
  integer, parameter :: n = 20000
  type particle
    real(8) :: x, y
    real(8), allocatable :: hist(:)
  end type
  type(particle), allocatable :: parts(:)
contains
  function sum_x() result(s)
    real(8) :: s
    integer :: i
    s = 0
    do i = 1, n
      s = s + parts(i)%x
    end do
  end function
end module

program use_particles
  use particles
  implicit none
  integer :: i
  allocate(parts(n))
  do i = 1, n
    parts(i)%x = i
    parts(i)%y = 2 * i
  end do
  print *, sum_x()
end program
"#;

/// An ALLOCATABLE component has no size in the debug info (its data lies elsewhere): its
/// member is its descriptor, up to the element's end, and the request is served, every read
/// of `x` in `x`'s bucket (a member of no bytes would be refused by the daemon, after the
/// start).
#[test]
fn a_fortran_allocatable_component_is_its_descriptors_bytes() {
    let dir = tempfile::tempdir().unwrap();
    if !build(
        dir.path(),
        "gfortran",
        "parts.f90",
        FORTRAN_COMPONENT_SOURCE,
    ) {
        return;
    }
    let out = run(
        dir.path(),
        &[
            "--region",
            "sum_x",
            "--array",
            "parts",
            "--event",
            "PAPI_L1_DCR",
            "--by-field",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout.find("\n[").unwrap_or_else(|| panic!("{stdout}"));
    let results: serde_json::Value = serde_json::from_str(stdout[start..].trim()).unwrap();
    let result = &results[0];
    let fields: Vec<(&str, u64, u64)> = result["request"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let n = |k: &str| f[k].as_u64().unwrap();
            (f["name"].as_str().unwrap(), n("offset"), n("bytes"))
        })
        .collect();
    assert_eq!(fields[..2], [("x", 0, 8), ("y", 8, 8)], "{result:#}");
    let (name, offset, bytes) = fields[2];
    assert_eq!((name, offset), ("hist", 16), "{result:#}");
    assert!(bytes >= 48, "a descriptor: {result:#}");
    let counts: Vec<u64> = result["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts[..3], [20_000, 0, 0], "{result:#}");
}

/// The same particles on the heap, allocated at line 16 through a typedef's pointer.
const HEAP_SOURCE: &str = r#"#include <stdio.h>
#include <stdlib.h>
#define N 20000
typedef struct particle { double x, y, z; int id; } particle_t;

__attribute__((noinline)) double sum_x(const particle_t *parts)
{
    double s = 0;
    for (int i = 0; i < N; i++)
        s += parts[i].x;
    return s;
}

int main(void)
{
    particle_t *parts = malloc(N * sizeof *parts);
    for (int i = 0; i < N; i++)
        parts[i] = (particle_t){i, 2.0 * i, 3.0 * i, i};
    printf("%g\n", sum_x(parts));
    free(parts);
    return 0;
}
"#;

/// A heap block's type is not in the debug info: `--element-type` names it, as the struct's
/// tag or as its typedef, and the block divides by field as a global array does; without it,
/// the type of the pointer declared on the allocating line does.
#[test]
fn a_heap_array_divides_by_the_element_type_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "gcc", "parts.c", HEAP_SOURCE) {
        return;
    }
    for ty in ["struct particle", "particle_t"] {
        check_with(dir.path(), "parts.c:16", &["--element-type", ty]);
    }
    check(dir.path(), "parts.c:16");
}

/// The same particles in a main program's ALLOCATABLE (its descriptor has no place of its own
/// in DWARF) and in a C++ `std::vector`: the variable holding the block gives its element.
#[test]
fn a_heap_array_takes_its_element_from_the_variable_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    if build(dir.path(), "gfortran", "parts.f90", FORTRAN_HEAP_SOURCE) {
        check(dir.path(), "parts.f90:25");
    }
    let dir = tempfile::tempdir().unwrap();
    if build(dir.path(), "g++", "parts.cpp", CPP_VECTOR_SOURCE) {
        check(dir.path(), "parts.cpp:16");
    }
}

const FORTRAN_HEAP_SOURCE: &str = r#"module particles
  implicit none
  integer, parameter :: n = 20000
  type particle
    real(8) :: x, y, z
    integer :: id
  end type
contains
  function sum_x(parts) result(s)
    type(particle), intent(in) :: parts(:)
    real(8) :: s
    integer :: i
    s = 0
    do i = 1, n
      s = s + parts(i)%x
    end do
  end function
end module

program use_particles
  use particles
  implicit none
  type(particle), allocatable :: parts(:)
  integer :: i
  allocate(parts(n))
  do i = 1, n
    parts(i) = particle(i, 2 * i, 3 * i, i)
  end do
  print *, sum_x(parts)
end program
"#;

const CPP_VECTOR_SOURCE: &str = r#"#include <cstdio>
#include <vector>
const int N = 20000;
struct particle { double x, y, z; int id; };

__attribute__((noinline)) double sum_x(const std::vector<particle> &parts)
{
    double s = 0;
    for (int i = 0; i < N; i++)
        s += parts[i].x;
    return s;
}

int main()
{
    std::vector<particle> parts(N);
    for (int i = 0; i < N; i++)
        parts[i] = particle{double(i), 2.0 * i, 3.0 * i, i};
    std::printf("%g\n", sum_x(parts));
    return 0;
}
"#;

/// A heap block held by a structure's member (`sys.cells = malloc(..)`, as CSR and AoS arrays
/// hang off a matrix or mesh struct) takes its element from the member's type.
#[test]
fn a_heap_array_held_by_a_structure_member_takes_its_element_from_the_member() {
    let held = HEAP_SOURCE
        .replace(
            "double sum_x(const particle_t *parts)",
            "double sum_x(const particle_t *p)",
        )
        .replace("s += parts[i].x;", "s += p[i].x;")
        .replace(
            "particle_t *parts = malloc(N * sizeof *parts);",
            "struct system { int n; particle_t *cells; } sys = {N, 0};\n    sys.cells = malloc(N * sizeof *sys.cells);",
        )
        .replace("parts[i] = (particle_t)", "sys.cells[i] = (particle_t)")
        .replace("sum_x(parts)", "sum_x(sys.cells)")
        .replace("free(parts)", "free(sys.cells)");
    assert!(!held.contains("parts"), "{held}");
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "gcc", "parts.c", &held) {
        return;
    }
    check(dir.path(), "parts.c:17");
}

/// A heap block no variable of a structure pointer holds is refused before the program runs
/// on, and the refusal names `--element-type`; so is a type the program does not declare.
#[test]
fn a_heap_array_without_a_known_element_type_is_refused_naming_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let untyped = HEAP_SOURCE.replace(
        "particle_t *parts = malloc(N * sizeof *parts);",
        "void *raw = malloc(N * sizeof(particle_t));\n    particle_t *parts = raw;",
    );
    assert_ne!(untyped, HEAP_SOURCE);
    if !build(dir.path(), "gcc", "parts.c", &untyped) {
        return;
    }
    for (options, says) in [
        (&[][..], "name it with --element-type"),
        (
            &["--element-type", "struct nosuch"][..],
            "no structure type `nosuch`",
        ),
    ] {
        let out = run(
            dir.path(),
            &[
                options,
                &[
                    "--by-field",
                    "--region",
                    "sum_x",
                    "--array",
                    "parts.c:16",
                    "--event",
                    "PAPI_L1_DCR",
                ],
            ]
            .concat(),
        );
        assert!(!out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
        assert!(text.contains(says), "{text}");
        // Refused before the program started: it printed nothing.
        assert!(!text.contains("1.9999e+08"), "{text}");
    }
}

#[test]
fn an_array_of_scalars_is_refused_before_the_program_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "gcc", "parts.c", C_SOURCE) {
        return;
    }
    // Alone, and with an --element-type of another size, which a declared array's own type
    // overrules: both sizes are named.
    for (options, says) in [
        (&[][..], "`plain` is not an array of structures"),
        (
            &["--element-type", "particle"][..],
            "is 32 bytes, but `plain` is an array of 8-byte elements",
        ),
    ] {
        let args = [
            options,
            &[
                "--by-field",
                "--region",
                "sum_x",
                "--array",
                "plain",
                "--event",
                "PAPI_L1_DCR",
            ],
        ]
        .concat();
        let out = run(dir.path(), &args);
        assert!(!out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
        assert!(text.contains(says), "{text}");
        // Refused before the program started: it printed nothing.
        assert!(!text.contains("1.9999e+08"), "{text}");
    }
}

/// `epcache request PID --by-field` reads the members through /proc/PID/exe and the daemon
/// names the result's buckets by them; `epcache histogram` draws a bar per member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_a_running_program_reads_its_fields_through_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "gcc", "parts.c", C_SOURCE) {
        return;
    }
    let mut launch = epcache_client::Launch::new(dir.path().join("parts"), "by-field-test");
    launch.show_output = false;
    let mut target = epcache_client::LocalTarget::launch(launch).await.unwrap();
    let pid = target.pid().to_string();
    let daemon = target.endpoint();
    let epcache = |args: Vec<String>| {
        let daemon = daemon.clone();
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_epcache"))
                .args(&args)
                .args(["--daemon", &daemon])
                .output()
                .unwrap()
        })
    };
    let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let out = epcache(args(&[
        "request",
        &pid,
        "--region",
        "sum_x",
        "--array",
        "parts",
        "--event",
        "PAPI_L1_DCR",
        "--by-field",
        "--json",
    ]))
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let placed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(placed["buckets"], 5, "{placed}");
    let names: Vec<&str> = placed["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "y", "z", "id"]);
    assert!(target.run_to_end().await.unwrap().success());
    let id = placed["id"].as_u64().unwrap().to_string();
    let out = epcache(args(&["histogram", &pid, &id])).await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let chart = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<(String, String)> = chart
        .lines()
        .skip(1)
        .map(|l| {
            let mut words = l.split_whitespace();
            (
                words.next().unwrap().to_owned(),
                words.next().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("x", N.to_string()),
        ("y", "0".into()),
        ("z", "0".into()),
        ("id", "0".into()),
        ("(padding)", "0".into()),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b))
    .collect();
    assert_eq!(rows, expected, "{chart}");
    target.finish().await.unwrap();
}
