//! `--by-field`: the member table of an array of structures, read from the program's DWARF
//! (`epcache_symbols`), for a request that counts per member (`epcache run`, `epcache request`).

use std::path::Path;

use anyhow::{Context, bail};
use epcache_client::{Field, Request};

/// The element size and the members of global array `name` (as `describe` names it, e.g.
/// `parts` or `particles::parts`) in the program file `exe`.
pub(crate) fn members(exe: &Path, name: &str) -> anyhow::Result<(u64, Vec<Field>)> {
    let info = epcache_symbols::DebugInfo::load(exe)
        .with_context(|| format!("reading the members of `{name}` for --by-field"))?;
    let found: Vec<_> = info
        .globals
        .iter()
        .filter(|g| g.qualified_name == name)
        .collect();
    let found = if found.is_empty() {
        info.globals.iter().filter(|g| g.name == name).collect()
    } else {
        found
    };
    // A heap block's name says its language: `t@heat.f90:6`, `grid.c:40`.
    let fortran = name
        .rsplit_once(':')
        .is_some_and(|(file, _)| epcache_symbols::is_fortran_source(file));
    let example = if fortran {
        "`--element-type cell` for `type(cell)`"
    } else {
        "`--element-type particle` for `struct particle`"
    };
    let global = match found.as_slice() {
        [one] => *one,
        [] => {
            if let Some(held) = held_by_variables(exe, &info, name)? {
                return Ok(held);
            }
            bail!(
                "`{name}` is no global array in {}, and no variable or structure member of its debug info holding it points at structures, so its element type is unknown; name it with --element-type, e.g. {example}",
                exe.display()
            )
        }
        many => bail!(
            "`{name}` names {} globals in {}; give the qualified name ({})",
            many.len(),
            exe.display(),
            many.iter()
                .map(|g| g.qualified_name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let element_bytes = global
        .shape
        .as_ref()
        .map(|s| s.element_bytes)
        .or(global.descriptor.as_ref().map(|d| d.element_bytes));
    let Some(element_bytes) = element_bytes.filter(|_| !global.members.is_empty()) else {
        bail!(
            "`{name}` is not an array of structures, so it has no fields to count by; drop --by-field or use --buckets"
        );
    };
    Ok((element_bytes, fields_of(&global.members)))
}

/// Which variables may hold the heap array `name` (`p`, `p@dt.f90:11`, `grid.c:40`): those named
/// as the array is (before an `@`, or by the statement allocating at the site), or, when no
/// name is known, those declared on the allocating line.
pub(crate) struct Holders {
    names: Vec<String>,
    site: Option<(String, u32)>,
}

impl Holders {
    pub(crate) fn of(info: &epcache_symbols::DebugInfo, name: &str) -> Self {
        let site = |s: &str| {
            let (file, line) = s.rsplit_once(':')?;
            Some((file.to_owned(), line.parse::<u32>().ok()?))
        };
        let (mut names, site) = match name.split_once('@') {
            Some((variable, at)) => (vec![variable.to_owned()], site(at)),
            None => match site(name) {
                Some(at) => (Vec::new(), Some(at)),
                None => (vec![name.to_owned()], None),
            },
        };
        if names.is_empty()
            && let Some((file, line)) = &site
        {
            names = crate::allocated_arrays::allocated_on(info, file, *line).unwrap_or_default();
        }
        Self { names, site }
    }

    /// Whether variable `variable`, declared at `file`:`line`, may hold the array.
    pub(crate) fn may_hold(&self, variable: &str, file: &str, line: u32) -> bool {
        let fortran = epcache_symbols::is_fortran_source(file);
        self.names
            .iter()
            .any(|n| crate::allocated_arrays::same_name(fortran, variable, n))
            || (self.names.is_empty()
                && self.site.as_ref().is_some_and(|(f, l)| {
                    *l == line && file.rsplit('/').next() == f.rsplit('/').next()
                }))
    }
}

/// The element of the heap array `name` (`p`, `p@dt.f90:11`, `grid.c:40`) from the variables
/// holding it in `exe`'s debug info: those named as the array is (before an `@`, or by the
/// statement allocating at the site), or declared on the allocating line (`struct cell *grid =
/// malloc(..)`, `std::vector<cell> grid(n)`). Said on stderr when found, so a user sees which
/// type counts; `None` when no such variable holds structures; an error when several hold
/// different ones.
fn held_by_variables(
    exe: &Path,
    info: &epcache_symbols::DebugInfo,
    name: &str,
) -> anyhow::Result<Option<(u64, Vec<Field>)>> {
    let holders = Holders::of(info, name);
    let found = epcache_symbols::DebugInfo::variable_element_types(exe, |variable, file, line| {
        holders.may_hold(variable, file, line)
    })
    .with_context(|| format!("reading the variables holding `{name}` for --by-field"))?;
    let Some(first) = found.first() else {
        return Ok(None);
    };
    if let Some(other) = found.iter().find(|v| v.element != first.element) {
        bail!(
            "the variables that may hold `{name}` point at different structures: `{}` ({}:{}) at `{}`, `{}` ({}:{}) at `{}`; name the element with --element-type",
            first.name,
            first.file,
            first.line,
            first.element.name,
            other.name,
            other.file,
            other.line,
            other.element.name
        );
    }
    let element = &first.element;
    eprintln!(
        "epcache: --by-field counts `{name}` by the members of `{}` ({} bytes), the element of `{}` ({}:{}); --element-type names another",
        element.name,
        element.bytes,
        first.name,
        first.file.rsplit('/').next().unwrap_or(&first.file),
        first.line
    );
    Ok(Some((element.bytes, fields_of(&element.members))))
}

/// The element size and the members of the structure type `name` in `exe` (`particle`, or
/// `struct particle`, a typedef's name, a C++ class, a Fortran derived type): what a by-field
/// request over a heap block counts by.
pub(crate) fn element_type(exe: &Path, name: &str) -> anyhow::Result<(u64, Vec<Field>)> {
    let bare = name
        .trim()
        .trim_start_matches("struct ")
        .trim_start_matches("class ")
        .trim();
    let bare = bare
        .strip_prefix("type(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(bare)
        .trim();
    let found = epcache_symbols::DebugInfo::structure_types(exe, bare)
        .with_context(|| format!("reading the type `{name}` for --element-type"))?;
    let ty = match found.as_slice() {
        [one] => one,
        [] => bail!(
            "no structure type `{bare}` with members in {}'s debug info; give the name as declared (`particle` for `struct particle`, a typedef's name, a C++ class or a Fortran derived type)",
            exe.display()
        ),
        many => bail!(
            "{} different structure types are called `{bare}` in {} (of {} bytes); by-field needs one layout",
            many.len(),
            exe.display(),
            many.iter()
                .map(|t| t.bytes.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok((ty.bytes, fields_of(&ty.members)))
}

/// The element size of the one global array `name` names in `exe`, when its type is known.
fn global_element_bytes(exe: &Path, name: &str) -> Option<u64> {
    let info = epcache_symbols::DebugInfo::load(exe).ok()?;
    let mut found = info
        .globals
        .iter()
        .filter(|g| g.qualified_name == name || g.name == name);
    let global = found.next().filter(|_| found.next().is_none())?;
    global
        .shape
        .as_ref()
        .map(|s| s.element_bytes)
        .or(global.descriptor.as_ref().map(|d| d.element_bytes))
}

/// DWARF members as the MRI's member table.
fn fields_of(members: &[epcache_symbols::Member]) -> Vec<Field> {
    members
        .iter()
        .map(|m| Field {
            name: m.name.clone(),
            offset: m.offset,
            bytes: m.bytes,
        })
        .collect()
}

/// `request` counting by the members of its array's element: the global array's own type read
/// from `exe`, or the structure type `element_type` names (for a heap block).
pub(crate) fn request(
    exe: &Path,
    request: Request,
    element_type: Option<&str>,
) -> anyhow::Result<Request> {
    let (element_bytes, fields) = match (&request.data, element_type) {
        (epcache_client::DataRef::Name(name), Some(ty)) => {
            let (bytes, fields) = self::element_type(exe, ty)?;
            if let Some(own) = global_element_bytes(exe, name)
                && own != bytes
            {
                bail!(
                    "--element-type `{ty}` is {bytes} bytes, but `{name}` is an array of {own}-byte elements (its declared type); --element-type is for heap blocks, whose type the debug info does not give, and a declared array is counted by its own type's members without it"
                );
            }
            (bytes, fields)
        }
        (_, Some(ty)) => self::element_type(exe, ty)?,
        (epcache_client::DataRef::Name(name), None) => members(exe, name)?,
        (_, None) => bail!(
            "--by-field over an address range needs the element's type: give --element-type NAME"
        ),
    };
    Ok(Request {
        mode: epcache_client::Mode::ByField {
            element_bytes,
            fields,
        },
        ..request
    })
}
