//! The ALLOCATABLE and POINTER array components of a Fortran derived-type variable (`val` of
//! `type(field_t) :: rho`), each read as a variable of its own, `rho%val`.
//!
//! What the program uses is the data each component's descriptor points to, and the runtime
//! follows descriptors only of variables it knows: without this, every component's block was its
//! allocation line's, and one line allocating two components (`allocate(rho%val(n), vel%val(n))`)
//! made two arrays one structure. A component's descriptor lies inside its variable at the
//! member's offset, and its extent runs to the next member (or the structure's end); nested
//! derived types are followed a few levels deep (`s%grid%val`). The variable itself keeps its own
//! bytes, the descriptors, which the program reads on its way to the data.

use super::array_type::{ArrayDescriptor, ArrayType, array_type};
use super::dwarf_types::Reader;
use super::element_members::{follow, member_offset, name_of};

/// Most components read from one variable (malformed DWARF cannot make the reader allocate
/// much), and how many derived types deep they are looked for.
const MAX_COMPONENTS: usize = 256;
const MAX_DEPTH: u32 = 4;

/// One described array inside a structure variable.
#[derive(Debug)]
pub(super) struct Component {
    /// The path from the variable, components joined by `%`: `val`, `grid%val`.
    pub path: String,
    /// Bytes from the variable's first byte to the component's descriptor.
    pub offset: u64,
    /// Bytes of the descriptor: up to the next member, or to the end of its structure.
    pub bytes: u64,
    pub descriptor: ArrayDescriptor,
}

/// The described array components of variable `entry` when its type is a structure (through
/// typedefs and qualifiers), in offset order; empty otherwise. `lower_default` and
/// `column_major` are the language's, as for the variables themselves.
pub(super) fn described_components<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    lower_default: i64,
    column_major: bool,
) -> Vec<Component> {
    let Some(structure) = follow(unit, entry, &[gimli::DW_TAG_structure_type]) else {
        return Vec::new();
    };
    let mut walk = Walk {
        dwarf,
        unit,
        lower_default,
        column_major,
        found: Vec::new(),
    };
    walk.structure(&structure, "", 0, MAX_DEPTH);
    walk.found
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
    /// and is reached by `prefix` (empty for the variable's own type).
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
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}%{name}")
            };
            match array_type(self.unit, member, self.lower_default, self.column_major) {
                Some(ArrayType::Described(descriptor)) if bytes > 0 => {
                    self.found.push(Component {
                        path,
                        offset: at,
                        bytes,
                        descriptor,
                    });
                }
                Some(_) => {}
                None => {
                    if let Some(inner) = follow(self.unit, member, &[gimli::DW_TAG_structure_type])
                    {
                        self.structure(&inner, &path, at, depth);
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
