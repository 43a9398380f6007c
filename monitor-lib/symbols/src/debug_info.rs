//! Reads one ELF file's global variables and functions: names, scopes and declarations from DWARF, exact sizes from the symbol table.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use gimli::{AttributeValue, EndianSlice, RunTimeEndian};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

use super::SymbolError;
use super::allocation_wrappers::{PointerFunctionInstance, find_wrappers};
use super::array_type::{ArrayDescriptor, ArrayShape, ArrayType, array_type};
use super::derived_components::described_components;
use super::dwarf_types::{Reader, type_size};
use super::element_members::{
    Member, StructureType, element_members, heap_container, held_element_bytes, held_structure,
    name_of, structures_named,
};
use super::overloads::{overload_names, parameter_list};
use super::running_executable::RunningExecutable;

/// A variable with a fixed address: a C global or file-scope static, a Fortran module or COMMON
/// variable, a Rust static.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GlobalVariable {
    /// The name as declared, e.g. `a`.
    pub name: String,
    /// The name with its enclosing scopes, e.g. `gauss_mod::a` or `main::counter`; a C++
    /// namespace or class member by the scopes that declare it (`alpha::table`, `S::table`),
    /// wherever the compiler put its definition; a COMMON member is qualified by its block
    /// alone (`blk::x`), not by the procedures declaring it.
    pub qualified_name: String,
    /// Link-time address; add the load bias for the address in a running process.
    pub address: u64,
    /// Size in bytes: the symbol table's at this address, else the DWARF type's (a COMMON
    /// member's always its type's, the block's symbol covering every member); 0 when neither
    /// says or the array is empty.
    pub size: u64,
    /// Declaring source file, an index into [`DebugInfo::files`].
    pub file: Option<u32>,
    pub line: u32,
    /// What its type says when it is a fixed-size array: element size, dimensions, order.
    pub shape: Option<ArrayShape>,
    /// When it is an ALLOCATABLE or POINTER array: the descriptor `address` holds, whose data
    /// is the array (`size` is then the descriptor's).
    pub descriptor: Option<ArrayDescriptor>,
    /// When it is an array of structures (a C struct, a C++ class, a Fortran derived type): the
    /// element's members in offset order; empty otherwise.
    pub members: Vec<Member>,
    /// When it is a C++ container that keeps its elements on the heap (`vector<double,
    /// std::allocator<double> >`, `unique_ptr<double []>`): its type's name. The variable
    /// itself is then the container's few bytes of pointers, not its elements.
    pub container: Option<String>,
}

/// A variable or parameter holding an array of structures, and that structure
/// ([`DebugInfo::variable_element_types`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableElement {
    /// The variable's name as declared.
    pub name: String,
    /// The file declaring it, as the line tables name it (empty when DWARF does not say).
    pub file: String,
    /// The line declaring it (0 when DWARF does not say).
    pub line: u32,
    /// The structure its array holds.
    pub element: StructureType,
}

/// What a variable's type holds, read from its DWARF entry ([`held_structure`],
/// [`held_element_bytes`]).
type HeldBy<T> = for<'a> fn(
    &gimli::Dwarf<Reader<'a>>,
    &gimli::Unit<Reader<'a>>,
    &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> Option<T>;

/// A variable (name, declaring file and line) and what its type holds.
type Holding<T> = (String, String, u32, T);

/// A function with code: its address range and where it is declared.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Function {
    pub name: String,
    /// Link-time address range `[low_pc, high_pc)`.
    pub low_pc: u64,
    pub high_pc: u64,
    pub file: Option<u32>,
    pub line: u32,
}

/// What one ELF file says about its globals and functions.
#[derive(Debug, Clone, Default)]
pub struct DebugInfo {
    /// Source files named by globals and functions; indices are the file ids of region keys.
    pub files: Vec<String>,
    pub globals: Vec<GlobalVariable>,
    /// Sorted by `low_pc`.
    pub functions: Vec<Function>,
    /// Virtual address of the first loadable segment, needed to compute the load bias.
    pub first_load_vaddr: u64,
    /// Line-table rows (link-time address, file id, line), sorted by address; a row with line 0
    /// ends a sequence. Only read by [`DebugInfo::load_program`].
    pub lines: Vec<LineRow>,
    /// Inlined calls (`DW_TAG_inlined_subroutine`), each code range once. Only read by
    /// [`DebugInfo::load_program`].
    pub inlined: Vec<InlinedCall>,
    /// The names of inlined functions, indexed by [`InlinedCall::function`]. Only read by
    /// [`DebugInfo::load_program`].
    pub inlined_functions: Vec<String>,
    /// The program's allocation wrappers by the default rule (`allocation_wrappers.rs`), by
    /// their declared names, sorted. Only read by [`DebugInfo::load_program`].
    pub allocation_wrappers: Vec<String>,
}

/// Code inlined from a call: `[low_pc, high_pc)` stands for the call at `file`:`line`, nested
/// `depth` levels deep in the compilation unit's tree of entries (deeper is further inlined).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct InlinedCall {
    pub low_pc: u64,
    pub high_pc: u64,
    pub file: u32,
    pub line: u32,
    pub depth: u32,
    /// The inlined function, an index into [`DebugInfo::inlined_functions`] (`u32::MAX` when
    /// DWARF does not name it).
    pub function: u32,
}

/// One position of an inline chain ([`DebugInfo::inline_chain_at`]): a source line and the
/// function whose code it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainPosition<'a> {
    pub file: &'a str,
    pub line: u32,
    /// The function (an inlined one by its declared name, the compiled one as
    /// [`Function::name`]); `None` when DWARF does not say.
    pub function: Option<&'a str>,
}

/// One row of the line table: code from `address` on belongs to `file`:`line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LineRow {
    pub address: u64,
    pub file: u32,
    /// 0 marks the end of a sequence (no source line).
    pub line: u32,
}

/// Which compilation units to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Units {
    /// Every unit; no line tables.
    All,
    /// The program's own units, with line tables: not the Rust standard library, not crates from
    /// the registry, not epcache's runtime itself, which a monitored program links.
    Program,
}

/// Whether a compilation unit (by its `DW_AT_name`) is the program's own code rather than the
/// Rust standard library, a registry crate or epcache's runtime, which every monitored program
/// links and whose debug information can be a hundred times the program's. The standard
/// library's own dependencies are under `/rust/deps/`; its and prebuilt crates' units are
/// named by the bare crate (`core`, `alloc`, `gimli`),
/// where a C, C++ or Fortran unit always names a source file with its extension.
pub fn is_program_unit(name: &str) -> bool {
    let bare_crate = !name.contains('/') && !name.contains('.');
    !(bare_crate
        || name.starts_with("/rustc/")
        || name.starts_with("/rust/deps/")
        || name.contains("/.cargo/registry/")
        || name.contains("/.cargo/git/")
        || RUNTIME_CRATES.iter().any(|c| name.contains(c))
        || RUNTIME_SOURCES.iter().any(|s| name.contains(s)))
}

/// The crates the runtime is made of (`epcache-monitor` and those it links), as a unit may name
/// them.
const RUNTIME_CRATES: [&str; 5] = [
    "epcache_monitor",
    "epcache_sim",
    "epcache_shm",
    "epcache_symbols",
    "epcache_inline",
];

/// Their sources, as cargo names a unit of a path crate (relative to the workspace, or
/// absolute when the runtime is a path dependency of another workspace).
const RUNTIME_SOURCES: [&str; 5] = [
    "monitor-lib/src/",
    "monitor-lib/sim/src/",
    "monitor-lib/shm/src/",
    "monitor-lib/symbols/src/",
    "monitor-lib/inline/src/",
];

impl DebugInfo {
    /// Reads `path`, which must carry DWARF (`-g`).
    pub fn load(path: &Path) -> Result<Self, SymbolError> {
        Self::load_units(path, Units::All)
    }

    /// Reads the monitored program `path` as the runtime needs it: only the program's own
    /// compilation units (see [`is_program_unit`]), with their line tables.
    pub fn load_program(path: &Path) -> Result<Self, SymbolError> {
        Self::load_units(path, Units::Program)
    }

    /// [`Self::load_program`] of the executable this process runs (`path` names it in
    /// errors): mapped rather than read, which is most of what reading it costs at start-up.
    pub fn load_running_program(path: &Path) -> Result<Self, SymbolError> {
        match RunningExecutable::map() {
            Some(mapped) => Self::parse_units(path, mapped.bytes(), Units::Program),
            None => Self::load_program(path),
        }
    }

    fn load_units(path: &Path, units: Units) -> Result<Self, SymbolError> {
        let bytes = std::fs::read(path).map_err(|source| SymbolError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse_units(path, &bytes, units)
    }

    /// The structure types (C structs, C++ classes, Fortran derived types, or typedefs of
    /// them) called `name` in `path`'s DWARF, each once however many units declare it: what a
    /// by-field request over a heap block, whose type DWARF does not know, is told to use.
    /// Declarations without a body are left out.
    pub fn structure_types(path: &Path, name: &str) -> Result<Vec<StructureType>, SymbolError> {
        let mut found = Vec::new();
        each_unit(path, |dwarf, unit| {
            for ty in structures_named(dwarf, unit, name)? {
                if !found.contains(&ty) {
                    found.push(ty);
                }
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// The variables, parameters and structure members (`A->ent`, `grid%cells`) of the program's
    /// own units of `path` (not the runtime's), in any scope and with or without a place, whose
    /// type holds an array of structures (a pointer to one, a Fortran
    /// ALLOCATABLE or assumed-shape array, a C++ `vector`/`unique_ptr`/`array` of one), and
    /// that `wanted` keeps given their name, declaring file and line: what a by-field request
    /// over a heap block one of them holds counts by. Each (name, element) once.
    pub fn variable_element_types(
        path: &Path,
        wanted: impl Fn(&str, &str, u32) -> bool,
    ) -> Result<Vec<VariableElement>, SymbolError> {
        let held = Self::variables_holding(path, wanted, held_structure)?;
        Ok(held
            .into_iter()
            .map(|(name, file, line, element)| VariableElement {
                name,
                file,
                line,
                element,
            })
            .collect())
    }

    /// The element sizes of the arrays the variables, parameters and structure members that
    /// `wanted` keeps hold (as [`DebugInfo::variable_element_types`] finds them, scalars too:
    /// `double *v`, a Fortran ALLOCATABLE of `real(8)`), each (name, size) once: what a
    /// histogram over a heap block labels its buckets by.
    pub fn variable_element_bytes(
        path: &Path,
        wanted: impl Fn(&str, &str, u32) -> bool,
    ) -> Result<Vec<(String, u64)>, SymbolError> {
        let held = Self::variables_holding(path, wanted, held_element_bytes)?;
        Ok(held
            .into_iter()
            .map(|(name, _, _, bytes)| (name, bytes))
            .collect())
    }

    /// The variables, parameters and structure members of the program's own units of `path`
    /// that `wanted` keeps (given their name, declaring file and line) and whose type `held`
    /// reads a `T` from: name, file, line and `T`, each (name, `T`) once.
    fn variables_holding<T: PartialEq>(
        path: &Path,
        wanted: impl Fn(&str, &str, u32) -> bool,
        held: HeldBy<T>,
    ) -> Result<Vec<Holding<T>>, SymbolError> {
        let mut found: Vec<Holding<T>> = Vec::new();
        each_unit(path, |dwarf, unit| {
            let unit_name = unit.name.map(|n| n.to_string_lossy().into_owned());
            if !is_program_unit(unit_name.as_deref().unwrap_or_default()) {
                return Ok(());
            }
            let mut file_ids = HashMap::new();
            let mut entries = unit.entries();
            while let Some(entry) = entries.next_dfs()? {
                if !matches!(
                    entry.tag(),
                    gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter | gimli::DW_TAG_member
                ) {
                    continue;
                }
                let Some(value) = entry.attr_value(gimli::DW_AT_name) else {
                    continue;
                };
                let name = name_of(dwarf, unit, value);
                let (file_index, line) = declaration(dwarf, unit, entry, &mut file_ids)?;
                let declared_in = file_index
                    .and_then(|id| file_ids.iter().find(|&(_, &i)| i == id))
                    .map(|(f, _)| f.clone())
                    .unwrap_or_default();
                if !wanted(&name, &declared_in, line) {
                    continue;
                }
                let Some(element) = held(dwarf, unit, entry) else {
                    continue;
                };
                if !found.iter().any(|v| v.0 == name && v.3 == element) {
                    found.push((name, declared_in, line, element));
                }
            }
            Ok(())
        })?;
        Ok(found)
    }

    fn parse_units(path: &Path, bytes: &[u8], units: Units) -> Result<Self, SymbolError> {
        let shown = path.display().to_string();
        let file = parse_object(bytes, &shown)?;
        let dwarf = load_dwarf(&file, &shown)?;
        let sizes: HashMap<u64, u64> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0)
            .map(|s| (s.address(), s.size()))
            .collect();
        let first_load_vaddr = file.segments().map(|s| s.address()).min().unwrap_or(0);
        let mut out = DebugInfo {
            first_load_vaddr,
            ..DebugInfo::default()
        };
        let mut file_ids: HashMap<String, u32> = HashMap::new();
        let dwarf_err = |e: gimli::Error| SymbolError::Dwarf {
            path: shown.clone(),
            why: e.to_string(),
        };
        let mut pointer_functions = Vec::new();
        let mut inlined_names: HashMap<String, u32> = HashMap::new();
        let mut parameter_lists = Vec::new();
        let mut headers = dwarf.units();
        while let Some(header) = headers.next().map_err(dwarf_err)? {
            let unit = dwarf.unit(header).map_err(dwarf_err)?;
            if units == Units::Program {
                let name = match unit.name {
                    Some(name) => name.to_string_lossy().into_owned(),
                    None => String::new(),
                };
                if !is_program_unit(&name) {
                    continue;
                }
                read_lines(&dwarf, &unit, &mut file_ids, &mut out.lines).map_err(dwarf_err)?;
            }
            let mut program = ProgramParts {
                pointer_functions: &mut pointer_functions,
                inlined_names: &mut inlined_names,
                parameter_lists: &mut parameter_lists,
            };
            read_unit(
                &dwarf,
                &unit,
                &sizes,
                &mut file_ids,
                &mut out,
                units,
                &mut program,
            )
            .map_err(dwarf_err)?;
        }
        out.allocation_wrappers = find_wrappers(&file, &pointer_functions);
        out.inlined_functions = vec![String::new(); inlined_names.len()];
        for (name, id) in inlined_names {
            out.inlined_functions[id as usize] = name;
        }
        // A dual-built object (see `epcache cc`) has two units per source, both declaring its
        // globals at the same addresses: one data structure each.
        let mut seen = HashSet::new();
        out.globals
            .retain(|g| seen.insert((g.qualified_name.clone(), g.address, g.size)));
        let names: Vec<&str> = out.functions.iter().map(|f| f.name.as_str()).collect();
        for (i, name) in overload_names(&names, &parameter_lists) {
            out.functions[i].name = name;
        }
        out.functions.sort_by_key(|f| f.low_pc);
        out.lines.sort_by_key(|row| (row.address, row.line != 0));
        place_undeclared_functions(&mut out.functions, &out.lines);
        out.files = {
            let mut files = vec![String::new(); file_ids.len()];
            for (name, id) in file_ids {
                files[id as usize] = name;
            }
            files
        };
        Ok(out)
    }

    /// The global called `name`, plain (`a`) or qualified (`gauss_mod::a`).
    pub fn global(&self, name: &str) -> Option<&GlobalVariable> {
        self.globals
            .iter()
            .find(|g| g.qualified_name == name)
            .or_else(|| self.globals.iter().find(|g| g.name == name))
    }

    /// The source file and line of the code at link-time address `pc`, from the line tables
    /// ([`DebugInfo::load_program`] reads them).
    pub fn line_at(&self, pc: u64) -> Option<(&str, u32)> {
        let i = self.lines.partition_point(|row| row.address <= pc);
        let row = self.lines.get(i.checked_sub(1)?)?;
        if row.line == 0 {
            return None;
        }
        Some((self.files.get(row.file as usize)?.as_str(), row.line))
    }

    /// The source positions of the code at link-time address `pc`, innermost first: its line
    /// (as [`DebugInfo::line_at`]), then the call of each inlined function that holds it, out to
    /// the function that was compiled.
    pub fn positions_at(&self, pc: u64) -> Vec<(&str, u32)> {
        let Some(first) = self.line_at(pc) else {
            return Vec::new();
        };
        let mut calls: Vec<&InlinedCall> = self
            .inlined
            .iter()
            .filter(|c| c.low_pc <= pc && pc < c.high_pc)
            .collect();
        calls.sort_by_key(|c| std::cmp::Reverse(c.depth));
        let outer = calls.iter().filter_map(|c| {
            let file = self.files.get(c.file as usize)?;
            Some((file.as_str(), c.line))
        });
        std::iter::once(first).chain(outer).collect()
    }

    /// [`DebugInfo::positions_at`] with the function each position's code is in: the first in
    /// the innermost inlined function (or the compiled one), each call in the function it was
    /// inlined into, the last in the compiled function.
    pub fn inline_chain_at(&self, pc: u64) -> Vec<ChainPosition<'_>> {
        let Some((file, line)) = self.line_at(pc) else {
            return Vec::new();
        };
        let mut calls: Vec<&InlinedCall> = self
            .inlined
            .iter()
            .filter(|c| c.low_pc <= pc && pc < c.high_pc)
            .collect();
        calls.sort_by_key(|c| std::cmp::Reverse(c.depth));
        let compiled = self.function_at(pc).map(|f| f.name.as_str());
        let inlined_name = |c: &InlinedCall| {
            self.inlined_functions
                .get(c.function as usize)
                .map(String::as_str)
        };
        let mut chain = vec![ChainPosition {
            file,
            line,
            function: calls.first().map_or(compiled, |c| inlined_name(c)),
        }];
        for (i, call) in calls.iter().enumerate() {
            let Some(file) = self.files.get(call.file as usize) else {
                continue;
            };
            chain.push(ChainPosition {
                file,
                line: call.line,
                function: calls.get(i + 1).map_or(compiled, |c| inlined_name(c)),
            });
        }
        chain
    }

    /// The function whose code holds link-time address `pc`.
    pub fn function_at(&self, pc: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.low_pc <= pc);
        let f = self.functions.get(i.checked_sub(1)?)?;
        (pc < f.high_pc).then_some(f)
    }
}

/// What kind of scope encloses the DIEs below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// A namespace or module: it qualifies the names declared inside.
    Named,
    /// A function: it qualifies its statics, which no declaration elsewhere names.
    Function,
    /// A Fortran COMMON block, declared inside each procedure that uses it: its members are
    /// named by the block alone.
    Common,
}

fn read_unit(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    sizes: &HashMap<u64, u64>,
    file_ids: &mut HashMap<String, u32>,
    out: &mut DebugInfo,
    units: Units,
    program: &mut ProgramParts<'_>,
) -> gimli::Result<()> {
    // The enclosing scopes (namespaces, modules, functions, COMMON blocks) by depth, each with
    // its qualified name (a COMMON block with its own name alone).
    let mut scopes: Vec<(isize, String, Scope)> = Vec::new();
    let mut declarations = UnitDeclarations::default();
    // The lower bound of an array dimension that does not give one: 1 in Fortran, 0 in C.
    let mut lower_default = 0;
    // The storage order of an array that does not say: Fortran's is column-major.
    let mut column_major = false;
    // C++ functions are named with their namespaces and classes (`alpha::A::init`), as
    // profilers show them: two classes' `init` were one ambiguous region name.
    let mut cpp = false;
    let mut entries = unit.entries();
    while let Some(entry) = entries.next_dfs()? {
        let depth = entry.depth();
        while scopes.last().is_some_and(|(d, _, _)| *d >= depth) {
            scopes.pop();
        }
        declarations.seen.visit(dwarf, unit, entry)?;
        let tag = entry.tag();
        let name = entry_name(dwarf, unit, entry)?;
        let in_function = scopes.iter().any(|(_, _, scope)| *scope == Scope::Function);
        match tag {
            gimli::DW_TAG_compile_unit | gimli::DW_TAG_partial_unit => {
                if let Some(AttributeValue::Language(language)) =
                    entry.attr_value(gimli::DW_AT_language)
                {
                    lower_default = default_lower_bound(language);
                    column_major = is_fortran(language);
                    cpp = matches!(
                        language,
                        gimli::DW_LANG_C_plus_plus
                            | gimli::DW_LANG_C_plus_plus_03
                            | gimli::DW_LANG_C_plus_plus_11
                            | gimli::DW_LANG_C_plus_plus_14
                            | gimli::DW_LANG_C_plus_plus_17
                            | gimli::DW_LANG_C_plus_plus_20
                    );
                }
            }
            gimli::DW_TAG_namespace | gimli::DW_TAG_module => {
                if let Some(name) = &name {
                    let path = qualify(scopes.last().map(|(_, path, _)| path.as_str()), name);
                    scopes.push((depth, path, Scope::Named));
                }
            }
            gimli::DW_TAG_common_block => {
                // gfortran names the blank COMMON `__BLNK__`.
                let name = name.clone().unwrap_or_else(|| "__BLNK__".to_owned());
                scopes.push((depth, name, Scope::Common));
            }
            gimli::DW_TAG_variable => {
                let (Some(name), Some(address)) = (name, static_address(dwarf, unit, entry)) else {
                    continue;
                };
                // The compiler's own tables (gfortran's `__vtab_...` and `__def_init_...`) are
                // no data structure of the program's.
                if entry.attr_value(gimli::DW_AT_artificial).is_some() {
                    continue;
                }
                let common = scopes
                    .last()
                    .filter(|(d, _, scope)| *scope == Scope::Common && d + 1 == depth)
                    .map(|(_, block, _)| block.as_str());
                let (size, qualified_name) = match common {
                    // A COMMON block is one ELF symbol (`blk_`) at its first member's address,
                    // sized for the whole block: each member is its own type's size, named by
                    // the block and itself whichever procedure declares it, so that the
                    // block's declarations in several procedures (and units) are one data
                    // structure per member.
                    Some(block) => (
                        type_size(unit, entry, lower_default, 8).unwrap_or(0),
                        format!("{block}::{name}"),
                    ),
                    None => (
                        sizes
                            .get(&address)
                            .copied()
                            .or_else(|| type_size(unit, entry, lower_default, 8))
                            .unwrap_or(0),
                        qualified_name(
                            dwarf,
                            unit,
                            entry,
                            &scopes,
                            in_function,
                            &mut declarations,
                            &name,
                        )?,
                    ),
                };
                let (file, line) = declaration(dwarf, unit, entry, file_ids)?;
                // A C++ namespace's or class's static array is defined outside its scope by a
                // DIE that names its declaration and leaves the type to it.
                let entry = &typed_entry(unit, entry)?;
                let (shape, descriptor) = match array_type(unit, entry, lower_default, column_major)
                {
                    Some(ArrayType::Fixed(shape)) => (Some(shape), None),
                    Some(ArrayType::Described(descriptor)) => (None, Some(descriptor)),
                    None => (None, None),
                };
                let members = element_members(dwarf, unit, entry);
                // A derived-type variable's described components are arrays of their own
                // (`rho%val`), each followed through its descriptor like a module allocatable.
                for component in
                    described_components(dwarf, unit, entry, lower_default, column_major)
                {
                    let Some(at) = address.checked_add(component.offset) else {
                        continue;
                    };
                    out.globals.push(GlobalVariable {
                        name: format!("{name}{}", component.path),
                        qualified_name: format!("{qualified_name}{}", component.path),
                        address: at,
                        size: component.bytes,
                        file,
                        line,
                        shape: None,
                        descriptor: Some(component.descriptor),
                        members: component.members,
                        container: None,
                    });
                }
                out.globals.push(GlobalVariable {
                    name,
                    qualified_name,
                    address,
                    size,
                    file,
                    line,
                    shape,
                    descriptor,
                    members,
                    container: heap_container(dwarf, unit, entry),
                });
            }
            gimli::DW_TAG_subprogram => {
                if let Some(name) = name {
                    // A function gcc split into hot and cold parts has one range per part.
                    let ranges = code_ranges(dwarf, unit, entry)?;
                    // Function-scope statics are qualified by their function, and it by the
                    // namespaces and classes that declare it.
                    let qualified = qualified_name(
                        dwarf,
                        unit,
                        entry,
                        &scopes,
                        in_function,
                        &mut declarations,
                        &name,
                    )?;
                    if !ranges.is_empty() {
                        if units == Units::Program && returns_pointer(unit, entry)? {
                            program.pointer_functions.push(PointerFunctionInstance {
                                name: name.clone(),
                                ranges: ranges.clone(),
                                out_of_line: true,
                            });
                        }
                        let (file, line) = declaration(dwarf, unit, entry, file_ids)?;
                        // A Fortran module procedure by its module, as its module's data
                        // are (`mesh::init` beside `mesh::parts`); a bare name still finds it
                        // where no other region has that name (`epcache_shm::region_names`).
                        let module_procedure = column_major
                            && scopes.last().is_some_and(|(_, _, s)| *s == Scope::Named);
                        // gfortran names an OpenMP body outlined from one by its symbol
                        // (`__mesh_MOD_init._omp_fn.0`): by its module too.
                        let outlined = column_major.then(|| module_symbol_as_name(&name)).flatten();
                        let outlined_cpp = cpp.then(|| cpp_outlined_name(&qualified, &name));
                        let shown = if let Some(Some(outlined)) = &outlined_cpp {
                            outlined
                        } else if cpp || module_procedure {
                            &qualified
                        } else {
                            outlined.as_ref().unwrap_or(&name)
                        };
                        let list = cpp.then(|| parameter_list(dwarf, unit, entry));
                        for (low_pc, high_pc) in ranges {
                            if let Some(list) = &list {
                                program
                                    .parameter_lists
                                    .push((out.functions.len(), list.clone()));
                            }
                            out.functions.push(Function {
                                name: shown.clone(),
                                low_pc,
                                high_pc,
                                file,
                                line,
                            });
                        }
                    }
                    scopes.push((depth, qualified, Scope::Function));
                }
            }
            gimli::DW_TAG_inlined_subroutine if units == Units::Program => {
                let line = match entry.attr_value(gimli::DW_AT_call_line) {
                    Some(value) => value.udata_value().unwrap_or(0) as u32,
                    None => 0,
                };
                let file = match entry.attr_value(gimli::DW_AT_call_file) {
                    Some(AttributeValue::FileIndex(index)) => {
                        file_id(dwarf, unit, index, file_ids)?
                    }
                    Some(value) => match value.udata_value() {
                        Some(index) => file_id(dwarf, unit, index, file_ids)?,
                        None => None,
                    },
                    None => None,
                };
                let ranges = code_ranges(dwarf, unit, entry)?;
                let function = match &name {
                    Some(name) => {
                        if returns_pointer(unit, entry)? {
                            program.pointer_functions.push(PointerFunctionInstance {
                                name: name.clone(),
                                ranges: ranges.clone(),
                                out_of_line: false,
                            });
                        }
                        let next = program.inlined_names.len() as u32;
                        *program.inlined_names.entry(name.clone()).or_insert(next)
                    }
                    None => u32::MAX,
                };
                if let (Some(file), true) = (file, line > 0) {
                    for (low_pc, high_pc) in ranges {
                        out.inlined.push(InlinedCall {
                            low_pc,
                            high_pc,
                            file,
                            line,
                            depth: depth.max(0) as u32,
                            function,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What reading the program's own units gathers beyond [`DebugInfo`]'s tables, across units.
struct ProgramParts<'p> {
    /// Every compiled instance of a function returning a pointer, for the wrapper rule.
    pointer_functions: &'p mut Vec<PointerFunctionInstance>,
    /// Inlined functions' names to their index in [`DebugInfo::inlined_functions`].
    inlined_names: &'p mut HashMap<String, u32>,
    /// Each C++ function's parameter list, by its index in [`DebugInfo::functions`] before
    /// they are sorted, to tell overloads apart (`overloads.rs`).
    parameter_lists: &'p mut Vec<(usize, String)>,
}

/// Whether the function `entry` (a subprogram, or an inlined copy naming its origin) returns a
/// pointer or a C++ reference, seen through typedefs and qualifiers; its type may be on the
/// declaration or abstract instance it links to.
fn returns_pointer<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> gimli::Result<bool> {
    let mut holder = entry.clone();
    let mut ty = None;
    for _ in 0..MAX_LINKS {
        if let Some(AttributeValue::UnitRef(offset)) = holder.attr_value(gimli::DW_AT_type) {
            ty = Some(offset);
            break;
        }
        let Some(next) = link(&holder) else { break };
        holder = unit.entry(next)?;
    }
    // Typedefs and qualifiers, a few deep (a cycle in malformed DWARF ends).
    for _ in 0..8 {
        let Some(offset) = ty else {
            return Ok(false);
        };
        let die = unit.entry(offset)?;
        match die.tag() {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => return Ok(true),
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => {
                ty = match die.attr_value(gimli::DW_AT_type) {
                    Some(AttributeValue::UnitRef(next)) => Some(next),
                    _ => None,
                };
            }
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// The lower bound of an array dimension without `DW_AT_lower_bound` in `language` (DWARF 5,
/// table 7.17): 1 for Fortran, Ada, COBOL, Pascal and the like, 0 otherwise.
fn default_lower_bound(language: gimli::DwLang) -> i64 {
    match language {
        // Newer than gimli's table.
        gimli::DW_LANG_Fortran18 | gimli::DW_LANG_Ada2005 | gimli::DW_LANG_Ada2012 => 1,
        _ => language.default_lower_bound().map_or(0, |b| b as i64),
    }
}

/// Whether `language` is a Fortran, whose arrays are stored column-major.
fn is_fortran(language: gimli::DwLang) -> bool {
    matches!(
        language,
        gimli::DW_LANG_Fortran77
            | gimli::DW_LANG_Fortran90
            | gimli::DW_LANG_Fortran95
            | gimli::DW_LANG_Fortran03
            | gimli::DW_LANG_Fortran08
            | gimli::DW_LANG_Fortran18
    )
}

/// The file id of the unit's line-program file `index`.
fn file_id(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    index: u64,
    file_ids: &mut HashMap<String, u32>,
) -> gimli::Result<Option<u32>> {
    let Some(program) = &unit.line_program else {
        return Ok(None);
    };
    let header = program.header();
    let Some(entry) = header.file(index) else {
        return Ok(None);
    };
    let path = file_path(dwarf, unit, header, entry)?;
    let next = file_ids.len() as u32;
    Ok(Some(*file_ids.entry(path).or_insert(next)))
}

/// Appends the rows of `unit`'s line program to `rows`, with file ids shared with declarations.
fn read_lines(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    file_ids: &mut HashMap<String, u32>,
    rows: &mut Vec<LineRow>,
) -> gimli::Result<()> {
    let Some(program) = unit.line_program.clone() else {
        return Ok(());
    };
    // Paths by the header's file index, resolved once per unit.
    let mut ids: HashMap<u64, u32> = HashMap::new();
    let mut program_rows = program.rows();
    while let Some((header, row)) = program_rows.next_row()? {
        if row.end_sequence() {
            rows.push(LineRow {
                address: row.address(),
                file: 0,
                line: 0,
            });
            continue;
        }
        let Some(line) = row.line() else { continue };
        let index = row.file_index();
        let file = match ids.get(&index) {
            Some(&id) => id,
            None => {
                let Some(entry) = header.file(index) else {
                    continue;
                };
                let path = file_path(dwarf, unit, header, entry)?;
                let next = file_ids.len() as u32;
                let id = *file_ids.entry(path).or_insert(next);
                ids.insert(index, id);
                id
            }
        };
        rows.push(LineRow {
            address: row.address(),
            file,
            line: saturate_line(line.get()),
        });
    }
    Ok(())
}

/// A line-program file entry's path, joined to its directory unless absolute.
fn file_path(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    header: &gimli::LineProgramHeader<Reader<'_>>,
    entry: &gimli::FileEntry<Reader<'_>>,
) -> gimli::Result<String> {
    let mut path = String::new();
    if let Some(dir) = entry.directory(header) {
        path.push_str(&dwarf.attr_string(unit, dir)?.to_string_lossy());
    }
    let name = dwarf.attr_string(unit, entry.path_name())?;
    let name = name.to_string_lossy();
    Ok(if name.starts_with('/') || path.is_empty() {
        name.into_owned()
    } else {
        format!("{path}/{name}")
    })
}

/// The DIE's name, or that of the declaration it completes (C++ and Rust statics, out-of-line
/// definitions) or of the abstract instance it concretises, following at most [`MAX_LINKS`]
/// links (clang's out-of-line copy of an inlined member function names its abstract instance,
/// which names the declaration in the class).
fn entry_name<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> gimli::Result<Option<String>> {
    let name = |value| -> gimli::Result<String> {
        Ok(dwarf
            .attr_string(unit, value)?
            .to_string_lossy()
            .into_owned())
    };
    if let Some(value) = entry.attr_value(gimli::DW_AT_name) {
        return name(value).map(Some);
    }
    let mut next = link(entry);
    for _ in 0..MAX_LINKS {
        let Some(offset) = next else {
            break;
        };
        let target = unit.entry(offset)?;
        if let Some(value) = target.attr_value(gimli::DW_AT_name) {
            return name(value).map(Some);
        }
        next = link(&target);
    }
    Ok(None)
}

/// How many `DW_AT_specification` or `DW_AT_abstract_origin` links are followed from a DIE:
/// enough for a concrete instance of an inlined definition of a declaration, few enough that
/// a cycle in malformed DWARF ends.
const MAX_LINKS: usize = 4;

/// The DIE in the same unit that `entry` completes or concretises, if it names one.
fn link<'a>(entry: &gimli::DebuggingInformationEntry<Reader<'a>>) -> Option<gimli::UnitOffset> {
    [gimli::DW_AT_specification, gimli::DW_AT_abstract_origin]
        .into_iter()
        .find_map(|attr| match entry.attr_value(attr) {
            Some(AttributeValue::UnitRef(offset)) => Some(offset),
            _ => None,
        })
}

/// `entry`, or when it has no type of its own, the first DIE down its links that has one (a
/// definition's declaration).
fn typed_entry<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> gimli::Result<gimli::DebuggingInformationEntry<Reader<'a>>> {
    let mut at = entry.clone();
    for _ in 0..MAX_LINKS {
        if at.attr_value(gimli::DW_AT_type).is_some() {
            return Ok(at);
        }
        let Some(offset) = link(&at) else { break };
        at = unit.entry(offset)?;
    }
    Ok(entry.clone())
}

/// The declaration at the end of `entry`'s links, if it has any.
fn final_declaration<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> gimli::Result<Option<gimli::UnitOffset>> {
    let Some(mut target) = link(entry) else {
        return Ok(None);
    };
    for _ in 1..MAX_LINKS {
        match link(&unit.entry(target)?) {
            Some(next) => target = next,
            None => break,
        }
    }
    Ok(Some(target))
}

/// A gfortran module procedure's symbol (`__mesh_MOD_init...`) as `mesh::init...`: the name
/// regions get here, and the one `epcache_shm::region_names::fortran_symbol` reads a typed
/// symbol as (that crate does not read DWARF, and this one takes no shared-memory protocol).
fn module_symbol_as_name(symbol: &str) -> Option<String> {
    let (module, procedure) = symbol.strip_prefix("__")?.split_once("_MOD_")?;
    (!module.is_empty() && !procedure.is_empty()).then(|| format!("{module}::{procedure}"))
}

/// `name` inside the scope called `outer`.
fn qualify(outer: Option<&str>, name: &str) -> String {
    match outer {
        Some(outer) => format!("{outer}::{name}"),
        None => name.to_owned(),
    }
}

/// The qualified name of the scope that a variable or function `entry` belongs to. Where it is
/// defined says so (clang++ nests `alpha::table`'s definition in the namespace, and a
/// function's statics are its own) unless it completes a declaration made directly in a
/// namespace or class: g++ defines `alpha::table` and `S::table` at the unit's top level, with
/// `DW_AT_specification` pointing into `alpha` and `S`, and an out-of-line member function
/// likewise.
fn outer_scope<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    scopes: &[(isize, String, Scope)],
    in_function: bool,
    declarations: &mut UnitDeclarations,
) -> gimli::Result<Option<String>> {
    let here = scopes.last().map(|(_, path, _)| path.clone());
    if in_function {
        return Ok(here);
    }
    let Some(target) = final_declaration(unit, entry)? else {
        return Ok(here);
    };
    Ok(declarations
        .scope_of(dwarf, unit, target, entry.offset())?
        .or(here))
}

/// `name` qualified by the scope [`outer_scope`] finds for `entry`.
fn qualified_name<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    scopes: &[(isize, String, Scope)],
    in_function: bool,
    declarations: &mut UnitDeclarations,
    name: &str,
) -> gimli::Result<String> {
    let outer = outer_scope(dwarf, unit, entry, scopes, in_function, declarations)?;
    Ok(qualify(outer.as_deref(), name))
}

/// Which namespace or class each declaration of a unit is made in, for the definitions that
/// are placed elsewhere and point back to it.
#[derive(Debug, Default)]
struct UnitDeclarations {
    /// The declarations before the DIE being read, gathered as it goes.
    seen: Declarations,
    /// All of the unit's, read on the first link forwards (clang++ emits a class after the
    /// definitions of its static members).
    whole: Option<Declarations>,
}

impl UnitDeclarations {
    /// The qualified name of the namespace or class directly holding the DIE at `target`, seen
    /// from the DIE at `here`; `None` when it is declared anywhere else.
    fn scope_of<'a>(
        &mut self,
        dwarf: &gimli::Dwarf<Reader<'a>>,
        unit: &gimli::Unit<Reader<'a>>,
        target: gimli::UnitOffset,
        here: gimli::UnitOffset,
    ) -> gimli::Result<Option<String>> {
        if let Some(path) = self.seen.scope_of(target) {
            return Ok(Some(path.to_owned()));
        }
        if target <= here {
            return Ok(None);
        }
        if self.whole.is_none() {
            let mut whole = Declarations::default();
            let mut entries = unit.entries();
            while let Some(entry) = entries.next_dfs()? {
                whole.visit(dwarf, unit, entry)?;
            }
            self.whole = Some(whole);
        }
        Ok(self
            .whole
            .as_ref()
            .and_then(|whole| whole.scope_of(target))
            .map(str::to_owned))
    }
}

/// Namespaces and classes with the DIEs declared directly inside them, read in unit order.
#[derive(Debug, Default)]
struct Declarations {
    /// Qualified names of namespaces and classes, e.g. `alpha::T`.
    paths: Vec<String>,
    /// The index in `paths` of the namespace or class directly holding each declaration.
    inside: HashMap<gimli::UnitOffset, usize>,
    /// The namespaces and classes open at the current DIE: depth, index in `paths`.
    open: Vec<(isize, usize)>,
    /// The named functions open at the current DIE: depth, qualified name, and how many
    /// lambdas of each parameter list they declared so far.
    functions: Vec<(isize, String, HashMap<String, u32>)>,
}

impl Declarations {
    fn scope_of(&self, target: gimli::UnitOffset) -> Option<&str> {
        let index = *self.inside.get(&target)?;
        self.paths.get(index).map(String::as_str)
    }

    /// Takes in the next DIE in depth-first order.
    fn visit<'a>(
        &mut self,
        dwarf: &gimli::Dwarf<Reader<'a>>,
        unit: &gimli::Unit<Reader<'a>>,
        entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    ) -> gimli::Result<()> {
        let depth = entry.depth();
        while self.open.last().is_some_and(|(d, _)| *d >= depth) {
            self.open.pop();
        }
        while self.functions.last().is_some_and(|(d, _, _)| *d >= depth) {
            self.functions.pop();
        }
        let tag = entry.tag();
        let names_a_scope = matches!(
            tag,
            gimli::DW_TAG_namespace
                | gimli::DW_TAG_module
                | gimli::DW_TAG_structure_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_interface_type
        );
        let declares = names_a_scope
            || matches!(
                tag,
                gimli::DW_TAG_variable | gimli::DW_TAG_member | gimli::DW_TAG_subprogram
            );
        let parent = self
            .open
            .last()
            .filter(|(d, _)| d + 1 == depth)
            .map(|(_, index)| *index);
        if let (Some(parent), true) = (parent, declares) {
            self.inside.insert(entry.offset(), parent);
        }
        let function = tag == gimli::DW_TAG_subprogram;
        if !names_a_scope && !function {
            return Ok(());
        }
        // The innermost open function, when it is nearer than any open class or namespace.
        let in_function = self
            .functions
            .last()
            .filter(|(d, _, _)| self.open.last().is_none_or(|(o, _)| o < d))
            .is_some();
        let name = match entry_name(dwarf, unit, entry)? {
            Some(name) => name,
            None if names_a_scope && in_function => match lambda_parameters(dwarf, unit, entry) {
                Some(list) => self.lambda_name(list),
                None => return Ok(()),
            },
            None => return Ok(()),
        };
        // g++ defines a nested class declared `struct Inner;` inside `Outer` outside it, with a
        // link back to the declaration.
        let declared_in = match final_declaration(unit, entry)? {
            Some(target) => self.inside.get(&target).copied(),
            None => None,
        };
        let outer = declared_in.or(parent).and_then(|i| self.paths.get(i));
        let outer = match (outer, self.functions.last()) {
            (None, Some((_, function, _))) if in_function && names_a_scope => Some(function),
            (outer, _) => outer,
        };
        let path = qualify(outer.map(String::as_str), &name);
        if function {
            self.functions.push((depth, path, HashMap::new()));
            return Ok(());
        }
        self.paths.push(path);
        self.open.push((depth, self.paths.len() - 1));
        Ok(())
    }

    /// The name a demangler gives the next lambda of the innermost open function with
    /// parameter list `list`: `{lambda(int)#2}` for its second of `(int)` (the Itanium ABI
    /// numbers closures per function and signature).
    fn lambda_name(&mut self, list: String) -> String {
        let count = self.functions.last_mut().map_or(1, |(_, _, lambdas)| {
            let n = lambdas.entry(list.clone()).or_insert(0);
            *n += 1;
            *n
        });
        format!("{{lambda{list}#{count}}}")
    }
}

/// The parameter list of the `operator()` of the unnamed class `entry` (`(int)`, without a
/// trailing `const`), when it has one: what makes it a lambda's closure type.
fn lambda_parameters<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> Option<String> {
    let mut tree = unit.entries_tree(Some(entry.offset())).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let d = child.entry();
        if d.tag() != gimli::DW_TAG_subprogram {
            continue;
        }
        if entry_name(dwarf, unit, d).ok()?.as_deref() == Some("operator()") {
            let list = parameter_list(dwarf, unit, d);
            return Some(list.strip_suffix(" const").unwrap_or(&list).to_owned());
        }
    }
    None
}

/// The fixed address of a variable whose location is `DW_OP_addr` (or `DW_OP_addrx`),
/// optionally followed by `DW_OP_plus_uconst` (how some compilers place a COMMON block's later
/// members). Any other expression (a dereference, a thread-local offset) is no fixed address,
/// nor is one whose offset carries past the top of the address space.
fn static_address(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'_>>,
) -> Option<u64> {
    let AttributeValue::Exprloc(expr) = entry.attr_value(gimli::DW_AT_location)? else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    let mut address = match ops.next().ok()?? {
        gimli::Operation::Address { address } => address,
        gimli::Operation::AddressIndex { index } => dwarf.address(unit, index).ok()?,
        _ => return None,
    };
    if let Some(op) = ops.next().ok()? {
        let gimli::Operation::PlusConstant { value } = op else {
            return None;
        };
        address = address.checked_add(value)?;
        if ops.next().ok()?.is_some() {
            return None;
        }
    }
    Some(address)
}

/// The code address ranges of a DIE (`DW_AT_low_pc`/`DW_AT_high_pc` or `DW_AT_ranges`), empty
/// ones left out. A `DW_AT_high_pc` offset that would carry past the top of the address space
/// gives no range: gimli's `die_ranges` adds it unchecked, which panics in a debug build.
fn code_ranges<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> gimli::Result<Vec<(u64, u64)>> {
    let mut ranges = Vec::new();
    if let Some(value) = entry.attr_value(gimli::DW_AT_ranges) {
        if let Some(mut list) = dwarf.attr_ranges(unit, value)? {
            while let Some(range) = list.next()? {
                if range.end > range.begin {
                    ranges.push((range.begin, range.end));
                }
            }
        }
        return Ok(ranges);
    }
    let low = match entry.attr_value(gimli::DW_AT_low_pc) {
        Some(value) => dwarf.attr_address(unit, value)?,
        None => None,
    };
    let Some(low) = low else {
        return Ok(ranges);
    };
    let high = match entry.attr_value(gimli::DW_AT_high_pc) {
        Some(AttributeValue::Udata(length)) => low.checked_add(length),
        Some(value) => dwarf.attr_address(unit, value)?,
        None => None,
    };
    if let Some(high) = high.filter(|&high| high > low) {
        ranges.push((low, high));
    }
    Ok(ranges)
}

/// g++ names an OpenMP body outlined from a function by the function's linkage name
/// (`_ZN6solver4Axpy3runERKSt6vectorIdSaIdEEd._omp_fn.0`) and declares it inside that function,
/// so its qualified name repeats the function's (`solver::Axpy::run::_ZN6...._omp_fn.0`): named
/// `solver::Axpy::run._omp_fn.0`, as gcc names a C function's (`total._omp_fn.0`), so that the
/// runtime finds the function whose team it counts. `None` for any other function.
fn cpp_outlined_name(qualified: &str, name: &str) -> Option<String> {
    let at = name.find("._omp_fn.")?;
    if !name.starts_with("_Z") {
        return None;
    }
    let function = qualified.strip_suffix(name)?.strip_suffix("::")?;
    (!function.is_empty()).then(|| format!("{function}{}", &name[at..]))
}

/// The declaring file (as a file id) and line./// The declaring file (as a file id) and line.
fn declaration<'a>(
    dwarf: &gimli::Dwarf<Reader<'a>>,
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    file_ids: &mut HashMap<String, u32>,
) -> gimli::Result<(Option<u32>, u32)> {
    let decl =
        |entry: &gimli::DebuggingInformationEntry<Reader<'a>>, attr| match entry.attr_value(attr) {
            Some(AttributeValue::Udata(v)) => Some(v),
            Some(AttributeValue::Data1(v)) => Some(u64::from(v)),
            Some(AttributeValue::Data2(v)) => Some(u64::from(v)),
            Some(AttributeValue::Data4(v)) => Some(u64::from(v)),
            Some(AttributeValue::FileIndex(v)) => Some(v),
            _ => None,
        };
    let mut line = decl(entry, gimli::DW_AT_decl_line);
    let mut index = decl(entry, gimli::DW_AT_decl_file);
    // An out-of-line instance of an inlined function (or a definition of a declared one)
    // declares nothing itself: its abstract origin (or specification) does.
    let mut linked = entry.clone();
    for _ in 0..3 {
        if index.is_some() {
            break;
        }
        let link = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
            .into_iter()
            .find_map(|attr| match linked.attr_value(attr) {
                Some(AttributeValue::UnitRef(offset)) => Some(offset),
                _ => None,
            });
        let Some(offset) = link else { break };
        linked = unit.entry(offset)?;
        line = line.or(decl(&linked, gimli::DW_AT_decl_line));
        index = decl(&linked, gimli::DW_AT_decl_file);
    }
    let line = line.map_or(0, saturate_line);
    let Some(index) = index else {
        return Ok((None, line));
    };
    Ok((file_id(dwarf, unit, index, file_ids)?, line))
}

/// Gives a function that declares no source position (one the compiler made: gcc's OpenMP
/// outlined bodies `f._omp_fn.N` are `DW_AT_artificial` with no `DW_AT_decl_*`) the file and
/// line of the line-table row its code starts in, so each has a region key of its own rather
/// than all sharing (none, 0). `lines` is sorted by address; without line tables nothing changes.
fn place_undeclared_functions(functions: &mut [Function], lines: &[LineRow]) {
    for f in functions.iter_mut().filter(|f| f.file.is_none()) {
        let starts_in = lines
            .partition_point(|row| row.address <= f.low_pc)
            .checked_sub(1)
            .map(|i| lines[i]);
        if let Some(row) = starts_in.filter(|row| row.line != 0) {
            f.file = Some(row.file);
            f.line = row.line;
        }
    }
}

/// A source line as the `u32` the tables keep; a line past it (only in malformed DWARF) is
/// kept as the largest rather than wrapped to a small one.
fn saturate_line(line: u64) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// Calls `read` on every compilation unit of `path`'s DWARF, in order; a DWARF error names
/// the file.
fn each_unit(
    path: &Path,
    mut read: impl FnMut(&gimli::Dwarf<Reader<'_>>, &gimli::Unit<Reader<'_>>) -> gimli::Result<()>,
) -> Result<(), SymbolError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| SymbolError::Io {
        path: shown.clone(),
        source,
    })?;
    let file = parse_object(&bytes, &shown)?;
    let dwarf = load_dwarf(&file, &shown)?;
    let dwarf_err = |e: gimli::Error| SymbolError::Dwarf {
        path: shown.clone(),
        why: e.to_string(),
    };
    let mut headers = dwarf.units();
    while let Some(header) = headers.next().map_err(dwarf_err)? {
        let unit = dwarf.unit(header).map_err(dwarf_err)?;
        read(&dwarf, &unit).map_err(dwarf_err)?;
    }
    Ok(())
}

/// `bytes` as an object file that carries DWARF (`shown` names it in errors).
fn parse_object<'a>(bytes: &'a [u8], shown: &str) -> Result<object::File<'a>, SymbolError> {
    let file = object::File::parse(bytes).map_err(|e| SymbolError::Object {
        path: shown.to_owned(),
        why: e.to_string(),
    })?;
    if file.section_by_name(".debug_info").is_none() {
        return Err(SymbolError::NoDebugInfo {
            path: shown.to_owned(),
        });
    }
    Ok(file)
}

/// The DWARF sections of `file`, read in place.
fn load_dwarf<'a>(
    file: &object::File<'a>,
    shown: &str,
) -> Result<gimli::Dwarf<Reader<'a>>, SymbolError> {
    let endian = if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let load_section = |id: gimli::SectionId| -> Result<Reader<'a>, SymbolError> {
        let data = match file.section_by_name(id.name()) {
            Some(section) => section.data().map_err(|e| SymbolError::Object {
                path: shown.to_owned(),
                why: e.to_string(),
            })?,
            None => &[],
        };
        Ok(EndianSlice::new(data, endian))
    };
    gimli::Dwarf::load(load_section)
}

#[cfg(test)]
mod tests {
    use super::{
        Function, LineRow, cpp_outlined_name, default_lower_bound, is_program_unit,
        place_undeclared_functions,
    };

    /// Functions that declare no position take their first code row's; declared ones keep
    /// theirs, and code in a gap of the line table (after an end of sequence) stays unplaced.
    #[test]
    fn a_cpp_outlined_body_is_named_after_its_function() {
        let mangled = "_ZN6solver4Axpy3runERKSt6vectorIdSaIdEEd._omp_fn.0";
        assert_eq!(
            cpp_outlined_name(&format!("solver::Axpy::run::{mangled}"), mangled).as_deref(),
            Some("solver::Axpy::run._omp_fn.0")
        );
        let free = "_Z5totalRKSt6vectorIdSaIdEE._omp_fn.1";
        assert_eq!(
            cpp_outlined_name(&format!("total::{free}"), free).as_deref(),
            Some("total._omp_fn.1")
        );
        // Not nested in its function, or no outlined body at all.
        assert_eq!(cpp_outlined_name(free, free), None);
        assert_eq!(cpp_outlined_name("ns::f", "f"), None);
    }

    #[test]
    fn undeclared_functions_are_placed_by_their_first_line_row() {
        let function = |name: &str, low_pc, file, line| Function {
            name: name.to_owned(),
            low_pc,
            high_pc: low_pc + 0x40,
            file,
            line,
        };
        let mut functions = vec![
            function("axpy", 0x1000, Some(0), 11),
            function("axpy._omp_fn.0", 0x1100, None, 0),
            function("touch._omp_fn.0", 0x1208, None, 0),
            function("in_a_gap", 0x2000, None, 0),
        ];
        let row = |address, file, line| LineRow {
            address,
            file,
            line,
        };
        let lines = [
            row(0x1000, 0, 11),
            row(0x1100, 0, 13),
            row(0x1110, 0, 14),
            row(0x1200, 1, 18),
            row(0x1300, 0, 0),
        ];
        place_undeclared_functions(&mut functions, &lines);
        let placed: Vec<_> = functions.iter().map(|f| (f.file, f.line)).collect();
        assert_eq!(
            placed,
            [(Some(0), 11), (Some(0), 13), (Some(1), 18), (None, 0)]
        );
    }

    #[test]
    fn fortran_arrays_start_at_one_c_and_rust_at_zero() {
        for fortran in [
            gimli::DW_LANG_Fortran77,
            gimli::DW_LANG_Fortran90,
            gimli::DW_LANG_Fortran95,
            gimli::DW_LANG_Fortran03,
            gimli::DW_LANG_Fortran08,
            gimli::DW_LANG_Fortran18,
        ] {
            assert_eq!(default_lower_bound(fortran), 1, "{fortran}");
        }
        for zero in [
            gimli::DW_LANG_C99,
            gimli::DW_LANG_C11,
            gimli::DW_LANG_C_plus_plus_14,
            gimli::DW_LANG_Rust,
            gimli::DwLang(0x7fff),
        ] {
            assert_eq!(default_lower_bound(zero), 0, "{zero}");
        }
    }

    #[test]
    fn only_the_programs_own_units_count() {
        for own in [
            "mm.c",
            "/home/u/src/solver.f90",
            "examples/rust-capture/gauss.rs/@/gauss.abc123",
            "./kernel.cpp",
        ] {
            assert!(is_program_unit(own), "{own}");
        }
        for runtime in [
            "core",
            "alloc",
            "gimli",
            "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/lib.rs",
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/memchr-2.7.4/src/lib.rs",
            "monitor-lib/src/lib.rs/@/ecboq9l29i2fc8hi24on5j1cf",
            "monitor-lib/sim/src/lib.rs/@/0ux8ccgyi3kd6wqrm3pbbn8ca",
            "monitor-lib/shm/src/lib.rs/@/8f6cvsbk3u2ddnwrk0h9xq6hn",
            "/home/u/epcache/monitor-lib/symbols/src/lib.rs/@/2c4fqkyq8c7f5ynnoqhn3yu0o",
            "monitor-lib/inline/src/lib.rs/@/1wv3b7sgbmb0qiy6pmf3z4k11",
            "epcache_monitor",
            "epcache_sim",
            "/rust/deps/memchr-2.7.6/src/lib.rs/@/memchr.9642f0ce76a98c65-cgu.0",
        ] {
            assert!(!is_program_unit(runtime), "{runtime}");
        }
    }
}
