//! The driver: what one compiler command becomes under `epcache cc` (classified as a query, a
//! compile, a link or both, rewritten, run), the runtime it links and the header and module it
//! puts on the include path.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{CcError, Doing as _};
use crate::runtime_names::{RUNTIME_ENV, RUNTIME_FILE, RUNTIME_NATIVE_LIBS};
use crate::{command_line, dual_asm, inline_capture};

/// Environment variable that turns dual compilation off (`off`, `0`, `no`): every function is
/// then built instrumented only.
pub const DUAL_ENV: &str = "EPCACHE_CC_DUAL";
/// Flags that make gcc-family compilers call the TSan entry points, with the debug information
/// later steps resolve regions and data structures from.
const INSTRUMENT_FLAGS: &[&str] = &["-fsanitize=thread", "-g"];
/// What clang gets on top: its TSan pass leaves out the load of a read-modify-write (`x += 1`,
/// a load and a store of one address in one block), whose store alone matters to a race
/// detector; a cache is read there too.
const CLANG_INSTRUMENT_FLAGS: &[&str] = &["-mllvm", "-tsan-instrument-read-before-write"];
/// What gcc gets on top, for the plain and the instrumented compilation alike: without it gcc's
/// interprocedural register allocation lets a caller keep values in call-clobbered registers
/// across a call to a local function that does not touch them, and the copy-choosing entry of
/// a dual-built function (and the inline repeat-hit sequence) uses `r10` and `r11`, so a caller's
/// loop counter held in `r11` would be reset at every call.
const GCC_CALL_ABI_FLAGS: &[&str] = &["-fno-ipa-ra"];

/// What one compiler command does, which decides the flags it needs.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// No input files (`--version`, `-dumpmachine`, `-print-file-name=...`): run as given.
    Query,
    /// `-c`, `-S` or `-E` (or `-M`, `-MM`): instrument, never link.
    CompileOnly,
    /// Only objects and libraries: link the runtime.
    Link,
    /// Sources that are also linked: the argument positions of the sources.
    CompileAndLink { sources: Vec<usize> },
}

/// Options whose value is the next argument, so that argument is not an input file.
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-o",
    "-x",
    "-I",
    "-D",
    "-U",
    "-L",
    "-l",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-isysroot",
    "-imultilib",
    "-MF",
    "-MT",
    "-MQ",
    "-J",
    "-T",
    "-u",
    "-e",
    "-z",
    "-Xlinker",
    "-Xclang",
    "-mllvm",
    "-Xassembler",
    "-Xpreprocessor",
    "-aux-info",
    "--param",
    "-dumpbase",
    "-dumpdir",
    "-B",
];

/// Options that only mean something to the linker; left out of the split compile commands.
const LINK_ONLY_FLAGS: &[&str] = &[
    "-shared",
    "-static",
    "-rdynamic",
    "-pie",
    "-no-pie",
    "-nostdlib",
    "-nodefaultlibs",
    "-nostartfiles",
    "-static-libgcc",
    "-static-libstdc++",
    "-static-libgfortran",
];
const LINK_ONLY_WITH_VALUE: &[&str] = &["-L", "-l", "-Xlinker", "-T", "-u", "-e", "-z"];

/// File extensions gcc, g++ and gfortran compile (assembly included: it simply is not
/// instrumented).
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "i", "cc", "cp", "cxx", "cpp", "CPP", "c++", "C", "ii", "f", "for", "ftn", "F", "FOR",
    "FTN", "fpp", "FPP", "f90", "f95", "f03", "f08", "F90", "F95", "F03", "F08", "s", "S", "sx",
];

/// Whether compiling `source` with `compiler` writes Fortran module files (`.mod`), which two
/// compilations of the source at once would both write.
fn writes_modules(compiler: &str, source: &str) -> bool {
    is_fortran(compiler)
        || Path::new(source)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.to_ascii_lowercase().starts_with('f'))
}

fn is_source(arg: &str) -> bool {
    Path::new(arg)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e))
}

/// For each argument: whether it is an input file (not an option, not an option's value).
fn input_positions(args: &[String]) -> Vec<usize> {
    let mut inputs = Vec::new();
    let mut skip_next = false;
    for (i, arg) in args.iter().enumerate() {
        if skip_next {
            skip_next = false;
        } else if OPTIONS_WITH_VALUE.contains(&arg.as_str()) {
            skip_next = true;
        } else if !arg.starts_with('-') || arg == "-" {
            inputs.push(i);
        }
    }
    inputs
}

fn classify(args: &[String]) -> Step {
    let compile_only = args
        .iter()
        .any(|a| matches!(a.as_str(), "-c" | "-S" | "-E" | "-M" | "-MM"));
    if compile_only {
        return Step::CompileOnly;
    }
    let inputs = input_positions(args);
    if inputs.is_empty() {
        return Step::Query;
    }
    let sources = source_positions(args, &inputs);
    if sources.is_empty() {
        Step::Link
    } else {
        Step::CompileAndLink { sources }
    }
}

/// The inputs the compiler compiles: those with a source file's extension, and every input
/// after `-x LANGUAGE` until `-x none` (`-x c notes.txt`, `-x c -` for standard input), which a
/// link step must not take for objects (it would append the runtime archive as C source).
fn source_positions(args: &[String], inputs: &[usize]) -> Vec<usize> {
    let mut language = false;
    let mut sources = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "-x" {
            language = args.get(i + 1).is_some_and(|l| l != "none");
            i += 2;
            continue;
        }
        // An option's value (`-Xlinker -x`) is neither a language choice nor an input.
        if OPTIONS_WITH_VALUE.contains(&arg) {
            i += 2;
            continue;
        }
        if let Some(l) = arg.strip_prefix("-x") {
            language = l != "none";
        } else if inputs.contains(&i) && (language || is_source(arg)) {
            sources.push(i);
        }
        i += 1;
    }
    sources
}

/// Whether a link step makes a relocatable object (`-r`), which a later link takes in: the
/// runtime and the wraps belong to that final link, not into the object.
fn is_partial_link(args: &[String]) -> bool {
    args.iter().any(|a| {
        matches!(a.as_str(), "-r" | "-relocatable")
            || a.strip_prefix("-Wl,")
                .is_some_and(|list| list.split(',').any(|o| matches!(o, "-r" | "--relocatable")))
    })
}

/// The arguments of a link step: the user's, minus any `-fsanitize=thread` (it would link
/// libtsan), plus the runtime. A shared library gets no runtime: the executable provides it.
/// `libatomic_found`: the compiler has libatomic, which the plain copies of dual-built code call
/// for atomics the CPU has no instruction for (16-byte ones); the instrumented copies call the
/// runtime's `__tsan_atomic*` instead, so it is linked only as needed. `cxx`: the link is a
/// C++ program's (see [`links_cxx`]).
fn link_arguments(
    args: &[String],
    runtime: &Path,
    exports: &Path,
    libatomic_found: bool,
    cxx: bool,
) -> Vec<String> {
    let mut linked: Vec<String> = args
        .iter()
        .filter(|a| a.as_str() != "-fsanitize=thread")
        .cloned()
        .collect();
    if is_partial_link(args) {
        return linked;
    }
    if !args.iter().any(|a| a == "-shared") {
        // The program's own calls to the allocator go through the runtime, which names heap
        // blocks by their allocation site.
        linked.push(ALLOCATOR_WRAPS.to_owned());
        // A thread hands its counts on before it blocks joining another, and a library opened
        // at run time is read for names (`wrap_abi.rs`, whose naked wrappers are x86_64's only,
        // like the C++ operators').
        if cfg!(target_arch = "x86_64") {
            // A program that ends by `_exit` or `_Exit` still leaves its report.
            linked
                .push("-Wl,--wrap=pthread_join,--wrap=dlopen,--wrap=_exit,--wrap=_Exit".to_owned());
            // The wrappers reach the real functions through weak `__real_` references, which
            // do not take a member out of a static C library: a static program calling
            // `pthread_join` jumped to address 0. Asking for the symbols takes them.
            if is_static_link(args) {
                linked.push("-Wl,-u,pthread_join,-u,dlopen,-u,_exit,-u,_Exit".to_owned());
            } else {
                // A Fortran main program's start puts the crash handler back in front of
                // gfortran's backtrace handler. Not in a static link: asking for the symbol
                // there fails a C program's link, and without asking, a Fortran program's
                // own options would be lost with the member.
                linked.push("-Wl,--wrap=_gfortran_set_options".to_owned());
            }
        }
        // The runtime's entry points are exported, so a library built with capture that the
        // program opens with `dlopen` finds them (one linked at start makes the linker export
        // what it uses anyway; a plugin is not seen at link time).
        if !is_static_link(args) {
            linked.push(format!("-Wl,--dynamic-list={}", exports.display()));
        }
        if cfg!(target_arch = "x86_64") {
            linked.push(CXX_ALLOCATOR_WRAPS.to_owned());
            // The wrapped operators reach the real ones through weak references, which do not
            // make libstdc++ needed: where the compiler links with `--as-needed` (Debian's
            // gcc does), a program whose only use of it is `operator new` lost the library
            // and called address 0 at its first allocation.
            // `-static-libstdc++` links libstdc++.a into a dynamic program: as a static link.
            let static_libstdcxx =
                is_static_link(args) || args.iter().any(|a| a == "-static-libstdc++");
            if cxx && !static_libstdcxx {
                linked.extend(
                    [
                        "-Wl,--push-state,--no-as-needed",
                        "-lstdc++",
                        "-Wl,--pop-state",
                    ]
                    .map(str::to_owned),
                );
            }
            // In a static link they do not take the operators' members out of libstdc++.a
            // either (the same program died at address 0): asking for them does.
            if cxx && static_libstdcxx {
                linked.push(cxx_operator_requests());
            }
        }
        // A language still chosen with `-x` would make the compiler read the archive as source.
        if args.iter().any(|a| a.starts_with("-x")) {
            linked.extend(["-x".to_owned(), "none".to_owned()]);
        }
        linked.push(runtime.display().to_string());
        // A static link has no libgcc_s: the runtime's unwinder then comes from libgcc_eh.
        let static_link = is_static_link(args);
        linked.extend(RUNTIME_NATIVE_LIBS.iter().map(|&lib| match lib {
            "-lgcc_s" if static_link => "-lgcc_eh".to_owned(),
            lib => lib.to_owned(),
        }));
    }
    if libatomic_found {
        linked.extend(
            [
                "-Wl,--push-state,--as-needed",
                "-latomic",
                "-Wl,--pop-state",
            ]
            .map(str::to_owned),
        );
    }
    linked
}

/// Whether a link is a C++ program's: by a C++ driver (`g++`, `clang++`, `c++`), or naming
/// libstdc++ itself.
fn links_cxx(compiler: &str, args: &[String]) -> bool {
    let name = Path::new(compiler)
        .file_name()
        .map_or_else(|| compiler.into(), |n| n.to_string_lossy());
    name.contains("++") || args.iter().any(|a| a == "-lstdc++")
}

/// Whether a link step makes a fully static program.
fn is_static_link(args: &[String]) -> bool {
    args.iter().any(|a| a == "-static" || a == "-static-pie")
}

/// Whether `compiler` can link libatomic the way `args` link (`-print-file-name` answers a
/// path only when it can): the archive for a static link, the shared library otherwise.
fn libatomic_found(compiler: &str, args: &[String]) -> bool {
    let library = if is_static_link(args) {
        "libatomic.a"
    } else {
        "libatomic.so"
    };
    Command::new(compiler)
        .arg(format!("-print-file-name={library}"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .is_some_and(|path| path.is_absolute() && path.exists())
}

/// The arguments shared by every split compile command: the user's minus output, inputs and
/// linker-only options.
fn split_compile_arguments(args: &[String]) -> Vec<String> {
    let inputs = input_positions(args);
    let mut kept = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "-o" || LINK_ONLY_WITH_VALUE.contains(&arg) {
            i += 2;
            continue;
        }
        let link_only = LINK_ONLY_FLAGS.contains(&arg)
            || arg.starts_with("-l")
            || arg.starts_with("-L")
            || arg.starts_with("-Wl,");
        if !link_only && !inputs.contains(&i) {
            kept.push(args[i].clone());
        }
        i += 1;
    }
    kept
}

/// Where the runtime library is: `EPCACHE_RUNTIME`, else the newest of the one beside the
/// `epcache` binary and those cargo built into its `deps/`.
fn runtime_library() -> Result<PathBuf, CcError> {
    if let Some(path) = std::env::var_os(RUNTIME_ENV) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(CcError::RuntimeNotAFile { path });
        }
        return Ok(path);
    }
    let exe = std::env::current_exe().doing(|| "finding the epcache binary".to_owned())?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let beside = dir.join(RUNTIME_FILE);
    // `cargo build`/`cargo run` of the epcache binary builds the runtime as a dependency, into
    // deps/ under a hashed name; the newest is this build's.
    let in_deps = || {
        std::fs::read_dir(dir.join("deps"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.starts_with("libepcache_monitor-") && name.ends_with(".a")
            })
            .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
    };
    // The newest of the two: a runtime left beside the binary by an earlier `cargo build` must
    // not shadow the one built with this binary.
    let newest = in_deps()
        .into_iter()
        .chain(beside.is_file().then(|| beside.clone()))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    newest.ok_or(CcError::NoRuntime { beside })
}

/// Redirects the program's calls to the C allocator to the runtime's `__wrap_*` functions.
const ALLOCATOR_WRAPS: &str = "-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,\
     --wrap=memalign,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=valloc,--wrap=pvalloc";

/// The same for C++'s operator new and delete (every variant libstdc++ exports); the runtime
/// has these wrappers on x86_64 only.
const CXX_ALLOCATOR_WRAPS: &str = "-Wl,--wrap=_Znwm,--wrap=_Znam,\
     --wrap=_ZnwmRKSt9nothrow_t,--wrap=_ZnamRKSt9nothrow_t,\
     --wrap=_ZnwmSt11align_val_t,--wrap=_ZnamSt11align_val_t,\
     --wrap=_ZnwmSt11align_val_tRKSt9nothrow_t,--wrap=_ZnamSt11align_val_tRKSt9nothrow_t,\
     --wrap=_ZdlPv,--wrap=_ZdaPv,--wrap=_ZdlPvm,--wrap=_ZdaPvm,\
     --wrap=_ZdlPvRKSt9nothrow_t,--wrap=_ZdaPvRKSt9nothrow_t,\
     --wrap=_ZdlPvSt11align_val_t,--wrap=_ZdaPvSt11align_val_t,\
     --wrap=_ZdlPvmSt11align_val_t,--wrap=_ZdaPvmSt11align_val_t,\
     --wrap=_ZdlPvSt11align_val_tRKSt9nothrow_t,--wrap=_ZdaPvSt11align_val_tRKSt9nothrow_t";

/// `-Wl,-u,...` for every operator [`CXX_ALLOCATOR_WRAPS`] wraps, so a static link takes the
/// real ones from libstdc++.a.
fn cxx_operator_requests() -> String {
    let symbols: Vec<String> = CXX_ALLOCATOR_WRAPS
        .trim_start_matches("-Wl,")
        .split(',')
        .filter_map(|w| w.trim().strip_prefix("--wrap="))
        .map(|symbol| format!("-u,{symbol}"))
        .collect();
    format!("-Wl,{}", symbols.join(","))
}

/// The C header and Fortran module source, as this build of epcache ships them.
const HEADER: &str = epcache_include::C_HEADER;
const FORTRAN_MODULE: &str = epcache_include::FORTRAN_MODULE;

/// Whether `compiler` is a Fortran compiler (it then needs the `epcache` module compiled).
fn is_fortran(compiler: &str) -> bool {
    let name = Path::new(compiler)
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    name.contains("fortran") || name.starts_with("f9") || name.starts_with("f7")
}

/// Writes `text` to `path` unless it already holds it; through a rename, so a parallel `make`
/// never reads half a file.
fn write_if_changed(path: &Path, text: &str) -> Result<(), CcError> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).doing(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).doing(|| format!("writing {}", path.display()))
}

/// The linker's dynamic list of the runtime's entry points (`--dynamic-list`), written once
/// into epcache's cache directory beside the headers.
fn export_list() -> Result<PathBuf, CcError> {
    let dir = cache_dir()?;
    let path = dir.join("exports.list");
    write_if_changed(
        &path,
        "{\n  __tsan_*;\n  __sanitizer_cov_*;\n  epcache_*;\n};\n",
    )?;
    Ok(path)
}

/// `$XDG_CACHE_HOME/epcache/include-<version>` (else under `~/.cache`, else the temporary
/// directory), created if missing.
fn cache_dir() -> Result<PathBuf, CcError> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let dir = base
        .join("epcache")
        .join(format!("include-{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&dir)
        .doing(|| format!("creating the include directory {}", dir.display()))?;
    Ok(dir)
}

/// The directory `epcache cc` puts on the include path: `epcache.h`, and for a Fortran compiler
/// the `epcache` module compiled by that compiler (module files are compiler-specific).
fn include_dir(compiler: &str) -> Result<PathBuf, CcError> {
    let dir = cache_dir()?;
    write_if_changed(&dir.join("epcache.h"), HEADER)?;
    if is_fortran(compiler) {
        let source = dir.join("epcache.f90");
        write_if_changed(&source, FORTRAN_MODULE)?;
        let module = dir.join("epcache.mod");
        let fresh = std::fs::metadata(&module)
            .and_then(|m| m.modified())
            .ok()
            .zip(std::fs::metadata(&source).and_then(|m| m.modified()).ok())
            .is_some_and(|(m, s)| m >= s);
        if !fresh {
            // Into a directory of its own, then renamed into place: `make -j` runs several
            // compilers that all find the module missing, and gfortran's own temporary module
            // file in a shared directory made all but one of them fail.
            let scratch = tempfile::Builder::new()
                .prefix("module-")
                .tempdir_in(&dir)
                .doing(|| format!("creating a directory in {}", dir.display()))?;
            let status = Command::new(compiler)
                .arg("-fsyntax-only")
                .arg("-J")
                .arg(scratch.path())
                .arg(&source)
                .status()
                .doing(|| format!("compiling the epcache Fortran module with `{compiler}`"))?;
            if !status.success() {
                return Err(CcError::FortranModule {
                    compiler: compiler.to_owned(),
                    module: source,
                });
            }
            std::fs::rename(scratch.path().join("epcache.mod"), &module)
                .doing(|| format!("moving the compiled module to {}", module.display()))?;
        }
    }
    Ok(dir)
}

/// The flags a compile step gets: capture, debug information, the include directory.
fn instrument_flags(compiler: &str) -> Result<Vec<String>, CcError> {
    let clang = if is_clang(compiler) {
        CLANG_INSTRUMENT_FLAGS
    } else {
        GCC_CALL_ABI_FLAGS
    };
    let mut flags: Vec<String> = INSTRUMENT_FLAGS
        .iter()
        .chain(clang)
        .map(|s| (*s).to_owned())
        .collect();
    flags.push(format!("-I{}", include_dir(compiler)?.display()));
    Ok(flags)
}

fn run(compiler: &str, args: &[String]) -> Result<i32, CcError> {
    if std::env::var_os("EPCACHE_CC_VERBOSE").is_some() {
        eprintln!("epcache cc: {compiler} {}", args.join(" "));
    }
    let status = Command::new(compiler)
        .args(args)
        .status()
        .doing(|| format!("running the compiler `{compiler}`"))?;
    // A compiler killed by a signal has no code; 1 keeps make from going on.
    Ok(status.code().unwrap_or(1))
}

/// Runs the compiler with `first` and `second` at once (the two listings of one source are
/// independent, and a build waits for both): `first`'s messages as they come, `second`'s held
/// and shown after (a source with an error says it once, from `first`). `first`'s code when it
/// fails, and `second` is stopped; else `second`'s.
fn run_side_by_side(compiler: &str, first: &[String], second: &[String]) -> Result<i32, CcError> {
    if std::env::var_os("EPCACHE_CC_VERBOSE").is_some() {
        eprintln!("epcache cc: {compiler} {}", second.join(" "));
    }
    let mut other = Command::new(compiler)
        .args(second)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .doing(|| format!("running the compiler `{compiler}`"))?;
    let mut pipe = other.stderr.take();
    // Read while it runs, so a compiler with much to say never blocks on a full pipe.
    let said = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = pipe.as_mut() {
            let _ = std::io::Read::read_to_end(pipe, &mut text);
        }
        text
    });
    let first = run(compiler, first);
    if !matches!(first, Ok(0)) {
        let _ = other.kill();
        let _ = other.wait();
        let _ = said.join();
        return first;
    }
    let status = other
        .wait()
        .doing(|| format!("waiting for the compiler `{compiler}`"))?;
    let said = said.join().unwrap_or_default();
    if !said.is_empty() {
        eprint!("{}", String::from_utf8_lossy(&said));
    }
    Ok(status.code().unwrap_or(1))
}

/// Runs a link step; when it fails and the runtime lacks the inline capture ABI that objects
/// built by this `epcache cc` name, says what to do (the linker's own messages only name the
/// missing symbols).
fn link(compiler: &str, args: &[String], runtime: &Path) -> Result<i32, CcError> {
    let code = run(compiler, args)?;
    if code == 0 && is_static_link(args) && !is_partial_link(args) {
        eprintln!(
            "epcache cc: the linker's warnings above about getpwuid_r, getaddrinfo and dlopen \
             in a static program come from epcache's runtime (Rust's standard library and the \
             dlopen wrap); a monitored program does not reach them unless it calls dlopen itself"
        );
    }
    if code != 0 && archive_lacks_symbol(runtime, epcache_inline::layout::ABI_PROBE) == Some(true) {
        eprintln!(
            "epcache cc: the runtime {} is older than this epcache (it lacks \
             {}): rebuild it with `cargo build -p epcache-monitor` (same profile as epcache), \
             or build with {}=off",
            runtime.display(),
            epcache_inline::layout::ABI_PROBE,
            inline_capture::INLINE_ENV
        );
    }
    Ok(code)
}

/// Whether the static library at `path` lacks `symbol` in its archive symbol index; `None` when
/// that cannot be told (no GNU index first, unreadable).
fn archive_lacks_symbol(path: &Path, symbol: &str) -> Option<bool> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path).ok()?;
    let mut head = [0u8; 8 + 60];
    file.read_exact(&mut head).ok()?;
    // `!<arch>\n`, then the first member's header: its name (16 bytes) is `/` for the index,
    // its size is a decimal at offset 48 of the header.
    if &head[..8] != b"!<arch>\n" || &head[8..10] != b"/ " {
        return None;
    }
    let size: u64 = std::str::from_utf8(&head[8 + 48..8 + 58])
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let mut index = Vec::new();
    file.take(size).read_to_end(&mut index).ok()?;
    let wanted = [symbol.as_bytes(), b"\0"].concat();
    Some(!index.windows(wanted.len()).any(|w| w == wanted))
}

/// Runs the compiler command `command` (compiler first, as the operating system passed it)
/// with capture added; returns the exit code to leave with.
pub fn compile_os_args(command: &[OsString]) -> Result<i32, CcError> {
    let command = command
        .iter()
        .map(|a| {
            a.clone()
                .into_string()
                .map_err(|argument| CcError::NotUtf8 { argument })
        })
        .collect::<Result<Vec<String>, CcError>>()?;
    compile(&command)
}

/// Runs `command` (compiler first) with capture added, as `epcache cc -- COMMAND` does; returns
/// the compiler's (or linker's) exit code, 1 when it was killed by a signal.
pub fn compile(command: &[String]) -> Result<i32, CcError> {
    let Some((compiler, args)) = command.split_first() else {
        return Err(CcError::NoCommand);
    };
    let (compiler, args) = (compiler.clone(), command_line::normalised(args)?);
    // Classified again without the dropped flags: a compile-and-link step holds its sources'
    // positions.
    let args = match classify(&args) {
        Step::Query => args,
        _ => {
            refuse_other_sanitizers(&args)?;
            refuse_other_data_models(&args)?;
            without_split_dwarf(without_stripping(without_lto(args)))
        }
    };
    match classify(&args) {
        Step::Query => run(&compiler, &args),
        Step::CompileOnly => match single_object(&args) {
            Some((source, object)) => {
                let common = without_output_and_source(&args, source);
                compile_object(&compiler, &common, &args[source], &object)
            }
            None => {
                if let Some(why) = why_instrumented_only(&compiler, &args) {
                    eprintln!(
                        "epcache cc: built instrumented only (no plain copy, so the code runs \
                         slower even where nothing is monitored): {why}"
                    );
                }
                let mut instrumented = args;
                instrumented.extend(instrument_flags(&compiler)?);
                run(&compiler, &instrumented)
            }
        },
        Step::Link => {
            let runtime = runtime_library()?;
            let linked = link_arguments(
                &args,
                &runtime,
                &export_list()?,
                libatomic_found(&compiler, &args),
                links_cxx(&compiler, &args),
            );
            link(&compiler, &linked, &runtime)
        }
        Step::CompileAndLink { sources } => compile_then_link(&compiler, &args, &sources),
    }
}

/// `args` without link-time optimisation, said on stderr when there was any: with `-flto` the
/// compiler only streams its intermediate form into the object and generates the code at link
/// time, where neither the TSan instrumentation nor the dual copies are made, so the program
/// would silently run uninstrumented and write no report.
fn without_lto(args: Vec<String>) -> Vec<String> {
    without_noted(
        args,
        |a| {
            a == "-flto"
                || a.starts_with("-flto=")
                || a.starts_with("-flto-")
                || a == "-ffat-lto-objects"
                || a == "-fno-fat-lto-objects"
        },
        "with link-time optimisation the code is made at link time, where it cannot be \
         instrumented; this step is built without it",
    )
}

/// `args` without the link options that strip the program's symbols and debug information,
/// said on stderr when there were any: the runtime reads the program's own DWARF to name its
/// regions and data structures, and a stripped program reports only `program`.
fn without_stripping(args: Vec<String>) -> Vec<String> {
    let strip = |o: &str| matches!(o, "-s" | "-S" | "--strip-all" | "--strip-debug");
    without_noted(
        args,
        |a| {
            matches!(a, "-s" | "--strip-all" | "--strip-debug")
                || a.strip_prefix("-Wl,")
                    .is_some_and(|list| list.split(',').all(strip))
        },
        "the runtime names regions and data structures from the program's own debug \
         information, which stripping removes",
    )
}

/// `args` without `-gsplit-dwarf`, said on stderr when it was there: it moves the debug
/// information the runtime names regions and data structures from into `.dwo` files, which the
/// runtime does not read, so the program would report only `program`.
fn without_split_dwarf(args: Vec<String>) -> Vec<String> {
    without_noted(
        args,
        |a| a == "-gsplit-dwarf" || a.starts_with("-gsplit-dwarf="),
        "the runtime names regions and data structures from debug information in the program \
         itself, which split DWARF moves to .dwo files",
    )
}

/// `args` without those `dropped` selects, said on stderr with `why` when there were any.
fn without_noted(args: Vec<String>, dropped: impl Fn(&str) -> bool, why: &str) -> Vec<String> {
    let (gone, kept): (Vec<String>, Vec<String>) = args.into_iter().partition(|a| dropped(a));
    if !gone.is_empty() {
        eprintln!("epcache cc: {} dropped: {why}", gone.join(" "));
    }
    kept
}

/// Fails on a sanitizer gcc cannot combine with ThreadSanitizer's instrumentation, which is how
/// `epcache cc` captures accesses, with what to do instead of gcc's bare incompatibility error.
fn refuse_other_sanitizers(args: &[String]) -> Result<(), CcError> {
    const EXCLUSIVE: &[&str] = &["address", "kernel-address", "hwaddress", "leak", "memory"];
    let clash = args
        .iter()
        .filter_map(|a| a.strip_prefix("-fsanitize="))
        .flat_map(|list| list.split(','))
        .find(|s| EXCLUSIVE.contains(s));
    if let Some(sanitizer) = clash {
        return Err(CcError::OtherSanitizer {
            sanitizer: sanitizer.to_owned(),
        });
    }
    Ok(())
}

/// Fails on a 32-bit data model (`-m32`, `-mx32`): the runtime is built for the host's 64-bit
/// model and its inline capture ABI names 64-bit registers, so such a build would fail in the
/// assembler and then at the link with messages that do not say why.
fn refuse_other_data_models(args: &[String]) -> Result<(), CcError> {
    if let Some(flag) = args.iter().find(|a| matches!(a.as_str(), "-m32" | "-mx32")) {
        return Err(CcError::DataModel { flag: flag.clone() });
    }
    Ok(())
}

fn compile_then_link(compiler: &str, args: &[String], sources: &[usize]) -> Result<i32, CcError> {
    if args.iter().any(|a| a == "-x" || a.starts_with("-x")) {
        return Err(CcError::LanguageOnLink);
    }
    let runtime = runtime_library()?;
    let objects_dir = tempfile::Builder::new()
        .prefix("epcache-cc-")
        .tempdir()
        .doing(|| "creating a directory for the instrumented objects".to_owned())?;
    let shared = split_compile_arguments(args);
    let mut link_args = args.to_vec();
    for (n, &position) in sources.iter().enumerate() {
        let source = &args[position];
        let stem = Path::new(source)
            .file_stem()
            .map_or_else(|| "source".into(), |s| s.to_string_lossy());
        let object = objects_dir.path().join(format!("{n}-{stem}.o"));
        let mut common = shared.clone();
        common.extend(link_dependency_options(args, source));
        let code = compile_object(compiler, &common, source, &object.display().to_string())?;
        if code != 0 {
            return Ok(code);
        }
        link_args[position] = object.display().to_string();
    }
    let linked = link_arguments(
        &link_args,
        &runtime,
        &export_list()?,
        libatomic_found(compiler, &link_args),
        links_cxx(compiler, &link_args),
    );
    link(compiler, &linked, &runtime)
}

/// For a `-c` command with one source and nothing that asks for other output (`-S`, `-E`,
/// dependency-only `-M`/`-MM`, LTO, `-save-temps`, split DWARF, `-x`): the source's position and the object
/// it makes (`-o`, or the source's stem with `.o` in the working directory).
fn single_object(args: &[String]) -> Option<(usize, String)> {
    if !args.iter().any(|a| a == "-c") {
        return None;
    }
    let other_output = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-S" | "-E" | "-M" | "-MM" | "-x" | "-fsyntax-only"
        ) || a.starts_with("-flto")
            || a.starts_with("-save-temps")
            || a == "-gsplit-dwarf"
            || (a.starts_with("-x") && a.len() > 2)
    });
    let inputs = input_positions(args);
    let [source] = inputs.as_slice() else {
        return None;
    };
    if other_output || !is_source(&args[*source]) {
        return None;
    }
    let object = args
        .iter()
        .position(|a| a == "-o")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| {
            let stem = Path::new(&args[*source])
                .file_stem()
                .map_or_else(|| "a".into(), |s| s.to_string_lossy());
            format!("{stem}.o")
        });
    Some((*source, object))
}

/// Why a `-c` command that [`single_object`] declined compiles sources that would otherwise get
/// a plain copy; `None` for commands that make no object (`-E`, `-S`, `-M`) or none of whose
/// inputs would get one anyway.
fn why_instrumented_only(compiler: &str, args: &[String]) -> Option<&'static str> {
    let no_object = args
        .iter()
        .any(|a| matches!(a.as_str(), "-S" | "-E" | "-M" | "-MM" | "-fsyntax-only"));
    let inputs = input_positions(args);
    let dual = source_positions(args, &inputs)
        .iter()
        .any(|&i| dual_wanted(compiler, &args[i]));
    if !args.iter().any(|a| a == "-c") || no_object || !dual {
        return None;
    }
    Some(
        if args
            .iter()
            .any(|a| a == "-x" || (a.starts_with("-x") && a.len() > 2))
        {
            "-x names the language (compile files with a source extension to get both copies)"
        } else if args.iter().any(|a| a.starts_with("-save-temps")) {
            "-save-temps keeps intermediate files the two copies would overwrite"
        } else if inputs.len() > 1 {
            "several sources in one command (compile one source per command to get both copies)"
        } else {
            "the command's input is not a source file by its name"
        },
    )
}

/// The arguments of a `-c` command minus `-c`, `-o FILE` and the source.
fn without_output_and_source(args: &[String], source: usize) -> Vec<String> {
    let mut kept = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-o" {
            i += 2;
            continue;
        }
        if i != source && args[i] != "-c" {
            kept.push(args[i].clone());
        }
        i += 1;
    }
    kept
}

/// Whether a source of this kind is built in two copies: C, C++ and Fortran (assembly sources
/// have no compiler-made code to copy) by a gcc-family compiler (the merge reads gcc's listings
/// and needs `-gno-as-loc-support`, which clang lacks), on x86-64 (the gate is x86-64 code),
/// unless switched off.
fn dual_wanted(compiler: &str, source: &str) -> bool {
    let off = std::env::var(DUAL_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no"));
    !off && !is_assembly(source) && !is_clang(compiler) && cfg!(target_arch = "x86_64")
}

/// Writes `text` to `listing` and assembles it into `object` with the target options of
/// `common` (`-m...`, `-Wa,...`); `Err` carries the first lines of the assembler's complaint,
/// for a note before the caller falls back to a plain instrumented build.
fn assemble(
    compiler: &str,
    common: &[String],
    listing: &Path,
    text: &str,
    object: &str,
) -> Result<Result<(), String>, CcError> {
    std::fs::write(listing, text).doing(|| format!("writing {}", listing.display()))?;
    let mut args: Vec<String> = common
        .iter()
        .filter(|a| a.starts_with("-m") || a.starts_with("-Wa,"))
        .cloned()
        .collect();
    args.extend(["-c".to_owned(), listing.display().to_string()]);
    args.extend(["-o".to_owned(), object.to_owned()]);
    let assembled = Command::new(compiler)
        .args(&args)
        .output()
        .doing(|| format!("running the compiler `{compiler}` on {}", listing.display()))?;
    if assembled.status.success() {
        return Ok(Ok(()));
    }
    let stderr = String::from_utf8_lossy(&assembled.stderr);
    Ok(Err(stderr.lines().take(3).collect::<Vec<_>>().join(" | ")))
}

/// Whether `source` is assembly, which has no compiler-made code to copy or test inline.
fn is_assembly(source: &str) -> bool {
    Path::new(source)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "s" | "S" | "sx"))
}

/// clang's instrumented-only object, with the inline repeat-hit test in front of each access
/// hook call: clang instruments after vectorising (its loops keep their 16-byte accesses), but
/// has no plain copy to merge, so its listing is rewritten whole (`inline_capture::
/// rewrite_listing`) and assembled. Where that fails the object is built as before, calling its
/// hooks, with a note.
fn compile_with_inline_tests(
    compiler: &str,
    common: &[String],
    source: &str,
    object: &str,
    flags: &[String],
) -> Result<i32, CcError> {
    let work = tempfile::Builder::new()
        .prefix("epcache-cc-inline-")
        .tempdir()
        .doing(|| "creating a directory for the listing".to_owned())?;
    let listing = work.path().join("captured.s");
    let mut compile = without_dependency_options(common);
    compile.extend(dependency_options_for(common, object));
    compile.extend(flags.iter().cloned());
    compile.extend(["-S".to_owned(), source.to_owned()]);
    compile.extend(["-o".to_owned(), listing.display().to_string()]);
    let code = run(compiler, &compile)?;
    if code != 0 {
        return Ok(code);
    }
    let text = std::fs::read_to_string(&listing)
        .doing(|| format!("reading the compiler's listing {}", listing.display()))?;
    let (rewritten, sites) = inline_capture::rewrite_listing(&text);
    let listing = work.path().join("inline.s");
    if let Err(first) = assemble(compiler, common, &listing, &rewritten, object)? {
        eprintln!(
            "epcache cc: {source}: the listing with inline tests did not assemble ({first}); \
             built calling its hooks. Please report this with the source; \
             EPCACHE_CC_INLINE=off silences it"
        );
        let mut plain = without_dependency_options(common);
        plain.extend(["-c".to_owned(), source.to_owned(), "-o".to_owned()]);
        plain.push(object.to_owned());
        plain.extend(flags.iter().cloned());
        return run(compiler, &plain);
    }
    if std::env::var_os("EPCACHE_CC_VERBOSE").is_some() {
        eprintln!(
            "epcache cc: {source}: built instrumented only (clang); {} access hook calls \
             test for repeat hits inline",
            sites.count()
        );
        note_carried(source, sites.carried());
    }
    Ok(0)
}

/// Whether `compiler` is clang (or clang++), which takes the TSan flags but not the merge.
fn is_clang(compiler: &str) -> bool {
    let name = Path::new(compiler)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.contains("clang") {
        return true;
    }
    if ["gcc", "g++", "gfortran"].iter().any(|g| name.contains(g)) {
        return false;
    }
    // A name that does not say (`cc`, `c++`, an MPI wrapper): clang under another name takes
    // neither the merge's `-gno-as-loc-support` nor its listings, so ask it once.
    // One command line has one compiler: the answer is kept for it.
    static ANSWER: std::sync::OnceLock<(String, bool)> = std::sync::OnceLock::new();
    let (asked, answer) = ANSWER.get_or_init(|| (compiler.to_owned(), says_it_is_clang(compiler)));
    if asked == compiler {
        *answer
    } else {
        says_it_is_clang(compiler)
    }
}

/// Whether `compiler --version` names clang.
fn says_it_is_clang(compiler: &str) -> bool {
    Command::new(compiler)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("clang"))
}

/// Dependency-file options: the plain compilation writes the file, the instrumented one must not.
fn is_dependency_option(arg: &str) -> bool {
    matches!(arg, "-MD" | "-MMD" | "-MP" | "-MG")
}
const DEPENDENCY_OPTIONS_WITH_VALUE: &[&str] = &["-MF", "-MT", "-MQ"];

/// `common` without the dependency-file options (and their values).
fn without_dependency_options(common: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut i = 0;
    while i < common.len() {
        let arg = common[i].as_str();
        if DEPENDENCY_OPTIONS_WITH_VALUE.contains(&arg) {
            i += 2;
            continue;
        }
        let joined = DEPENDENCY_OPTIONS_WITH_VALUE
            .iter()
            .any(|o| arg.starts_with(o) && arg.len() > o.len());
        if !is_dependency_option(arg) && !joined {
            kept.push(common[i].clone());
        }
        i += 1;
    }
    kept
}

/// The dependency file and target gcc gives `source` in a compile-and-link command with `-MD`
/// or `-MMD` and no `-MF`, as options for its split compile (which would otherwise write the file
/// beside its temporary object, where it is lost): the output without its extension plus `.d`,
/// targeting the output (`-o out/prog.exe` gives `out/prog.d: out/prog.exe`; with several
/// sources each writes it in turn, as gcc does), else `a-STEM.d` targeting `STEM.o`.
fn link_dependency_options(args: &[String], source: &str) -> Vec<String> {
    if !args.iter().any(|a| a == "-MD" || a == "-MMD") || args.iter().any(|a| a.starts_with("-MF"))
    {
        return Vec::new();
    }
    let stem = Path::new(source)
        .file_stem()
        .map_or_else(|| "a".into(), |s| s.to_string_lossy());
    let (file, target) = match args
        .iter()
        .position(|a| a == "-o")
        .and_then(|i| args.get(i + 1))
    {
        Some(output) => (
            Path::new(output).with_extension("d").display().to_string(),
            output.clone(),
        ),
        None => (format!("a-{stem}.d"), format!("{stem}.o")),
    };
    let mut options = vec!["-MF".to_owned(), file];
    if !args
        .iter()
        .any(|a| a.starts_with("-MT") || a.starts_with("-MQ"))
    {
        // Quoted for make, as gcc's own target is (`$` in a path).
        options.extend(["-MQ".to_owned(), target]);
    }
    options
}

/// The dependency options of the plain compilation: as given, plus the file name and target a
/// plain `-c -o OBJECT` would have used (the compiler would otherwise derive both from the
/// temporary listing it writes).
fn dependency_options_for(common: &[String], object: &str) -> Vec<String> {
    let wants_file = common.iter().any(|a| a == "-MD" || a == "-MMD");
    if !wants_file {
        return Vec::new();
    }
    let mut extra = Vec::new();
    if !common.iter().any(|a| a.starts_with("-MF")) {
        extra.push("-MF".to_owned());
        extra.push(Path::new(object).with_extension("d").display().to_string());
    }
    if !common
        .iter()
        .any(|a| a.starts_with("-MT") || a.starts_with("-MQ"))
    {
        extra.push("-MT".to_owned());
        extra.push(object.to_owned());
    }
    extra
}

/// The C library's memory functions, `_FORTIFY_SOURCE`'s checked ones included, and the
/// runtime's counting versions of them.
const MEMORY_CALLS: [(&str, &str); 6] = [
    ("memcpy", "__tsan_memcpy"),
    ("memmove", "__tsan_memmove"),
    ("memset", "__tsan_memset"),
    ("__memcpy_chk", "epcache_memcpy_chk"),
    ("__memmove_chk", "epcache_memmove_chk"),
    ("__memset_chk", "epcache_memset_chk"),
];

/// Has an object call the runtime's `__tsan_memcpy`, `__tsan_memmove` and `__tsan_memset`
/// instead of the C library's functions, which only TSan's own runtime could see (it intercepts
/// them): a copy the program asks the library for (an explicit call; a struct copy, which
/// clang 14 also makes a `memcpy` call; a large one gcc makes a call too) is counted as a read
/// of its source and a write of its destination. gcc also reports a copy of known size as
/// ranges before its call; the runtime does not count such a call again. Newer clang calls the
/// `__tsan_` ones itself. `_FORTIFY_SOURCE`'s checked ones go to `epcache_memcpy_chk` and kin,
/// which count and then check. Renamed with `objcopy`, the object's own definitions of these names
/// (a freestanding program's `memcpy`) excepted; without `objcopy` and `nm` the object is kept
/// as it is, with a note.
fn redirect_memory_calls(source: &str, object: &str) {
    let defined = Command::new("nm")
        .args(["--defined-only", "-P", object])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
                .collect::<Vec<_>>()
        });
    let mut rename = Vec::new();
    for (library, counted) in MEMORY_CALLS {
        if defined
            .as_ref()
            .is_some_and(|d| d.iter().any(|n| n == library))
        {
            continue;
        }
        rename.push("--redefine-sym".to_owned());
        rename.push(format!("{library}={counted}"));
    }
    let done = defined.is_some()
        && (rename.is_empty()
            || Command::new("objcopy")
                .args(&rename)
                .arg(object)
                .status()
                .is_ok_and(|s| s.success()));
    if !done {
        eprintln!(
            "epcache cc: {source}: nm or objcopy could not rename the object's memcpy, memmove \
             and memset calls; its library copies are not counted (install binutils)"
        );
    }
}

/// Has the compiler write each listing's line table itself instead of through `.loc`
/// directives: the two compilations number source files differently, and the assembler keeps
/// one numbering per object, while each debug unit's own table may number as it likes.
const SEPARATE_LINE_TABLES: &str = "-gno-as-loc-support";

/// Compiles `source` into `object` ([`compile_copies`]), then has the object's calls to the
/// C library's memory functions counted ([`redirect_memory_calls`]).
fn compile_object(
    compiler: &str,
    common: &[String],
    source: &str,
    object: &str,
) -> Result<i32, CcError> {
    // The merged listing's assembly would fail with a message blaming the merge.
    if let Some(dir) = Path::new(object)
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        return Err(CcError::NoOutputDirectory {
            object: object.to_owned(),
            dir: dir.to_owned(),
        });
    }
    let code = compile_copies(compiler, common, source, object)?;
    if code == 0 && !is_assembly(source) {
        redirect_memory_calls(source, object);
    }
    Ok(code)
}

/// Compiles `source` into `object`: both copies merged when possible, else instrumented only.
fn compile_copies(
    compiler: &str,
    common: &[String],
    source: &str,
    object: &str,
) -> Result<i32, CcError> {
    let flags = instrument_flags(compiler)?;
    let instrumented_only = |common: &[String]| -> Result<i32, CcError> {
        let mut compile = common.to_vec();
        compile.extend(["-c".to_owned(), source.to_owned(), "-o".to_owned()]);
        compile.push(object.to_owned());
        compile.extend(flags.iter().cloned());
        run(compiler, &compile)
    };
    let position_independent = common
        .iter()
        .any(|a| matches!(a.as_str(), "-fPIC" | "-fpic" | "-shared"));
    if !dual_wanted(compiler, source) {
        if is_clang(compiler)
            && inline_capture::wanted()
            && !position_independent
            && !is_assembly(source)
            && cfg!(target_arch = "x86_64")
        {
            return compile_with_inline_tests(compiler, common, source, object, &flags);
        }
        return instrumented_only(common);
    }
    let work = tempfile::Builder::new()
        .prefix("epcache-cc-dual-")
        .tempdir()
        .doing(|| "creating a directory for the two listings".to_owned())?;
    let plain_listing = work.path().join("plain.s");
    let captured_listing = work.path().join("captured.s");
    let include = flags.iter().filter(|f| f.starts_with("-I")).cloned();

    let mut plain = common.to_vec();
    plain.extend(dependency_options_for(common, object));
    plain.extend(["-g".to_owned(), SEPARATE_LINE_TABLES.to_owned()]);
    plain.extend(GCC_CALL_ABI_FLAGS.iter().map(|f| (*f).to_owned()));
    plain.extend(["-S".to_owned(), source.to_owned()]);
    plain.extend(include);
    plain.extend(["-o".to_owned(), plain_listing.display().to_string()]);
    // The plain compilation shows the source's warnings.
    let mut captured = without_dependency_options(common);
    captured.extend(flags.iter().cloned());
    captured.extend([SEPARATE_LINE_TABLES.to_owned(), "-w".to_owned()]);
    captured.extend(["-S".to_owned(), source.to_owned()]);
    captured.extend(["-o".to_owned(), captured_listing.display().to_string()]);
    let code = if writes_modules(compiler, source) {
        // One after the other: each writes the source's modules, by a temporary file of one
        // name. The second writes what the first did, so the file stays as it was.
        match run(compiler, &plain)? {
            0 => run(compiler, &captured)?,
            failed => failed,
        }
    } else {
        run_side_by_side(compiler, &plain, &captured)?
    };
    if code != 0 {
        return Ok(code);
    }

    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .doing(|| format!("reading the compiler's listing {}", path.display()))
    };
    let merged = match dual_asm::merge(
        &read(&plain_listing)?,
        &read(&captured_listing)?,
        position_independent,
        inline_capture::wanted(),
    ) {
        Ok(merged) => merged,
        Err(why) => {
            eprintln!(
                "epcache cc: {source}: built instrumented only ({why}); its code calls the \
                 capture hooks even while nothing is monitored"
            );
            return instrumented_only(&without_dependency_options(common));
        }
    };
    let listing = work.path().join("dual.s");
    if let Err(first) = assemble(compiler, common, &listing, &merged.assembly, object)? {
        eprintln!(
            "epcache cc: {source}: the merged listing did not assemble ({first}); built \
             instrumented only. Please report this with the source; EPCACHE_CC_DUAL=off \
             silences it"
        );
        return instrumented_only(&without_dependency_options(common));
    }
    if std::env::var_os("EPCACHE_CC_VERBOSE").is_some() {
        eprintln!(
            "epcache cc: {source}: {} functions choose their copy at entry, {} always run \
             instrumented (they call region markers); {} access hook calls test for repeat \
             hits inline",
            merged.dual, merged.always_captured, merged.inlined
        );
        note_carried(source, merged.carried);
    }
    Ok(0)
}

/// The verbose note on how many inline tests take the tag word's mask from the test before
/// them (`carried_registers.rs`).
fn note_carried(source: &str, carried: usize) {
    eprintln!(
        "epcache cc: {source}: {carried} inline tests find the tag word's mask in a register \
         left by an earlier test"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_compilations_write_modules_and_c_ones_do_not() {
        assert!(writes_modules("gfortran", "heat.f90"));
        assert!(writes_modules("gcc", "old.F"));
        assert!(writes_modules("/opt/gcc/bin/gfortran-13", "main.c"));
        assert!(!writes_modules("gcc", "kernel.c"));
        assert!(!writes_modules("g++", "solver.cpp"));
    }

    #[test]
    fn stripping_is_dropped_and_other_sanitizers_are_refused() {
        assert_eq!(
            without_stripping(args("-O2 -s k.o -Wl,--strip-all -Wl,-O1,-s -o k")),
            args("-O2 k.o -Wl,-O1,-s -o k"),
            "a -Wl list with other options is left whole"
        );
        let untouched = args("-O2 -shared -fsanitize=undefined -o k.so k.o");
        assert_eq!(without_stripping(untouched.clone()), untouched);
        assert!(refuse_other_sanitizers(&untouched).is_ok());
        let refused = refuse_other_sanitizers(&args("-O2 -fsanitize=undefined,address -c k.c"))
            .unwrap_err()
            .to_string();
        assert!(
            refused.starts_with("-fsanitize=address cannot"),
            "{refused}"
        );
        assert!(refuse_other_data_models(&args("-O2 -m64 -c k.c")).is_ok());
        let refused = refuse_other_data_models(&args("-O2 -m32 -c k.c"))
            .unwrap_err()
            .to_string();
        assert!(refused.starts_with("-m32 cannot be captured"), "{refused}");
    }

    #[test]
    fn static_links_take_the_static_unwinder() {
        let runtime = Path::new("/rt/libepcache_monitor.a");
        let exports = Path::new("/c/exports.list");
        let dynamic = link_arguments(&args("k.o -o k"), runtime, exports, false, false);
        assert!(dynamic.contains(&"-lgcc_s".to_owned()));
        let fully_static =
            link_arguments(&args("-static k.o -o k"), runtime, exports, false, false);
        assert!(fully_static.contains(&"-lgcc_eh".to_owned()));
        assert!(!fully_static.contains(&"-lgcc_s".to_owned()));
    }

    #[test]
    fn static_cxx_links_ask_for_every_wrapped_operator() {
        let runtime = Path::new("/rt/libepcache_monitor.a");
        let exports = Path::new("/c/exports.list");
        let requests = cxx_operator_requests();
        let wraps = CXX_ALLOCATOR_WRAPS.matches("--wrap=").count();
        assert_eq!(requests.matches("-u,").count(), wraps, "{requests}");
        assert!(requests.starts_with("-Wl,-u,_Znwm,"), "{requests}");
        assert!(requests.ends_with(",-u,_ZdaPvSt11align_val_tRKSt9nothrow_t"));
        let linked =
            |line: &str, cxx: bool| link_arguments(&args(line), runtime, exports, false, cxx);
        assert!(linked("-static k.o -o k", true).contains(&requests));
        assert!(
            !linked("k.o -o k", true).contains(&requests),
            "dynamic: -lstdc++ kept needed"
        );
        assert!(
            !linked("-static k.o -o k", false).contains(&requests),
            "C: no libstdc++"
        );
        // libstdc++.a in a dynamic program: the operators asked for, no shared libstdc++.
        let static_libstdcxx = linked("-static-libstdc++ k.o -o k", true);
        assert!(static_libstdcxx.contains(&requests));
        assert!(
            !static_libstdcxx.contains(&"-lstdc++".to_owned()),
            "{static_libstdcxx:?}"
        );
    }

    #[test]
    fn link_time_optimisation_is_dropped_and_nothing_else() {
        assert_eq!(
            without_lto(args(
                "-O2 -flto=auto -ffat-lto-objects -flto-partition=one -fno-lto-x -c k.c"
            )),
            args("-O2 -fno-lto-x -c k.c")
        );
        assert_eq!(
            without_lto(args("-O2 -flto k.o -o k")),
            args("-O2 k.o -o k")
        );
        let untouched = args("-O3 -fopenmp -c k.c");
        assert_eq!(without_lto(untouched.clone()), untouched);
    }

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn an_archive_symbol_index_is_searched_for_whole_names() {
        let dir = tempfile::tempdir().unwrap();
        let archive = |names: &[u8]| {
            let mut bytes = b"!<arch>\n".to_vec();
            bytes.extend(format!("{:<48}{:<10}`\n", "/", names.len()).as_bytes());
            bytes.extend(names);
            let path = dir.path().join(format!("lib{}.a", names.len()));
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let probe = epcache_inline::layout::ABI_PROBE;
        let with = archive(format!("\0\0\0\x02....a\0{probe}\0").as_bytes());
        assert_eq!(archive_lacks_symbol(&with, probe), Some(false));
        let longer = archive(format!("\0\0\0\x01....{probe}_old\0").as_bytes());
        assert_eq!(archive_lacks_symbol(&longer, probe), Some(true));
        let not_an_archive = dir.path().join("x.a");
        std::fs::write(&not_an_archive, "hello").unwrap();
        assert_eq!(archive_lacks_symbol(&not_an_archive, probe), None);
    }

    #[test]
    fn steps_are_told_apart_by_mode_flags_and_inputs() {
        assert_eq!(classify(&args("-O2 -c k.c -o k.o")), Step::CompileOnly);
        assert_eq!(classify(&args("-E k.c")), Step::CompileOnly);
        assert_eq!(classify(&args("--version")), Step::Query);
        assert_eq!(classify(&args("-print-file-name=libc.so")), Step::Query);
        assert_eq!(classify(&args("-o prog a.o b.o -lm")), Step::Link);
        assert_eq!(
            classify(&args("-O2 -o prog main.c util.f90 lib.a -lm")),
            Step::CompileAndLink {
                sources: vec![3, 4]
            }
        );
        // An option's value is not an input, even when it looks like a source.
        assert_eq!(classify(&args("-include pre.c -o p.o x.o")), Step::Link);
        // `-x` makes any input a source until `-x none`: not a link of objects.
        assert_eq!(
            classify(&args("-O2 -x c k.txt -o px")),
            Step::CompileAndLink { sources: vec![3] }
        );
        assert_eq!(
            classify(&args("-xc - -x none a.o -o p")),
            Step::CompileAndLink { sources: vec![1] }
        );
        // ld's own `-x` passed with -Xlinker is no language.
        assert_eq!(classify(&args("-Xlinker -x a.o b.o -o p")), Step::Link);
    }

    #[test]
    fn partial_links_get_neither_the_runtime_nor_the_wraps() {
        let runtime = Path::new("/r/libepcache_monitor.a");
        let exports = Path::new("/c/exports.list");
        for line in [
            "-r a.o b.o -o ab.o",
            "-Wl,-r a.o -o ab.o",
            "-nostdlib -Wl,--relocatable a.o",
        ] {
            let linked = link_arguments(&args(line), runtime, exports, true, false);
            assert_eq!(linked, args(line), "{line}");
        }
        // A language left chosen by `-x` is reset before the runtime archive.
        let linked = link_arguments(&args("a.o -x none -o p"), runtime, exports, false, false);
        let archive = linked.iter().position(|a| a.ends_with(".a")).unwrap();
        assert_eq!(linked[archive - 2..archive], args("-x none"));
    }

    #[test]
    fn split_dwarf_is_dropped_and_fallbacks_say_why() {
        assert_eq!(
            without_split_dwarf(args("-O2 -g -gsplit-dwarf -c k.c")),
            args("-O2 -g -c k.c")
        );
        assert!(
            why_instrumented_only("gcc", &args("-O2 -c a.c b.c"))
                .unwrap()
                .contains("several sources")
        );
        assert!(
            why_instrumented_only("gcc", &args("-c -x c k.txt"))
                .unwrap()
                .contains("-x")
        );
        assert!(
            why_instrumented_only("gcc", &args("-c -save-temps k.c"))
                .unwrap()
                .contains("-save-temps")
        );
        // Nothing to say where no object is made, or no plain copy was due.
        assert_eq!(why_instrumented_only("gcc", &args("-E a.c b.c")), None);
        assert_eq!(why_instrumented_only("gcc", &args("-c a.s b.s")), None);
    }

    #[test]
    fn a_single_source_compile_names_its_object() {
        let line = args("-O2 -c dir/k.c -o out/k.o -MD");
        assert_eq!(single_object(&line), Some((2, "out/k.o".to_owned())));
        assert_eq!(
            without_output_and_source(&line, 2),
            args("-O2 -MD"),
            "the compile's common arguments"
        );
        assert_eq!(
            single_object(&args("-c dir/k.f90")),
            Some((1, "k.o".to_owned()))
        );
        // Other outputs, several sources or assembly keep the single instrumented build.
        assert_eq!(single_object(&args("-S -c k.c")), None);
        assert_eq!(single_object(&args("-c a.c b.c")), None);
        assert_eq!(single_object(&args("-flto -c a.c")), None);
    }

    #[test]
    fn the_plain_compile_writes_the_dependency_file_a_plain_build_would() {
        let common = args("-O2 -MMD -MP");
        assert_eq!(
            dependency_options_for(&common, "obj/k.o"),
            args("-MF obj/k.d -MT obj/k.o")
        );
        assert_eq!(
            dependency_options_for(&args("-MD -MF x.d -MT t"), "k.o"),
            Vec::<String>::new()
        );
        assert_eq!(
            without_dependency_options(&args("-O2 -MD -MF x.d -MTt -MP -DX")),
            args("-O2 -DX")
        );
    }

    #[test]
    fn a_compile_and_link_writes_the_dependency_file_gcc_would() {
        assert_eq!(
            link_dependency_options(&args("-O2 -MD -o out/prog.exe k.c"), "k.c"),
            args("-MF out/prog.d -MQ out/prog.exe")
        );
        assert_eq!(
            link_dependency_options(&args("-MMD src/k.c j.c"), "src/k.c"),
            args("-MF a-k.d -MQ k.o")
        );
        assert_eq!(
            link_dependency_options(&args("-MD -MT t -o p k.c"), "k.c"),
            args("-MF p.d")
        );
        assert!(link_dependency_options(&args("-MD -MF x.d -o p k.c"), "k.c").is_empty());
        assert!(link_dependency_options(&args("-O2 -o p k.c"), "k.c").is_empty());
    }

    #[test]
    fn split_compile_drops_output_inputs_and_linker_options() {
        let line = args("-O2 -I inc -o prog main.c a.o -L/x -lm -Wl,--as-needed -DN=4");
        assert_eq!(split_compile_arguments(&line), args("-O2 -I inc -DN=4"));
    }

    #[test]
    fn links_never_get_libtsan_and_shared_libraries_get_no_runtime() {
        let runtime = Path::new("/r/libepcache_monitor.a");
        let exports = Path::new("/c/exports.list");
        let linked = link_arguments(
            &args("-fsanitize=thread -o p a.o"),
            runtime,
            exports,
            true,
            false,
        );
        assert!(!linked.contains(&"-fsanitize=thread".to_owned()));
        assert!(linked.contains(&"/r/libepcache_monitor.a".to_owned()));
        let shared = link_arguments(
            &args("-shared -o libx.so a.o"),
            runtime,
            exports,
            false,
            false,
        );
        assert!(!shared.iter().any(|a| a.ends_with(".a")));
        // libatomic only where the compiler has it, and only as needed.
        assert!(linked.ends_with(&args(
            "-Wl,--push-state,--as-needed -latomic -Wl,--pop-state"
        )));
        assert!(!shared.contains(&"-latomic".to_owned()));
        // The entry points are exported from programs, for libraries they `dlopen`.
        assert!(linked.contains(&"-Wl,--dynamic-list=/c/exports.list".to_owned()));
        assert!(!shared.iter().any(|a| a.contains("dynamic-list")));
    }
}
