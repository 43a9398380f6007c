//! C++ function names as people read them: a report names each function by its linkage name
//! (`_Z6kernelRSt6vectorIdSaIdEE`), which binutils' `c++filt` turns into
//! `kernel(std::vector<double, std::allocator<double> >&)`.
//!
//! Why `c++filt` and not a crate: it is installed wherever gcc is (binutils), it follows the
//! compiler's own mangling, and names are demangled once per report, all in one call, so the
//! process costs nothing worth a dependency. Without it the names stay as the report has them.

use std::collections::{BTreeSet, HashMap};
use std::io::Write as _;
use std::process::{Command, Stdio};

/// Whether `name` is an Itanium C++ ABI mangled name.
fn mangled(name: &str) -> bool {
    name.starts_with("_Z")
}

/// The demangled form of every mangled name in `names`, by one run of `c++filt`; names it
/// could not demangle, and all of them when `c++filt` cannot be run, are left out.
pub(crate) fn demangled<'a>(names: impl IntoIterator<Item = &'a str>) -> HashMap<String, String> {
    let wanted: BTreeSet<&str> = names.into_iter().filter(|n| mangled(n)).collect();
    if wanted.is_empty() {
        return HashMap::new();
    }
    let Ok(mut child) = Command::new("c++filt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return HashMap::new();
    };
    let input: String = wanted.iter().map(|n| format!("{n}\n")).collect();
    let wrote = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(input.as_bytes()).is_ok());
    let Ok(out) = child.wait_with_output() else {
        return HashMap::new();
    };
    if !wrote || !out.status.success() {
        return HashMap::new();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != wanted.len() {
        return HashMap::new();
    }
    wanted
        .into_iter()
        .zip(lines)
        .filter(|(name, readable)| name != readable)
        .map(|(name, readable)| (name.to_owned(), readable.to_owned()))
        .collect()
}

/// A region name as typed: a mangled symbol (`_ZN3num6jacobiERKSt6vectorIdSaIdEERS2_i`, as `nm`
/// or `perf` print it) as `c++filt` reads it, without its `[clone .constprop.0]` notes (the
/// daemon finds a function by that spelling); any other name, or when `c++filt` cannot read
/// it, as it is.
pub(crate) fn region_name(text: &str) -> String {
    let Some(readable) = demangled([text]).remove(text) else {
        return text.to_owned();
    };
    let mut readable = readable.as_str();
    while let Some(at) = readable.rfind(" [clone ") {
        readable = &readable[..at];
    }
    readable.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_names_are_demangled_and_others_left_alone() {
        if !epcache_test_support::tools::available("c++filt", "demangle") {
            return;
        }
        let names = demangled(["_Z6kernelv", "main", "_ZN2ns4Grid5relaxEi", "_Znotaname"]);
        assert_eq!(
            names.get("_Z6kernelv").map(String::as_str),
            Some("kernel()")
        );
        assert_eq!(
            names.get("_ZN2ns4Grid5relaxEi").map(String::as_str),
            Some("ns::Grid::relax(int)")
        );
        assert!(!names.contains_key("main"));
        assert!(!names.contains_key("_Znotaname"), "{names:?}");
    }

    #[test]
    fn a_region_given_by_its_symbol_is_named_as_read() {
        if !epcache_test_support::tools::available("c++filt", "demangle") {
            return;
        }
        assert_eq!(region_name("_ZN3num6jacobiEi"), "num::jacobi(int)");
        assert_eq!(
            region_name("_ZZ4mainENKUliE0_clEi.constprop.0"),
            "main::{lambda(int)#2}::operator()(int) const"
        );
        assert_eq!(region_name("main"), "main");
        assert_eq!(region_name("mesh::init"), "mesh::init");
    }
}
