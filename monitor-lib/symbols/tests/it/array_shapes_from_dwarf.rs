//! What the types of real gcc- and gfortran-built globals say: the shapes of fixed-size arrays
//! (C's row-major `double a[100][50]` from 0, Fortran's column-major `real a(100,100)` from 1 and
//! `w(-2:2,0:3)`), and for ALLOCATABLE and POINTER arrays the descriptor, whose expressions,
//! evaluated over a descriptor laid out as gfortran lays it out, give the data and its bounds.

use epcache_symbols::{ArrayShape, DebugInfo, Extent};

use crate::programs::{build, only};

/// Why the tests build programs, when the compiler is missing.
const ARRAY_SHAPE_PROGRAM: &str = "to build the array-shape test program";

const C_PROGRAM: &str = r#"double a[100][50];
int v[7];
struct point { double x, y; } points[3];
int scalar = 3;
int main(void) { a[1][2] = v[3] + points[1].y + scalar; return (int)a[1][2]; }
"#;

const FORTRAN_PROGRAM: &str = r#"module shapes
  implicit none
  real :: a(100,100)
  real(8) :: w(-2:2, 0:3)
  real(8), allocatable :: u(:,:)
  real(8), pointer :: p(:) => null()
end module

program use_shapes
  use shapes
  implicit none
  allocate(u(0:9, 3:12))
  allocate(p(500))
  a(1,1) = 1.0
  w(0,0) = 2.0d0
  u(0,3) = 3.0d0
  p(1) = 4.0d0
  print *, a(1,1) + w(0,0) + u(0,3) + p(1)
end program
"#;

fn extents(dims: &[(i64, u64)]) -> Vec<Extent> {
    dims.iter()
        .map(|&(lower, count)| Extent { lower, count })
        .collect()
}

#[test]
fn c_arrays_are_row_major_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gcc", "-g", "-O0"],
        "shapes.c",
        C_PROGRAM,
        ARRAY_SHAPE_PROGRAM,
    ) else {
        return;
    };
    let info = DebugInfo::load(&exe).unwrap();
    let a = only(&info, "a");
    assert_eq!(
        a.shape,
        Some(ArrayShape {
            element_bytes: 8,
            dims: extents(&[(0, 100), (0, 50)]),
            column_major: false,
        })
    );
    assert_eq!(a.size, 8 * 100 * 50);
    assert_eq!(
        only(&info, "v").shape,
        Some(ArrayShape {
            element_bytes: 4,
            dims: extents(&[(0, 7)]),
            column_major: false,
        })
    );
    // An array of structures: one element is one structure.
    assert_eq!(
        only(&info, "points").shape.as_ref().unwrap().element_bytes,
        16
    );
    assert_eq!(only(&info, "scalar").shape, None);
    assert!(info.globals.iter().all(|g| g.descriptor.is_none()));
}

#[test]
fn fortran_arrays_are_column_major_and_allocatables_have_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gfortran", "-g", "-O0"],
        "shapes.f90",
        FORTRAN_PROGRAM,
        ARRAY_SHAPE_PROGRAM,
    ) else {
        return;
    };
    let info = DebugInfo::load(&exe).unwrap();
    assert_eq!(
        only(&info, "shapes::a").shape,
        Some(ArrayShape {
            element_bytes: 4,
            dims: extents(&[(1, 100), (1, 100)]),
            column_major: true,
        })
    );
    assert_eq!(
        only(&info, "shapes::w").shape,
        Some(ArrayShape {
            element_bytes: 8,
            dims: extents(&[(-2, 5), (0, 4)]),
            column_major: true,
        })
    );

    // `u` as gfortran lays out its descriptor after `allocate(u(0:9, 3:12))`: base_addr,
    // offset, dtype (elem_len, then version, rank, type, attribute), span, then stride, lower
    // and upper bound per dimension.
    let u = only(&info, "shapes::u");
    assert_eq!(u.shape, None);
    let descriptor = u
        .descriptor
        .as_ref()
        .expect("an allocatable has a descriptor");
    assert!(!descriptor.pointer);
    assert_eq!(u.size, 40 + 24 * 2, "the symbol is the descriptor");
    let words = [0x7f00_0000, 0, 8, 0x0302_0000_0000, 8, 1, 0, 9, 10, 3, 12];
    let read = read_words(0x5000, &words);
    let array = descriptor.array(0x5000, &read).unwrap();
    assert_eq!(array.start, 0x7f00_0000);
    assert_eq!(array.bytes, 8 * 10 * 10);
    assert_eq!(array.shape.dims, extents(&[(0, 10), (3, 10)]));
    assert!(array.shape.column_major);
    // Unallocated: base_addr 0.
    let mut unallocated = words;
    unallocated[0] = 0;
    assert_eq!(
        descriptor.array(0x5000, &read_words(0x5000, &unallocated)),
        None
    );

    let p = only(&info, "shapes::p");
    let descriptor = p
        .descriptor
        .as_ref()
        .expect("a pointer array has a descriptor");
    assert!(descriptor.pointer);
    let words = [0x6000_0000, 0, 8, 0x0301_0000_0000, 8, 1, 1, 500];
    let array = descriptor
        .array(0x9000, &read_words(0x9000, &words))
        .unwrap();
    assert_eq!((array.start, array.bytes), (0x6000_0000, 4000));
    assert_eq!(array.shape.dims, extents(&[(1, 500)]));
}

/// Reads the little-endian words at `base` and on, and nothing else.
fn read_words(base: u64, words: &[u64]) -> impl Fn(u64, u8) -> Option<u64> + '_ {
    move |addr, size| {
        let i = usize::try_from(addr.checked_sub(base)? / 8).ok()?;
        (size == 8 && addr % 8 == 0).then_some(*words.get(i)?)
    }
}

const DERIVED_TYPE_PROGRAM: &str = r#"module state
  implicit none
  type grid_t
    real(8), allocatable :: u(:,:)
  end type grid_t
  type field_t
    real(8), allocatable :: val(:)
    real(8), pointer :: p(:) => null()
    integer :: steps
    type(grid_t) :: grid
  end type field_t
  type, extends(field_t) :: vfield_t
    real(8), allocatable :: grad(:)
  end type vfield_t
  type(field_t) :: rho
  type(vfield_t) :: vel
  type(field_t) :: species(2, 2)
  type(field_t) :: mesh(100)
end module

program use_state
  use state
  implicit none
  allocate(rho%val(10), rho%grid%u(2, 3))
  rho%val(1) = 1.0d0
  rho%steps = 2
  rho%grid%u(1, 1) = 3.0d0
  allocate(species(2, 1)%val(4))
  species(2, 1)%val = 1.0d0
  mesh(1)%steps = 1
  allocate(vel%val(3), vel%grad(3))
  vel%grad = 2.0d0
  print *, rho%val(1) + rho%grid%u(1, 1) + rho%steps + species(2, 1)%val(1) + mesh(1)%steps
end program
"#;

/// A derived-type variable's ALLOCATABLE and POINTER components, a nested type's included, are
/// variables of their own inside it, each its descriptor's bytes (up to the next member); a
/// plain component (`steps`) is not.
#[test]
fn derived_type_components_have_descriptors_inside_their_variable() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gfortran", "-g", "-O0"],
        "state.f90",
        DERIVED_TYPE_PROGRAM,
        ARRAY_SHAPE_PROGRAM,
    ) else {
        return;
    };
    let info = DebugInfo::load(&exe).unwrap();
    let rho = only(&info, "state::rho");
    assert!(rho.descriptor.is_none());
    let val = only(&info, "state::rho%val");
    assert_eq!(val.name, "rho%val");
    assert_eq!(
        (val.address, val.size),
        (rho.address, 64),
        "rank 1: 40 + 24"
    );
    assert!(!val.descriptor.as_ref().unwrap().pointer);
    let p = only(&info, "state::rho%p");
    assert_eq!((p.address, p.size), (rho.address + 64, 64));
    assert!(p.descriptor.as_ref().unwrap().pointer);
    // `steps` (4 bytes, padded to 8) then the nested type's descriptor, rank 2: 40 + 2 * 24.
    let u = only(&info, "state::rho%grid%u");
    assert_eq!((u.address, u.size), (rho.address + 136, 88));
    assert_eq!(rho.size, 136 + 88);
    assert!(
        info.globals
            .iter()
            .all(|g| !g.qualified_name.contains("steps")),
        "a plain component is no variable of its own"
    );

    // A small array of derived type: each element's components by index, the first index
    // fastest; a large one (`mesh`, 100 elements) is a mesh, not named element by element.
    let species = only(&info, "state::species");
    for (i, index) in ["(1,1)", "(2,1)", "(1,2)", "(2,2)"].into_iter().enumerate() {
        let val = only(&info, &format!("state::species{index}%val"));
        assert_eq!(
            val.address,
            species.address + i as u64 * rho.size,
            "{index}"
        );
        let u = only(&info, &format!("state::species{index}%grid%u"));
        assert_eq!(u.address, species.address + i as u64 * rho.size + 136);
    }
    assert!(
        info.globals
            .iter()
            .all(|g| !g.qualified_name.starts_with("state::mesh(")),
        "100 elements are no fields of a handful"
    );
    // An extended type's parent components are its own, as Fortran names them.
    let vel = only(&info, "state::vel");
    assert_eq!(only(&info, "state::vel%val").address, vel.address);
    assert_eq!(only(&info, "state::vel%grid%u").address, vel.address + 136);
    assert_eq!(
        only(&info, "state::vel%grad").address,
        vel.address + rho.size
    );
    // gfortran's own tables (default initialisations, type-bound tables) are not the program's.
    let compilers: Vec<&str> = info
        .globals
        .iter()
        .map(|g| g.qualified_name.as_str())
        .filter(|n| n.contains("__def_init") || n.contains("__vtab") || n.contains("field_t%"))
        .collect();
    assert!(compilers.is_empty(), "{compilers:?}");

    // The component's descriptor, as gfortran fills it after `allocate(rho%grid%u(2, 3))`.
    let words = [0x7f00_0000, 0, 8, 0x0302_0000_0000, 8, 1, 1, 2, 2, 1, 3];
    let array = u
        .descriptor
        .as_ref()
        .unwrap()
        .array(0x5000, &read_words(0x5000, &words))
        .unwrap();
    assert_eq!((array.start, array.bytes), (0x7f00_0000, 8 * 6));
    assert_eq!(array.shape.dims, extents(&[(1, 2), (1, 3)]));
}
