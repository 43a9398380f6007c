//! Code addresses to source positions, with the chain of inlined calls: for an access at `pc`,
//! the line of the access in the innermost (inlined) function, then where each inlined function
//! was called from, out to the function that was compiled; as `addr2line -i -f` prints them.
//!
//! Built on the `addr2line` crate (gimli's), which reads the line tables and the
//! `DW_TAG_inlined_subroutine` entries lazily, unit by unit, on the first lookup that needs them:
//! a report that names a few hundred addresses parses only the units that hold them.

use std::path::Path;
use std::sync::Arc;

use gimli::{EndianArcSlice, RunTimeEndian};
use object::{Object, ObjectSection};

use super::SymbolError;

type ArcReader = EndianArcSlice<RunTimeEndian>;

/// One frame of the source positions of a code address.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct SourceFrame {
    /// The function whose code this frame is (as the debug information names it: the linkage
    /// name of a C++ or Rust function, mangled), when it says.
    pub function: Option<String>,
    /// The source file (with its directory as the compilation recorded it), when known.
    pub file: Option<String>,
    /// The line in `file`; 0 when unknown.
    pub line: u32,
}

/// The line tables and inlined calls of one ELF file, for [`CodeLines::frames_at`].
pub struct CodeLines {
    path: String,
    context: addr2line::Context<ArcReader>,
}

impl std::fmt::Debug for CodeLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeLines")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl CodeLines {
    /// Reads `path`, which must carry DWARF (`-g`).
    pub fn load(path: &Path) -> Result<Self, SymbolError> {
        let bytes = std::fs::read(path).map_err(|source| SymbolError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(path, &bytes)
    }

    /// Reads the ELF file `bytes` (`path` names it in errors). Copies its DWARF sections, so
    /// `bytes` may go when this returns.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, SymbolError> {
        let shown = path.display().to_string();
        let file = object::File::parse(bytes).map_err(|e| SymbolError::Object {
            path: shown.clone(),
            why: e.to_string(),
        })?;
        if file.section_by_name(".debug_info").is_none() {
            return Err(SymbolError::NoDebugInfo { path: shown });
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let load_section = |id: gimli::SectionId| -> Result<ArcReader, SymbolError> {
            let data = match file.section_by_name(id.name()) {
                Some(section) => section
                    .uncompressed_data()
                    .map_err(|e| SymbolError::Object {
                        path: shown.clone(),
                        why: format!("section {}: {e}", id.name()),
                    })?
                    .into_owned(),
                None => Vec::new(),
            };
            Ok(EndianArcSlice::new(Arc::from(data), endian))
        };
        let dwarf = gimli::Dwarf::load(load_section)?;
        let context = addr2line::Context::from_dwarf(dwarf).map_err(|e| SymbolError::Dwarf {
            path: shown.clone(),
            why: e.to_string(),
        })?;
        Ok(CodeLines {
            path: shown,
            context,
        })
    }

    /// The lines of source file `name` (a path, or the base name alone; a leading `./` says
    /// nothing) that have code, from the line tables; empty when the program has none of that
    /// file.
    pub fn lines_of_file(
        &self,
        name: &str,
    ) -> Result<std::collections::BTreeSet<u32>, SymbolError> {
        let mut name = name;
        while let Some(rest) = name.strip_prefix("./") {
            name = rest;
        }
        let base = name.rsplit('/').next().unwrap_or(name);
        let names_it = |file: &str| {
            file == name
                || file.rsplit('/').next() == Some(base) && (name == base || file.ends_with(name))
        };
        let mut lines = std::collections::BTreeSet::new();
        let rows =
            self.context
                .find_location_range(0, u64::MAX)
                .map_err(|e| SymbolError::Dwarf {
                    path: self.path.clone(),
                    why: e.to_string(),
                })?;
        for (_, _, location) in rows {
            if let (Some(file), Some(line)) = (location.file, location.line)
                && names_it(file)
            {
                lines.insert(line);
            }
        }
        Ok(lines)
    }

    /// The source positions of the code at link-time address `pc`, innermost first: the line
    /// of `pc` itself in the innermost inlined function, then for each inlined function the
    /// line of its call in the function it was inlined into, out to the compiled function.
    /// Empty when no debug information covers `pc`.
    pub fn frames_at(&self, pc: u64) -> Result<Vec<SourceFrame>, SymbolError> {
        let dwarf_err = |e: gimli::Error| SymbolError::Dwarf {
            path: self.path.clone(),
            why: format!("at address {pc:#x}: {e}"),
        };
        let mut frames = self
            .context
            .find_frames(pc)
            .skip_all_loads()
            .map_err(dwarf_err)?;
        let mut out = Vec::new();
        while let Some(frame) = frames.next().map_err(dwarf_err)? {
            let function = match &frame.function {
                Some(name) => Some(name.raw_name().map_err(dwarf_err)?.into_owned()),
                None => None,
            };
            let (file, line) = match &frame.location {
                Some(l) => (l.file.map(str::to_owned), l.line.unwrap_or(0)),
                None => (None, 0),
            };
            out.push(SourceFrame {
                function,
                file,
                line,
            });
        }
        // A lone frame with neither a function nor a line says nothing.
        if let [only] = out.as_slice()
            && only.function.is_none()
            && only.file.is_none()
        {
            out.clear();
        }
        Ok(out)
    }
}
