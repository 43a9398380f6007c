//! The members of an array's structure element, from real gcc, g++ and gfortran builds: the same
//! `{double x, y, z; int id;}` as a C struct, a C++ class (with a method, a static member and a
//! base class) and a Fortran derived type gives `x`, `y`, `z`, `id` at 0, 8, 16, 24 in a 32-byte
//! element; an array of scalars and a lone structure have none.

use epcache_symbols::{DebugInfo, Member};

use crate::programs::{build, only};

const MEMBERS_PROGRAM: &str = "to build the struct-member test programs";

const C_PROGRAM: &str = r#"struct particle { double x, y, z; int id; };
struct particle parts[1000];
struct particle lone;
double plain[10];
int main(void) { parts[3].x = lone.y + plain[2]; return (int)parts[3].x; }
"#;

const CPP_PROGRAM: &str = r#"struct tagged { };
class particle : public tagged {
public:
    double x, y, z;
    int id;
    static int made;
    double norm() const { return x * x + y * y + z * z; }
};
int particle::made = 0;
particle parts[1000];
int main() { parts[3].x = parts[2].norm() + particle::made; return (int)parts[3].x; }
"#;

const FORTRAN_PROGRAM: &str = r#"module particles
  implicit none
  type particle
    real(8) :: x, y, z
    integer :: id
  end type
  type(particle) :: parts(1000)
end module

program use_particles
  use particles
  implicit none
  parts(3)%x = 1.0d0
  print *, parts(3)%x
end program
"#;

fn particle() -> Vec<Member> {
    [("x", 0, 8), ("y", 8, 8), ("z", 16, 8), ("id", 24, 4)]
        .into_iter()
        .map(|(name, offset, bytes)| Member {
            name: name.to_owned(),
            offset,
            bytes,
        })
        .collect()
}

#[test]
fn a_c_struct_array_has_its_members_and_scalars_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gcc", "-g", "-O0"],
        "parts.c",
        C_PROGRAM,
        MEMBERS_PROGRAM,
    ) else {
        return;
    };
    let info = DebugInfo::load(&exe).unwrap();
    let parts = only(&info, "parts");
    assert_eq!(parts.members, particle());
    assert_eq!(parts.shape.as_ref().unwrap().element_bytes, 32);
    // A structure that is no array, and an array of scalars: nothing to bucket by.
    assert_eq!(only(&info, "lone").members, []);
    assert_eq!(only(&info, "plain").members, []);
}

#[test]
fn a_cpp_class_array_has_its_data_members_not_its_statics_or_methods() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["g++", "-g", "-O0"],
        "parts.cpp",
        CPP_PROGRAM,
        MEMBERS_PROGRAM,
    ) else {
        return;
    };
    let info = DebugInfo::load(&exe).unwrap();
    let parts = only(&info, "parts");
    // The empty base takes no bytes (DWARF sizes it 1, at offset 0 with `x`), and the static
    // member and the method are no bytes of an element.
    assert_eq!(parts.members, particle());
    assert_eq!(parts.shape.as_ref().unwrap().element_bytes, 32);
}

#[test]
fn a_fortran_derived_type_array_has_its_components() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gfortran", "-g", "-O0"],
        "parts.f90",
        FORTRAN_PROGRAM,
        MEMBERS_PROGRAM,
    ) else {
        return;
    };
    let info = DebugInfo::load(&exe).unwrap();
    let parts = only(&info, "particles::parts");
    assert_eq!(parts.members, particle());
    assert_eq!(parts.shape.as_ref().unwrap().element_bytes, 32);
}
