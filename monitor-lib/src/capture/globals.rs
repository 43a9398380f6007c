//! The program's globals as data structures, named as declared (`gauss_mod::a`, `blk::x`), with
//! their shapes, and told apart by file where names collide.
//!
//! A fixed-size array is published with its shape; a Fortran ALLOCATABLE or POINTER array is
//! followed to the data its descriptor points to (`descriptors.rs`), which is what the program
//! uses, rather than registered as its descriptor.

use std::collections::HashMap;
use std::path::Path;

use epcache_shm::layout::{
    DataStructureDetails, DataStructureKind, Dimension, MAX_SHAPE_RANK, Shape,
};
use epcache_sim::ranges::AddressRange;
use epcache_symbols::ArrayShape;

use super::{data, descriptors, program};

/// The globals of `objects` as data structures, each with what its type says: a fixed-size
/// array with its shape, an ALLOCATABLE or POINTER array as the data its descriptor points to
/// (`descriptors.rs`), rather than the descriptor itself.
pub(super) fn register_globals(objects: &[&'static program::ProgramInfo]) {
    let globals: Vec<_> = objects
        .iter()
        .flat_map(|p| {
            p.info.globals.iter().filter(|g| g.size > 0).map(move |g| {
                let file = g.file.and_then(|f| p.info.files.get(f as usize)).cloned();
                let range = AddressRange::new(g.address.wrapping_add(p.bias), g.size);
                (g, file, range)
            })
        })
        .collect();
    let names = distinct_names(
        globals
            .iter()
            .map(|(g, file, range)| (g.qualified_name.clone(), file.clone(), *range))
            .collect(),
    );
    for ((global, _, _), (name, range)) in globals.into_iter().zip(names) {
        match &global.descriptor {
            Some(descriptor) => descriptors::follow(&name, range.start, range.len(), descriptor),
            None => data::register_with(
                &name,
                range,
                DataStructureKind::Global,
                DataStructureDetails {
                    site: None,
                    shape: global.shape.as_ref().and_then(published_shape),
                },
            ),
        }
    }
}

/// A fixed-size array's shape as the segment publishes it (none past [`MAX_SHAPE_RANK`]).
fn published_shape(shape: &ArrayShape) -> Option<Shape> {
    (shape.dims.len() <= MAX_SHAPE_RANK).then(|| Shape {
        element_bytes: shape.element_bytes,
        dims: shape
            .dims
            .iter()
            .map(|d| Dimension {
                lower: d.lower,
                extent: d.count,
            })
            .collect(),
        column_major: shape.column_major,
    })
}

/// Globals named apart where their names collide: `static double buf[1000]` in `a.c` and
/// another `buf` in `b.c` become `buf@a.c` and `buf@b.c` (by the declaring file's name, or its
/// whole path where two of them share a name: `src/a/util.c`, `src/b/util.c`). The report sums
/// the entries of one name (a name's heap blocks, an array registered again), so two unrelated
/// arrays under one name showed as one, with one's start, the other's size and both's counts.
fn distinct_names(
    globals: Vec<(String, Option<String>, AddressRange)>,
) -> Vec<(String, AddressRange)> {
    // Each name's distinct definitions: start and declaring file.
    let mut seen: HashMap<&str, Vec<(u64, Option<&str>)>> = HashMap::new();
    for (name, file, range) in &globals {
        let definitions = seen.entry(name).or_default();
        if !definitions.iter().any(|(start, _)| *start == range.start) {
            definitions.push((range.start, file.as_deref()));
        }
    }
    let base = |path: &str| {
        Path::new(path)
            .file_name()
            .map_or_else(|| path.to_owned(), |f| f.to_string_lossy().into_owned())
    };
    // For each colliding name, whether its files' base names tell its definitions apart.
    let collides: HashMap<String, bool> = seen
        .into_iter()
        .filter(|(_, definitions)| definitions.len() > 1)
        .map(|(name, definitions)| {
            let bases: Vec<String> = definitions
                .iter()
                .filter_map(|(_, file)| file.map(base))
                .collect();
            let distinct = bases
                .iter()
                .enumerate()
                .all(|(i, b)| !bases[..i].contains(b));
            (name.to_owned(), distinct)
        })
        .collect();
    globals
        .into_iter()
        .map(|(name, file, range)| match (file, collides.get(&name)) {
            (Some(file), Some(&by_base)) => {
                let file = if by_base { base(&file) } else { file };
                (format!("{name}@{file}"), range)
            }
            (_, _) => (name, range),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_global_names_are_told_apart_by_file() {
        let global = |name: &str, file: Option<&str>, start: u64| {
            (
                name.to_owned(),
                file.map(str::to_owned),
                AddressRange::new(start, 8),
            )
        };
        let named = distinct_names(vec![
            global("buf", Some("/src/a.c"), 0x1000),
            global("buf", Some("/src/b.c"), 0x2000),
            global("util", Some("src/a/util.c"), 0x8000),
            global("util", Some("src/b/util.c"), 0x9000),
            global("alpha::table", Some("a.c"), 0x3000),
            global("table", Some("b.c"), 0x4000),
            // One variable seen twice (two units declaring it) is not a collision.
            global("shared", Some("a.c"), 0x5000),
            global("shared", Some("b.c"), 0x5000),
            global("anon", None, 0x6000),
            global("anon", None, 0x7000),
        ]);
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "buf@a.c",
                "buf@b.c",
                "util@src/a/util.c",
                "util@src/b/util.c",
                "alpha::table",
                "table",
                "shared",
                "shared",
                "anon",
                "anon"
            ]
        );
    }
}
