//! Gauss elimination without pivoting, the EP-Cache paper's example, as a captured Rust program:
//! built with SanitizerCoverage load/store tracing and linked with epcache-monitor.
//!
//! A is 100x100 `f32` stored column-major as the paper's Fortran stores it (`A[j][i]` is
//! A(i,j)), in a static so that epcache names it from DWARF. The original loop order walks rows of
//! A in its inner loop, the optimised one columns, so read misses of A fall sharply. Sancov gives
//! no function entry hooks, so the two eliminations are the marker regions `gauss_original` and
//! `gauss_optimised`.
//!
//! Built by `examples/tests/it/gauss.rs` with rustc and the sancov flags; see
//! `examples/rust-capture/sum.rs` for building such a program with cargo.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Mutex;

const N: usize = 100;

type Matrix = [[f32; N]; N];

/// A(i,j) is `A[j][i]`. A static (not a local) so that it has a name and an address in DWARF; the
/// mutex is only what makes a mutable static safe, and is taken once.
static A: Mutex<Matrix> = Mutex::new([[0.0; N]; N]);
static B: Mutex<[f32; N]> = Mutex::new([0.0; N]);

/// Diagonally dominant, so elimination without pivoting is stable; b = A * ones, so x = ones.
#[inline(never)]
fn init(a: &mut Matrix, b: &mut [f32; N]) {
    for (j, column) in a.iter_mut().enumerate() {
        for (i, v) in column.iter_mut().enumerate() {
            *v = if i == j {
                N as f32
            } else {
                1.0 / (1 + i + j) as f32
            };
        }
    }
    for (i, bi) in b.iter_mut().enumerate() {
        *bi = (0..N).map(|j| a[j][i]).sum();
    }
}

/// Row-oriented update: the inner loop runs along row i of A.
#[inline(never)]
fn elim_original(a: &mut Matrix, b: &mut [f32; N]) {
    for k in 0..N - 1 {
        for i in k + 1..N {
            let l = a[k][i] / a[k][k];
            for j in k + 1..N {
                a[j][i] -= l * a[j][k];
            }
            b[i] -= l * b[k];
        }
    }
}

/// Multipliers stored in place, then column-oriented updates: the inner loop runs down a column.
#[inline(never)]
fn elim_optimised(a: &mut Matrix, b: &mut [f32; N]) {
    for k in 0..N - 1 {
        for i in k + 1..N {
            let l = a[k][i] / a[k][k];
            a[k][i] = l;
            b[i] -= l * b[k];
        }
        for j in k + 1..N {
            for i in k + 1..N {
                a[j][i] -= a[k][i] * a[j][k];
            }
        }
    }
}

/// Solves the upper triangle; returns the largest error against the known solution (all ones).
#[inline(never)]
fn back_substitute(a: &Matrix, b: &[f32; N]) -> f32 {
    let mut x = [0f32; N];
    let mut err = 0f32;
    for i in (0..N).rev() {
        let s: f32 = (i + 1..N).map(|j| a[j][i] * x[j]).sum();
        x[i] = (b[i] - s) / a[i][i];
        err = err.max((x[i] - 1.0).abs());
    }
    err
}

fn main() -> ExitCode {
    let mut a = A.lock().unwrap_or_else(|e| e.into_inner());
    let mut b = B.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = (&mut *a, &mut *b);

    init(black_box(a), b);
    {
        let _region = epcache_monitor::region!("gauss_original");
        elim_original(black_box(a), b);
    }
    let err_original = back_substitute(a, b);

    init(black_box(a), b);
    {
        let _region = epcache_monitor::region!("gauss_optimised");
        elim_optimised(black_box(a), b);
    }
    let err_optimised = back_substitute(a, b);

    println!("gauss {N}: max error original {err_original:.1e} optimised {err_optimised:.1e}");
    if err_original < 1e-3 && err_optimised < 1e-3 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
