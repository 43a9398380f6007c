//! The simulator a program's access stream drives: the cache hierarchy, the counter-array monitor behind its ePAPI event set, and the analyses.

use crate::analysis::{Analyses, AnalysisConfig, AnalysisError, AnalysisReport};
use crate::cache::{
    AccessKind, AccessOutcome, CacheError, CoreOutcome, Hierarchy, HierarchySpec, Machine,
    MissStep, RunEnd, Watch,
};
use crate::monitor::{CounterArrayConfig, EpapiError, EventSet};
use crate::ranges::RangeSet;

pub mod capture_path;

/// Anything that stops a simulator from being built or configured.
#[derive(Debug, thiserror::Error)]
pub enum SimulatorError {
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error(transparent)]
    Monitor(#[from] EpapiError),
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
}

/// One simulated core: its cache hierarchy, its counter array and the analyses watching it.
///
/// Access sizes follow one rule, kept here so every capture path shares it: an access of at most
/// one L1 line is one access (even when it straddles two lines, as Cachegrind counts it); a
/// larger one (a `memcpy`-like range, a vector wider than a line) is split at L1 line boundaries
/// into one access per line, as the hardware would issue them.
///
/// The in-target runtime drives it through [`capture_path::CaptureFastPath`] as well, which
/// no other user needs.
#[derive(Debug)]
pub struct Simulator {
    hierarchy: Hierarchy,
    monitor: EventSet,
    /// Boxed: the hot path only tests it for `None`, a compare with zero.
    analyses: Option<Box<Analyses>>,
    l1_line: u64,
    /// The hierarchy's two-level miss step with the monitor watching, while the hierarchy is
    /// the two-level one and no analysis runs: an L1 miss is then one call through this
    /// pointer, with no test of the stores or of the analyses. Refreshed by [`Self::refresh`]
    /// whenever the hierarchy's shape or the analyses change.
    miss_step: Option<MissStep<EventSet>>,
}

impl Simulator {
    /// A simulator with empty caches, a stopped monitor and no analyses.
    pub fn new(spec: &HierarchySpec, counters: CounterArrayConfig) -> Result<Self, SimulatorError> {
        let hierarchy = Hierarchy::new(spec)?;
        let monitor = EventSet::for_hierarchy(counters, &hierarchy)?;
        Ok(Self::from_parts(hierarchy, monitor))
    }

    /// A simulator over a hierarchy and event set built elsewhere, with no analyses.
    fn from_parts(hierarchy: Hierarchy, monitor: EventSet) -> Self {
        let l1_line = u64::from(hierarchy.line_size(0));
        let mut sim = Self {
            hierarchy,
            monitor,
            analyses: None,
            l1_line,
            miss_step: None,
        };
        sim.refresh();
        sim
    }

    /// Looks up what depends on the hierarchy's shape and the analyses again.
    fn refresh(&mut self) {
        self.monitor.set_hits_watched(self.analyses.is_some());
        self.miss_step = if self.analyses.is_none() {
            self.hierarchy.miss_step()
        } else {
            None
        };
    }

    /// The hierarchy, for its totals and contents.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    /// Zeroes every level's totals and keeps the cache contents: for a caller that has handed
    /// the totals so far on and goes on simulating the same caches.
    pub fn reset_level_stats(&mut self) {
        self.hierarchy.reset_stats();
    }

    /// The monitor's event set: add events and histograms, start, stop, read.
    pub fn monitor(&self) -> &EventSet {
        &self.monitor
    }

    /// The monitor's event set, to configure (or replace) through the returned guard. When the
    /// guard goes, the simulator tells the event set again whether the analyses watch L1 hits,
    /// which the hit path asks the event set alone, so even an event set assigned over this
    /// one sees them.
    pub fn monitor_mut(&mut self) -> MonitorMut<'_> {
        MonitorMut {
            hits_watched: self.analyses.is_some(),
            monitor: &mut self.monitor,
        }
    }

    /// Switches the analyses in `config` on for the data structures in `ranges`, replacing any
    /// running before; a config with nothing on switches them off.
    pub fn set_analyses(
        &mut self,
        config: AnalysisConfig,
        ranges: RangeSet,
    ) -> Result<(), SimulatorError> {
        self.analyses = if config.any() {
            Some(Box::new(Analyses::new(config, ranges, &self.hierarchy)?))
        } else {
            None
        };
        let record = self
            .analyses
            .as_ref()
            .is_some_and(|a| a.needs_line_events());
        self.hierarchy.set_record_lines(record);
        self.refresh();
        Ok(())
    }

    /// Counts the running analyses' spatial use per member of `layout` for range `range` of the
    /// ranges given to [`Simulator::set_analyses`]; see [`Analyses::divide_by_field`].
    pub fn analyse_by_field(
        &mut self,
        range: usize,
        layout: &crate::monitor::FieldLayout,
    ) -> Result<(), SimulatorError> {
        if let Some(analyses) = &mut self.analyses {
            analyses.divide_by_field(range, layout)?;
        }
        Ok(())
    }

    /// What the analyses found so far, if any are on.
    pub fn analysis_report(&self) -> Option<AnalysisReport> {
        self.analyses.as_ref().map(|a| a.report())
    }

    /// A data load of `size` bytes at `addr`.
    #[inline(always)]
    pub fn read(&mut self, addr: u64, size: u32) {
        self.access(addr, size, AccessKind::Read);
    }

    /// A data store of `size` bytes at `addr`.
    #[inline(always)]
    pub fn write(&mut self, addr: u64, size: u32) {
        self.access(addr, size, AccessKind::Write);
    }

    /// A data access; see the type's documentation for how sizes are counted.
    #[inline(always)]
    pub fn access(&mut self, addr: u64, size: u32, kind: AccessKind) {
        // Inlined into the capture loop (a call costs more than a hit): an L1 hit that no
        // event and no analysis watches is the hierarchy's fast path and two tests. Everything
        // else is out of line.
        if !self.hierarchy.l1_takes(addr, size) {
            self.access_missed(addr, size, kind);
            return;
        }
        debug_assert_eq!(
            self.monitor.hits_watched(),
            self.analyses.is_some(),
            "the event set does not know whether the analyses watch L1 hits"
        );
        let block = self.hierarchy.l1_block(addr);
        if self.hierarchy.l1_hit_block(block, kind) {
            if self.monitor.sees_l1_hit(kind) {
                self.l1_hit_observed(addr, size, kind);
            }
            return;
        }
        self.l1_missed(addr, block, size, kind);
    }

    /// Simulates every access of `batch` in order, exactly as calling [`Self::access`] on each
    /// would, but faster: runs of L1 hits go through one loop monomorphised for L1's store (see
    /// [`Hierarchy::access_batch`]), and the monitor is asked once per run whether hits count.
    pub fn access_batch(&mut self, batch: &[(u64, u32, AccessKind)]) {
        if self.analyses.is_none() && self.hierarchy.two_level() {
            self.two_level_batch(batch);
            return;
        }
        if self.analyses.is_some() || !self.hierarchy.batch_hits() {
            for &(addr, size, kind) in batch {
                self.access(addr, size, kind);
            }
            return;
        }
        let mut rest = batch;
        loop {
            let (hits, end) = if self.monitor.counts_l1_hit(AccessKind::Read)
                || self.monitor.counts_l1_hit(AccessKind::Write)
            {
                let monitor = &mut self.monitor;
                self.hierarchy.l1_run(rest, |addr, kind| {
                    monitor.observe(addr, &AccessOutcome::l1_hit(kind));
                })
            } else {
                self.hierarchy.l1_run(rest, |_, _| {})
            };
            let Some(&(addr, size, kind)) = rest.get(hits) else {
                break;
            };
            if end == RunEnd::Declined && u64::from(size) > self.l1_line {
                self.access_per_line(addr, size, kind);
            } else {
                let outcome = self.hierarchy.finish_run(addr, size, kind, end);
                self.monitor.observe(addr, &outcome);
            }
            rest = &rest[hits + 1..];
        }
    }

    /// [`Self::access_batch`] through the hierarchy's two-level loop, which hands every L1
    /// miss's outcome to the monitor; hits only when an event counts them.
    fn two_level_batch(&mut self, batch: &[(u64, u32, AccessKind)]) {
        let mut rest = batch;
        loop {
            let done = self.hierarchy.two_level_run(rest, &mut self.monitor);
            // The loop stopped at an access wider than one line, or at the end.
            let Some(&(addr, size, kind)) = rest.get(done) else {
                break;
            };
            self.access(addr, size, kind);
            rest = &rest[done + 1..];
        }
    }

    /// An L1 hit that the monitor or the analyses want to see.
    #[inline(never)]
    fn l1_hit_observed(&mut self, addr: u64, size: u32, kind: AccessKind) {
        let outcome = AccessOutcome::l1_hit(kind);
        self.monitor.observe(addr, &outcome);
        if self.analyses.is_some() {
            self.analyse(addr, size, kind, &outcome);
        }
    }

    /// A one-line access the L1 fast path took and found absent (it changed nothing): the
    /// two-level miss step when there is one, else out of line.
    #[inline(always)]
    fn l1_missed(&mut self, addr: u64, block: u64, size: u32, kind: AccessKind) {
        if let Some(step) = self.miss_step
            && step(&mut self.hierarchy, &mut self.monitor, addr, block, kind).is_some()
        {
            return;
        }
        self.l1_missed_general(addr, size, kind);
    }

    /// [`Self::l1_missed`] without the miss step, or with analyses on.
    #[inline(never)]
    fn l1_missed_general(&mut self, addr: u64, size: u32, kind: AccessKind) {
        let outcome = match self.hierarchy.two_level_missed(addr, kind) {
            Some(l2) => {
                // The monitor's inlined path for a miss, as the batch loop uses it.
                Watch::miss(&mut self.monitor, addr, kind, l2);
                if self.analyses.is_none() {
                    return;
                }
                crate::cache::two_level_outcome(kind, l2)
            }
            None => {
                let outcome = self.hierarchy.access_missed(addr, size, kind);
                self.monitor.observe(addr, &outcome);
                outcome
            }
        };
        if self.analyses.is_some() {
            self.analyse(addr, size, kind, &outcome);
        }
    }

    /// An access the L1 fast path declined (it changed nothing): a straddle, an access wider
    /// than a line, or any access while the fast path is off (line events recorded, a
    /// write-through L1, sets not indexed by a mask).
    #[inline(never)]
    fn access_missed(&mut self, addr: u64, size: u32, kind: AccessKind) {
        if u64::from(size) > self.l1_line {
            self.access_per_line(addr, size, kind);
            return;
        }
        let outcome = self.hierarchy.access_missed(addr, size, kind);
        self.monitor.observe(addr, &outcome);
        if self.analyses.is_some() {
            self.analyse(addr, size, kind, &outcome);
        }
    }

    fn access_per_line(&mut self, addr: u64, size: u32, kind: AccessKind) {
        for (piece, piece_size) in line_pieces(addr, size, self.l1_line) {
            // At most one line: never comes back here.
            self.access(piece, piece_size, kind);
        }
    }

    /// An instruction fetch (through I1 when the hierarchy has one); the monitor counts data only.
    pub fn fetch(&mut self, addr: u64, size: u32) -> AccessOutcome {
        self.hierarchy.fetch(addr, size)
    }

    /// A data access like [`Simulator::access`] that also hands each per-line access's address
    /// and outcome to `observe` (the runtime's per-data-structure counts in standalone mode).
    pub fn access_observed(
        &mut self,
        addr: u64,
        size: u32,
        kind: AccessKind,
        mut observe: impl FnMut(u64, &AccessOutcome),
    ) {
        for (piece, piece_size) in line_pieces(addr, size, self.l1_line) {
            let outcome = self.hierarchy.access(piece, piece_size, kind);
            self.monitor.observe(piece, &outcome);
            if self.analyses.is_some() {
                self.analyse(piece, piece_size, kind, &outcome);
            }
            observe(piece, &outcome);
        }
    }

    /// A data access simulated by core `core` of `machine` instead of this simulator's own
    /// hierarchy, split per line as [`Self::access`] splits it: each piece's outcome, coherence
    /// bits included, goes to the monitor (so requests count coherence events) and to
    /// `observe`, and its levels are counted in this simulator's totals (the thread's own).
    /// The analyses do not watch a machine's accesses: they follow one hierarchy's line events.
    pub fn access_on(
        &mut self,
        machine: &mut Machine,
        core: usize,
        addr: u64,
        size: u32,
        kind: AccessKind,
        mut observe: impl FnMut(u64, &CoreOutcome),
    ) {
        for (piece, piece_size) in line_pieces(addr, size, self.l1_line) {
            let out = machine.access(core, piece, piece_size, kind);
            self.count_machine_piece(piece, &out);
            observe(piece, &out);
        }
    }

    /// Counts one piece of an access a machine simulated for this thread (possibly on
    /// another thread, earlier): its levels in this simulator's totals, its event bits with
    /// the monitor, as [`Self::access_on`] does.
    #[inline]
    pub fn count_machine_piece(&mut self, piece: u64, out: &CoreOutcome) {
        self.count_machine_bits(piece, out.event_bits());
    }

    /// [`Self::count_machine_piece`] of an outcome given as its [`CoreOutcome::event_bits`]
    /// (what a thread's access log keeps, [`Machine::access_bits`]): nothing to decode.
    #[inline]
    pub fn count_machine_bits(&mut self, piece: u64, bits: u32) {
        self.hierarchy.count_event_bits(bits);
        self.monitor.observe_bits(piece, bits);
    }

    /// Kept out of line: the analyses are off on the plain path, and inlining them would bloat
    /// the capture loop that every access runs through.
    #[inline(never)]
    fn analyse(&mut self, addr: u64, size: u32, kind: AccessKind, outcome: &AccessOutcome) {
        if let Some(analyses) = &mut self.analyses {
            analyses.on_access(addr, size, kind, outcome, self.hierarchy.line_events());
        }
    }
}

/// Mutable access to a [`Simulator`]'s event set; see [`Simulator::monitor_mut`].
#[derive(Debug)]
pub struct MonitorMut<'a> {
    monitor: &'a mut EventSet,
    hits_watched: bool,
}

impl std::ops::Deref for MonitorMut<'_> {
    type Target = EventSet;

    fn deref(&self) -> &EventSet {
        self.monitor
    }
}

impl std::ops::DerefMut for MonitorMut<'_> {
    fn deref_mut(&mut self) -> &mut EventSet {
        self.monitor
    }
}

impl Drop for MonitorMut<'_> {
    fn drop(&mut self) {
        self.monitor.set_hits_watched(self.hits_watched);
    }
}

/// The pieces an access of `size` bytes at `addr` is simulated as, with lines of `line` bytes:
/// the access whole when it is no wider than a line (a straddling one included: the hierarchy
/// splits that), else one piece per line it touches; a zero-sized access is one piece.
pub fn line_pieces(addr: u64, size: u32, line: u64) -> impl Iterator<Item = (u64, u32)> {
    let end = addr.saturating_add(u64::from(size));
    let whole = u64::from(size) <= line;
    let mut next = Some(addr);
    std::iter::from_fn(move || {
        let piece = next?;
        let piece_end = if whole {
            end
        } else {
            ((piece / line + 1) * line).min(end)
        };
        next = (piece_end < end).then_some(piece_end);
        Some((piece, (piece_end - piece) as u32))
    })
}

#[cfg(test)]
mod tests {
    use super::capture_path::{CaptureFastPath, SettleL1, Step, Steps};
    use super::*;
    use crate::monitor::EventSet;
    use crate::ranges::{AddressRange, NamedRange};

    #[test]
    fn an_access_is_one_piece_up_to_a_line_wide_else_one_per_line() {
        let pieces = |addr, size| line_pieces(addr, size, 64).collect::<Vec<_>>();
        assert_eq!(pieces(0x100, 8), [(0x100, 8)]);
        // A straddling access no wider than a line stays whole.
        assert_eq!(pieces(0x13c, 8), [(0x13c, 8)]);
        assert_eq!(pieces(0x100, 0), [(0x100, 0)]);
        assert_eq!(pieces(0x130, 100), [(0x130, 16), (0x140, 64), (0x180, 20)]);
        assert_eq!(pieces(0x100, 128), [(0x100, 64), (0x140, 64)]);
    }

    /// A pseudo-random stream from 0x1000 on: 8-byte steps along lines (mostly hits), and one
    /// access in `jump_one_in` jumping anywhere in the next `span` bytes (mostly misses); sizes
    /// drawn from `sizes`, kinds by `kind` of further random bits.
    fn jumping_walk(
        seed: u64,
        len: usize,
        jump_one_in: u64,
        span: u64,
        sizes: &[u32],
        kind: impl Fn(u64) -> AccessKind,
    ) -> Vec<(u64, u32, AccessKind)> {
        let (mut x, mut addr) = (seed, 0x1000u64);
        (0..len)
            .map(|_| {
                crate::test_rng::xorshift(&mut x);
                addr = if x % jump_one_in == 0 {
                    0x1000 + (x >> 8) % span
                } else {
                    addr + 8
                };
                let size = sizes[(x >> 20) as usize % sizes.len()];
                (addr, size, kind(x >> 30))
            })
            .collect()
    }

    /// The two-level shapes the fast paths are checked on against the general walk: 8 and 16
    /// ways at either level, L2 smaller than L1, and 32-byte lines.
    const TWO_LEVEL_SPECS: [&str; 7] = [
        "D1=1K,8,64;L2=4K,16,64",
        "D1=1K,16,64;L2=2K,8,64",
        "D1=2K,8,64;L2=1K,8,64",
        "D1=1K,16,64;L2=4K,16,64",
        "D1=512,8,32;L2=2K,16,32",
        // 2-way L1s, whose step loops are their own.
        "D1=1K,2,32;L2=4K,8,64",
        "D1=1K,2,64;L2=4K,16,64",
    ];

    /// A simulator of `spec` (in Cachegrind mode when `cachegrind`) whose counter array has
    /// `counters` counters of `counter_bits` bits.
    fn two_level_sim(
        spec: &str,
        cachegrind: bool,
        counters: usize,
        counter_bits: u32,
    ) -> Simulator {
        let mut hierarchy = Hierarchy::new(&spec.parse().unwrap()).unwrap();
        if cachegrind {
            hierarchy = hierarchy.cachegrind_compatible();
        }
        let config = CounterArrayConfig {
            counters,
            counter_bits,
        };
        let monitor = EventSet::for_hierarchy(config, &hierarchy).unwrap();
        Simulator::from_parts(hierarchy, monitor)
    }

    /// Attaches a reuse analysis over `range` (named "a"), which keeps `s` off its fast paths:
    /// the general walk the fast paths are compared with.
    fn take_the_general_path(s: &mut Simulator, range: AddressRange) {
        let mut ranges = RangeSet::new();
        ranges
            .insert(NamedRange {
                name: "a".into(),
                range,
                bucket_bytes: 512,
            })
            .unwrap();
        let reuse = AnalysisConfig {
            reuse: true,
            ..AnalysisConfig::default()
        };
        s.set_analyses(reuse, ranges).unwrap();
    }

    fn sim(spec: &str) -> Simulator {
        Simulator::new(&spec.parse().unwrap(), CounterArrayConfig::default()).unwrap()
    }

    #[test]
    fn large_accesses_are_split_per_line_and_small_ones_are_not() {
        let mut s = sim("D1=1K,2,32");
        s.read(0x10, 96); // covers lines 0..3 partly: 0x10-0x20, 0x20-0x40, 0x40-0x60, 0x60-0x70
        assert_eq!(s.hierarchy().level_stats(0).reads, 4);
        assert_eq!(s.hierarchy().level_stats(0).read_misses, 4);
        s.read(0x1e, 4); // straddles lines 0 and 1, both present: one access, a hit
        assert_eq!(s.hierarchy().level_stats(0).reads, 5);
        assert_eq!(s.hierarchy().level_stats(0).read_misses, 4);
    }

    #[test]
    fn observed_accesses_match_plain_ones_and_report_each_line() {
        let (mut plain, mut observed) = (sim("D1=1K,2,32"), sim("D1=1K,2,32"));
        let mut seen = Vec::new();
        for (addr, size) in [(0x10u64, 96u32), (0x1e, 4), (0x400, 8), (0x10, 4)] {
            plain.read(addr, size);
            observed.access_observed(addr, size, AccessKind::Read, |a, o| {
                seen.push((a, o.bits_at(0)));
            });
        }
        assert_eq!(
            plain.hierarchy().level_stats(0),
            observed.hierarchy().level_stats(0)
        );
        // The 96-byte access is four per-line accesses; the others one each.
        assert_eq!(seen.len(), 4 + 3);
        assert_eq!(seen[0].0, 0x10);
        assert_eq!(seen[1].0, 0x20);
    }

    #[test]
    fn access_line_returns_what_access_observed_reports() {
        // One-line and straddling accesses (and a few wider ones, whose last line's outcome is
        // returned), on the two-level shape and a three-level one, with a hit event bound so
        // the observed-hit path runs too.
        for spec in ["D1=1K,2,64;L2=4K,4,64", "D1=512,2,32;L2=2K,4,64;L3=8K,4,64"] {
            let (mut line, mut observed, mut bits) = (sim(spec), sim(spec), sim(spec));
            for s in [&mut line, &mut observed, &mut bits] {
                let mut m = s.monitor_mut();
                m.add_event("EPC_L1_LDH", AddressRange::new(0, 1 << 20))
                    .unwrap();
                m.add_event("PAPI_L2_DCM", AddressRange::new(0, 1 << 20))
                    .unwrap();
                m.start().unwrap();
                drop(m);
            }
            let mut x = 7u64;
            let mut misses = 0;
            for _ in 0..20_000 {
                crate::test_rng::xorshift(&mut x);
                let size = [1, 4, 8, 8, 16, 40, 100][(x >> 20) as usize % 7];
                let kind = if x >> 40 & 1 == 1 {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                };
                let addr = x % 8192;
                let got = line.access_line(addr, size, kind);
                let mut want = None;
                observed.access_observed(addr, size, kind, |_, o| want = Some(*o));
                assert_eq!(Some(got), want, "{spec} {addr:#x}+{size}");
                // The event-bits twins, the one-way variant on every other access: the same
                // outcome for an access within one L1 line, nothing simulated for any other.
                let l1_line = u64::from(bits.hierarchy().line_size(0));
                let in_bits = if x >> 41 & 1 == 1 {
                    bits.access_in_line_recent(addr, size, kind)
                } else {
                    bits.access_in_line(addr, size, kind)
                };
                assert_eq!(
                    in_bits.is_some(),
                    addr % l1_line + u64::from(size) <= l1_line
                );
                match in_bits {
                    Some(b) => assert_eq!(b, got.event_bits(), "{spec} {addr:#x}+{size}"),
                    None => bits.access_observed(addr, size, kind, |_, _| {}),
                }
                misses += usize::from(got.levels[0] == crate::cache::LevelResult::Miss);
            }
            assert!(misses > 1000);
            let stats = |s: &Simulator| s.hierarchy().stats().map(|(_, l)| *l).collect::<Vec<_>>();
            assert_eq!(stats(&line), stats(&observed));
            assert_eq!(stats(&bits), stats(&observed));
            assert_eq!(
                line.monitor().read().unwrap(),
                observed.monitor().read().unwrap()
            );
            assert_eq!(
                bits.monitor().read().unwrap(),
                observed.monitor().read().unwrap()
            );
            assert!(!line.l1_hits_unobserved(), "a hit event is bound");
            let l1 = &line.hierarchy().spec().data[0].geometry;
            let shape = line.repeat_hit_shape().expect("a shape");
            assert_eq!((shape.line_bits, shape.sets), (l1.line_bits(), l1.sets()));
        }
        assert_eq!(
            sim("D1=2K,4,64;LL=4K,2,64,inclusive").repeat_hit_shape(),
            None
        );
        assert_eq!(
            sim("D1=1K,2,64,write-through;LL=8K,4,64").repeat_hit_shape(),
            None
        );
        assert!(sim("D1=1K,2,64;LL=8K,4,64").l1_hits_unobserved());
    }

    #[test]
    fn monitor_counts_only_while_started_and_histogram_sums_to_static_count() {
        let mut s = sim("D1=1K,2,32");
        let range = AddressRange::new(0x1000, 0x400);
        let ev = s.monitor_mut().add_event("PAPI_L1_LDM", range).unwrap();
        let h = s
            .monitor_mut()
            .add_histogram("PAPI_L1_LDM", range, 4)
            .unwrap();
        s.read(0x1000, 4); // not started: not counted
        s.monitor_mut().start().unwrap();
        // Two sweeps over 2 KB with a 1 KB cache: every line misses both times.
        for _ in 0..2 {
            for a in (0x1000..0x1800u64).step_by(8) {
                s.read(a, 8);
            }
        }
        let counts = s.monitor_mut().stop().unwrap();
        // The range holds 32 lines; each misses once per sweep, except 0x1000 in the first
        // sweep, loaded (uncounted) before start.
        assert_eq!(counts[ev.0], 31 + 32);
        let hist = s.monitor().read_histogram(h).unwrap();
        assert_eq!(hist.buckets.len(), 8);
        assert_eq!(hist.buckets.iter().sum::<u64>(), counts[ev.0]);
        assert_eq!(hist.buckets[0], 3 + 4);
    }

    #[test]
    fn accesses_on_a_machine_count_in_the_thread_totals_and_its_monitor() {
        use crate::cache::Machine;
        // Three levels, so that the thread's totals count past the second from the bits.
        let three = "D1=1K,2,64;L2=2K,4,64;L3=8K,8,64,shared";
        let spec: HierarchySpec = three.parse().unwrap();
        let range = AddressRange::new(0x1000, 0x400);
        // One core: the same counts as the simulator's own hierarchy, wide accesses split.
        let mut own = sim(three);
        let mut on_machine = sim(three);
        let mut machine = Machine::new(&spec, 1).unwrap();
        for s in [&mut own, &mut on_machine] {
            s.monitor_mut().add_event("PAPI_L1_DCM", range).unwrap();
            s.monitor_mut().add_event("PAPI_L2_DCA", range).unwrap();
            s.monitor_mut().start().unwrap();
        }
        let mut pieces = 0;
        for i in 0..2_000u64 {
            let (addr, size) = (0x1000 + (i * 88) % 0x800, [8, 4, 200][i as usize % 3]);
            let kind = [AccessKind::Read, AccessKind::Write][i as usize % 2];
            own.access(addr, size, kind);
            on_machine.access_on(&mut machine, 0, addr, size, kind, |_, _| pieces += 1);
        }
        assert!(pieces > 2_000, "wide accesses are split per line");
        assert_eq!(
            own.monitor().read().unwrap(),
            on_machine.monitor().read().unwrap()
        );
        let totals = |s: &Simulator| {
            (0..3)
                .map(|l| *s.hierarchy().level_stats(l))
                .collect::<Vec<_>>()
        };
        let mut machine_totals = totals(&own);
        for t in &mut machine_totals {
            t.writebacks = 0; // the machine's, not the thread's
        }
        assert!(machine_totals[2].reads > 0, "the stream reaches L3");
        assert_eq!(totals(&on_machine), machine_totals);
        // Two cores: a request for false-sharing misses counts them.
        let spec: HierarchySpec = "D1=1K,2,64;L2=4K,4,64,shared".parse().unwrap();
        let mut machine = Machine::new(&spec, 2).unwrap();
        let mut cores: Vec<Simulator> = (0..2)
            .map(|_| sim("D1=1K,2,64;L2=4K,4,64,shared"))
            .collect();
        for s in &mut cores {
            s.monitor_mut().add_event("EPC_L1_FSM", range).unwrap();
            s.monitor_mut().start().unwrap();
        }
        for _ in 0..10 {
            for (core, s) in cores.iter_mut().enumerate() {
                s.access_on(
                    &mut machine,
                    core,
                    0x1000 + 8 * core as u64,
                    8,
                    AccessKind::Write,
                    |_, _| {},
                );
            }
        }
        let fsm: u64 = cores.iter().map(|s| s.monitor().read().unwrap()[0]).sum();
        assert_eq!(fsm, 18);
    }

    #[test]
    fn an_event_set_assigned_over_the_monitor_still_shows_analyses_their_hits() {
        let mut s = sim("D1=1K,2,32;L2=4K,4,32");
        let range = AddressRange::new(0x1000, 0x400);
        let mut ranges = RangeSet::new();
        ranges
            .insert(NamedRange {
                name: "a".into(),
                range,
                bucket_bytes: 256,
            })
            .unwrap();
        let reuse = AnalysisConfig {
            reuse: true,
            ..AnalysisConfig::default()
        };
        s.set_analyses(reuse, ranges).unwrap();
        assert!(s.monitor().sees_l1_hit(AccessKind::Read));
        let fresh = EventSet::for_hierarchy(CounterArrayConfig::default(), s.hierarchy()).unwrap();
        *s.monitor_mut() = fresh;
        assert!(s.monitor().sees_l1_hit(AccessKind::Read));
        assert!(s.monitor().sees_l1_hit(AccessKind::Write));
        s.set_analyses(AnalysisConfig::default(), RangeSet::new())
            .unwrap();
        assert!(!s.monitor().sees_l1_hit(AccessKind::Read));
    }

    #[test]
    fn hit_events_count_the_fast_path_hits_and_miss_events_ignore_them() {
        let mut s = sim("D1=1K,2,32;L2=4K,4,32");
        let range = AddressRange::new(0x1000, 0x400);
        let mut monitor = s.monitor_mut();
        let read_hits = monitor.add_event("EPC_L1_LDH", range).unwrap();
        let write_hits = monitor.add_event("EPC_L1_STH", range).unwrap();
        let l2_hits = monitor.add_event("PAPI_L2_DCH", range).unwrap();
        let read_misses = monitor.add_event("PAPI_L1_LDM", range).unwrap();
        monitor.start().unwrap();
        drop(monitor);
        // 32 lines, 4 accesses each: a read miss, then a read, a write and a read hit.
        for line in 0..32u64 {
            let a = 0x1000 + line * 32;
            s.read(a, 8);
            s.read(a + 8, 8);
            s.write(a + 16, 8);
            s.read(a + 24, 8);
        }
        // The 32 lines fill the 1 KB L1 exactly, so a second sweep hits throughout.
        for line in 0..32u64 {
            s.read(0x1000 + line * 32, 8);
        }
        let counts = s.monitor_mut().stop().unwrap();
        assert_eq!(counts[read_misses.0], 32);
        assert_eq!(counts[read_hits.0], 32 * 2 + 32);
        assert_eq!(counts[write_hits.0], 32);
        assert_eq!(counts[l2_hits.0], 0, "every L2 access missed");
        assert_eq!(s.hierarchy().level_stats(0).reads, 32 * 3 + 32);
    }

    #[test]
    fn a_batch_counts_exactly_as_the_accesses_one_by_one() {
        // Hit and miss events, a histogram with spills (4 counters), and the same with every
        // analysis on (which takes the per-access path); sizes include straddles and accesses
        // wider than a line, which the simulator splits.
        let mut x = 99u64;
        let stream: Vec<(u64, u32, AccessKind)> = (0..30_000)
            .map(|_| {
                crate::test_rng::xorshift(&mut x);
                let size = [4, 8, 8, 8, 16, 200][(x >> 20) as usize % 6];
                let kind = if (x >> 30).is_multiple_of(3) {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                };
                (0x1000 + x % 8192, size, kind)
            })
            .collect();
        for analyses in [false, true] {
            let build = || {
                let config = CounterArrayConfig {
                    counters: 8,
                    counter_bits: 16,
                };
                let mut s =
                    Simulator::new(&"D1=1K,8,64;L2=4K,16,64".parse().unwrap(), config).unwrap();
                let range = AddressRange::new(0x1000, 6000);
                let mut m = s.monitor_mut();
                for event in ["PAPI_L1_LDM", "EPC_L1_STH", "PAPI_L2_DCA", "PAPI_L1_DCA"] {
                    m.add_event(event, range).unwrap();
                }
                m.add_histogram("PAPI_L1_DCH", range, 8).unwrap();
                m.add_histogram("PAPI_L1_STM", range, 3).unwrap();
                m.start().unwrap();
                drop(m);
                if analyses {
                    let mut ranges = RangeSet::new();
                    ranges
                        .insert(NamedRange {
                            name: "a".into(),
                            range,
                            bucket_bytes: 512,
                        })
                        .unwrap();
                    let all = AnalysisConfig {
                        reuse: true,
                        evictors: true,
                        miss_classes: true,
                        reuse_distance: true,
                        level: 0,
                    };
                    s.set_analyses(all, ranges).unwrap();
                }
                s
            };
            let (mut one_by_one, mut batched) = (build(), build());
            for &(addr, size, kind) in &stream {
                one_by_one.access(addr, size, kind);
            }
            for chunk in stream.chunks(777) {
                batched.access_batch(chunk);
            }
            let (a, b) = (batched.monitor(), one_by_one.monitor());
            assert_eq!(a.read().unwrap(), b.read().unwrap());
            for h in 0..2 {
                let h = crate::monitor::HistogramIndex(h);
                assert_eq!(a.read_histogram(h).unwrap(), b.read_histogram(h).unwrap());
            }
            assert!(a.spills().total() > 0, "the histograms spill");
            let totals = |s: &Simulator| s.hierarchy().stats().map(|(_, t)| *t).collect::<Vec<_>>();
            assert_eq!(totals(&batched), totals(&one_by_one));
            assert_eq!(
                serde_json::to_string(&batched.analysis_report()).unwrap(),
                serde_json::to_string(&one_by_one.analysis_report()).unwrap()
            );
        }
    }

    #[test]
    fn the_two_level_batch_counts_as_the_general_walk() {
        // The batch of a hierarchy the two-level loop takes, against the same stream one by
        // one with an analysis on, which records line events and so takes the general walk;
        // with hit events watched and without (the loop's two variants), for every pair of
        // packed stores, in native and Cachegrind mode.
        let stream = jumping_walk(5, 40_000, 4, 10_000, &[4, 8, 8, 8, 16, 200], |x| {
            if x % 3 == 0 {
                AccessKind::Write
            } else {
                AccessKind::Read
            }
        });
        let range = AddressRange::new(0x1000, 8000);
        for spec in TWO_LEVEL_SPECS {
            for (events, cachegrind) in [
                (&["PAPI_L1_LDM", "PAPI_L2_DCM"][..], false),
                (&["PAPI_L1_DCA", "EPC_L1_STH", "PAPI_L2_DCH"][..], false),
                (&["PAPI_L1_STM", "PAPI_L1_DCH"][..], true),
            ] {
                let build = |general: bool| {
                    let mut s = two_level_sim(spec, cachegrind, 8, 12);
                    let mut m = s.monitor_mut();
                    for event in events {
                        m.add_event(event, range).unwrap();
                    }
                    m.add_histogram(events[0], range, 5).unwrap();
                    m.add_histogram(events[1], range, 2).unwrap();
                    m.start().unwrap();
                    drop(m);
                    if general {
                        take_the_general_path(&mut s, range);
                    }
                    s
                };
                let (mut general, mut batched) = (build(true), build(false));
                assert!(batched.hierarchy().two_level() && !general.hierarchy().two_level());
                for &(addr, size, kind) in &stream {
                    general.access(addr, size, kind);
                }
                for chunk in stream.chunks(1234) {
                    batched.access_batch(chunk);
                }
                let (a, b) = (batched.monitor(), general.monitor());
                assert_eq!(a.read().unwrap(), b.read().unwrap(), "{spec} {events:?}");
                for h in 0..2 {
                    let h = crate::monitor::HistogramIndex(h);
                    assert_eq!(a.read_histogram(h).unwrap(), b.read_histogram(h).unwrap());
                }
                assert!(
                    a.read().unwrap().iter().all(|&n| n > 0),
                    "{spec} {events:?}"
                );
                let totals =
                    |s: &Simulator| s.hierarchy().stats().map(|(_, t)| *t).collect::<Vec<_>>();
                assert_eq!(totals(&batched), totals(&general), "{spec}");
            }
        }
    }

    /// A listed step: the access, the line to make the most recent and the line to mark
    /// dirty before it, if any, and its index.
    type Listed = (Step, Option<u64>, Option<u64>, usize);

    /// Steps from a list, keeping each outcome: the step loop's source in tests.
    struct ListedSteps {
        steps: std::vec::IntoIter<Listed>,
        outcomes: Vec<(usize, u32)>,
    }

    impl Steps for ListedSteps {
        type Context = usize;
        fn next_step<const LINE_BITS: u32, L: SettleL1>(
            &mut self,
            l1: &mut L,
        ) -> Option<(Step, usize)> {
            let (step, recent, dirty, i) = self.steps.next()?;
            if let Some(block) = recent {
                l1.make_recent(block);
            }
            if let Some(block) = dirty {
                l1.mark_dirty(block);
            }
            Some((step, i))
        }
        fn outcome(&mut self, index: usize, bits: u32) {
            self.outcomes.push((index, bits));
        }
    }

    #[test]
    fn the_step_loop_counts_as_the_general_walk() {
        // Steps, some marking the line of the access before them dirty first (as the runtime's
        // staged records do) and some wider than a line or straddling two (which leave the
        // loop), against the same marks and accesses one by one on the general walk: the same
        // outcome for every step, in order, the same counters and the same totals, for every
        // pair of packed stores, in native and Cachegrind mode.
        let stream = jumping_walk(9, 30_000, 5, 12_000, &[4, 8, 8, 8, 16, 200], |x| {
            if x % 3 == 0 {
                AccessKind::Write
            } else {
                AccessKind::Read
            }
        });
        let range = AddressRange::new(0x1000, 8000);
        // Counting, and with nothing bound (the loop then tells the monitor nothing).
        for (spec, bound) in TWO_LEVEL_SPECS.iter().flat_map(|s| [(s, true), (s, false)]) {
            for cachegrind in [false, true] {
                let build = |general: bool| {
                    let mut s = two_level_sim(spec, cachegrind, 8, 12);
                    if bound {
                        let mut m = s.monitor_mut();
                        m.add_event("PAPI_L1_DCM", range).unwrap();
                        m.add_event("PAPI_L2_DCH", range).unwrap();
                        // An L1 hit event: the loop's variant that tells the monitor of hits.
                        m.add_event("EPC_L1_STH", range).unwrap();
                        m.start().unwrap();
                    }
                    if general {
                        take_the_general_path(&mut s, range);
                    }
                    s
                };
                let (mut general, mut stepped) = (build(true), build(false));
                let line = u64::from(general.hierarchy().line_size(0));
                let bits = line.trailing_zeros();
                let one_line = |(addr, size): (u64, u32)| addr % line + u64::from(size) <= line;
                let steps: Vec<Listed> = stream
                    .iter()
                    .enumerate()
                    .map(|(i, &(addr, size, kind))| {
                        let before = i.checked_sub(1).map(|p| (stream[p].0, stream[p].1));
                        let dirty_first = before
                            .filter(|&b| i % 3 == 0 && one_line(b))
                            .map(|(a, _)| a >> bits);
                        // Now and then the line before made the most recent first (it is
                        // in L1), as the runtime does for its filter's hits.
                        let recent_first = before
                            .filter(|&b| i % 5 == 1 && one_line(b))
                            .map(|(a, _)| a >> bits);
                        let step = Step { addr, size, kind };
                        (step, recent_first, dirty_first, i)
                    })
                    .collect();
                let expected: Vec<(usize, u32)> = steps
                    .iter()
                    .map(|&(step, recent_first, dirty_first, i)| {
                        if let Some(block) = recent_first {
                            general.make_l1_recent(block);
                        }
                        if let Some(block) = dirty_first {
                            general.mark_l1_dirty(block);
                        }
                        let outcome = general.access_line(step.addr, step.size, step.kind);
                        (i, outcome.event_bits())
                    })
                    .collect();
                let mut listed = ListedSteps {
                    steps: steps.into_iter(),
                    outcomes: Vec::new(),
                };
                stepped.simulate_steps(&mut listed);
                assert_eq!(listed.outcomes, expected, "{spec} cachegrind {cachegrind}");
                if bound {
                    let (a, b) = (stepped.monitor(), general.monitor());
                    assert_eq!(a.read().unwrap(), b.read().unwrap(), "{spec}");
                    assert!(a.read().unwrap()[0] > 0, "{spec}: no L1 miss in the range");
                }
                let totals =
                    |s: &Simulator| s.hierarchy().stats().map(|(_, t)| *t).collect::<Vec<_>>();
                assert_eq!(totals(&stepped), totals(&general), "{spec}");
            }
        }
    }

    #[test]
    fn the_per_access_two_level_path_counts_as_the_general_walk() {
        // One access at a time through the inlined L1 probe and the two-level miss step, with
        // one histogram alone (the counter array's inlined path: power-of-two and other bucket
        // widths, counters that evict and overflow), against the general walk (an analysis on
        // records line events, which turns both fast paths off), for every pair of packed
        // stores, natively and in Cachegrind mode.
        let stream = jumping_walk(11, 30_000, 3, 12_000, &[4, 8, 8, 8, 16, 100], |x| {
            [AccessKind::Read, AccessKind::Write][x as usize % 2]
        });
        let range = AddressRange::new(0x1400, 9000);
        let (mut evicted, mut overflowed) = (false, false);
        for spec in TWO_LEVEL_SPECS {
            for (event, lines, cachegrind) in [
                ("PAPI_L1_DCM", 2, false),
                ("PAPI_L1_LDM", 64, false),
                ("PAPI_L2_DCM", 1, true),
                ("PAPI_L1_STM", 5, true),
            ] {
                let build = |general: bool| {
                    let mut s = two_level_sim(spec, cachegrind, 6, 8);
                    s.monitor_mut().add_histogram(event, range, lines).unwrap();
                    s.monitor_mut().start().unwrap();
                    if general {
                        take_the_general_path(&mut s, range);
                    }
                    s
                };
                let (mut general, mut fast) = (build(true), build(false));
                assert!(fast.hierarchy().two_level() && !general.hierarchy().two_level());
                for &(addr, size, kind) in &stream {
                    general.access(addr, size, kind);
                    fast.access(addr, size, kind);
                }
                let h = crate::monitor::HistogramIndex(0);
                let (a, b) = (fast.monitor(), general.monitor());
                let what = format!("{spec} {event} {lines} lines");
                assert_eq!(
                    a.read_histogram(h).unwrap(),
                    b.read_histogram(h).unwrap(),
                    "{what}"
                );
                assert!(a.read_histogram(h).unwrap().total() > 0, "{what}");
                assert_eq!(a.spills(), b.spills(), "{what}");
                evicted |= a.spills().evictions > 0;
                overflowed |= a.spills().overflows > 0;
                let totals =
                    |s: &Simulator| s.hierarchy().stats().map(|(_, t)| *t).collect::<Vec<_>>();
                assert_eq!(totals(&fast), totals(&general), "{what}");
            }
        }
        assert!(
            evicted && overflowed,
            "counters both evicted and overflowed"
        );
    }

    #[test]
    fn the_miss_step_follows_the_analyses_switched_on_and_off() {
        // One histogram through the per-access miss step (by `access` and `access_line`),
        // with an analysis switched on (which turns the two-level shape, and so the step, off)
        // and off again mid-stream, against the general walk throughout; with counters that
        // evict, then with counters that overflow.
        let stream = jumping_walk(17, 24_000, 3, 10_000, &[4, 8, 8, 16, 100], |x| {
            [AccessKind::Read, AccessKind::Write][x as usize % 2]
        });
        let range = AddressRange::new(0x1200, 7000);
        let (mut evicted, mut overflowed) = (false, false);
        for (counters, lines) in [(2, 3), (4, 40)] {
            let build = |general: bool| {
                let config = CounterArrayConfig {
                    counters,
                    counter_bits: 8,
                };
                let spec = "D1=1K,8,64;L2=4K,16,64".parse().unwrap();
                let mut s = Simulator::new(&spec, config).unwrap();
                let mut m = s.monitor_mut();
                m.add_histogram("PAPI_L1_LDM", range, lines).unwrap();
                m.start().unwrap();
                drop(m);
                if general {
                    take_the_general_path(&mut s, range);
                }
                s
            };
            let (mut general, mut switched) = (build(true), build(false));
            for (i, chunk) in stream.chunks(3000).enumerate() {
                let on = i % 2 == 1;
                if on {
                    take_the_general_path(&mut switched, range);
                } else {
                    switched
                        .set_analyses(AnalysisConfig::default(), RangeSet::new())
                        .unwrap();
                }
                assert_eq!(switched.miss_step.is_some(), !on, "chunk {i}");
                for &(addr, size, kind) in chunk {
                    general.access(addr, size, kind);
                    if i % 4 < 2 {
                        switched.access(addr, size, kind);
                    } else {
                        switched.access_line(addr, size, kind);
                    }
                }
            }
            let h = crate::monitor::HistogramIndex(0);
            let (a, b) = (switched.monitor(), general.monitor());
            assert_eq!(a.read_histogram(h).unwrap(), b.read_histogram(h).unwrap());
            assert_eq!(a.spills(), b.spills());
            evicted |= a.spills().evictions > 0;
            overflowed |= a.spills().overflows > 0;
            let totals = |s: &Simulator| s.hierarchy().stats().map(|(_, t)| *t).collect::<Vec<_>>();
            assert_eq!(totals(&switched), totals(&general));
        }
        assert!(evicted && overflowed);
    }

    #[test]
    fn analyses_see_the_accesses_once_switched_on() {
        let mut s = sim("D1=1K,2,64");
        let mut ranges = RangeSet::new();
        ranges
            .insert(NamedRange {
                name: "a".into(),
                range: AddressRange::new(0, 4096),
                bucket_bytes: 1024,
            })
            .unwrap();
        let config = AnalysisConfig {
            reuse: true,
            ..AnalysisConfig::default()
        };
        s.set_analyses(config, ranges).unwrap();
        for a in (0..4096u64).step_by(4) {
            s.read(a, 4);
        }
        let report = s.analysis_report().unwrap();
        let reuse = report.range("a").unwrap().reuse.as_ref().unwrap();
        assert_eq!(reuse.residencies, 64);
        assert_eq!(reuse.temporal_reuse, Some(16.0));
    }
}
