//! Fortran COMMON blocks and empty arrays from a real gfortran build: each member is one data structure named `block::member`, at its own address with its own size, however many procedures declare the block; zero-size arrays give no size and no panic.

use std::path::Path;

use epcache_symbols::DebugInfo;

use crate::programs::{build, nm_sizes, only};

/// `/blk/` is declared in two subroutines (in both of Fortran's spellings) and used in the main
/// program's unit too; `/odd/` has a member with negative bounds, two empty ones and one after
/// them; `zm` has module arrays that are empty or start below 1.
const PROGRAM: &str = r#"module zm
  implicit none
  real(8) :: a(5:0)
  real(8) :: b(0:-1)
  real(8) :: d(-2:2)
end module

subroutine fill()
  real(8) :: x, y
  common /blk/ x(1000), y(1000)
  integer :: i
  do i = 1, 1000
    x(i) = i
    y(i) = 2 * i
  end do
end subroutine

subroutine total(s)
  real(8) x(1000), y(1000)
  common /blk/ x, y
  real(8) :: s
  integer :: i
  s = 0
  do i = 1, 1000
    s = s + x(i) + y(i)
  end do
end subroutine

subroutine shapes()
  real(8) :: w(-2:2), e(5:0), f(0), g(3)
  common /odd/ w, e, f, g
  real(8) :: q(10)
  common q
  w(0) = 1
  g(1) = 2
  q(1) = 3
end subroutine

program common_members
  use zm
  real(8) :: s
  call fill()
  call total(s)
  call shapes()
  d(0) = s
  print *, s, size(a), size(b), d(0)
end program
"#;

/// Link-time address and size of the ELF symbol `name`, as `nm -S` prints them.
fn nm(exe: &Path, name: &str) -> (u64, u64) {
    nm_sizes(exe)
        .into_iter()
        .find_map(|(symbol, address, size)| (symbol == name).then_some((address, size)))
        .unwrap_or_else(|| panic!("nm does not list {name} with a size"))
}

fn check(label: &str, exe: &Path, info: &DebugInfo) {
    // `/blk/` is one ELF symbol sized for both members.
    let (blk, blk_size) = nm(exe, "blk_");
    assert_eq!(blk_size, 16_000, "{label}: nm's size of blk_");
    let x = only(info, "blk::x");
    let y = only(info, "blk::y");
    assert_eq!((x.name.as_str(), y.name.as_str()), ("x", "y"), "{label}");
    assert_eq!(x.address, blk, "{label}: x starts the block");
    assert_eq!(y.address, blk + 8_000, "{label}: y follows x's 1000 reals");
    assert_eq!((x.size, y.size), (8_000, 8_000), "{label}: sizes");
    // Not also under the procedures that declare the block.
    let stray: Vec<_> = info
        .globals
        .iter()
        .filter(|g| (g.name == "x" || g.name == "y") && !g.qualified_name.starts_with("blk::"))
        .collect();
    assert!(stray.is_empty(), "{label}: {stray:#?}");

    // `/odd/`: w(-2:2) is 5 reals, e(5:0) and f(0) are empty (f's upper bound 0 with Fortran's
    // implicit lower bound 1), g(3) follows w directly.
    let (odd, odd_size) = nm(exe, "odd_");
    assert_eq!(odd_size, 64, "{label}: nm's size of odd_");
    let w = only(info, "odd::w");
    assert_eq!((w.address, w.size), (odd, 40), "{label}: w");
    for empty in ["odd::e", "odd::f"] {
        assert_eq!(only(info, empty).size, 0, "{label}: {empty}");
    }
    let g = only(info, "odd::g");
    assert_eq!((g.address, g.size), (odd + 40, 24), "{label}: g");
    // The blank COMMON, by gfortran's name for it.
    let (blank, _) = nm(exe, "__BLNK__");
    let q = only(info, "__BLNK__::q");
    assert_eq!((q.address, q.size), (blank, 80), "{label}: q");

    // Module arrays: empty ones have no size; d(-2:2) has 5 elements.
    for empty in ["zm::a", "zm::b"] {
        let sizes: Vec<u64> = info
            .globals
            .iter()
            .filter(|g| g.qualified_name == empty)
            .map(|g| g.size)
            .collect();
        assert!(sizes.iter().all(|&s| s == 0), "{label}: {empty} {sizes:?}");
    }
    assert_eq!(only(info, "zm::d").size, 40, "{label}: zm::d");
}

#[test]
fn common_members_are_named_by_block_with_their_own_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gfortran", "-g", "-O0"],
        "common_members.f90",
        PROGRAM,
        "to build the COMMON test program",
    ) else {
        return;
    };
    check("load", &exe, &DebugInfo::load(&exe).unwrap());
    check(
        "load_program",
        &exe,
        &DebugInfo::load_program(&exe).unwrap(),
    );
}
