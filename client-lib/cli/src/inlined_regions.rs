//! Why a function asked for as a region may have none: the compiler inlined it into every
//! caller, so it has no entry and exit of its own, which is where a function's region begins
//! and ends (the instrumented code's entry and exit hooks). Read from the program's DWARF
//! (`epcache_symbols`) only after a request failed, to say so and what to do; a request that
//! binds never pays for it.

use std::path::Path;

/// A note for a request on region `region` of the program file `exe` that found no such
/// region, when the program's own code has `region` only inlined: into which functions, and
/// the three ways to measure it anyway. `None` when it is compiled on its own somewhere, is not
/// a function of the program, or the file cannot be read.
pub(crate) fn note(exe: &Path, region: &str) -> Option<String> {
    let info = epcache_symbols::DebugInfo::load_program(exe).ok()?;
    if info.functions.iter().any(|f| f.name == region) {
        return None;
    }
    let (id, callers) = inlined_into(&info, region)?;
    let first = callers.first()?;
    // Fortran has no attribute gfortran reads to keep one procedure out of line, and its
    // markers are calls.
    let fortran = info
        .inlined
        .iter()
        .filter(|call| call.function == id)
        .filter_map(|call| info.function_at(call.low_pc)?.file)
        .filter_map(|file| info.files.get(file as usize))
        .any(|file| epcache_symbols::is_fortran_source(file));
    let otherwise = if fortran {
        format!(
            "build with `-fno-inline`, or put `call epcache_region_begin(\"{region}\"//c_null_char)` \
             and `call epcache_region_end()` around its body (`use epcache`)"
        )
    } else {
        format!(
            "declare it `__attribute__((noinline))` (or build with `-fno-inline`), or put \
             EPCACHE_REGION_BEGIN(\"{region}\") and EPCACHE_REGION_END() around its body"
        )
    };
    Some(format!(
        "`{region}` was inlined into {} wherever it is called, so it has no entry or exit of its \
         own to count between: ask for `{first}` instead (the report's per-line misses still \
         show `{region}`'s lines, and `epcache annotate --format functions` its own misses), \
         {otherwise}",
        crate::output::quoted(&callers, ", ")
    ))
}

/// The functions `region` was inlined into, by name, with its id among the inlined functions;
/// `None` when it was inlined nowhere.
fn inlined_into<'a>(
    info: &'a epcache_symbols::DebugInfo,
    region: &str,
) -> Option<(u32, Vec<&'a str>)> {
    // Inlined copies are named as declared (`at`), regions with their scopes
    // (`linalg::Matrix<double>::at`).
    let declared = region.rsplit("::").next().unwrap_or(region);
    let id = u32::try_from(
        info.inlined_functions
            .iter()
            .position(|n| n == region || n == declared)?,
    )
    .ok()?;
    let mut callers: Vec<&str> = info
        .inlined
        .iter()
        .filter(|call| call.function == id)
        .filter_map(|call| info.function_at(call.low_pc))
        .map(|f| f.name.as_str())
        .collect();
    callers.sort_unstable();
    callers.dedup();
    (!callers.is_empty()).then_some((id, callers))
}

/// The OpenMP bodies of region `region`'s parallel loops (`grid::stencil._omp_fn.0`): regions
/// of their own, which run wherever the function was inlined.
pub(crate) fn parallel_loops<'a>(
    info: &'a epcache_symbols::DebugInfo,
    region: &str,
) -> Vec<&'a str> {
    let declared = region.rsplit("::").next().unwrap_or(region);
    let mut loops: Vec<&str> = info
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .filter(|f| {
            f.split_once("._omp_fn.")
                .is_some_and(|(of, _)| of.rsplit("::").next() == Some(declared))
        })
        .collect();
    loops.sort_unstable();
    loops.dedup();
    loops
}

/// A note for a request on region `region` of `info`'s program that is a function with code
/// and was also inlined into others (a module procedure the main program's calls inlined):
/// those calls run as part of their callers and are no instances of it, so the request may
/// count less than the user thinks, or nothing.
pub(crate) fn also_inlined(info: &epcache_symbols::DebugInfo, region: &str) -> Option<String> {
    let (_, callers) = inlined_into(info, region)?;
    let loops = parallel_loops(info, region);
    let loops = if loops.is_empty() {
        String::new()
    } else {
        format!(
            " or its parallel loops' {}",
            crate::output::quoted(&loops, ", ")
        )
    };
    Some(format!(
        "`{region}` was inlined into {}: the calls there run as part of them and are no instances of `{region}` (only calls of its own copy are), so the request may count less than every call, or nothing; ask for one of them{loops}, or build with `-fno-inline`",
        crate::output::quoted(&callers, ", ")
    ))
}
