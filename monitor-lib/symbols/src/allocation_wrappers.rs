//! Which functions only pass an allocation on (allocation wrappers), so that a heap block can be
//! named by the line that asked for it rather than by the `malloc` inside the program's own
//! `xmalloc` or `alloc_array`.
//!
//! The rule, applied to the program's own code after its DWARF is read: a function is a wrapper
//! when its type returns a pointer (or a C++ reference) and each of its compiled instances (the
//! out-of-line copy, and every copy gcc or clang inlined into a caller) makes at most one call to
//! an allocator or to another wrapper, and at least one instance makes exactly one. A call is a
//! direct x86_64 `call` or `jmp` with a 32-bit displacement (`e8`/`e9`, tail calls included)
//! whose target is an allocator's entry (`malloc`, `calloc`, `realloc`, `memalign`,
//! `aligned_alloc`, `posix_memalign`, `valloc`, `pvalloc`, C++'s `operator new` family, each
//! also by the `__wrap_` name `epcache cc`'s link gives it) or the out-of-line entry of a
//! wrapper found so far; the search runs until no new wrapper appears. The machine code is read
//! rather than DWARF's `DW_TAG_call_site`, which gcc and clang emit only when optimising: the
//! same rule then holds at -O0 and at -O2.
//!
//! What it catches: `xmalloc` (one `malloc`, a check, a return), `alloc_array` calling
//! `posix_memalign` through an out parameter and returning the block, a wrapper of a wrapper, a
//! `make_vector` that allocates and initialises one block, C++ factories returning `new T`, and
//! all of these when inlined. What it misses: calls through a function pointer or the GOT
//! (`-fno-plt` without the linker's relaxation), wrappers that hand the block back through an
//! out parameter or a struct, wrappers with two allocator calls (`p ? realloc(p, n) :
//! malloc(n)`), Fortran (whose ALLOCATE is named by its own line anyway), code that is not
//! x86_64; name those in `EPCACHE_ALLOC_WRAPPERS`. A function allocating one block and returning
//! some other pointer is taken for a wrapper: its blocks are then named by its callers, which
//! splits one site's name into several and never merges two.

use std::collections::{HashMap, HashSet};

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// The allocators' symbols (C++'s operators by their Itanium names), plain and as `epcache
/// cc`'s `--wrap` renames the program's calls to them.
const ALLOCATORS: [&str; 16] = [
    "malloc",
    "calloc",
    "realloc",
    "memalign",
    "aligned_alloc",
    "posix_memalign",
    "valloc",
    "pvalloc",
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
];

/// How many rounds a wrapper of a wrapper of ... is looked for: deeper chains than this are
/// not written by hand.
const MAX_ROUNDS: usize = 8;

/// A compiled instance of a function whose type returns a pointer: where its code is, and
/// whether it is the out-of-line copy (whose first byte other code calls).
#[derive(Debug, Clone)]
pub(super) struct PointerFunctionInstance {
    /// The function's name as declared (unqualified, as DWARF names an inlined copy's origin).
    pub(super) name: String,
    /// Link-time code ranges `[low, high)`, the one holding its entry first.
    pub(super) ranges: Vec<(u64, u64)>,
    /// The out-of-line copy, rather than a copy inlined into a caller.
    pub(super) out_of_line: bool,
}

/// The names of the wrappers among `instances` of `file`, sorted.
pub(super) fn find_wrappers(
    file: &object::File<'_>,
    instances: &[PointerFunctionInstance],
) -> Vec<String> {
    if instances.is_empty() || file.architecture() != object::Architecture::X86_64 {
        return Vec::new();
    }
    let allocators: HashSet<u64> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
        .filter(|s| {
            s.name().is_ok_and(|name| {
                let plain = name.strip_prefix("__wrap_").unwrap_or(name);
                ALLOCATORS.contains(&plain)
            })
        })
        .map(|s| s.address())
        .collect();
    if allocators.is_empty() {
        return Vec::new();
    }
    let code = CodeBytes::new(file);
    let mut wrappers: HashSet<&str> = HashSet::new();
    for _ in 0..MAX_ROUNDS {
        let mut entries = allocators.clone();
        entries.extend(
            instances
                .iter()
                .filter(|i| i.out_of_line && wrappers.contains(i.name.as_str()))
                // A function split into hot and cold parts lists its entry's part first.
                .filter_map(|i| i.ranges.first().map(|r| r.0)),
        );
        // Most calls any instance of each function makes, by name.
        let mut most_calls: HashMap<&str, usize> = HashMap::new();
        for instance in instances {
            let calls = instance
                .ranges
                .iter()
                .map(|&(low, high)| code.calls_into(low, high, &entries))
                .sum::<usize>();
            let most = most_calls.entry(instance.name.as_str()).or_default();
            *most = (*most).max(calls);
        }
        let found: HashSet<&str> = most_calls
            .into_iter()
            .filter(|&(_, calls)| calls == 1)
            .map(|(name, _)| name)
            .collect();
        if found == wrappers {
            break;
        }
        wrappers = found;
    }
    let mut names: Vec<String> = wrappers.into_iter().map(str::to_owned).collect();
    names.sort();
    names
}

/// The executable sections' bytes by link-time address.
struct CodeBytes<'a> {
    sections: Vec<(u64, &'a [u8])>,
}

impl<'a> CodeBytes<'a> {
    fn new(file: &object::File<'a>) -> Self {
        let sections = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect();
        CodeBytes { sections }
    }

    /// How many direct calls and jumps in `[low, high)` go to one of `entries`.
    fn calls_into(&self, low: u64, high: u64, entries: &HashSet<u64>) -> usize {
        let Some(&(base, bytes)) = self
            .sections
            .iter()
            .find(|(base, bytes)| *base <= low && high <= base + bytes.len() as u64)
        else {
            return 0;
        };
        let code = &bytes[(low - base) as usize..(high - base) as usize];
        count_calls(code, low, entries)
    }
}

/// How many `e8`/`e9` rel32 instructions in `code` (at link-time address `at`) reach one of
/// `entries`. Every byte offset is tried, as instruction boundaries are not known; a match
/// skips the instruction's bytes.
fn count_calls(code: &[u8], at: u64, entries: &HashSet<u64>) -> usize {
    let mut count = 0;
    let mut i = 0;
    while i + 5 <= code.len() {
        if let Some((_, target)) = rel32_target(code, i, at)
            && entries.contains(&target)
        {
            count += 1;
            i += 5;
            continue;
        }
        i += 1;
    }
    count
}

/// The x86_64 direct call (`e8`) or jump (`e9`) with a 32-bit displacement at byte `i` of
/// `code`, which starts at address `start`: its opcode and target; `None` for anything else or
/// an instruction cut short.
pub fn rel32_target(code: &[u8], i: usize, start: u64) -> Option<(u8, u64)> {
    let opcode = *code.get(i)?;
    if !matches!(opcode, 0xe8 | 0xe9) {
        return None;
    }
    let rel = i32::from_le_bytes(code.get(i + 1..i + 5)?.try_into().ok()?);
    let next = start.wrapping_add(i as u64 + 5);
    Some((opcode, next.wrapping_add_signed(i64::from(rel))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_calls_and_tail_jumps_to_an_entry_are_counted() {
        let entries: HashSet<u64> = [0x2000].into_iter().collect();
        // call 0x2000 from 0x1000 (rel = 0x2000 - 0x1005), a nop, jmp 0x2000 from 0x1006
        // (rel = 0x2000 - 0x100b), then a call elsewhere.
        let mut code = vec![0xe8];
        code.extend(0x0ffb_i32.to_le_bytes());
        code.push(0x90);
        code.push(0xe9);
        code.extend(0x0ff5_i32.to_le_bytes());
        code.push(0xe8);
        code.extend(0x10_i32.to_le_bytes());
        assert_eq!(count_calls(&code, 0x1000, &entries), 2);
        assert_eq!(count_calls(&code[..5], 0x1000, &entries), 1);
        assert_eq!(count_calls(&code[..4], 0x1000, &entries), 0, "cut short");
        assert_eq!(count_calls(&code, 0x1001, &entries), 0, "elsewhere");
    }
}
