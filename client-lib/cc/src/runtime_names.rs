//! The runtime `epcache cc` links into every program, by name: the variable that points at it,
//! its file name, and the system libraries it needs. Where it is looked for is the driver's
//! `runtime_library`; the names are apart so that errors can name them too.

/// Environment variable naming the runtime library, overriding the one beside `epcache`.
pub const RUNTIME_ENV: &str = "EPCACHE_RUNTIME";
/// File name of the runtime that `cargo build -p epcache-monitor` produces.
pub const RUNTIME_FILE: &str = "libepcache_monitor.a";
/// What the Rust staticlib needs from the system (`rustc --print native-static-libs`).
pub(crate) const RUNTIME_NATIVE_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];
