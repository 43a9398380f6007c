//! Why `epcache cc` could not run a compiler command: each refusal says what to do instead, and
//! each failed step names the file or program it was about.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::runtime_names::{RUNTIME_ENV, RUNTIME_FILE};

/// Everything that stops `epcache cc` before the compiler's own exit code decides.
#[derive(Debug, thiserror::Error)]
pub enum CcError {
    /// `epcache cc` was given no compiler to run.
    #[error("no compiler command given: epcache cc -- gcc -O2 -c kernel.c")]
    NoCommand,
    /// An argument the driver must read is not UTF-8.
    #[error("argument {argument:?} is not UTF-8; epcache cc needs UTF-8 arguments")]
    NotUtf8 {
        /// The argument as given.
        argument: OsString,
    },
    /// A sanitizer gcc cannot combine with the ThreadSanitizer instrumentation capture uses.
    #[error(
        "-fsanitize={sanitizer} cannot be combined with the ThreadSanitizer instrumentation \
         epcache cc captures accesses through; build the epcache copy without it (keep a \
         separate build for {sanitizer} checking)"
    )]
    OtherSanitizer {
        /// The sanitizer named (`address`, `leak`, ...).
        sanitizer: String,
    },
    /// A 32-bit data model, which the 64-bit runtime and the inline sequence cannot serve.
    #[error(
        "{flag} cannot be captured: epcache's runtime is built for {arch} (64-bit); build the \
         epcache copy of the program without {flag}",
        arch = std::env::consts::ARCH
    )]
    DataModel {
        /// `-m32` or `-mx32`.
        flag: String,
    },
    /// A compile-and-link command with `-x LANG`, which cannot be split into its steps.
    #[error(
        "epcache cc cannot split a compile-and-link command that uses -x; \
         compile with -c first, then link the objects"
    )]
    LanguageOnLink,
    /// A response file that includes itself, directly or not.
    #[error("response file {file} is nested more than {depth} deep (does it name itself?)")]
    ResponseFileLoop {
        /// The file at the limit.
        file: String,
        /// The nesting limit.
        depth: usize,
    },
    /// The object's directory does not exist (the merged listing would fail to assemble with a
    /// message blaming the merge).
    #[error("cannot write {object}: the directory {} does not exist", dir.display())]
    NoOutputDirectory {
        /// The object asked for.
        object: String,
        /// Its missing directory.
        dir: PathBuf,
    },
    /// `EPCACHE_RUNTIME` names something that is not a file.
    #[error(
        "{RUNTIME_ENV} names {}, which is not a file: build the runtime with \
         `cargo build -p epcache-monitor` and point {RUNTIME_ENV} at \
         target/<profile>/{RUNTIME_FILE}, or unset it",
        path.display()
    )]
    RuntimeNotAFile {
        /// What the variable names.
        path: PathBuf,
    },
    /// No runtime library beside the `epcache` binary nor in its build's `deps/`.
    #[error(
        "the epcache runtime {} does not exist: build it with `cargo build -p epcache-monitor` \
         (same profile as epcache), or set {RUNTIME_ENV} to the path of {RUNTIME_FILE}",
        beside.display()
    )]
    NoRuntime {
        /// Where the runtime was looked for beside the binary.
        beside: PathBuf,
    },
    /// The Fortran compiler could not compile the `epcache` module.
    #[error(
        "`{compiler}` could not compile the epcache module {}; is it a Fortran 2003 compiler?",
        module.display()
    )]
    FortranModule {
        /// The compiler.
        compiler: String,
        /// The module source written into the include directory.
        module: PathBuf,
    },
    /// A file, directory or program step failed.
    #[error("{doing}")]
    Io {
        /// What was being done (`writing ...`, `running the compiler ...`).
        doing: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Names the step an I/O result belongs to: `.doing(|| format!("writing {}", path.display()))`.
pub(crate) trait Doing<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, CcError>;
}

impl<T> Doing<T> for std::io::Result<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, CcError> {
        self.map_err(|source| CcError::Io {
            doing: what(),
            source,
        })
    }
}
