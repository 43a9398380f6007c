//! The C header `include/epcache.h` is cbindgen's rendering of `src/capture/c_abi.rs`: this test
//! renders it again and fails when the checked-in file is stale (`EPCACHE_BLESS=1` rewrites it),
//! compiles it as C and C++, and checks that the Fortran module binds the same functions.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The C ABI, exactly: what the header declares and the Fortran module binds.
const FUNCTIONS: [&str; 4] = [
    "epcache_region_begin",
    "epcache_region_end",
    "epcache_register",
    "epcache_unregister",
];

const BLESS_ENV: &str = "EPCACHE_BLESS";
const REFRESH: &str = "EPCACHE_BLESS=1 cargo test -p epcache-monitor --test it c_header";

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    crate_dir().join("include/epcache.h")
}

/// Whether `attrs` export the item under its own name (`#[no_mangle]`, `#[unsafe(no_mangle)]`).
fn is_no_mangle(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("no_mangle")
            || (a.path().is_ident("unsafe")
                && a.parse_args::<syn::Path>()
                    .is_ok_and(|p| p.is_ident("no_mangle")))
    })
}

/// The source cbindgen reads: `c_abi.rs` with one declaration per exported function.
///
/// A function with per-architecture twins (`epcache_region_begin`: a naked trampoline on x86_64,
/// a plain call elsewhere) keeps its first definition, without its `cfg`: cbindgen does not
/// evaluate `cfg` and would declare the function twice. Twins must agree on the C signature;
/// that is checked here rather than trusted.
fn one_declaration_per_function(source: &str) -> String {
    let mut file = syn::parse_file(source).expect("src/capture/c_abi.rs parses");
    let mut seen: Vec<(String, syn::Signature)> = Vec::new();
    file.items.retain_mut(|item| {
        let syn::Item::Fn(f) = item else { return true };
        if !is_no_mangle(&f.attrs) {
            return true;
        }
        let name = f.sig.ident.to_string();
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            assert_eq!(
                quote::ToTokens::to_token_stream(&first.inputs).to_string(),
                quote::ToTokens::to_token_stream(&f.sig.inputs).to_string(),
                "the cfg twins of {name} take different arguments; the header can declare only one"
            );
            assert_eq!(
                quote::ToTokens::to_token_stream(&first.output).to_string(),
                quote::ToTokens::to_token_stream(&f.sig.output).to_string(),
                "the cfg twins of {name} return different types"
            );
            return false;
        }
        f.attrs.retain(|a| !a.path().is_ident("cfg"));
        seen.push((name, f.sig.clone()));
        true
    });
    quote::ToTokens::to_token_stream(&file).to_string()
}

/// The header as cbindgen renders it from today's `c_abi.rs` and `cbindgen.toml`.
fn render() -> String {
    let source = std::fs::read_to_string(crate_dir().join("src/capture/c_abi.rs"))
        .expect("reading src/capture/c_abi.rs");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let single = dir.path().join("c_abi.rs");
    std::fs::write(&single, one_declaration_per_function(&source)).expect("writing the source");
    let config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml"))
        .expect("monitor-lib/cbindgen.toml is a valid cbindgen configuration");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(&single)
        .generate()
        .expect("cbindgen renders c_abi.rs");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

/// The names of the functions a header declares, in order.
fn declared_functions(header: &str) -> Vec<String> {
    header
        .lines()
        .filter(|l| !l.trim_start().starts_with(['#', '*', '/']))
        .filter_map(|l| {
            let open = l.find('(')?;
            let name = l[..open].rsplit([' ', '*']).next()?;
            (name.starts_with("epcache_") && l.trim_end().ends_with(");")).then(|| name.to_owned())
        })
        .collect()
}

#[test]
fn checked_in_header_is_what_cbindgen_renders() {
    let rendered = render();
    let path = header_path();
    if std::env::var_os(BLESS_ENV).is_some() {
        std::fs::write(&path, &rendered).expect("writing include/epcache.h");
        eprintln!("{BLESS_ENV}: rewrote {}", path.display());
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != rendered {
        let first_difference = checked_in
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| checked_in.lines().count().min(rendered.lines().count()));
        panic!(
            "{} is stale: it differs from what cbindgen renders from src/capture/c_abi.rs \
             from line {}.\nRefresh it with:\n    {REFRESH}\nand commit it.\n--- rendered ---\n{rendered}",
            path.display(),
            first_difference + 1
        );
    }
}

#[test]
fn header_declares_exactly_the_c_abi_with_guard_macros_and_extern_c() {
    let header = render();
    assert_eq!(declared_functions(&header), FUNCTIONS, "{header}");
    for needle in [
        "#ifndef EPCACHE_H",
        "#define EPCACHE_H",
        "#endif /* EPCACHE_H */",
        "extern \"C\" {",
        "#define EPCACHE_REGION_BEGIN(name) epcache_region_begin(name)",
        "#define EPCACHE_REGION_END() epcache_region_end()",
        "#include <stdint.h>",
        "void epcache_register(const char *name, const void *addr, uint64_t bytes);",
        "GENERATED by cbindgen",
        REFRESH,
    ] {
        assert!(header.contains(needle), "no `{needle}` in\n{header}");
    }
    // The guard opens before and closes after everything else.
    let body: Vec<&str> = header
        .lines()
        .filter(|l| l.starts_with('#') && !l.starts_with("#define EPCACHE_REGION"))
        .collect();
    assert_eq!(body.first(), Some(&"#ifndef EPCACHE_H"), "{header}");
    assert_eq!(body.last(), Some(&"#endif /* EPCACHE_H */"), "{header}");
}

/// Whether `tool` runs; a missing one fails under CI and is skipped loudly elsewhere.
fn available(tool: &str) -> bool {
    epcache_test_support::tools::available(tool, "c_header")
}

/// A translation unit that includes the header twice (the guard) and uses every declaration.
const USER: &str = r#"#include "epcache.h"
#include "epcache.h"
static double a[16];
int use_header(void) {
  EPCACHE_REGION_BEGIN("outer");
  epcache_region_begin("inner");
  epcache_register("a", a, (uint64_t)sizeof a);
  epcache_unregister(a);
  epcache_region_end();
  EPCACHE_REGION_END();
  return 0;
}
"#;

#[test]
fn header_compiles_as_strict_c_and_cpp() {
    // The rendered header, not the checked-in one (which a blessing run may be rewriting now);
    // the staleness test keeps the two equal.
    let dir = tempfile::tempdir().unwrap();
    let include = dir.path().join("include");
    std::fs::create_dir(&include).unwrap();
    std::fs::write(include.join("epcache.h"), render()).unwrap();
    for (compiler, file, std) in [
        ("gcc", "user.c", "-std=c99"),
        ("g++", "user.cpp", "-std=c++11"),
    ] {
        if !available(compiler) {
            continue;
        }
        let source = dir.path().join(file);
        std::fs::write(&source, USER).unwrap();
        let out = Command::new(compiler)
            .args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-I"])
            .arg(&include)
            .arg(&source)
            .arg("-o")
            .arg(dir.path().join(format!("{file}.o")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{compiler} rejects include/epcache.h:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // C++ must see C linkage: the symbols are not mangled.
        let nm = Command::new("nm")
            .arg(dir.path().join(format!("{file}.o")))
            .output();
        if let Ok(nm) = nm {
            let symbols = String::from_utf8_lossy(&nm.stdout);
            for f in FUNCTIONS {
                assert!(
                    symbols.lines().any(|l| l.ends_with(&format!(" U {f}"))),
                    "{compiler}: {f} is not referenced by its C name:\n{symbols}"
                );
            }
        }
    }
}

#[test]
fn fortran_module_binds_the_same_functions() {
    let module = std::fs::read_to_string(crate_dir().join("include/epcache.f90"))
        .expect("reading include/epcache.f90");
    let bound: Vec<&str> = module
        .lines()
        .filter_map(|l| {
            let at = l.find("bind(C, name=\"")? + "bind(C, name=\"".len();
            l[at..].split('"').next()
        })
        .collect();
    assert_eq!(bound, FUNCTIONS, "the Fortran module binds {bound:?}");
}
