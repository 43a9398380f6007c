//! Code addresses to source lines with their inlined calls (`CodeLines`), against binutils'
//! `addr2line -i -f` at every instruction of a -O2 program whose kernels gcc inlined into
//! `main`, two levels deep.

use std::path::Path;
use std::process::Command;

use epcache_symbols::{CodeLines, SourceFrame};

use super::programs::build;

const KERNEL: &str = r#"
#include <stdio.h>
#define N 200
static double a[N][N], b[N][N], c[N][N];

static inline double dot(int i, int j) {
    double s = 0;
    for (int k = 0; k < N; k++)
        s += a[i][k] * b[k][j];
    return s;
}

static inline void product(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            c[i][j] = dot(i, j);
}

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = i + j;
            b[i][j] = i - j;
        }
    product();
    printf("%f\n", c[N / 2][N / 3]);
    return 0;
}
"#;

/// The instruction addresses of `function` in `exe`, from `objdump -d`.
fn instructions_of(exe: &Path, function: &str) -> Vec<u64> {
    let out = Command::new("objdump")
        .arg("-d")
        .arg(format!("--disassemble={function}"))
        .arg(exe)
        .output()
        .expect("objdump (binutils) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.trim_start().split_once(':')?;
            (!rest.trim().is_empty()).then_some(())?;
            u64::from_str_radix(addr, 16).ok()
        })
        .collect()
}

/// `addr2line -i -f` of each address: its frames, innermost first, as (function, file name,
/// line).
fn binutils_frames(exe: &Path, addrs: &[u64]) -> Vec<Vec<(String, String, u32)>> {
    let out = Command::new("addr2line")
        .args(["-i", "-f", "-a", "-e"])
        .arg(exe)
        .args(addrs.iter().map(|a| format!("{a:#x}")))
        .output()
        .expect("addr2line (binutils) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut all: Vec<Vec<(String, String, u32)>> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l.starts_with("0x") {
            all.push(Vec::new());
            continue;
        }
        let function = l.to_owned();
        let position = lines.next().expect("a position after a function");
        let (file, line) = position.rsplit_once(':').expect("file:line");
        let line = line.split_whitespace().next().unwrap().parse().unwrap_or(0);
        let file = Path::new(file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        all.last_mut()
            .expect("an address first")
            .push((function, file, line));
    }
    all
}

fn ours(frames: &[SourceFrame]) -> Vec<(String, String, u32)> {
    frames
        .iter()
        .map(|f| {
            let file = f.file.as_deref().map_or(String::new(), |p| {
                Path::new(p)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            (
                f.function.clone().unwrap_or_else(|| "??".into()),
                file,
                f.line,
            )
        })
        .collect()
}

#[test]
fn inlined_kernel_frames_match_binutils_addr2line() {
    if !epcache_test_support::tools::all_available(
        "inlined_kernel_frames_match_binutils_addr2line",
        &["gcc", "objdump", "addr2line"],
        "to compare inlined frames with binutils",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gcc", "-g", "-O2"],
        "matmul.c",
        KERNEL,
        "to build an -O2 program with inlined kernels",
    ) else {
        return;
    };
    let lines = CodeLines::load(&exe).unwrap();
    let addrs = instructions_of(&exe, "main");
    assert!(addrs.len() > 20, "main has code: {addrs:?}");
    let expected = binutils_frames(&exe, &addrs);
    assert_eq!(expected.len(), addrs.len());
    let mut deepest = 0;
    for (addr, want) in addrs.iter().zip(&expected) {
        let got = ours(&lines.frames_at(*addr).unwrap());
        assert_eq!(&got, want, "frames at {addr:#x}");
        deepest = deepest.max(got.len());
    }
    // The kernel's inner loop is `dot` inlined into `product` inlined into `main`.
    assert!(deepest >= 3, "inlined two deep somewhere in main");
    let dot_line = KERNEL
        .lines()
        .position(|l| l.contains("s += a[i][k]"))
        .unwrap() as u32
        + 1;
    let inner = addrs
        .iter()
        .map(|a| lines.frames_at(*a).unwrap())
        .find(|f| f[0].line == dot_line)
        .expect("an instruction of the inner loop");
    assert_eq!(inner[0].function.as_deref(), Some("dot"));
    assert_eq!(inner.last().unwrap().function.as_deref(), Some("main"));
    // An address outside any unit has no frames.
    assert!(lines.frames_at(0x10).unwrap().is_empty());
}

#[test]
fn a_file_without_debug_information_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not_elf");
    std::fs::write(&path, b"plain text").unwrap();
    let error = CodeLines::load(&path).unwrap_err().to_string();
    assert!(error.contains("not_elf"), "{error}");
}
