//! How a region name a user types finds the regions of the region table (and a data structure
//! name the data structures, by the same rules).
//!
//! Regions are named as profilers show them: C++ functions with their namespaces and classes
//! (`alpha::A::init`), Fortran module procedures with their module (`mesh::init`), the rest by
//! their own names. People also type the short name (`init`), the symbol a profiler or
//! `nm` printed (`__mesh_MOD_init`, gfortran's external `smooth_`), Fortran in capitals
//! (`SWEEP`), a C++ overload's name without its parameter list (`sum` for `sum(const float*)`),
//! one of the names of a region several functions are (`tsum<float>` for
//! `tsum<double> | tsum<float>`), a component's tail (`grid%u` for `state::rho%grid%u`) or an
//! array without its allocation line (`t` for `t@heat.f90:6`). A name matches a region exactly
//! (the same text), as an alias (a short or symbol form) or in another case ([`NameMatch`],
//! best first); whoever looks a name up takes only the best matches there are ([`find`]), so
//! `foo` never finds `Foo` beside a `foo`, a short name finds its one region, and it is
//! ambiguous when several share it.

/// How `asked` names the region called `region`, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameMatch {
    /// The same text.
    Exact,
    /// A short or symbol form of it (`init`, `__mesh_MOD_init`, `smooth_`).
    Alias,
    /// The same or such a form in another letter case (`SWEEP`).
    OtherCase,
}

/// Between the names of a region that several functions are (declared on one line: a
/// template's instances, `tsum<double> | tsum<float>`); each of them finds it.
pub const ALTERNATIVES: &str = " | ";

/// How `asked` names the region `region`, if it does.
pub fn name_match(region: &str, asked: &str) -> Option<NameMatch> {
    if region == asked {
        return Some(NameMatch::Exact);
    }
    if region.contains(ALTERNATIVES) {
        return region
            .split(ALTERNATIVES)
            .filter_map(|name| name_match(name, asked))
            .min();
    }
    if asked.is_empty() {
        return None;
    }
    let symbol = fortran_symbol(asked);
    let asked = symbol.as_deref().unwrap_or(asked);
    // An overload's name carries its parameter list (`sum(const double*)`), one of several
    // arrays of a statement its line (`t@heat.f90:6`); a name asked without them matches the
    // name alone.
    let bare = without_parameters(region).or_else(|| without_site(region));
    let matches = |same| {
        is_form_of(region, asked, same) || bare.is_some_and(|bare| is_form_of(bare, asked, same))
    };
    if matches(<[u8]>::eq)
        || same_overload(region, asked)
        || with_parameters(region, asked)
        || fortran_outlined(region, asked)
    {
        return Some(NameMatch::Alias);
    }
    matches(<[u8]>::eq_ignore_ascii_case).then_some(NameMatch::OtherCase)
}

/// Whether `asked` is overload `region` with its parameter list spelt as a demangler does
/// (`sum(double const*, int)`, `f(std::vector<double, std::allocator<double> > const&)`) where
/// the region's comes from DWARF (`sum(const double*, int)`, `f(const vector<double, ...>&)`):
/// the same names, and parameters the same once a leading `const` is moved behind its type, and
/// `std::` and spaces are dropped. Allocates only for a region of the asked name.
fn same_overload(region: &str, asked: &str) -> bool {
    let (Some(region_name), Some(asked_name)) =
        (without_parameters(region), without_parameters(asked))
    else {
        return false;
    };
    if !is_form_of(region_name, asked_name, <[u8]>::eq) {
        return false;
    }
    let parameters = |name: &str, bare: &str| -> Vec<String> {
        let list = &name[bare.len() + 1..name.len() - 1];
        split_top_level(list).map(canonical_parameter).collect()
    };
    parameters(region, region_name) == parameters(asked, asked_name)
}

/// Whether `asked` is a region that is no overload (so named without a parameter list) asked
/// as a profiler prints it, with its list and qualifier: `num::jacobi(std::vector<double,
/// std::allocator<double> > const&, int)`, `main::{lambda(int)#1}::operator()(int) const`.
fn with_parameters(region: &str, asked: &str) -> bool {
    if without_parameters(region).is_some() {
        return false;
    }
    let asked = asked.strip_suffix(" const").unwrap_or(asked);
    without_parameters(asked).is_some_and(|bare| is_form_of(region, bare, <[u8]>::eq))
}

/// Whether `asked` names gfortran's OpenMP body `region` after its procedure: an external
/// procedure's `packed_._omp_fn.0` as `packed._omp_fn.0`, a contained one's
/// `relax.0._omp_fn.0` as `relax._omp_fn.0`.
fn fortran_outlined(region: &str, asked: &str) -> bool {
    const OUTLINED: &str = "._omp_fn.";
    let (Some((procedure, body)), Some((asked_procedure, asked_body))) =
        (region.split_once(OUTLINED), asked.split_once(OUTLINED))
    else {
        return false;
    };
    body == asked_body
        && gfortran_procedure(procedure)
            .is_some_and(|p| is_form_of(p, asked_procedure, <[u8]>::eq_ignore_ascii_case))
}

/// The procedure a gfortran symbol that names an OpenMP body's parent stands for, when it is
/// not the procedure's own name: an external procedure's linkage name (`packed_` for `packed`),
/// a contained one's local symbol (`relax.0` for `relax`).
pub fn gfortran_procedure(symbol: &str) -> Option<&str> {
    symbol.strip_suffix('_').or_else(|| {
        symbol
            .rsplit_once('.')
            .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|(name, _)| name)
    })
}

/// The parameters of a list, split at commas outside brackets.
fn split_top_level(list: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut cuts = Vec::new();
    for (i, b) in list.bytes().enumerate() {
        match b {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' => depth -= 1,
            b',' if depth == 0 => {
                cuts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    cuts.push(&list[start..]);
    cuts.into_iter().filter(|p| !p.trim().is_empty())
}

/// A parameter's type in one spelling: `const T*` as `T const*`, no `std::`, no spaces.
fn canonical_parameter(parameter: &str) -> String {
    let parameter = parameter.trim();
    let moved;
    let parameter = match parameter.strip_prefix("const ") {
        Some(rest) => {
            let cut = rest.rfind(|c: char| c != '*' && c != '&' && !c.is_whitespace());
            let cut = cut.map_or(0, |i| i + 1);
            moved = format!("{} const{}", &rest[..cut], &rest[cut..]);
            &moved
        }
        None => parameter,
    };
    parameter
        .replace("std::", "")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// An array's name before the allocation line it is named with (`t` of `t@heat.f90:6`).
fn without_site(name: &str) -> Option<&str> {
    let (array, site) = name.split_once('@')?;
    let (_, line) = site.rsplit_once(':')?;
    (!array.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()))
        .then_some(array)
}

/// A name ending in a parenthesised parameter list, without it: `sum` of
/// `sum(const vector<double>&)`, `operator()` of `operator()(int)`.
fn without_parameters(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    if bytes.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate().rev() {
        match b {
            b')' => depth += 1,
            b'(' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    // `operator()` with no list after it is a name, not a list.
                    return (i > 0 && !name[..i].ends_with("operator")).then(|| &name[..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `asked` is `region`, its innermost part(s) after a `::` (or, for a derived-type
/// component, a `%`: `grid%u` of `state::rho%grid%u`), or one of those with
/// gfortran's trailing underscore (`smooth_` for `smooth`), comparing text by `same`. On bytes,
/// with no copy: a trace's region check runs at region entries.
fn is_form_of(region: &str, asked: &str, same: fn(&[u8], &[u8]) -> bool) -> bool {
    let (region, asked) = (region.as_bytes(), asked.as_bytes());
    let short = |asked: &[u8]| {
        let Some(cut) = region.len().checked_sub(asked.len()) else {
            return false;
        };
        same(&region[cut..], asked)
            && (cut == 0 || region[..cut].ends_with(b"::") || region[..cut].ends_with(b"%"))
    };
    short(asked)
        || asked
            .strip_suffix(b"_")
            .is_some_and(|bare| !bare.is_empty() && short(bare))
}

/// The regions of `names` that `asked` finds, by index: those it matches best ([`NameMatch`]),
/// the exact ones when there are any.
pub fn find<'a>(names: impl IntoIterator<Item = &'a str>, asked: &str) -> Vec<usize> {
    let mut best: Option<NameMatch> = None;
    let mut found = Vec::new();
    for (i, name) in names.into_iter().enumerate() {
        let Some(m) = name_match(name, asked) else {
            continue;
        };
        if best.is_none_or(|b| m < b) {
            best = Some(m);
            found.clear();
        }
        if best == Some(m) {
            found.push(i);
        }
    }
    found
}

/// A gfortran module procedure's symbol (`__mesh_MOD_init`, or an OpenMP body outlined from it,
/// `__mesh_MOD_init._omp_fn.0`) as its region is named (`mesh::init`, `mesh::init._omp_fn.0`).
pub fn fortran_symbol(symbol: &str) -> Option<String> {
    let (module, procedure) = symbol.strip_prefix("__")?.split_once("_MOD_")?;
    (!module.is_empty() && !procedure.is_empty()).then(|| format!("{module}::{procedure}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_come_before_aliases() {
        let regions = ["mesh::init", "grid::init", "init", "sweep", "alpha::A::run"];
        assert_eq!(find(regions, "init"), [2]);
        assert_eq!(find(regions[..2].iter().copied(), "init"), [0, 1]);
        assert_eq!(find(regions, "mesh::init"), [0]);
        assert_eq!(find(regions, "__grid_MOD_init"), [1]);
        assert_eq!(find(regions, "run"), [4]);
        assert_eq!(find(regions, "A::run"), [4]);
        assert_eq!(find(regions, "SWEEP"), [3]);
        assert_eq!(find(regions, "sweep_"), [3]);
        // A short form in the same case comes before another case.
        assert_eq!(find(["gamma::Run", "run"], "Run"), [0]);
        assert_eq!(find(["Foo", "foo"], "foo"), [1]);
        assert_eq!(find(["Foo", "foo"], "FOO"), [0, 1]);
        assert_eq!(find(["mesh::init", "init"], "init"), [1]);
        assert_eq!(find(["Mesh::Init"], "init"), [0]);
        assert!(find(["xinit"], "init").is_empty());
        assert!(find(["x:init"], "init").is_empty());
        assert!(find(regions, "weep").is_empty());
        assert!(find(regions, "").is_empty());
        assert!(find(regions, "_").is_empty());
    }

    #[test]
    fn an_overload_is_found_by_its_name_or_with_its_parameters() {
        let regions = [
            "sum(const vector<double, std::allocator<double> >&)",
            "sum(const float*)",
            "ns::S::operator()(int)",
            "main",
        ];
        assert_eq!(find(regions, "sum"), [0, 1]);
        assert_eq!(find(regions, "sum(const float*)"), [1]);
        assert_eq!(find(regions, "SUM(const float*)"), [1]);
        assert_eq!(find(regions, "operator()"), [2]);
        assert_eq!(find(regions, "S::operator()(int)"), [2]);
        assert!(find(regions, "sum(double)").is_empty());
        // As a demangler (Cachegrind, `epcache annotate`) spells them.
        assert_eq!(find(regions, "sum(float const*)"), [1]);
        assert_eq!(
            find(
                regions,
                "sum(std::vector<double, std::allocator<double> > const&)"
            ),
            [0]
        );
        assert!(find(regions, "sum(float const&)").is_empty());
        assert!(find(regions, "max(float const*)").is_empty());
        // A function that is no overload, asked as a profiler prints it.
        let regions = [
            "num::jacobi",
            "main::{lambda(int)#1}::operator()",
            "operator",
        ];
        assert_eq!(
            find(
                regions,
                "num::jacobi(std::vector<double, std::allocator<double> > const&, int)"
            ),
            [0]
        );
        assert_eq!(
            find(regions, "main::{lambda(int)#1}::operator()(int) const"),
            [1]
        );
        assert_eq!(find(regions, "{lambda(int)#1}::operator()"), [1]);
        assert_eq!(find(regions, "operator()"), [1]);
        assert_eq!(without_parameters("f((int))"), Some("f"));
        assert_eq!(without_parameters("(int)"), None);
        assert_eq!(without_parameters("f)"), None);
        assert_eq!(without_parameters("main"), None);
    }

    #[test]
    fn a_fortran_openmp_body_is_found_after_its_procedure() {
        let regions = [
            "packed_._omp_fn.0",
            "relax.0._omp_fn.1",
            "relax.0._omp_fn.0",
        ];
        assert_eq!(find(regions, "packed._omp_fn.0"), [0]);
        assert_eq!(find(regions, "relax._omp_fn.1"), [1]);
        assert_eq!(find(regions, "RELAX._omp_fn.0"), [2]);
        assert!(find(regions, "relax._omp_fn.2").is_empty());
        assert!(find(regions, "pack._omp_fn.0").is_empty());
    }

    #[test]
    fn an_array_of_a_statement_is_found_by_its_own_name() {
        let names = ["t@heat.f90:6", "tnew@heat.f90:6", "heat.f90:9", "fields::t"];
        assert_eq!(find(names, "tnew"), [1]);
        assert_eq!(find(names, "t@heat.f90:6"), [0]);
        // An exact name comes first; two arrays answering are both found.
        assert_eq!(find(names, "t"), [0, 3]);
        assert!(find(names, "heat.f90").is_empty());
        assert_eq!(without_site("a@b.c:x"), None);
        assert_eq!(without_site("@b.c:5"), None);
    }

    #[test]
    fn a_component_is_found_by_its_innermost_path() {
        let names = [
            "state::rho%grid%u",
            "state::vel%extra",
            "fields::u",
            "state::rho",
        ];
        assert_eq!(find(names, "grid%u"), [0]);
        assert_eq!(find(names, "rho%grid%u"), [0]);
        assert_eq!(find(names, "extra"), [1]);
        // A short name two structures end in is both's.
        assert_eq!(find(names, "u"), [0, 2]);
        assert_eq!(find(names, "rho"), [3]);
        assert!(find(names, "id%u").is_empty());
    }

    #[test]
    fn a_region_of_several_functions_is_found_by_each() {
        let regions = ["tsum<double> | tsum<float>", "tsum<int>", "main"];
        assert_eq!(find(regions, "tsum<float>"), [0]);
        assert_eq!(find(regions, "tsum<double> | tsum<float>"), [0]);
        assert_eq!(find(regions, "tsum<int>"), [1]);
        assert!(find(regions, "tsum").is_empty());
        assert_eq!(find(regions, "TSUM<FLOAT>"), [0]);
    }

    #[test]
    fn gfortran_symbols_read_as_module_names() {
        assert_eq!(fortran_symbol("__mesh_MOD_init").unwrap(), "mesh::init");
        assert_eq!(
            fortran_symbol("__fields_MOD_sweep._omp_fn.0").unwrap(),
            "fields::sweep._omp_fn.0"
        );
        assert_eq!(fortran_symbol("__MOD_x"), None);
        assert_eq!(fortran_symbol("mesh_MOD_init"), None);
        assert_eq!(fortran_symbol("__m_MOD_"), None);
    }
}
