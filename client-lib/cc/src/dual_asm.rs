//! Dual compilation for `epcache cc`: one assembly file holding every function twice, the plain
//! copy the program runs while nothing is armed and the instrumented (TSan-hooked) copy it runs
//! while a tool or the standalone report wants accesses, chosen at each function entry.
//!
//! Why: a call per load and store costs far more than its own instructions (it blocks
//! vectorisation and keeps values out of registers), so a program built only instrumented runs
//! many times slower than the plain build even when nothing is monitored. With both copies, an
//! idle program pays three instructions per function call.
//!
//! How: the compiler writes the same source twice with `-S`, plainly and with
//! `-fsanitize=thread`. This module keeps the plain listing whole and appends the instrumented
//! one with
//! - every function definition renamed `f` → `f.captured` (local); calls inside it still name `f`,
//!   so each callee chooses its own copy at its entry;
//! - every assembler-local label `.Lx` renamed `.Lepcache_x`, so both copies' code, constants,
//!   jump tables and debug information coexist (the instrumented copy keeps its own DWARF unit,
//!   which gives its code the same functions and source lines as the plain one);
//! - the definitions of named data removed, so both copies read and write the same variables:
//!   the listings must define the same writable data in the same order, or the merge is declined.
//!   Read-only compiler tables with numbered names (`CSWTCH.7`) stay private to each copy instead,
//!   because their numbering may differ between the two compilations.
//!
//! Each plain function then starts with a look at the runtime's gate word
//! ([`GATE_SYMBOL`], a pointer to a nonzero word while anything is armed) and jumps to its
//! instrumented copy when it is open. A function that calls a region marker always takes the
//! instrumented copy: a marker region armed while the function runs must see its accesses, and a
//! copy is chosen only at entry.
//!
//! C++ inline functions live in COMDAT groups: the instrumented copy goes into the same section
//! and group as the plain one (the assembler names a section by both), so the linker keeps or
//! drops the two copies together. Aliases (`.set`, C++'s complete-object constructors) must be
//! the same in both listings and name the plain copy.
//!
//! Anything this module does not understand (aliases that differ, section stacks, indirect
//! functions, named labels that are not functions, `.symver`) declines the merge, and `epcache cc`
//! then builds the file instrumented only, as before: slower when idle, never wrong.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use epcache_inline::emit::{Sites, hooked_access};

use crate::asm_tokens::{Token, is_symbol_char, is_symbol_start, symbols, tokens};
use crate::carried_registers;

/// Suffix of the instrumented copy of a function.
const CAPTURED_SUFFIX: &str = ".captured";
/// The runtime's gate: a pointer to a 32-bit word, nonzero while the instrumented copies must run.
const GATE_SYMBOL: &str = "epcache_capture_gate";
/// What assembler-local labels of the instrumented copy start with instead of `.L`.
const LOCAL_PREFIX: &str = ".Lepcache_";
/// The runtime entry points of region markers (C macros and the Fortran module call them).
const MARKER_ENTRY_POINTS: &[&str] = &["epcache_region_begin", "epcache_region_end"];

/// Why two listings were not merged; `epcache cc` then compiles the file instrumented only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Declined(pub(crate) String);

fn declined(why: impl Into<String>) -> Declined {
    Declined(why.into())
}

/// The merged listing and what it holds.
#[derive(Debug)]
pub(crate) struct Merged {
    pub(crate) assembly: String,
    /// Functions that choose their copy at entry.
    pub(crate) dual: usize,
    /// Functions that always run instrumented (they call region markers).
    pub(crate) always_captured: usize,
    /// Access hook calls given the inline repeat-hit test.
    pub(crate) inlined: usize,
    /// Those of them that find the tag word's mask left in a register by an earlier one.
    pub(crate) carried: usize,
}

/// Merges the plain and instrumented listings of one source file. `position_independent` code
/// (`-fPIC`, for shared libraries) reaches the gate through the GOT. With `inline_capture`,
/// the instrumented copy tests for repeat hits inline before its access hook calls
/// (`epcache_inline::emit`), except in position-independent or Intel-syntax listings.
pub(crate) fn merge(
    plain: &str,
    instrumented: &str,
    position_independent: bool,
    inline_capture: bool,
) -> Result<Merged, Declined> {
    let plain = Listing::parse(plain).map_err(|Declined(why)| declined(format!("plain: {why}")))?;
    let instrumented = Listing::parse(instrumented)
        .map_err(|Declined(why)| declined(format!("instrumented: {why}")))?;
    let plan = Plan::new(&plain, &instrumented)?;
    let mut out = String::with_capacity(plain.lines.len() * 24 + instrumented.lines.len() * 28);
    let (dual, always_captured) = write_plain(&plain, &plan, position_independent, &mut out);
    out.push_str("# epcache: the instrumented copy of every function\n");
    let inline_capture = inline_capture
        && !position_independent
        && !instrumented.lines.iter().any(|l| {
            matches!(
                statement(l),
                Statement::Directive {
                    name: ".intel_syntax",
                    ..
                }
            )
        });
    let mut sites = inline_capture.then(Sites::default);
    write_instrumented(&instrumented, &plan, sites.as_mut(), &mut out);
    Ok(Merged {
        assembly: out,
        dual,
        always_captured,
        inlined: sites.as_ref().map_or(0, |s| s.count()),
        carried: sites.as_ref().map_or(0, |s| s.carried()),
    })
}

/// What kind of bytes a section holds, which decides what the merge does with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionKind {
    Code,
    ReadOnly,
    Writable,
    Debug,
    Other,
}

/// One assembler statement, as far as the merge needs to tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Statement<'a> {
    Blank,
    Label(&'a str),
    Directive { name: &'a str, operands: &'a str },
    Instruction { operands: &'a str },
}

fn statement(line: &str) -> Statement<'_> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Statement::Blank;
    }
    if let Some(name) = trimmed.strip_suffix(':')
        && name.starts_with(is_symbol_start)
        && name.chars().all(is_symbol_char)
    {
        return Statement::Label(name);
    }
    let (head, rest) = trimmed
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((trimmed, &trimmed[trimmed.len()..]));
    if head.starts_with('.') {
        Statement::Directive {
            name: head,
            operands: rest.trim(),
        }
    } else {
        Statement::Instruction {
            operands: rest.trim(),
        }
    }
}

/// Where `operands` (a slice [`statement`] took from `line`) starts in `line`.
fn operands_offset(line: &str, operands: &str) -> usize {
    operands.as_ptr().addr() - line.as_ptr().addr()
}

fn is_local_label(name: &str) -> bool {
    name.starts_with(".L")
}

/// The first operand of a directive: the symbol of `.type f, @function`, `.size f, .-f`, ...
fn first_operand(operands: &str) -> &str {
    operands.split(',').next().unwrap_or("").trim()
}

/// The kind a section switch moves to, or `None` when `line` switches no section.
fn section_switch(name: &str, operands: &str) -> Result<Option<SectionKind>, Declined> {
    let kind_by_name = |section: &str| {
        if section.starts_with(".text") {
            SectionKind::Code
        } else if section.starts_with(".debug") {
            SectionKind::Debug
        } else if section.starts_with(".rodata") {
            SectionKind::ReadOnly
        } else if [
            ".data",
            ".bss",
            ".tdata",
            ".tbss",
            ".init_array",
            ".fini_array",
        ]
        .iter()
        .any(|p| section.starts_with(p))
        {
            SectionKind::Writable
        } else {
            SectionKind::Other
        }
    };
    match name {
        ".text" => Ok(Some(SectionKind::Code)),
        ".data" | ".bss" => Ok(Some(SectionKind::Writable)),
        ".section" => {
            let mut fields = operands.split(',');
            let section = fields.next().unwrap_or("").trim();
            let flags = fields.next().map(|f| f.trim().trim_matches('"'));
            let kind = match flags {
                _ if section.starts_with(".debug") => SectionKind::Debug,
                Some(f) if f.contains('x') => SectionKind::Code,
                Some(f) if f.contains('w') => SectionKind::Writable,
                Some(f) if f.contains('a') => SectionKind::ReadOnly,
                Some(_) => SectionKind::Other,
                None => kind_by_name(section),
            };
            Ok(Some(kind))
        }
        ".previous" | ".pushsection" | ".popsection" | ".subsection" => {
            Err(declined(format!("the section stack directive `{name}`")))
        }
        _ => Ok(None),
    }
}

/// Directives that name a symbol's properties ahead of its label.
const PREFIX_DIRECTIVES: &[&str] = &[
    ".align",
    ".p2align",
    ".balign",
    ".type",
    ".size",
    ".globl",
    ".global",
    ".local",
    ".weak",
    ".hidden",
    ".protected",
    ".internal",
];

/// Directives the merge cannot carry across copies (aliases, versions, indirect functions).
const UNSUPPORTED_DIRECTIVES: &[&str] = &[".equ", ".equiv", ".symver", ".weakref"];

/// A named data definition and the lines that make it, from its alignment to its last byte.
#[derive(Debug, Clone)]
struct DataItem<'a> {
    name: &'a str,
    kind: SectionKind,
    lines: std::ops::Range<usize>,
    /// Assembler-local labels defined inside it (they disappear with it).
    local_labels: Vec<&'a str>,
}

/// One parsed listing.
#[derive(Debug)]
struct Listing<'a> {
    lines: Vec<&'a str>,
    kinds: Vec<SectionKind>,
    /// The section each line is in, by name (`.text` for `.text`, etc.).
    sections: Vec<&'a str>,
    functions: Vec<&'a str>,
    /// Where each function's label is.
    function_labels: HashMap<&'a str, usize>,
    /// Functions whose code calls a region marker.
    calls_markers: HashSet<&'a str>,
    data: Vec<DataItem<'a>>,
    commons: Vec<&'a str>,
    globals: HashSet<&'a str>,
    /// `.set ALIAS, TARGET` (C++ complete-object constructors and destructors), with its line.
    aliases: HashMap<&'a str, (&'a str, usize)>,
}

impl<'a> Listing<'a> {
    fn parse(text: &'a str) -> Result<Self, Declined> {
        let lines: Vec<&str> = text.lines().collect();
        let mut kinds = Vec::with_capacity(lines.len());
        let mut kind = SectionKind::Code;
        let mut section = ".text";
        let mut sections = Vec::with_capacity(lines.len());
        let mut function_types = HashSet::new();
        let mut globals = HashSet::new();
        let mut commons = Vec::new();
        let mut aliases = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            if let Statement::Directive { name, operands } = statement(line) {
                if let Some(next) = section_switch(name, operands)? {
                    kind = next;
                    section = if name == ".section" {
                        first_operand(operands)
                    } else {
                        name
                    };
                }
                if UNSUPPORTED_DIRECTIVES.contains(&name) {
                    return Err(declined(format!("the directive `{}`", line.trim())));
                }
                let symbol = first_operand(operands);
                match name {
                    ".type" if operands.contains("@gnu_indirect_function") => {
                        return Err(declined(format!("the indirect function {symbol}")));
                    }
                    ".type" if operands.contains("@function") => {
                        function_types.insert(symbol);
                    }
                    ".globl" | ".global" | ".weak" => {
                        globals.insert(symbol);
                    }
                    ".comm" | ".lcomm" => commons.push(symbol),
                    ".set" => {
                        let target = operands.split(',').nth(1).unwrap_or("").trim();
                        aliases.insert(symbol, (target, i));
                    }
                    // The assembler keeps one line table per object, and the two compilations
                    // number their source files differently: each listing must write its own
                    // (`-gno-as-loc-support`, as `epcache cc` asks).
                    ".loc" => {
                        return Err(declined(
                            "`.loc` line directives (compile with -gno-as-loc-support)",
                        ));
                    }
                    _ => {}
                }
            }
            kinds.push(kind);
            sections.push(section);
        }
        let mut listing = Listing {
            lines,
            kinds,
            sections,
            functions: Vec::new(),
            function_labels: HashMap::new(),
            calls_markers: HashSet::new(),
            data: Vec::new(),
            commons,
            globals,
            aliases,
        };
        listing.find_functions(&function_types)?;
        listing.find_data();
        Ok(listing)
    }

    fn find_functions(&mut self, function_types: &HashSet<&'a str>) -> Result<(), Declined> {
        let mut current: Option<&str> = None;
        for (i, line) in self.lines.iter().enumerate() {
            if self.kinds[i] != SectionKind::Code {
                continue;
            }
            match statement(line) {
                Statement::Label(name) if !is_local_label(name) => {
                    if !function_types.contains(name) {
                        return Err(declined(format!(
                            "the named code label `{name}` that is not a function (inline assembly?)"
                        )));
                    }
                    if self.function_labels.insert(name, i).is_some() {
                        return Err(declined(format!("the function {name} defined twice")));
                    }
                    self.functions.push(name);
                    current = Some(name);
                }
                Statement::Instruction { operands } => {
                    if let Some(f) = current
                        && symbols(operands).any(|s| MARKER_ENTRY_POINTS.contains(&s))
                    {
                        self.calls_markers.insert(f);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Splits the data sections into items, each a named symbol with the directives before it
    /// and the bytes after it.
    fn find_data(&mut self) {
        let mut item: Option<DataItem<'a>> = None;
        let mut prefix_start: Option<usize> = None;
        for i in 0..self.lines.len() {
            let kind = self.kinds[i];
            let statement = statement(self.lines[i]);
            let in_data = !matches!(kind, SectionKind::Code | SectionKind::Debug);
            let switches = matches!(statement, Statement::Directive { name, operands }
                if section_switch(name, operands).ok().flatten().is_some());
            if switches || !in_data {
                if let Some(mut done) = item.take() {
                    done.lines.end = prefix_start.unwrap_or(i);
                    self.data.push(done);
                }
                prefix_start = None;
                continue;
            }
            match statement {
                Statement::Directive { name, .. } if PREFIX_DIRECTIVES.contains(&name) => {
                    prefix_start.get_or_insert(i);
                }
                Statement::Label(name) if is_local_label(name) => {
                    if let Some(current) = item.as_mut()
                        && prefix_start.is_none()
                    {
                        current.local_labels.push(name);
                    } else if let Some(mut done) = item.take() {
                        done.lines.end = prefix_start.unwrap_or(i);
                        self.data.push(done);
                        prefix_start = None;
                    } else {
                        prefix_start = None;
                    }
                }
                Statement::Label(name) => {
                    if let Some(mut done) = item.take() {
                        done.lines.end = prefix_start.unwrap_or(i);
                        self.data.push(done);
                    }
                    let start = prefix_start.take().unwrap_or(i);
                    item = Some(DataItem {
                        name,
                        kind,
                        lines: start..i + 1,
                        local_labels: Vec::new(),
                    });
                }
                _ => {
                    // Bytes: they belong to the open item; directives seen since are its own.
                    if item.is_some() {
                        prefix_start = None;
                    }
                }
            }
        }
        if let Some(mut done) = item.take() {
            done.lines.end = prefix_start.unwrap_or(self.lines.len());
            self.data.push(done);
        }
    }

    fn writable_data(&self) -> Vec<&'a str> {
        self.data
            .iter()
            .filter(|d| d.kind != SectionKind::ReadOnly && !is_personality_ref(d.name))
            .map(|d| d.name)
            .collect()
    }
}

/// gcc's word holding the address of C++'s personality routine (`DW.ref.__gxx_personality_v0`),
/// weak, hidden and in a COMDAT group of its own, so every object that has one has the same.
/// The instrumented copy of a function with no exception handling of its own still has cleanups
/// (the exit hook runs when an exception passes), hence exception tables and this word, which
/// the plain listing lacks: it is kept as it is, and the two listings' writable data compared
/// without it (such C++ files were built instrumented only).
fn is_personality_ref(name: &str) -> bool {
    name.starts_with("DW.ref.")
}

/// What the merge keeps, drops and renames in the instrumented listing.
#[derive(Debug)]
struct Plan<'a> {
    /// Functions in both listings: the plain one gets the gate, the instrumented one a new name.
    dual: HashSet<&'a str>,
    /// Renamed at their definitions only (references keep choosing through the plain entry).
    renamed_definitions: HashMap<&'a str, String>,
    /// Renamed everywhere in the instrumented copy (its private functions and tables).
    renamed_everywhere: HashMap<&'a str, String>,
    /// Lines of the instrumented listing left out (shared data definitions, commons).
    dropped_lines: HashSet<usize>,
    /// Symbol directives left out because their symbol became a local copy.
    unexported: HashSet<&'a str>,
}

impl<'a> Plan<'a> {
    fn new(plain: &Listing<'a>, instrumented: &Listing<'a>) -> Result<Self, Declined> {
        if plain.writable_data() != instrumented.writable_data() {
            return Err(declined(format!(
                "the two compilations define different writable data (plain: {:?}; instrumented: {:?})",
                plain.writable_data(),
                instrumented.writable_data()
            )));
        }
        let plain_commons: HashSet<&str> = plain.commons.iter().copied().collect();
        let instrumented_commons: HashSet<&str> = instrumented.commons.iter().copied().collect();
        if plain_commons != instrumented_commons {
            return Err(declined(
                "the two compilations define different common symbols",
            ));
        }
        let plain_functions: HashSet<&str> = plain.functions.iter().copied().collect();
        let plain_data: HashSet<&str> = plain.data.iter().map(|d| d.name).collect();
        let mut plan = Plan {
            dual: HashSet::new(),
            renamed_definitions: HashMap::new(),
            renamed_everywhere: HashMap::new(),
            dropped_lines: HashSet::new(),
            unexported: HashSet::new(),
        };
        for &f in &instrumented.functions {
            let captured = format!("{f}{CAPTURED_SUFFIX}");
            if is_cold_part(f) {
                // Reached by jumps from its function's own copy, never called: each copy keeps
                // its own, and no gate may switch copies in the middle of a function.
                plan.renamed_everywhere.insert(f, captured);
            } else if plain_functions.contains(f) {
                plan.dual.insert(f);
                plan.renamed_definitions.insert(f, captured);
            } else {
                plan.renamed_everywhere.insert(f, captured);
            }
            plan.unexported.insert(f);
        }
        for (i, line) in instrumented.lines.iter().enumerate() {
            if lists_functions_to_run(instrumented.sections[i])
                && let Statement::Directive { operands, .. } = statement(line)
                && symbols(operands).any(|s| plan.dual.contains(s))
            {
                plan.dropped_lines.insert(i);
            }
        }
        let code_labels: HashSet<&str> = instrumented
            .lines
            .iter()
            .zip(&instrumented.kinds)
            .filter_map(|(line, kind)| match (statement(line), kind) {
                (Statement::Label(name), SectionKind::Code) if is_local_label(name) => Some(name),
                _ => None,
            })
            .collect();
        let mut dropped_local_labels = HashSet::new();
        for item in &instrumented.data {
            let private_table = item.kind == SectionKind::ReadOnly
                && !instrumented.globals.contains(item.name)
                && (item.name.contains('.') || !plain_data.contains(item.name));
            if private_table {
                plan.renamed_everywhere
                    .insert(item.name, format!("{}{CAPTURED_SUFFIX}", item.name));
                continue;
            }
            if !plain_data.contains(item.name) && is_personality_ref(item.name) {
                continue;
            }
            if !plain_data.contains(item.name) {
                return Err(declined(format!(
                    "the instrumented compilation defines `{}`, the plain one does not",
                    item.name
                )));
            }
            // Shared data that holds addresses inside code (a computed-goto table) would send
            // the instrumented copy into the plain one.
            let holds_code = item
                .lines
                .clone()
                .any(|i| symbols(instrumented.lines[i]).any(|s| code_labels.contains(s)));
            if holds_code {
                return Err(declined(format!(
                    "`{}` holds code addresses (a computed-goto table?)",
                    item.name
                )));
            }
            plan.dropped_lines.extend(item.lines.clone());
            dropped_local_labels.extend(item.local_labels.iter().copied());
        }
        // An alias names the plain copy (whose entry chooses), so the plain listing's is the
        // one; the instrumented listing's must say the same. An alias of a function only the
        // instrumented copy has (a C++ constructor's complete-object name, when the plain
        // compilation inlined every call of it) is that copy's own, renamed with its target.
        for (alias, &(target, line)) in &instrumented.aliases {
            let own = !plain.aliases.contains_key(alias)
                && !plain_functions.contains(alias)
                && !plain_data.contains(alias)
                && !plain_functions.contains(target)
                && plan.renamed_everywhere.contains_key(target);
            if own {
                plan.renamed_everywhere
                    .insert(alias, format!("{alias}{CAPTURED_SUFFIX}"));
                plan.unexported.insert(alias);
                continue;
            }
            if plain.aliases.get(alias).map(|&(t, _)| t) != Some(target) {
                return Err(declined(format!(
                    "the alias {alias} of {target} is not the same in both listings"
                )));
            }
            plan.dropped_lines.insert(line);
            plan.unexported.insert(alias);
        }
        for (i, line) in instrumented.lines.iter().enumerate() {
            if let Statement::Directive {
                name: ".comm" | ".lcomm",
                ..
            } = statement(line)
            {
                plan.dropped_lines.insert(i);
            }
        }
        // A local label inside a shared definition disappears with it; code must not need it.
        if !dropped_local_labels.is_empty() {
            for (i, line) in instrumented.lines.iter().enumerate() {
                if plan.dropped_lines.contains(&i) {
                    continue;
                }
                if let Some(label) = symbols(line).find(|s| dropped_local_labels.contains(s)) {
                    return Err(declined(format!(
                        "the local label {label} lies inside shared data but is used elsewhere"
                    )));
                }
            }
        }
        Ok(plan)
    }
}

/// Whether `name` is the cold part gcc splits off a function (`main.cold`, `f.part.0.cold`):
/// code of that function's frame, entered by a jump from its hot part.
fn is_cold_part(name: &str) -> bool {
    let name = name.trim_end_matches(|c: char| c.is_ascii_digit());
    name.ends_with(".cold") || name.ends_with(".cold.")
}

/// The sections that list functions to run at start or exit: the plain listing's entries
/// already name every function both copies have, so the instrumented listing's would run them
/// twice.
fn lists_functions_to_run(section: &str) -> bool {
    [
        ".init_array",
        ".fini_array",
        ".preinit_array",
        ".ctors",
        ".dtors",
    ]
    .iter()
    .any(|p| section.starts_with(p))
}

/// Writes the plain listing with the gate at the start of every dual function; returns how
/// many functions choose at entry and how many always take the instrumented copy.
fn write_plain(
    plain: &Listing<'_>,
    plan: &Plan<'_>,
    position_independent: bool,
    out: &mut String,
) -> (usize, usize) {
    let mut gates: HashMap<usize, &str> = HashMap::new();
    for (&f, &label) in &plain.function_labels {
        if plan.dual.contains(f) {
            gates.insert(gate_position(plain, label), f);
        }
    }
    let (mut dual, mut always) = (0, 0);
    for (i, line) in plain.lines.iter().enumerate() {
        out.push_str(line);
        out.push('\n');
        let Some(&f) = gates.get(&i) else { continue };
        let target = format!("{f}{CAPTURED_SUFFIX}");
        if plain.calls_markers.contains(f) {
            always += 1;
            let _ = writeln!(out, "\tjmp\t{target}");
            continue;
        }
        dual += 1;
        if position_independent {
            let _ = writeln!(out, "\tmovq\t{GATE_SYMBOL}@GOTPCREL(%rip), %r11");
            out.push_str("\tmovq\t(%r11), %r11\n");
        } else {
            let _ = writeln!(out, "\tmovq\t{GATE_SYMBOL}(%rip), %r11");
        }
        out.push_str("\tcmpl\t$0, (%r11)\n");
        let _ = writeln!(out, "\tjne\t{target}");
    }
    (dual, always)
}

/// The line after which a function's gate goes: after its label, its `.cfi_startproc` and its
/// `endbr64` (an indirect-branch target must start with that instruction). `%r11` is free
/// there: the ABI passes no argument in it.
fn gate_position(listing: &Listing<'_>, label: usize) -> usize {
    let mut position = label;
    for (i, line) in listing.lines.iter().enumerate().skip(label + 1) {
        match statement(line) {
            Statement::Blank | Statement::Label(_) => {}
            Statement::Directive {
                name: ".cfi_startproc",
                ..
            } => position = i,
            Statement::Directive { name: ".loc", .. } => {}
            Statement::Instruction { .. } if line.trim() == "endbr64" => return i,
            _ => break,
        }
    }
    position
}

/// Writes the instrumented listing as planned: renamed, without shared data definitions, its
/// functions local.
fn write_instrumented(
    instrumented: &Listing<'_>,
    plan: &Plan<'_>,
    mut inline_sites: Option<&mut Sites>,
    out: &mut String,
) {
    let mut rendered = String::new();
    // What each hook call's site finds in the registers, from the listing as the compiler
    // wrote it: renaming keeps every label distinct, and the lines left out are data.
    let carried = match inline_sites {
        Some(_) => carried_registers::carried(&instrumented.lines, |l| hooked_access(l).is_some()),
        None => Vec::new(),
    };
    for (i, line) in instrumented.lines.iter().enumerate() {
        if plan.dropped_lines.contains(&i) {
            continue;
        }
        let stmt = statement(line);
        if let Statement::Directive { name, operands } = stmt {
            match name {
                // The source file's name is said once, by the plain listing.
                ".file" if operands.starts_with('"') => continue,
                ".ident" => continue,
                ".globl" | ".global" | ".weak" | ".hidden" | ".protected" | ".internal"
                    if plan.unexported.contains(first_operand(operands)) =>
                {
                    continue;
                }
                _ => {}
            }
        }
        let defines = match stmt {
            Statement::Label(_) => true,
            Statement::Directive { name, .. } => matches!(name, ".type" | ".size"),
            _ => false,
        };
        // A mnemonic or directive name is never a symbol, even when a function has its name.
        let head = match stmt {
            Statement::Directive { operands, .. } | Statement::Instruction { operands } => {
                operands_offset(line, operands)
            }
            _ => 0,
        };
        rendered.clear();
        rendered.push_str(&line[..head]);
        for token in tokens(&line[head..]) {
            match token {
                Token::Symbol(s) if is_local_label(s) => {
                    rendered.push_str(LOCAL_PREFIX);
                    rendered.push_str(&s[2..]);
                }
                Token::Symbol(s) => {
                    let renamed = plan
                        .renamed_everywhere
                        .get(s)
                        .or_else(|| defines.then(|| plan.renamed_definitions.get(s)).flatten());
                    rendered.push_str(renamed.map_or(s, String::as_str));
                }
                Token::Other(o) => rendered.push_str(o),
            }
        }
        match (&mut inline_sites, hooked_access(&rendered)) {
            (Some(sites), Some(access)) => sites.write(access, carried[i], &rendered, out),
            _ => {
                out.push_str(&rendered);
                out.push('\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "\t.file\t\"k.c\"
\t.text
.Ltext0:
\t.p2align 4
\t.globl\tmm
\t.type\tmm, @function
mm:
.LFB1:
\t.cfi_startproc
\tendbr64
\tmovsd\tA(%rip), %xmm0
\taddsd\t.LC0(%rip), %xmm0
\tmovsd\t%xmm0, A(%rip)
\tret
\t.cfi_endproc
.LFE1:
\t.size\tmm, .-mm
\t.type\tmarked, @function
marked:
\t.cfi_startproc
\tcall\tepcache_region_begin@PLT
\tret
\t.cfi_endproc
\t.size\tmarked, .-marked
\t.section\t.rodata.cst8,\"aM\",@progbits,8
\t.align 8
.LC0:
\t.long\t0
\t.long\t1072693248
\t.globl\tA
\t.bss
\t.align 8
\t.type\tA, @object
\t.size\tA, 8
A:
\t.zero\t8
\t.local\tcalls
\t.comm\tcalls,4,4
\t.ident\t\"GCC\"
";

    const INSTRUMENTED: &str = "\t.file\t\"k.c\"
\t.text
.Ltext0:
\t.p2align 4
\t.globl\tmm
\t.type\tmm, @function
mm:
.LFB1:
\t.cfi_startproc
\tendbr64
\tcall\t__tsan_func_entry@PLT
\tleaq\tA(%rip), %rdi
\tcall\t__tsan_read8@PLT
\tmovsd\tA(%rip), %xmm0
\tmovl\tCSWTCH.3(,%rax,4), %eax
\tcall\thelper.constprop.0
\tret
\t.cfi_endproc
.LFE1:
\t.size\tmm, .-mm
\t.type\thelper.constprop.0, @function
helper.constprop.0:
\tcall\tmm
\tret
\t.size\thelper.constprop.0, .-helper.constprop.0
\t.type\tmarked, @function
marked:
\t.cfi_startproc
\tcall\tepcache_region_begin@PLT
\tret
\t.cfi_endproc
\t.size\tmarked, .-marked
\t.section\t.rodata
\t.align 16
\t.type\tCSWTCH.3, @object
\t.size\tCSWTCH.3, 8
CSWTCH.3:
\t.long\t3
\t.long\t7
\t.globl\tA
\t.bss
\t.align 8
\t.type\tA, @object
\t.size\tA, 8
A:
\t.zero\t8
\t.local\tcalls
\t.comm\tcalls,4,4
\t.section\t.init_array.00099,\"aw\"
\t.align 8
\t.quad\thelper.constprop.0
\t.section\t.debug_info,\"\",@progbits
.Ldebug_info0:
\t.quad\t.LFB1
\t.string\t\"mm .LFB1 A\"
\t.ident\t\"GCC\"
";

    fn merged() -> Merged {
        merge(PLAIN, INSTRUMENTED, false, false).expect("merges")
    }

    fn instrumented_part(m: &Merged) -> &str {
        m.assembly
            .split_once("# epcache: the instrumented copy")
            .expect("marker")
            .1
    }

    #[test]
    fn a_plain_function_jumps_to_its_copy_after_endbr64_when_the_gate_is_open() {
        let m = merged();
        assert_eq!((m.dual, m.always_captured), (1, 1));
        let gate = "\tendbr64\n\tmovq\tepcache_capture_gate(%rip), %r11\n\tcmpl\t$0, (%r11)\n\tjne\tmm.captured\n";
        assert!(m.assembly.contains(gate), "{}", m.assembly);
        // A function calling a marker always runs its instrumented copy.
        assert!(
            m.assembly
                .contains("marked:\n\t.cfi_startproc\n\tjmp\tmarked.captured\n")
        );
    }

    #[test]
    fn inline_capture_guards_the_instrumented_copys_hook_calls_only_where_it_can_link() {
        let plain_copy = |m: &Merged| {
            m.assembly
                .split_once("# epcache: the instrumented")
                .unwrap()
                .0
                .to_owned()
        };
        let inlined = merge(PLAIN, INSTRUMENTED, false, true).unwrap();
        assert_eq!(inlined.inlined, 1);
        let copy = instrumented_part(&inlined);
        assert!(
            copy.contains(
                "\tjmp\t.Lepcache.slow.1\n.Lepcache.slow.1:\n\tcall\t__tsan_read8@PLT\n\
                 .Lepcache.back.1:\n\tmovq\tepcache_inline_v9_tag_word(%rip), %r11\n\tmovq\t%r11, %r10\n\
                 \tshrq\t$56, %r10\n\tshll\t$5, %r10d\n\
                 \tjmp\t.Lepcache.done.1\n.Lepcache.hit.1.0:\n\
                 \tincq\t%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)\n"
            ),
            "{copy}"
        );
        // The last slot's hit falls through to where every path meets, before the code the
        // call came before.
        assert!(
            copy.contains(
                "\tmovb\t%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)\n\
                 .Lepcache.done.1:\n\tmovsd\tA(%rip), %xmm0\n"
            ),
            "{copy}"
        );
        assert!(copy.contains("%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)"));
        // The function entry hook stays a call, and the plain copy is untouched.
        assert!(copy.contains("\tcall\t__tsan_func_entry@PLT\n"));
        assert_eq!(plain_copy(&inlined), plain_copy(&merged()));
        // Local-exec thread-locals cannot be reached from a shared object, nor AT&T syntax
        // written into an Intel-syntax listing.
        assert_eq!(merge(PLAIN, INSTRUMENTED, true, true).unwrap().inlined, 0);
        let intel = format!("\t.intel_syntax noprefix\n{INSTRUMENTED}");
        let intel = merge(
            &format!("\t.intel_syntax noprefix\n{PLAIN}"),
            &intel,
            false,
            true,
        );
        assert_eq!(intel.map(|m| m.inlined).unwrap_or(0), 0);
        assert_eq!(merged().inlined, 0);
    }

    #[test]
    fn position_independent_code_reaches_the_gate_through_the_got() {
        let m = merge(PLAIN, INSTRUMENTED, true, false).unwrap();
        assert!(
            m.assembly
                .contains("movq\tepcache_capture_gate@GOTPCREL(%rip), %r11\n\tmovq\t(%r11), %r11")
        );
    }

    #[test]
    fn the_copy_renames_definitions_and_local_labels_and_shares_named_data() {
        let m = merged();
        let copy = instrumented_part(&m);
        assert!(copy.contains("mm.captured:\n.Lepcache_FB1:\n"));
        assert!(copy.contains(".size\tmm.captured, .-mm.captured"));
        assert!(copy.contains(".type\tmm.captured, @function"));
        // Exported once, by the plain copy.
        assert!(!copy.contains(".globl\tmm"));
        // Calls between functions keep choosing at the callee's entry...
        assert!(copy.contains("helper.constprop.0.captured:\n\tcall\tmm\n"));
        // ...but a function only the instrumented compilation made is renamed everywhere.
        assert!(copy.contains("call\thelper.constprop.0.captured"));
        assert!(copy.contains(".quad\thelper.constprop.0.captured"));
        // The data is the plain copy's: no second definition, references unchanged.
        assert!(!copy.contains("A:\n"));
        assert!(!copy.contains(".comm"));
        assert!(copy.contains("leaq\tA(%rip), %rdi"));
        // Numbered read-only tables stay private to the copy.
        assert!(copy.contains("CSWTCH.3.captured:\n"));
        assert!(copy.contains("movl\tCSWTCH.3.captured(,%rax,4)"));
        // Debug information follows the renamed labels; strings are left alone.
        assert!(copy.contains(".quad\t.Lepcache_FB1"));
        assert!(copy.contains(".string\t\"mm .LFB1 A\""));
        assert!(!copy.contains(".ident") && !copy.contains(".file\t\"k.c\""));
        // The plain listing is untouched apart from the gates.
        assert!(m.assembly.starts_with(PLAIN.split("mm:\n").next().unwrap()));
    }

    #[test]
    fn different_writable_data_declines() {
        let other = INSTRUMENTED.replace(
            "\t.local\tcalls",
            "\t.data\n\t.type\textra, @object\nextra:\n\t.long 1\n\t.local\tcalls",
        );
        let err = merge(PLAIN, &other, false, false).unwrap_err();
        assert!(err.0.contains("different writable data"), "{err}");
    }

    #[test]
    fn a_personality_reference_only_the_instrumented_copy_has_is_kept() {
        let personality = "\t.hidden\tDW.ref.__gxx_personality_v0\n\t.weak\tDW.ref.__gxx_personality_v0\n\t.section\t.data.rel.local.DW.ref.__gxx_personality_v0,\"awG\",@progbits,DW.ref.__gxx_personality_v0,comdat\n\t.align 8\n\t.type\tDW.ref.__gxx_personality_v0, @object\n\t.size\tDW.ref.__gxx_personality_v0, 8\nDW.ref.__gxx_personality_v0:\n\t.quad\t__gxx_personality_v0\n";
        let merged = merge(PLAIN, &format!("{INSTRUMENTED}{personality}"), false, false).unwrap();
        let copy = instrumented_part(&merged);
        assert!(
            copy.contains("DW.ref.__gxx_personality_v0:\n\t.quad\t__gxx_personality_v0"),
            "kept, unrenamed: {copy}"
        );
        // Any other writable data only one copy has still declines.
        let other = format!("{INSTRUMENTED}\t.data\n\t.type\textra, @object\nextra:\n\t.long 1\n");
        assert!(merge(PLAIN, &other, false, false).is_err());
    }

    #[test]
    fn aliases_must_agree_and_the_plain_one_is_kept() {
        let alias = "\t.weak\tmm2\n\t.set\tmm2,mm\n";
        let both = merge(
            &format!("{PLAIN}{alias}"),
            &format!("{INSTRUMENTED}{alias}"),
            false,
            false,
        )
        .unwrap();
        let copy = instrumented_part(&both);
        assert!(!copy.contains(".set") && !copy.contains("mm2"), "{copy}");
        assert_eq!(both.assembly.matches("\t.set\tmm2,mm\n").count(), 1);
        let err = merge(PLAIN, &format!("{INSTRUMENTED}{alias}"), false, false).unwrap_err();
        assert!(err.0.contains("alias mm2"), "{err}");
    }

    /// A constructor the plain compilation inlined everywhere is out of line in the
    /// instrumented one, with its complete-object alias: both are the instrumented copy's own.
    #[test]
    fn an_alias_of_a_function_only_the_instrumented_copy_has_is_its_own() {
        let instrumented = INSTRUMENTED
            .replace("\tcall\thelper.constprop.0\n", "\tcall\thelper2\n")
            + "\t.weak\thelper2\n\t.set\thelper2,helper.constprop.0\n";
        let merged = merge(PLAIN, &instrumented, false, false).unwrap();
        let copy = instrumented_part(&merged);
        assert!(
            copy.contains("\t.set\thelper2.captured,helper.constprop.0.captured\n"),
            "{copy}"
        );
        assert!(copy.contains("\tcall\thelper2.captured\n"), "{copy}");
        assert!(!copy.contains(".weak\thelper2"), "{copy}");
        assert!(
            !merged.assembly.contains("\thelper2\n"),
            "{}",
            merged.assembly
        );
    }

    #[test]
    fn a_comdat_copy_shares_its_section_and_group_with_the_plain_one() {
        let group = "\t.section\t.text._Z1fv,\"axG\",@progbits,_Z1fv,comdat\n";
        let function = "\t.weak\t_Z1fv\n\t.type\t_Z1fv, @function\n_Z1fv:\n\t.cfi_startproc\n\tret\n\t.cfi_endproc\n";
        let m = merge(
            &format!("{PLAIN}{group}{function}"),
            &format!("{INSTRUMENTED}{group}{function}"),
            false,
            false,
        )
        .unwrap();
        let copy = instrumented_part(&m);
        assert!(
            copy.contains(&format!(
                "{group}\t.type\t_Z1fv.captured, @function\n_Z1fv.captured:"
            )),
            "{copy}"
        );
        assert!(!copy.contains(".weak\t_Z1fv"));
    }

    #[test]
    fn cold_parts_stay_with_their_copy_and_constructors_run_once() {
        let cold = "\t.section\t.text.unlikely\n\t.type\tmm.cold, @function\nmm.cold:\n\t.cfi_startproc\n\tcall\tabort@PLT\n\t.cfi_endproc\n";
        let ctor = "\t.section\t.init_array,\"aw\"\n\t.align 8\n\t.quad\tmm\n";
        let instrumented = INSTRUMENTED.replace(
            "\tret\n\t.cfi_endproc\n.LFE1:",
            "\tjmp\tmm.cold\n\t.cfi_endproc\n.LFE1:",
        );
        let m = merge(
            &format!("{PLAIN}{cold}{ctor}"),
            &format!("{instrumented}{cold}{ctor}"),
            false,
            false,
        )
        .unwrap();
        // No gate in the middle of a function: the cold part is jumped to, never called.
        assert!(
            m.assembly
                .contains("mm.cold:\n\t.cfi_startproc\n\tcall\tabort@PLT")
        );
        let copy = instrumented_part(&m);
        assert!(copy.contains("\tjmp\tmm.cold.captured\n"), "{copy}");
        assert!(copy.contains("mm.cold.captured:\n"));
        // The plain listing registers the constructor; the copy must not register it again.
        assert_eq!(m.assembly.matches("\t.quad\tmm\n").count(), 1);
    }

    #[test]
    fn shared_data_holding_code_addresses_declines() {
        let table = "\t.section\t.data.rel.local,\"aw\"\n\t.type\ttargets.0, @object\ntargets.0:\n\t.quad\t.LFB1\n";
        let err = merge(
            &format!("{PLAIN}{table}"),
            &format!("{INSTRUMENTED}{table}"),
            false,
            false,
        )
        .unwrap_err();
        assert!(err.0.contains("targets.0` holds code addresses"), "{err}");
    }

    #[test]
    fn named_code_labels_and_loc_directives_decline() {
        let inline_asm = PLAIN.replace(
            "\tret\n\t.cfi_endproc\n.LFE1:",
            "entry:\n\tret\n\t.cfi_endproc\n.LFE1:",
        );
        assert!(
            merge(&inline_asm, INSTRUMENTED, false, false)
                .unwrap_err()
                .0
                .contains("`entry`")
        );
        let located = PLAIN.replace("\tendbr64\n", "\tendbr64\n\t.loc 1 5 3\n");
        assert!(
            merge(&located, INSTRUMENTED, false, false)
                .unwrap_err()
                .0
                .contains("-gno-as-loc-support")
        );
    }
}
