//! Sampled miss-ratio curves (SHARDS, fixed rate; Waldspurger et al., FAST'15) for traces too
//! long for exact stack distances: fully associative LRU, per data structure, like the exact
//! curves of `mrc.rs`.
//!
//! A line address is sampled when a hash of it falls below `rate` of the hash's range, so every
//! access to a sampled line is kept and every access to another is dropped: the sampled lines'
//! reuse is seen whole. Their stack distances are measured among sampled lines only and scaled
//! by `1 / rate` (a sampled distance `d` stands for about `d / rate` distinct lines); a cache of
//! `c` lines misses a sampled access when its scaled distance is at least `c`, and each sampled
//! miss stands for `1 / rate` misses (the adjusted estimator: the denominator is the accesses
//! actually counted, so a sample that happened to take more or fewer accesses than `rate` of
//! them does not bias every point alike). An access over several lines is sampled when any of
//! its lines is, with the largest distance of its sampled lines.
//!
//! Sizes below `4 / rate` lines get no point ([`smallest_lines`]): a sampled distance is a
//! multiple of `1 / rate`, so a sample cannot tell small sizes apart. At rate 1 every line is
//! sampled and the curves are the exact ones, from one line up.
//!
//! Set-associative curves are not sampled: miniature simulation (a cache of `s * rate` sets fed
//! the sampled lines; Waldspurger et al., ATC'17) was tried and measured within 0.015 of exact
//! at 8 ways, but up to 0.16 at 2 ways on kernels whose arrays are placed to conflict (the
//! suite's 2 MiB-aligned jacobi2d, the test matrix multiply), an error the sample's size does
//! not predict; so those curves stay exact.
//!
//! Cost: one hash per line touched, and the stack and its lookups hold only the sampled lines,
//! so memory falls with the rate. Error: the curves follow the exact ones within a mean absolute
//! error of the miss ratio that grows as fewer distinct lines are sampled ([`stated_error`], as
//! measured; `epcache replay` prints it with the number of lines sampled).

use crate::analysis::{DistanceHistogram, LruStack};
use crate::trace::partial::PartialTrace;

use super::Owners;
use super::mrc::{self, MissRatioCurve, MrcError};

/// Hash values are taken modulo `2^MODULUS_BITS`; a rate is rounded to a multiple of its inverse.
const MODULUS_BITS: u32 = 24;

/// Which line addresses are sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    threshold: u64,
}

impl Sampler {
    /// Samples about `rate` of the lines (`0 < rate <= 1`).
    pub fn new(rate: f64) -> Result<Sampler, MrcError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(MrcError::BadRate(rate));
        }
        let threshold = ((rate * (1u64 << MODULUS_BITS) as f64).round() as u64).max(1);
        Ok(Sampler { threshold })
    }

    /// The rate actually applied (the asked one, rounded to a multiple of `2^-24`).
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / (1u64 << MODULUS_BITS) as f64
    }

    /// Whether line `line` (an address shifted by the line size's bits) is sampled.
    #[inline]
    pub fn takes(&self, line: u64) -> bool {
        mix(line) & ((1 << MODULUS_BITS) - 1) < self.threshold
    }
}

/// A 64-bit finalizer (MurmurHash3's): neighbouring lines get unrelated hashes.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ x >> 33
}

/// Curves from a sample, and what the sample was.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SampledCurves {
    /// The rate applied.
    pub rate: f64,
    /// Distinct lines sampled: below a few hundred the curves are coarse.
    pub sampled_lines: u64,
    /// Counted accesses that were sampled.
    pub sampled_accesses: u64,
    /// The curves, structure by structure then `(all)`, as [`super::miss_ratio_curves`] gives
    /// them (their misses are estimates).
    pub curves: Vec<MissRatioCurve>,
}

/// Fully associative miss-ratio curves of `trace` for `line_size`-byte lines from a SHARDS
/// sample of `rate` of its lines, at sizes doubling from [`smallest_lines`] lines to `max_size`
/// bytes (by default the smallest power of two holding the estimated footprint).
pub fn sampled_miss_ratio_curves(
    trace: &PartialTrace,
    line_size: u32,
    rate: f64,
    max_size: Option<u64>,
) -> Result<SampledCurves, MrcError> {
    if !line_size.is_power_of_two() || line_size < 4 {
        return Err(MrcError::BadLine(line_size));
    }
    let sampler = Sampler::new(rate)?;
    let rate = sampler.rate();
    let owners = Owners::of(trace);
    let n = owners.structures.len() + 1;
    let all = n - 1;
    let bits = line_size.trailing_zeros();
    let mut accesses = vec![0u64; n];
    let mut stack = LruStack::new(1 << 10);
    // Lines sampled in all threads together (for the stated error), and by the thread that
    // sampled the most (each has caches of its own: the footprint a curve needs to reach).
    let (mut thread, mut sampled_lines, mut most_lines) = (0, 0u64, 0u64);
    let mut distances: Vec<DistanceHistogram> = vec![DistanceHistogram::default(); n];
    for attributed in mrc::attributed(trace, &owners) {
        let mrc::Attributed {
            thread: t,
            access: a,
            counting,
            structure,
        } = attributed?;
        if t != thread {
            let lines = stack.distinct_lines() as u64;
            (sampled_lines, most_lines) = (sampled_lines + lines, most_lines.max(lines));
            (thread, stack) = (t, LruStack::new(1 << 10));
        }
        let times = mrc::cache_accesses(a.kind).len() as u64;
        if counting {
            accesses[structure] += times;
            accesses[all] += times;
        }
        let end = a.addr.saturating_add(u64::from(a.size.max(1)));
        let lines = (a.addr >> bits)..=((end - 1) >> bits);
        if !lines.clone().any(|line| sampler.takes(line)) {
            continue;
        }
        for _ in 0..times {
            let mut distance = Some(0u64);
            for line in lines.clone().filter(|&line| sampler.takes(line)) {
                let d = stack.reference(line);
                distance = distance.zip(d).map(|(x, y)| x.max(y));
            }
            if counting {
                let scaled = distance.map(|d| (d as f64 / rate) as u64);
                distances[structure].record(scaled);
                distances[all].record(scaled);
            }
        }
    }
    let lines = stack.distinct_lines() as u64;
    let (sampled_lines, most_lines) = (sampled_lines + lines, most_lines.max(lines));
    let footprint = (most_lines as f64 / rate).ceil() as u64;
    let max_size = max_size.unwrap_or_else(|| (footprint.max(1) << bits).next_power_of_two());
    let mut curves = mrc::empty_curves(&owners, &accesses);
    let smallest = if rate >= 1.0 { 1 } else { smallest_lines(rate) };
    for (s, curve) in curves.iter_mut().enumerate() {
        let mut lines = smallest;
        while lines << bits <= max_size && curve.points.len() < mrc::MAX_POINTS {
            let sampled = distances[s].predicted_misses(lines);
            let misses = ((sampled as f64 / rate).round() as u64).min(curve.accesses);
            curve
                .points
                .push(mrc::point(lines << bits, misses, curve.accesses));
            lines *= 2;
        }
    }
    curves.retain(|c| c.accesses > 0);
    Ok(SampledCurves {
        rate,
        sampled_lines,
        sampled_accesses: distances[all].accesses,
        curves,
    })
}

/// Mean absolute errors of the miss ratio measured for sampled curves against exact ones, by
/// distinct lines sampled (at least): over the command line's test kernels (matrix multiply,
/// gather, Fortran sweep; 32- and 64-byte lines, rates 0.5 to 0.001, the matrix multiply
/// recorded six times since its addresses, and so its sample, change from run to run) and the
/// suite's jacobi2d, heat3d and spmv (64-byte lines, rates 0.1 to 0.001), sizes from
/// [`smallest_lines`]: the largest seen in each band, rounded up (0.067 for 100 to 1,000 lines,
/// 0.023 for 1,000 to 10,000, 0.005 above, 0.12 below 100). The gather kernel at rate 0.1
/// (about 3,100 lines) spreads most with its addresses: 42 recordings gave 0.001 to 0.023, one
/// above 0.016. The tests hold every figure.
pub const SAMPLING_ERRORS: [(u64, f64); 4] = [(0, 0.15), (100, 0.1), (1_000, 0.03), (10_000, 0.01)];

/// The mean absolute error to expect of curves sampled at `rate` from `sampled_lines` distinct
/// lines: none at rate 1, where every line is followed and distances are not scaled, else
/// [`stated_error`].
pub fn expected_error(rate: f64, sampled_lines: u64) -> f64 {
    if rate >= 1.0 {
        0.0
    } else {
        stated_error(sampled_lines)
    }
}

/// The mean absolute error to expect of curves sampled from `sampled_lines` distinct lines
/// ([`SAMPLING_ERRORS`]).
pub fn stated_error(sampled_lines: u64) -> f64 {
    SAMPLING_ERRORS
        .iter()
        .rev()
        .find(|(lines, _)| sampled_lines >= *lines)
        .map_or(SAMPLING_ERRORS[0].1, |(_, error)| *error)
}

/// The fewest lines a sampled point has: the smallest power of two of at least `4 / rate`. A
/// sampled distance is a multiple of `1 / rate`, so below `1 / rate` lines every reuse within
/// the sample looks like a hit, and up to a few times that the steps are too coarse (errors of
/// 0.2 were measured at `1 / rate` and `2 / rate` lines).
pub fn smallest_lines(rate: f64) -> u64 {
    ((4.0 / rate).ceil() as u64).max(1).next_power_of_two()
}

/// The mean absolute difference of the miss ratios of two sets of curves at the sizes both
/// have, over the curves both have (by structure name); `None` when they share no point.
pub fn mean_absolute_error(a: &[MissRatioCurve], b: &[MissRatioCurve]) -> Option<f64> {
    let mut sum = 0.0;
    let mut count = 0u64;
    for ca in a {
        let Some(cb) = b.iter().find(|c| c.structure == ca.structure) else {
            continue;
        };
        for pa in &ca.points {
            if let Some(pb) = cb.points.iter().find(|p| p.size == pa.size) {
                sum += (pa.miss_ratio - pb.miss_ratio).abs();
                count += 1;
            }
        }
    }
    (count > 0).then(|| sum / count as f64)
}
