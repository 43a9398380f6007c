//! The arrays one source line allocates, in the order its allocation calls come: a Fortran
//! `allocate(t(n,n), tnew(n,n))` gives `t` and `tnew`, C's `double *a = malloc(..), *b =
//! malloc(..);` gives `a` and `b`, C++'s `std::vector<double> a(n), b(n);` too. The runtime names a block of such a line by its array
//! (`t@heat.f90:6`) when the line's calls to the same allocator are as many as the arrays the text
//! lists; anything this reader cannot take apart gives nothing, and the blocks keep their
//! line's name.
//!
//! Text only, one line: a statement continued on the next line, a macro, or a name the
//! compiler sees otherwise (a preprocessor's) is not read; the count check above guards them.

/// Most arrays taken from one line.
const MAX_OBJECTS: usize = 32;

/// The arrays `line` allocates, in order: a Fortran `ALLOCATE` statement's objects when
/// `fortran`, else the variables a C or C++ line assigns a call's result to. Empty when the line
/// lists fewer than two, or cannot be read.
pub fn allocated_objects(line: &str, fortran: bool) -> Vec<String> {
    let found = if fortran {
        fortran_allocate(line)
    } else {
        cpp_containers(line).or_else(|| c_assignments(line))
    };
    let found = found.unwrap_or_default();
    if found.len() < 2 || found.len() > MAX_OBJECTS {
        return Vec::new();
    }
    found
}

/// The arrays `line` allocates, one or several, for naming an array to a user who asked for it
/// by name: a Fortran `ALLOCATE` statement's objects when `fortran`, else the variables a C or
/// C++ line assigns the result of a standard allocator (`malloc`, `calloc`, `realloc`,
/// `aligned_alloc`, `memalign`, `valloc`), of one of the program's allocation `wrappers`
/// (`xmalloc`, as [`crate::DebugInfo::allocation_wrappers`] finds them) or of `new` to. Unlike
/// [`allocated_objects`], a line of one array counts, so a C line must call an allocator by
/// name (any call's result assigned is no allocation to say).
pub fn named_allocations(line: &str, fortran: bool, wrappers: &[String]) -> Vec<String> {
    let found = if fortran {
        fortran_allocate(line)
    } else if let Some(containers) = cpp_containers(line) {
        Some(containers)
    } else if calls_an_allocator(line, wrappers) {
        c_assignments(line)
    } else {
        Some(growing_calls(line))
    };
    let mut found = found.unwrap_or_default();
    found.truncate(MAX_OBJECTS);
    found
}

/// The C++ containers a line grows or sizes through their member functions
/// (`col.push_back(r); val.push_back(-1.0);` gives `col` and `val`), in order, each once. Their
/// blocks are allocated inside different functions (one per element type), so the runtime cannot
/// tell which block of the line is which: [`allocated_objects`] leaves them out, and a tool says
/// so to a user who names one.
pub fn growing_calls(line: &str) -> Vec<String> {
    const GROWING: [&str; 7] = [
        "push_back",
        "emplace_back",
        "resize",
        "reserve",
        "assign",
        "insert",
        "emplace",
    ];
    let code = line.split("//").next().unwrap_or("");
    let mut calls: Vec<(usize, String)> = Vec::new();
    for (at, arrow) in code.match_indices('.').chain(code.match_indices("->")) {
        let rest = &code[at + arrow.len()..];
        let grows = GROWING.iter().any(|m| {
            rest.strip_prefix(m)
                .is_some_and(|after| after.trim_start().starts_with('('))
        });
        if let Some(name) = grows.then(|| identifier_ending(&code[..at])).flatten() {
            calls.push((at, name.to_owned()));
        }
    }
    calls.sort();
    let mut found: Vec<String> = Vec::new();
    for (_, name) in calls {
        if !found.contains(&name) {
            found.push(name);
        }
    }
    found
}

/// Whether a C or C++ line calls a standard allocator by name, or `new`.
fn calls_an_allocator(line: &str, wrappers: &[String]) -> bool {
    const ALLOCATORS: [&str; 6] = [
        "malloc",
        "calloc",
        "realloc",
        "aligned_alloc",
        "memalign",
        "valloc",
    ];
    let code = line.split("//").next().unwrap_or("");
    let bytes = code.as_bytes();
    let word_at = |at: usize, word: &str| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let rest = code[at + word.len()..].trim_start();
        !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') && rest.starts_with('(')
    };
    ALLOCATORS
        .iter()
        .copied()
        // A C++ wrapper is called by its last name (`make_grid`, of `util::make_grid`).
        .chain(wrappers.iter().filter_map(|w| w.rsplit("::").next()))
        .any(|name| code.match_indices(name).any(|(at, _)| word_at(at, name)))
        || code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == "new")
}

/// Whether a file holds Fortran, by its extension.
pub fn is_fortran_source(path: &str) -> bool {
    let extension = path.rsplit_once('.').map_or("", |(_, e)| e);
    matches!(
        extension.to_ascii_lowercase().as_str(),
        "f" | "for" | "f77" | "f90" | "f95" | "f03" | "f08" | "f18"
    )
}

/// The objects of the line's first `ALLOCATE(...)`: each item's designator without its bounds
/// (`rho%val(n)` gives `rho%val`), type specs (`real(8) :: a(n)`) and `stat=`, `source=`,
/// `mold=`, `errmsg=` left out, in lower case as gfortran names them.
fn fortran_allocate(line: &str) -> Option<Vec<String>> {
    let code = line.split('!').next()?;
    let lower = code.to_ascii_lowercase();
    let mut from = 0;
    let open = loop {
        let at = from + lower[from..].find("allocate")?;
        let before = lower[..at].chars().next_back();
        let after = lower[at + "allocate".len()..].trim_start();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && after.starts_with('(')
        {
            break lower.len() - after.len();
        }
        from = at + "allocate".len();
    };
    let inner = balanced(&lower[open..])?;
    let inner = match top_level_find(inner, "::") {
        Some(at) => &inner[at + 2..],
        None => inner,
    };
    let mut objects = Vec::new();
    for item in top_level_split(inner, &[',']) {
        let item = item.trim();
        if item.is_empty() {
            return None;
        }
        if top_level_find(item, "=").is_some() {
            continue;
        }
        let designator = strip_last_group(item).trim();
        if designator.is_empty()
            || !designator
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_%()*:, ".contains(c))
        {
            return None;
        }
        objects.push(designator.replace(' ', ""));
    }
    Some(objects)
}

/// The variables a C or C++ line assigns a call's (or `new`'s) result to: in each of its
/// top-level statements and declarators, the name just before a lone `=` whose right side calls.
fn c_assignments(line: &str) -> Option<Vec<String>> {
    let code = line.split("//").next()?;
    let mut objects = Vec::new();
    for part in top_level_split(code, &[',', ';']) {
        let Some(eq) = lone_equals(part) else {
            continue;
        };
        let (left, right) = (&part[..eq], part[eq + 1..].trim());
        if !(right.contains('(') || right.starts_with("new ")) {
            continue;
        }
        objects.push(identifier_ending(left.trim_end())?.to_owned());
    }
    Some(objects)
}

/// The variables a C++ declaration of `std::vector` or `std::valarray` sizes, whose
/// constructors allocate their elements: `std::vector<double> a(n * n), b(n * n);` gives `a`
/// and `b`; a declarator without arguments (`c`, `d{}`) allocates nothing and is left out.
/// `None` when the line declares no such container (or the text does not read).
fn cpp_containers(line: &str) -> Option<Vec<String>> {
    let code = line.split("//").next()?;
    let bytes = code.as_bytes();
    let identifier = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let start = ["vector<", "valarray<"].iter().find_map(|word| {
        code.match_indices(word)
            .find(|&(at, _)| {
                let before = &code[..at];
                // `std::vector`, or `vector` after a using-declaration; not `my_vector`.
                !at.checked_sub(1).is_some_and(|i| identifier(bytes[i]))
                    && (before.trim_end().is_empty()
                        || before.ends_with("std::")
                        || before.ends_with(' ')
                        || before.ends_with('('))
            })
            .map(|(at, word)| at + word.len() - 1)
    })?;
    // The template's arguments, `<` to its matching `>`.
    let mut depth = 0usize;
    let mut end = None;
    for (i, c) in code[start..].char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    end = Some(start + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let declarators = code[end?..].split(';').next()?;
    let mut objects = Vec::new();
    for declarator in top_level_split(declarators, &[',']) {
        let declarator = declarator.trim();
        let name_end = declarator
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(declarator.len());
        let (name, rest) = declarator.split_at(name_end);
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let rest = rest.trim_start();
        let arguments = match rest.chars().next() {
            Some('(' | '{') => balanced_any(rest)?,
            _ => "",
        };
        if !arguments.trim().is_empty() {
            objects.push(name.to_owned());
        }
    }
    Some(objects)
}

/// [`balanced`] for a group opened by `(` or `{`.
fn balanced_any(text: &str) -> Option<&str> {
    let (open, close) = match text.chars().next()? {
        '(' => ('(', ')'),
        '{' => ('{', '}'),
        _ => return None,
    };
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return text.get(1..i);
            }
        }
    }
    None
}

/// The C identifier `text` ends with (`x` of `p->x`), when it ends with one.
fn identifier_ending(text: &str) -> Option<&str> {
    let start = text
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &text[start..];
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

/// The byte index of the first `=` of `text` that is no part of `==`, `<=`, `>=`, `!=`, and
/// lies outside brackets.
fn lone_equals(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0i32;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'=' if depth == 0 => {
                let before = i.checked_sub(1).map(|j| bytes[j]);
                let after = bytes.get(i + 1).copied();
                if !matches!(before, Some(b'=' | b'<' | b'>' | b'!')) && after != Some(b'=') {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The text inside the parenthesised group `text` starts with, without the parentheses.
fn balanced(text: &str) -> Option<&str> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return text.get(1..i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` without a parenthesised group it ends with (`a(n,m)` gives `a`).
fn strip_last_group(text: &str) -> &str {
    let text = text.trim_end();
    if !text.ends_with(')') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &text[..i];
                }
            }
            _ => {}
        }
    }
    text
}

/// The pieces of `text` between the `separators` that lie outside brackets.
fn top_level_split<'t>(text: &'t str, separators: &[char]) -> Vec<&'t str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if depth == 0 && separators.contains(&c) => {
                out.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Where `needle` first occurs in `text` outside brackets.
fn top_level_find(text: &str, needle: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if depth == 0 && text[i..].starts_with(needle) => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_allocate_statements_give_their_objects() {
        let objects = |line: &str| allocated_objects(line, true);
        assert_eq!(objects("  allocate(t(n,n), tnew(n,n))"), ["t", "tnew"]);
        assert_eq!(
            objects("ALLOCATE (Rho%Val(N), vel%val(0:n-1), stat=ierr) ! two"),
            ["rho%val", "vel%val"]
        );
        assert_eq!(
            objects("allocate(species(s)%val(1000*s), w(2,3))"),
            ["species(s)%val", "w"]
        );
        assert_eq!(objects("allocate(real(8) :: a(n), b(n))"), ["a", "b"]);
        assert_eq!(objects("if (.not. ok) allocate(x, y)"), ["x", "y"]);
        // One object, a deallocation, a continued statement, a name this reader cannot take.
        assert!(objects("allocate(t(n,n))").is_empty());
        assert!(objects("deallocate(t, tnew)").is_empty());
        assert!(objects("allocate(t(n,n), &").is_empty());
        assert!(objects("allocate(a(n), \"b\"(n))").is_empty());
        assert!(objects("x = 1").is_empty());
    }

    #[test]
    fn named_allocations_take_one_array_too_and_in_c_only_an_allocators() {
        let fortran = |line: &str| named_allocations(line, true, &[]);
        assert_eq!(fortran("  allocate(t(n,n,n))"), ["t"]);
        assert_eq!(fortran("allocate(t(n), tnew(n))"), ["t", "tnew"]);
        assert!(fortran("deallocate(t)").is_empty());
        let through = |line: &str| {
            named_allocations(line, false, &["xmalloc".into(), "util::make_grid".into()])
        };
        assert_eq!(through("  double *a = xmalloc(n * sizeof *a);"), ["a"]);
        assert_eq!(through("g = make_grid (n);"), ["g"]);
        assert!(through("double *a = my_xmalloc(n);").is_empty());
        assert!(named_allocations("double *a = xmalloc(n);", false, &[]).is_empty());
        let c = |line: &str| named_allocations(line, false, &[]);
        assert_eq!(c("  double *a = malloc(n * sizeof(double));"), ["a"]);
        assert_eq!(c("a = (double *)aligned_alloc(64, n);"), ["a"]);
        assert_eq!(c("double *v = new double[n];"), ["v"]);
        // A call that is no allocator's, a name that merely contains one.
        assert!(c("s = sum(a, n);").is_empty());
        assert!(c("x = my_malloc_count(n);").is_empty());
    }

    #[test]
    fn c_lines_give_the_variables_calls_are_assigned_to() {
        let objects = |line: &str| allocated_objects(line, false);
        assert_eq!(
            objects("  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);"),
            ["a", "b"]
        );
        assert_eq!(
            objects("a = (double *)aligned_alloc(64, n); b = new double[n]; // both"),
            ["a", "b"]
        );
        assert_eq!(objects("p->x = xmalloc(n), p->y = xmalloc(n);"), ["x", "y"]);
        // A constant is no call; comparisons are no assignments.
        assert_eq!(
            objects("int k = 0, *a = malloc(n), *b = calloc(n, 8);"),
            ["a", "b"]
        );
        assert!(objects("if (a == malloc(n)) b = f(x);").is_empty());
        assert!(objects("double *a = malloc(n);").is_empty());
    }

    #[test]
    fn cpp_container_declarations_give_the_containers_they_size() {
        let objects = |line: &str| allocated_objects(line, false);
        assert_eq!(
            objects("  std::vector<double> a(n * n), b(n * n);"),
            ["a", "b"]
        );
        assert_eq!(
            objects("std::vector<std::pair<int, double>> p(n, {0, 1.0}), q{1, 2}; // two"),
            ["p", "q"]
        );
        assert_eq!(objects("vector<float> x(n), y, z(f(n, 2));"), ["x", "z"]);
        assert!(objects("std::vector<double> a(n);").is_empty());
        assert!(objects("my_vector<double> a(n), b(n);").is_empty());
        let named = |line: &str| named_allocations(line, false, &[]);
        assert_eq!(named("  std::valarray<double> w(n);"), ["w"]);
        assert_eq!(named("std::vector<double> a(n * n), b(n * n);"), ["a", "b"]);
        assert!(named("std::vector<double> empty;").is_empty());
        assert_eq!(
            named("  if (i > 0) { col.push_back(r - m); val.push_back(-1.0); }"),
            ["col", "val"]
        );
        assert_eq!(named("grid->cells.resize(n); // grow"), ["cells"]);
        assert!(named("x = v.size(); v.clear();").is_empty());
        // Grown through member calls: no block of the line can be told from another's.
        assert!(allocated_objects("col.push_back(1); val.push_back(2.0);", false).is_empty());
        assert!(named("double s = total(std::vector<double>(v));").is_empty());
    }

    #[test]
    fn fortran_is_told_by_the_extension() {
        assert!(is_fortran_source("/src/heat.F90"));
        assert!(is_fortran_source("solver.f"));
        assert!(!is_fortran_source("heat.c"));
        assert!(!is_fortran_source("Makefile"));
    }
}
