//! Where an array asked for by name is allocated, when the target has no data structure of
//! that name: a main program's or a procedure's ALLOCATABLE, or a C pointer a function
//! allocates, has no name of its own in the target (its descriptor or pointer lives on the
//! stack, or in a main program's frame), and its blocks are named by the line that allocates
//! them (`heat.f90:6`). The program's source files, as its debug information lists them, are
//! read for the statements that allocate an array of that name (`allocate(t(n))`,
//! `double *a = malloc(..)`), so the refusal can say what to ask for (`t@heat.f90:6`). Read
//! only after a request was refused, never on the way of one that binds; and before a program
//! starts, one line, for a request naming `array@file:line`, to say when that line allocates
//! other arrays ([`allocated_instead`]).

use std::path::Path;

use epcache_symbols::{DebugInfo, growing_calls, is_fortran_source, named_allocations};

/// Source files larger than this are not read for a note.
const MAX_SOURCE_BYTES: u64 = 16 << 20;
/// Allocation lines named in one note.
const MAX_SHOWN: usize = 6;

/// A note for a request naming `array`, refused (`refusal`) because the target of program
/// `exe` has no data structure so named: the allocation statements of that array in the
/// program's sources, as the request should name them. `None` when the refusal is about
/// something else, the name already is an allocation site or a global of the program (a
/// module's array), there is no such statement, or the program or its sources cannot be read.
pub(crate) fn note(exe: &Path, array: &str, refusal: &str) -> Option<String> {
    if array.is_empty()
        || array.contains([':', '@', '['])
        || !refusal.contains(&format!("no data structure `{array}`"))
    {
        return None;
    }
    let info = DebugInfo::load_program(exe).ok()?;
    let global = |g: &epcache_symbols::GlobalVariable| {
        g.name.eq_ignore_ascii_case(array) || g.qualified_name.eq_ignore_ascii_case(array)
    };
    if info.globals.iter().any(global) {
        return None;
    }
    let mut files: Vec<&str> = info
        .files
        .iter()
        .map(String::as_str)
        .filter(|f| !f.starts_with("/usr/"))
        .collect();
    files.sort_unstable();
    files.dedup();
    let mut sites = Vec::new();
    for file in files {
        sites.extend(allocations_in(file, array, &info.allocation_wrappers));
    }
    if sites.is_empty() {
        return None;
    }
    let more = sites.len().saturating_sub(MAX_SHOWN);
    let shown: Vec<String> = sites
        .iter()
        .take(MAX_SHOWN)
        .map(|s| format!("`{s}`"))
        .collect();
    let ask = match shown.as_slice() {
        [one] => one.clone(),
        many => format!(
            "one of {}{}",
            many.join(", "),
            if more > 0 {
                format!(" ({more} more)")
            } else {
                String::new()
            }
        ),
    };
    Some(format!(
        "`{array}` has no name of its own in the program (an array held by a local variable, \
         a main program's or a function's, is named by the line that allocates it): ask for \
         {ask}"
    ))
}

/// The arrays line `line` of source `file` (found by its base name among the program's
/// files) allocates, when they are named and `array` is none of them: the line's block would
/// be counted under a name it does not have. `None` when the source cannot be read or the
/// line names no array it allocates (a wrapper's call).
pub(crate) fn allocated_instead(
    info: &DebugInfo,
    array: &str,
    file: &str,
    line: u32,
) -> Option<Vec<String>> {
    let allocated = allocated_on(info, file, line)?;
    let fortran = is_fortran_source(file);
    (!allocated.is_empty() && !allocated.iter().any(|o| same_name(fortran, o, array)))
        .then_some(allocated)
}

/// The named arrays line `line` of source `file` (found by its base name among the program's
/// files) allocates: empty for a line that allocates none by name (a wrapper's call); `None`
/// when the source cannot be read.
pub(crate) fn allocated_on(info: &DebugInfo, file: &str, line: u32) -> Option<Vec<String>> {
    let statement = source_line(info, file, line)?;
    Some(named_allocations(
        &statement,
        is_fortran_source(file),
        &info.allocation_wrappers,
    ))
}

/// The one array line `line` of `file` allocates by name (`x` for `allocate(x(n))`,
/// `double *x = malloc(..)`, `std::vector<double> x(n)`); `None` for none, several, or a source
/// that cannot be read.
pub(crate) fn sole_array_on(info: &DebugInfo, file: &str, line: u32) -> Option<String> {
    let mut arrays = allocated_on(info, file, line)?;
    (arrays.len() == 1).then(|| arrays.remove(0))
}

/// The C++ containers line `line` of `file` grows through member calls, when there are
/// several (`col.push_back(..); val.push_back(..);`): the runtime cannot tell their blocks
/// apart, and a request naming one of them counts the line's latest block, whichever it is.
pub(crate) fn grown_together(info: &DebugInfo, file: &str, line: u32) -> Option<Vec<String>> {
    if is_fortran_source(file) {
        return None;
    }
    let grown = growing_calls(&source_line(info, file, line)?);
    (grown.len() > 1).then_some(grown)
}

/// Line `line` of source `file`, found by its base name among the program's files.
fn source_line(info: &DebugInfo, file: &str, line: u32) -> Option<String> {
    let base = file.rsplit('/').next().unwrap_or(file);
    let text = info
        .files
        .iter()
        .filter(|f| f.rsplit('/').next() == Some(base))
        .find_map(|f| source_text(f))?;
    text.lines()
        .nth((line as usize).checked_sub(1)?)
        .map(str::to_owned)
}

/// Source `file`'s text, when it is a regular file of at most [`MAX_SOURCE_BYTES`].
fn source_text(file: &str) -> Option<String> {
    let readable =
        std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.len() <= MAX_SOURCE_BYTES);
    let text = readable.then(|| std::fs::read(file).ok()).flatten()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// Whether an allocated `object` is `array`: Fortran names have no case, C names do.
pub(crate) fn same_name(fortran: bool, object: &str, array: &str) -> bool {
    if fortran {
        object.eq_ignore_ascii_case(array)
    } else {
        object == array
    }
}

/// The lines of source `file` that allocate an array named `array`, as `array@base:line`.
fn allocations_in(file: &str, array: &str, wrappers: &[String]) -> Vec<String> {
    let fortran = is_fortran_source(file);
    let Some(text) = source_text(file) else {
        return Vec::new();
    };
    let base = file.rsplit('/').next().unwrap_or(file);
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            named_allocations(line, fortran, wrappers)
                .iter()
                .any(|o| same_name(fortran, o, array))
        })
        .map(|(i, _)| {
            let name = if fortran {
                array.to_ascii_lowercase()
            } else {
                array.to_owned()
            };
            format!("{name}@{base}:{}", i + 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_lines_of_the_named_array_are_found_in_fortran_and_c() {
        let dir = tempfile::tempdir().unwrap();
        let heat = dir.path().join("heat3.f90");
        std::fs::write(
            &heat,
            "program heat3\n  real(8), allocatable :: t(:), u(:)\n  allocate(t(10))\n  \
             allocate(U(10), w(3))\n  t = 1\nend program\n",
        )
        .unwrap();
        let heat = heat.to_str().unwrap();
        assert_eq!(allocations_in(heat, "t", &[]), ["t@heat3.f90:3"]);
        assert_eq!(allocations_in(heat, "u", &[]), ["u@heat3.f90:4"]);
        assert_eq!(allocations_in(heat, "T", &[]), ["t@heat3.f90:3"]);
        assert!(allocations_in(heat, "x", &[]).is_empty());
        let main = dir.path().join("main.c");
        std::fs::write(
            &main,
            "int main(void) {\n  double *a = malloc(n * 8);\n  double s = sum(a, n);\n}\n",
        )
        .unwrap();
        let main = main.to_str().unwrap();
        assert_eq!(allocations_in(main, "a", &[]), ["a@main.c:2"]);
        assert!(allocations_in(main, "s", &[]).is_empty());
        assert!(
            allocations_in(main, "A", &[]).is_empty(),
            "C names keep their case"
        );
    }
}
