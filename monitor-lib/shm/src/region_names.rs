//! How a region name a user types finds the regions of the region table (and a data structure
//! name the data structures, by the same rules).
//!
//! Regions are named as profilers show them: C++ functions with their namespaces and classes
//! (`alpha::A::init`), Fortran module procedures with their module (`mesh::init`), the rest by
//! their own names. People also type the short name (`init`), the symbol a profiler or
//! `nm` printed (`__mesh_MOD_init`, gfortran's external `smooth_`), or Fortran in capitals
//! (`SWEEP`). A name matches a region *exactly* (the same text) or as an *alias* (one of those
//! forms); whoever looks a name up takes the exact matches when there are any and the aliases
//! otherwise, so a short name finds its one region and is ambiguous when several share it.

/// How `asked` names the region called `region`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameMatch {
    /// The same text.
    Exact,
    /// A short, symbol or differently cased form of it.
    Alias,
}

/// How `asked` names the region `region`, if it does.
pub fn name_match(region: &str, asked: &str) -> Option<NameMatch> {
    if region == asked {
        return Some(NameMatch::Exact);
    }
    if asked.is_empty() {
        return None;
    }
    let symbol = fortran_symbol(asked);
    let asked = symbol.as_deref().unwrap_or(asked).to_ascii_lowercase();
    let region = region.to_ascii_lowercase();
    let short = |asked: &str| {
        region == asked
            || region
                .strip_suffix(asked)
                .is_some_and(|scope| scope.ends_with("::"))
    };
    // gfortran's external procedures (`smooth_`) are their source names (`smooth`).
    let alias = short(&asked)
        || asked
            .strip_suffix('_')
            .is_some_and(|bare| !bare.is_empty() && short(bare));
    alias.then_some(NameMatch::Alias)
}

/// The regions of `names` that `asked` finds, by index: every exact match, or if there are
/// none every alias.
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
        assert!(find(regions, "weep").is_empty());
        assert!(find(regions, "").is_empty());
        assert!(find(regions, "_").is_empty());
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
