//! The members of an array's element when the element is a structure (a C struct, a C++ class, a
//! Fortran derived type), read from DWARF: each member's name, byte offset within the element and
//! size, in offset order. What a by-field request buckets by.

use gimli::AttributeValue;

use super::dwarf_types::{Reader, type_size};

/// One member of a structure element.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// The member's name as declared (`x`); a C++ base class by its type's name (an empty base
    /// is left out: it takes no bytes).
    pub name: String,
    /// Bytes from the element's first byte to the member's.
    pub offset: u64,
    /// Bytes of the member (a bit-field: the bytes its storage unit spans; a Fortran ALLOCATABLE
    /// or POINTER component: its descriptor's, up to the next member).
    pub bytes: u64,
}

/// A structure type found by name ([`crate::DebugInfo::structure_types`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StructureType {
    /// The name it was found by (the structure's, or a typedef's of it).
    pub name: String,
    /// Bytes of one element (`sizeof`, padding included).
    pub bytes: u64,
    /// Its members in offset order.
    pub members: Vec<Member>,
}

/// Most members read from one structure: malformed DWARF cannot make the reader allocate much,
/// and a by-field histogram has one bucket per member.
pub const MAX_MEMBERS: usize = 1024;

/// The members of the element of the array that variable `entry` has as its type (through
/// typedefs and qualifiers on both sides), in offset order; empty when the variable is no array
/// of structures, or a member's place is not a constant (a C++ virtual base). Members that
/// overlap an earlier one (a union's, or a bit-field sharing a unit) are kept: the histogram
/// gives each byte to the first member holding it.
pub(super) fn element_members<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> Vec<Member> {
    let Some(array) = follow(unit, entry, &[gimli::DW_TAG_array_type]) else {
        return Vec::new();
    };
    let Some(element) = follow(
        unit,
        &array,
        &[gimli::DW_TAG_structure_type, gimli::DW_TAG_class_type],
    ) else {
        return Vec::new();
    };
    members(dwarf, unit, &element, 4).unwrap_or_default()
}

/// The structure types of `unit` called `name`: structures and classes of that name, and
/// structures a typedef of that name stands for; declarations without a body and types whose
/// members cannot be placed are left out.
pub(super) fn structures_named<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    name: &str,
) -> gimli::Result<Vec<StructureType>> {
    let mut found = Vec::new();
    let mut entries = unit.entries();
    while let Some(entry) = entries.next_dfs()? {
        let tag = entry.tag();
        if !matches!(
            tag,
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_typedef
        ) {
            continue;
        }
        let Some(value) = entry.attr_value(gimli::DW_AT_name) else {
            continue;
        };
        if name_of(dwarf, unit, value) != name {
            continue;
        }
        let structure = if tag == gimli::DW_TAG_typedef {
            follow(
                unit,
                entry,
                &[gimli::DW_TAG_structure_type, gimli::DW_TAG_class_type],
            )
        } else {
            Some(entry.clone())
        };
        let Some(structure) = structure else { continue };
        if structure.attr_value(gimli::DW_AT_declaration).is_some() {
            continue;
        }
        let Some(AttributeValue::Udata(bytes)) = structure.attr_value(gimli::DW_AT_byte_size)
        else {
            continue;
        };
        if let Some(members) = members(dwarf, unit, &structure, 4).filter(|m| !m.is_empty()) {
            found.push(StructureType {
                name: name.to_owned(),
                bytes,
                members,
            });
        }
    }
    Ok(found)
}

/// The structure the array variable `entry` holds (through typedefs and qualifiers): after at
/// least one pointer, reference or array (`struct particle *`, a Fortran ALLOCATABLE's array
/// type, `particle (*)[n]`), or as the element of a C++ container of one (`vector`,
/// `unique_ptr<T[]>`, `array`, `valarray`, `shared_ptr<T[]>`, by their template parameter).
/// `None` for a structure held directly (a single record is no array) and anything else.
pub(super) fn held_structure<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> Option<StructureType> {
    const STEPS: &[gimli::DwTag] = &[
        gimli::DW_TAG_structure_type,
        gimli::DW_TAG_class_type,
        gimli::DW_TAG_array_type,
        gimli::DW_TAG_pointer_type,
        gimli::DW_TAG_reference_type,
        gimli::DW_TAG_rvalue_reference_type,
    ];
    let mut at = entry.clone();
    let mut through_array = false;
    for _ in 0..6 {
        let ty = follow(unit, &at, STEPS)?;
        if !matches!(
            ty.tag(),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type
        ) {
            through_array = true;
            at = ty;
            continue;
        }
        let name = ty
            .attr_value(gimli::DW_AT_name)
            .map(|v| name_of(dwarf, unit, v))
            .unwrap_or_default();
        // A container's element (through a reference or pointer to the container too), never
        // the container's own members.
        if let Some(element) = container_element(unit, &ty, &name) {
            at = element;
            through_array = true;
            continue;
        }
        if !through_array {
            return None;
        }
        if ty.attr_value(gimli::DW_AT_declaration).is_some() {
            return None;
        }
        let Some(AttributeValue::Udata(bytes)) = ty.attr_value(gimli::DW_AT_byte_size) else {
            return None;
        };
        let members = members(dwarf, unit, &ty, 4).filter(|m| !m.is_empty())?;
        return Some(StructureType {
            name,
            bytes,
            members,
        });
    }
    None
}

/// The element size of the array variable `entry` holds: a structure's as [`held_structure`]
/// finds it, or a base type's after at least one pointer, reference or array (`double *`, a
/// Fortran ALLOCATABLE of `real(8)`). `None` for a scalar held directly and anything else.
pub(super) fn held_element_bytes<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> Option<u64> {
    if let Some(structure) = held_structure(dwarf, unit, entry) {
        return Some(structure.bytes);
    }
    const STEPS: &[gimli::DwTag] = &[
        gimli::DW_TAG_base_type,
        gimli::DW_TAG_array_type,
        gimli::DW_TAG_pointer_type,
        gimli::DW_TAG_reference_type,
        gimli::DW_TAG_rvalue_reference_type,
    ];
    let mut at = entry.clone();
    let mut through_array = false;
    for _ in 0..6 {
        let ty = follow(unit, &at, STEPS)?;
        if ty.tag() == gimli::DW_TAG_base_type {
            let Some(AttributeValue::Udata(bytes)) = ty.attr_value(gimli::DW_AT_byte_size) else {
                return None;
            };
            return (through_array && bytes > 0).then_some(bytes);
        }
        through_array = true;
        at = ty;
    }
    None
}

/// C++ class templates whose objects hold an array, by the start of their DWARF names.
const CONTAINERS: &[&str] = &[
    "vector<",
    "array<",
    "valarray<",
    "unique_ptr<",
    "shared_ptr<",
];

/// The name of variable `entry`'s type when it is a C++ container keeping its elements on the
/// heap (a `std::array` keeps them in itself and is no such container).
pub(super) fn heap_container<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> Option<String> {
    let class = follow(
        unit,
        entry,
        &[gimli::DW_TAG_structure_type, gimli::DW_TAG_class_type],
    )?;
    let name = name_of(dwarf, unit, class.attr_value(gimli::DW_AT_name)?);
    (CONTAINERS.iter().any(|c| name.starts_with(c)) && !name.starts_with("array<")).then_some(name)
}

/// The template type parameter of a C++ array container type called `name`, whose
/// `DW_AT_type` is the element (or, for `unique_ptr<T[]>`, an array of it).
fn container_element<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    container: &gimli::DebuggingInformationEntry<Reader<'a>>,
    name: &str,
) -> Option<gimli::DebuggingInformationEntry<Reader<'a>>> {
    if !CONTAINERS.iter().any(|c| name.starts_with(c)) {
        return None;
    }
    let mut tree = unit.entries_tree(Some(container.offset())).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        if child.entry().tag() == gimli::DW_TAG_template_type_parameter {
            return Some(child.entry().clone());
        }
    }
    None
}

/// The first type down `entry`'s `DW_AT_type` chain whose tag is one of `tags`, through typedefs
/// and qualifiers a few deep (a cycle in malformed DWARF ends).
pub(super) fn follow<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    tags: &[gimli::DwTag],
) -> Option<gimli::DebuggingInformationEntry<Reader<'a>>> {
    let mut ty = entry.clone();
    for _ in 0..8 {
        let AttributeValue::UnitRef(offset) = ty.attr_value(gimli::DW_AT_type)? else {
            return None;
        };
        ty = unit.entry(offset).ok()?;
        match ty.tag() {
            tag if tags.contains(&tag) => return Some(ty),
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type => {}
            _ => return None,
        }
    }
    None
}

fn members<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    structure: &gimli::DebuggingInformationEntry<Reader<'a>>,
    depth: u32,
) -> Option<Vec<Member>> {
    let depth = depth.checked_sub(1)?;
    let mut tree = unit.entries_tree(Some(structure.offset())).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    let mut out = Vec::new();
    while let Ok(Some(child)) = children.next() {
        let d = child.entry();
        let inherited = d.tag() == gimli::DW_TAG_inheritance;
        if d.tag() != gimli::DW_TAG_member && !inherited {
            continue;
        }
        // A C++ static data member (DWARF 4 marks it external, a declaration): no bytes here.
        if d.attr_value(gimli::DW_AT_external).is_some()
            || d.attr_value(gimli::DW_AT_declaration).is_some()
        {
            continue;
        }
        let base = inherited
            .then(|| {
                follow(
                    unit,
                    d,
                    &[gimli::DW_TAG_structure_type, gimli::DW_TAG_class_type],
                )
            })
            .flatten();
        // An empty base class takes no bytes of the element (DWARF still sizes it 1).
        if let Some(base) = &base
            && members(dwarf, unit, base, depth).is_some_and(|m| m.is_empty())
        {
            continue;
        }
        let bytes = type_size(unit, d, 0, 8).unwrap_or(0);
        let offset = member_offset(d)?;
        let name = match d.attr_value(gimli::DW_AT_name) {
            Some(value) => name_of(dwarf, unit, value),
            None => base
                .as_ref()
                .and_then(|base| base.attr_value(gimli::DW_AT_name))
                .map(|value| name_of(dwarf, unit, value))
                .unwrap_or_default(),
        };
        if out.len() == MAX_MEMBERS {
            return None;
        }
        out.push(Member {
            name,
            offset,
            bytes,
        });
    }
    out.sort_by_key(|m| m.offset);
    // A member DWARF gives no size (a Fortran ALLOCATABLE or POINTER component, whose
    // descriptor lies in the element): the bytes up to the next member, or to the element's
    // end. One that still takes none (C's flexible array member) is left out.
    let element = match structure.attr_value(gimli::DW_AT_byte_size) {
        Some(AttributeValue::Udata(bytes)) => Some(bytes),
        _ => None,
    };
    for i in 0..out.len() {
        if out[i].bytes == 0 {
            let at = out[i].offset;
            let end = out[i + 1..]
                .iter()
                .map(|m| m.offset)
                .find(|&o| o > at)
                .or(element);
            out[i].bytes = end.map_or(0, |end| end.saturating_sub(at));
        }
    }
    out.retain(|m| m.bytes > 0);
    Some(out)
}

/// Bytes from a structure's first byte to member `d`'s; None when its place is an expression
/// (a C++ virtual base's, found at run time).
pub(super) fn member_offset(d: &gimli::DebuggingInformationEntry<Reader<'_>>) -> Option<u64> {
    Some(match d.attr_value(gimli::DW_AT_data_member_location) {
        Some(AttributeValue::Udata(v)) => v,
        Some(AttributeValue::Data1(v)) => u64::from(v),
        Some(AttributeValue::Data2(v)) => u64::from(v),
        Some(AttributeValue::Data4(v)) => u64::from(v),
        Some(AttributeValue::Data8(v)) => v,
        Some(AttributeValue::Sdata(v)) => u64::try_from(v).ok()?,
        Some(_) => return None,
        // A bit-field in DWARF 4+ gives its place in bits; else a union member, at 0.
        None => match d.attr_value(gimli::DW_AT_data_bit_offset) {
            Some(AttributeValue::Udata(bits)) => bits / 8,
            Some(_) => return None,
            None => 0,
        },
    })
}

pub(super) fn name_of<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    value: AttributeValue<Reader<'a>>,
) -> String {
    dwarf
        .attr_string(unit, value)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
