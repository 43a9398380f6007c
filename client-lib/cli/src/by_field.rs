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
    let global = match found.as_slice() {
        [one] => *one,
        [] => bail!(
            "`{name}` is no global array in {}'s debug info; --by-field needs a global or module array of structures (a heap block's type is not in its debug info)",
            exe.display()
        ),
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
    let fields = global
        .members
        .iter()
        .map(|m| Field {
            name: m.name.clone(),
            offset: m.offset,
            bytes: m.bytes,
        })
        .collect();
    Ok((element_bytes, fields))
}

/// `request` counting by the members of its array, read from `exe`.
pub(crate) fn request(exe: &Path, request: Request) -> anyhow::Result<Request> {
    let epcache_client::DataRef::Name(name) = &request.data else {
        bail!("--by-field needs --array NAME: an address range has no type to read fields from");
    };
    let (element_bytes, fields) = members(exe, name)?;
    Ok(Request {
        mode: epcache_client::Mode::ByField {
            element_bytes,
            fields,
        },
        ..request
    })
}
