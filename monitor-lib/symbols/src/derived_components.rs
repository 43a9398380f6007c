//! The ALLOCATABLE and POINTER array components of a Fortran derived-type variable (`val` of
//! `type(field_t) :: rho`), each read as a variable of its own, `rho%val`.
//!
//! What the program uses is the data each component's descriptor points to, and the runtime
//! follows descriptors only of variables it knows: without this, every component's block was its
//! allocation line's, and one line allocating two components (`allocate(rho%val(n), vel%val(n))`)
//! made two arrays one structure. A component's descriptor lies inside its variable at the
//! member's offset, and its extent runs to the next member (or the structure's end); nested
//! derived types are followed a few levels deep (`s%grid%val`), and an extended type's parent
//! components are its own (`vel%val`, not gfortran's `vel%field_t%val`). The variable itself
//! keeps its own bytes, the descriptors, which the program reads on its way to the data.

use super::array_type::{ArrayDescriptor, ArrayType, Extent, array_type};
use super::dwarf_types::Reader;
use super::element_members::{Member, element_members, follow, member_offset, name_of};

/// Most components read from one variable (malformed DWARF cannot make the reader allocate
/// much), and how many derived types deep they are looked for.
const MAX_COMPONENTS: usize = 256;
const MAX_DEPTH: u32 = 4;
/// Most elements of a fixed-size array of derived type whose components are followed, each
/// named by its index (`f(2)%val`): a handful of fields or species, not a mesh of cells.
const MAX_ELEMENTS: u64 = 64;

/// One described array inside a structure variable.
#[derive(Debug)]
pub(super) struct Component {
    /// The path from the variable, each component after a `%`, an element's index in
    /// parentheses: `%val`, `%grid%val`, `(2)%val`.
    pub path: String,
    /// Bytes from the variable's first byte to the component's descriptor.
    pub offset: u64,
    /// Bytes of the descriptor: up to the next member, or to the end of its structure.
    pub bytes: u64,
    pub descriptor: ArrayDescriptor,
    /// The members of its element when that is a derived type (`type(cell), allocatable ::
    /// cells(:)`), for a by-field request; empty otherwise.
    pub members: Vec<Member>,
}

/// The described array components of variable `entry` when its type is a structure (through
/// typedefs and qualifiers), or a Fortran fixed-size array of at most [`MAX_ELEMENTS`]
/// structures, in offset order; empty otherwise. `lower_default` and `column_major` are the
/// language's, as for the variables themselves.
pub(super) fn described_components<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    lower_default: i64,
    column_major: bool,
) -> Vec<Component> {
    let mut walk = Walk {
        dwarf,
        unit,
        lower_default,
        column_major,
        found: Vec::new(),
    };
    if let Some(structure) = follow(unit, entry, &[gimli::DW_TAG_structure_type]) {
        walk.structure(&structure, "", 0, MAX_DEPTH);
    } else if column_major
        && let Some(ArrayType::Fixed(shape)) = array_type(unit, entry, lower_default, column_major)
        && let Some(array) = follow(unit, entry, &[gimli::DW_TAG_array_type])
        && let Some(structure) = follow(unit, &array, &[gimli::DW_TAG_structure_type])
    {
        let count = shape
            .dims
            .iter()
            .try_fold(1u64, |n, d| n.checked_mul(d.count));
        for element in 0..count.filter(|&n| n <= MAX_ELEMENTS).unwrap_or(0) {
            let Some(at) = element.checked_mul(shape.element_bytes) else {
                return walk.found;
            };
            walk.structure(
                &structure,
                &fortran_index(&shape.dims, element),
                at,
                MAX_DEPTH,
            );
        }
    }
    walk.found
}

/// The Fortran index of the `element`th element in memory order, its first dimension fastest:
/// `(2)`, `(1,3)`.
fn fortran_index(dims: &[Extent], mut element: u64) -> String {
    let mut indexes = Vec::with_capacity(dims.len());
    for dim in dims {
        let count = dim.count.max(1);
        let offset = i64::try_from(element % count).unwrap_or(i64::MAX);
        indexes.push(dim.lower.saturating_add(offset).to_string());
        element /= count;
    }
    format!("({})", indexes.join(","))
}

struct Walk<'u, 'a> {
    dwarf: &'u gimli::Dwarf<Reader<'a>>,
    unit: &'u gimli::Unit<Reader<'a>>,
    lower_default: i64,
    column_major: bool,
    found: Vec<Component>,
}

impl<'a> Walk<'_, 'a> {
    /// Collects the described arrays of `structure`, which lies `base` bytes into the variable
    /// and is reached by `prefix` (empty for the variable's own type, `(2)` for an element).
    fn structure(
        &mut self,
        structure: &gimli::DebuggingInformationEntry<Reader<'a>>,
        prefix: &str,
        base: u64,
        depth: u32,
    ) {
        let Some(depth) = depth.checked_sub(1) else {
            return;
        };
        let Some(size) = structure
            .attr_value(gimli::DW_AT_byte_size)
            .and_then(|v| v.udata_value())
        else {
            return;
        };
        let mut members = self.members(structure);
        members.sort_by_key(|(offset, _, _)| *offset);
        for (i, (offset, name, member)) in members.iter().enumerate() {
            if self.found.len() == MAX_COMPONENTS {
                return;
            }
            let end = members.get(i + 1).map_or(size, |(next, _, _)| *next);
            let (Some(bytes), Some(at)) = (end.checked_sub(*offset), base.checked_add(*offset))
            else {
                continue;
            };
            let path = format!("{prefix}%{name}");
            match array_type(self.unit, member, self.lower_default, self.column_major) {
                Some(ArrayType::Described(descriptor)) if bytes > 0 => {
                    self.found.push(Component {
                        path,
                        offset: at,
                        bytes,
                        descriptor,
                        members: element_members(self.dwarf, self.unit, member),
                    });
                }
                Some(_) => {}
                None => {
                    if let Some(inner) = follow(self.unit, member, &[gimli::DW_TAG_structure_type])
                    {
                        // A type extending another holds its parent as a component named
                        // after the parent type (`vel%field_t%val`): its components are the
                        // extension's own in Fortran (`vel%val`).
                        let parent = inner
                            .attr_value(gimli::DW_AT_name)
                            .is_some_and(|v| name_of(self.dwarf, self.unit, v) == *name);
                        let path = if parent { prefix } else { &path };
                        self.structure(&inner, path, at, depth);
                    }
                }
            }
        }
    }

    /// The named data members of `structure` whose offsets are constants, with their offsets.
    fn members(
        &self,
        structure: &gimli::DebuggingInformationEntry<Reader<'a>>,
    ) -> Vec<(u64, String, gimli::DebuggingInformationEntry<Reader<'a>>)> {
        let mut out = Vec::new();
        let Ok(mut tree) = self.unit.entries_tree(Some(structure.offset())) else {
            return out;
        };
        let Ok(root) = tree.root() else {
            return out;
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let d = child.entry();
            if d.tag() != gimli::DW_TAG_member
                || d.attr_value(gimli::DW_AT_external).is_some()
                || d.attr_value(gimli::DW_AT_declaration).is_some()
            {
                continue;
            }
            let (Some(offset), Some(name)) = (member_offset(d), d.attr_value(gimli::DW_AT_name))
            else {
                continue;
            };
            let name = name_of(self.dwarf, self.unit, name);
            if !name.is_empty() && out.len() < MAX_COMPONENTS {
                out.push((offset, name, d.clone()));
            }
        }
        out
    }
}
