//! Gauss elimination without pivoting on a column-major `REAL A(100,100)`, instrumented through the explicit access API (the EP-Cache paper's example).

use epcache_sim::cache::HierarchySpec;
use epcache_sim::monitor::{CounterArrayConfig, Histogram};
use epcache_sim::ranges::AddressRange;
use epcache_sim::simulator::{Simulator, SimulatorError};

/// The loop orders the paper compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopOrder {
    /// Row-oriented update: the inner loop walks a row, a stride of `n` elements in column-major storage.
    Original,
    /// Multipliers stored in place, then column-oriented updates: the inner loop walks a column.
    Optimised,
}

/// The events the paper's Figure 3 shows, in its order.
pub const FIGURE_3_EVENTS: [&str; 4] = ["EPC_L1_LDH", "PAPI_L1_LDM", "EPC_L1_STH", "PAPI_L1_STM"];

/// One measured run: the histograms of [`FIGURE_3_EVENTS`] over A and their static counts.
#[derive(Debug)]
pub struct GaussRun {
    pub histograms: Vec<Histogram>,
    pub static_counts: Vec<u64>,
    /// The solution's largest error against the known answer, to show the kernel really ran.
    pub max_error: f32,
}

/// A column-major matrix whose every element access is reported to a simulator.
struct Traced<'a> {
    a: Vec<f32>,
    n: usize,
    sim: &'a mut Simulator,
}

impl Traced<'_> {
    fn addr(&self, i: usize, j: usize) -> u64 {
        self.a.as_ptr() as u64 + ((j * self.n + i) * 4) as u64
    }

    fn get(&mut self, i: usize, j: usize) -> f32 {
        self.sim.read(self.addr(i, j), 4);
        self.a[j * self.n + i]
    }

    fn set(&mut self, i: usize, j: usize, v: f32) {
        self.sim.write(self.addr(i, j), 4);
        self.a[j * self.n + i] = v;
    }
}

/// Runs the elimination of order `n` in `order` on the paper's L1 (`D1=8K,2,32`, the shape
/// DESIGN.md's Cachegrind figures use), with A's histograms in `portions` equal buckets.
pub fn run(order: LoopOrder, n: usize, portions: u64) -> Result<GaussRun, SimulatorError> {
    let spec: HierarchySpec = "D1=8K,2,32".parse()?;
    let mut sim = Simulator::new(&spec, CounterArrayConfig::default())?;
    // Diagonally dominant, so elimination without pivoting is stable; b = A * ones.
    let mut a = vec![0f32; n * n];
    for j in 0..n {
        for i in 0..n {
            a[j * n + i] = if i == j {
                n as f32
            } else {
                1.0 / (1 + i + j) as f32
            };
        }
    }
    let mut b: Vec<f32> = (0..n).map(|i| (0..n).map(|j| a[j * n + i]).sum()).collect();
    let range = AddressRange::new(a.as_ptr() as u64, (n * n * 4) as u64);
    let line = 32;
    let bucket_lines = (range.len() / portions).div_ceil(line);
    let mut events = Vec::new();
    let mut hists = Vec::new();
    for name in FIGURE_3_EVENTS {
        events.push(sim.monitor_mut().add_event(name, range)?);
        hists.push(sim.monitor_mut().add_histogram(name, range, bucket_lines)?);
    }
    let mut m = Traced {
        a,
        n,
        sim: &mut sim,
    };
    m.sim.monitor_mut().start()?;
    match order {
        LoopOrder::Original => {
            for k in 0..n - 1 {
                for i in k + 1..n {
                    let l = m.get(i, k) / m.get(k, k);
                    for j in k + 1..n {
                        let v = m.get(i, j) - l * m.get(k, j);
                        m.set(i, j, v);
                    }
                    b[i] -= l * b[k];
                }
            }
        }
        LoopOrder::Optimised => {
            for k in 0..n - 1 {
                for i in k + 1..n {
                    let l = m.get(i, k) / m.get(k, k);
                    m.set(i, k, l);
                    b[i] -= l * b[k];
                }
                for j in k + 1..n {
                    for i in k + 1..n {
                        let v = m.get(i, j) - m.get(i, k) * m.get(k, j);
                        m.set(i, j, v);
                    }
                }
            }
        }
    }
    let static_counts = m.sim.monitor_mut().stop()?;
    // Back substitution, outside the measured region as in the paper.
    let mut x = vec![0f32; n];
    for i in (0..n).rev() {
        let s: f32 = (i + 1..n).map(|j| m.a[j * n + i] * x[j]).sum();
        x[i] = (b[i] - s) / m.a[i * n + i];
    }
    let max_error = x.iter().map(|v| (v - 1.0).abs()).fold(0.0, f32::max);
    let histograms = hists
        .into_iter()
        .map(|h| sim.monitor().read_histogram(h))
        .collect::<Result<Vec<_>, _>>()?;
    let static_counts = events.iter().map(|e| static_counts[e.0]).collect();
    Ok(GaussRun {
        histograms,
        static_counts,
        max_error,
    })
}
