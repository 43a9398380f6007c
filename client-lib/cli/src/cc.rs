//! `epcache cc`: its arguments and help; the compiler driver itself is the `epcache-cc` crate.

use std::ffi::OsString;

/// Build a C, C++ or Fortran program with capture (use as CC, CXX or FC).
///
/// Example: `make CC="epcache cc -- gcc" FC="epcache cc -- gfortran"`, then run the program with
/// `EPCACHE_REPORT=report.json EPCACHE_CACHE=host`. For cmake, which wants one executable per
/// compiler, use a two-line wrapper script (`exec epcache cc -- gcc "$@"`).
///
/// Each source is compiled twice (plain and with `-fsanitize=thread -g`) and merged, so the
/// program runs its plain code until a tool or the report asks for capture. Link steps get
/// epcache's runtime instead of libtsan; `epcache.h` and, for Fortran compilers, the `epcache`
/// module are put on the include path (cached under `$XDG_CACHE_HOME/epcache`, else
/// `~/.cache/epcache`).
///
/// clang and clang++ are accepted too (also under a name that does not say which compiler it
/// is, such as `cc`: such a compiler is asked for its `--version`); their objects are built
/// instrumented only (no plain
/// copy), so an idle program runs slower than gcc's, with the same inline repeat-hit test in
/// front of their hook calls (clang instruments after vectorising, so its loops keep their
/// wide accesses). clang also gets `-mllvm -tsan-instrument-read-before-write`, without which
/// it leaves out the read of every `x += y`.
///
/// Every object's calls to `memcpy`, `memmove` and `memset` are renamed (with `objcopy`) to the
/// runtime's versions, which count the copies.
///
/// Link-time optimisation (`-flto`), stripping (`-s`, `-Wl,--strip-all`) and `-gsplit-dwarf`
/// are dropped with a note: the first would leave the program uninstrumented, the others without
/// names. Response files (`@args`) are read; a partial link (`-r`) gets no runtime; `-x LANG`
/// on a command that also links is refused (compile with `-c` first). gcc's counts are those of
/// the code before vectorisation (its TSan pass runs first): at -O2 and -O3 a vectorised loop
/// counts one access per element, where Cachegrind sees one per vector.
/// `-fsanitize=address` (and leak, memory) cannot be combined with capture and is refused, as
/// are 32-bit builds (`-m32`, `-mx32`).
///
/// Environment: `EPCACHE_RUNTIME` names the runtime library to link (default:
/// `libepcache_monitor.a` beside this binary); `EPCACHE_CC_DUAL=off` builds every function
/// instrumented only; `EPCACHE_CC_INLINE=off` makes every monitored access call its hook
/// instead of testing for a repeat hit inline first (same counts, slower);
/// `EPCACHE_CC_VERBOSE=1` prints each compiler command and what the merge made of each
/// source.
#[derive(Debug, clap::Args)]
pub(crate) struct CcArgs {
    /// The compiler and its arguments, exactly as they would be run (`gcc -O2 -c kernel.c`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMPILER ARGS"
    )]
    command: Vec<OsString>,
}

/// Runs the compiler command with capture added; returns the exit code to leave with.
pub(crate) fn run(args: &CcArgs) -> anyhow::Result<i32> {
    Ok(epcache_cc::compile_os_args(&args.command)?)
}
