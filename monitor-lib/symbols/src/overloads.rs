//! C++ overloads told apart: two functions of one qualified name (`sum(const vector<double>&)`
//! and `sum(const vector<float>&)`) were two regions both called `sum`, which a request could
//! only name by an opaque key and a report not at all. Where a name has compiled functions
//! with different parameter lists, each is named with its list, as profilers show them; a
//! name with one list keeps its bare form, so nothing else is renamed.
//!
//! The list is written from DWARF, not demangled from the symbol (the runtime reads it at
//! start-up with no demangler): each parameter's type by its declared name with its
//! qualifiers, pointers and references (`const vector<double, std::allocator<double> >&`,
//! `double*`, `...`), the implicit `this` left out. It is for telling overloads apart and
//! reading, not for parsing back.

use std::collections::{HashMap, HashSet};

use gimli::AttributeValue;

use super::dwarf_types::Reader;
use super::element_members::name_of;

/// How deep a parameter's type is followed (pointers to pointers, qualifiers), and how many
/// parameters are written: malformed DWARF cannot make the reader loop or grow without end.
const MAX_TYPE_DEPTH: u32 = 8;
const MAX_PARAMETERS: usize = 32;

/// The parameter list of function `entry`, parenthesised: `(const vector<double>&, int)`;
/// `()` for none.
pub(super) fn parameter_list<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> String {
    let mut names = Vec::new();
    let mut const_method = false;
    if let Ok(mut tree) = unit.entries_tree(Some(entry.offset()))
        && let Ok(root) = tree.root()
    {
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let d = child.entry();
            match d.tag() {
                gimli::DW_TAG_formal_parameter => {
                    // A member function's implicit `this` (marked artificial on its
                    // declaration, named on an out-of-line definition): no parameter of the
                    // list, but a pointer to const makes the method `const`.
                    if is_this(dwarf, unit, d) {
                        const_method = parameter_type(dwarf, unit, d).starts_with("const ");
                        continue;
                    }
                    names.push(parameter_type(dwarf, unit, d));
                }
                gimli::DW_TAG_unspecified_parameters => names.push("...".to_owned()),
                _ => {}
            }
            if names.len() == MAX_PARAMETERS {
                names.push("...".to_owned());
                break;
            }
        }
    }
    let qualifier = if const_method { " const" } else { "" };
    format!("({}){qualifier}", names.join(", "))
}

/// Whether `parameter` is a member function's implicit `this`: marked artificial, on itself or
/// on the declaration it is a copy of, or named so.
fn is_this<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    parameter: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> bool {
    let mut holder = parameter.clone();
    for _ in 0..MAX_TYPE_DEPTH {
        if holder.attr_value(gimli::DW_AT_artificial).is_some()
            || holder
                .attr_value(gimli::DW_AT_name)
                .is_some_and(|v| name_of(dwarf, unit, v) == "this")
        {
            return true;
        }
        let Some(AttributeValue::UnitRef(origin)) = holder.attr_value(gimli::DW_AT_abstract_origin)
        else {
            return false;
        };
        let Ok(next) = unit.entry(origin) else {
            return false;
        };
        holder = next;
    }
    false
}

/// A parameter's type name; through its abstract origin when the parameter gives only that (an
/// out-of-line copy of an inlined function).
fn parameter_type<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    parameter: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> String {
    let mut holder = parameter.clone();
    for _ in 0..MAX_TYPE_DEPTH {
        if holder.attr_value(gimli::DW_AT_type).is_some() {
            return type_name(dwarf, unit, &holder, MAX_TYPE_DEPTH);
        }
        let Some(AttributeValue::UnitRef(origin)) = holder.attr_value(gimli::DW_AT_abstract_origin)
        else {
            break;
        };
        let Ok(next) = unit.entry(origin) else {
            break;
        };
        holder = next;
    }
    "?".to_owned()
}

/// The name of the type `entry`'s `DW_AT_type` refers to.
fn type_name<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    depth: u32,
) -> String {
    let Some(AttributeValue::UnitRef(offset)) = entry.attr_value(gimli::DW_AT_type) else {
        // A pointer or reference to nothing named: `void`.
        return "void".to_owned();
    };
    let Some(depth) = depth.checked_sub(1) else {
        return "?".to_owned();
    };
    let Ok(ty) = unit.entry(offset) else {
        return "?".to_owned();
    };
    let inner = || type_name(dwarf, unit, &ty, depth);
    match ty.tag() {
        gimli::DW_TAG_pointer_type => format!("{}*", inner()),
        gimli::DW_TAG_reference_type => format!("{}&", inner()),
        gimli::DW_TAG_rvalue_reference_type => format!("{}&&", inner()),
        gimli::DW_TAG_const_type => qualified("const", inner()),
        gimli::DW_TAG_volatile_type => qualified("volatile", inner()),
        gimli::DW_TAG_restrict_type => inner(),
        gimli::DW_TAG_array_type => format!("{}[]", inner()),
        gimli::DW_TAG_subroutine_type => "function".to_owned(),
        _ => ty
            .attr_value(gimli::DW_AT_name)
            .map(|v| name_of(dwarf, unit, v))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "?".to_owned()),
    }
}

/// A qualifier before a named type (`const int`), after a pointer (`int* const`).
fn qualified(qualifier: &str, inner: String) -> String {
    if inner.ends_with(['*', '&']) {
        format!("{inner} {qualifier}")
    } else {
        format!("{qualifier} {inner}")
    }
}

/// The functions to name with their parameter lists, `(index, new name)`: those whose name
/// (`names[index]`) other functions share with another list. `lists` gives `(index, parameter
/// list)` for every C++ function.
pub(super) fn overload_names(names: &[&str], lists: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut by_name: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (i, list) in lists {
        if let Some(name) = names.get(*i) {
            by_name.entry(name).or_default().insert(list);
        }
    }
    let overloaded: HashSet<&str> = by_name
        .into_iter()
        .filter(|(_, lists)| lists.len() > 1)
        .map(|(name, _)| name)
        .collect();
    lists
        .iter()
        .filter_map(|(i, list)| {
            let name = names.get(*i)?;
            overloaded
                .contains(name)
                .then(|| (*i, format!("{name}{list}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_with_two_lists_take_them() {
        // A hot and a cold part of one function (`scale`) have one list.
        let names = ["sum", "sum", "scale", "scale", "main"];
        let lists = [
            (0, "(const double*)".to_owned()),
            (1, "(const float*)".to_owned()),
            (2, "(double)".to_owned()),
            (3, "(double)".to_owned()),
        ];
        assert_eq!(
            overload_names(&names, &lists),
            [
                (0, "sum(const double*)".to_owned()),
                (1, "sum(const float*)".to_owned())
            ]
        );
        assert_eq!(qualified("const", "int*".to_owned()), "int* const");
        assert_eq!(qualified("const", "int".to_owned()), "const int");
    }
}
