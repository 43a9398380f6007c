//! The simulator as the in-target runtime drives it: the one boundary between `epcache-sim`
//! and the capture of `epcache-monitor`, kept apart from [`Simulator`]'s general API.
//!
//! The runtime's standalone counting skips the repeat hits it can count itself (its repeat-hit
//! filter and `epcache cc`'s inline test), hands the simulator the rest one line at a time with
//! the outcome wanted back in a register, and stages records of accesses made while the
//! simulator was busy elsewhere. For that it needs more than the general API: the shapes under
//! which a repeat hit changes nothing, a way to settle the dirty bit of a write it counted, and
//! access paths that return the outcome of one line. [`CaptureFastPath`] is all of it, with
//! [`Step`], [`Steps`] and [`SettleL1`] for the staged records.
//!
//! Architecture Invariant: only `epcache-monitor`'s capture uses this module; tools, the daemon
//! and replay go through [`Simulator`]'s own methods. Whatever path an access takes here, it
//! is simulated and counted exactly as [`Simulator::access`] would (the tests in
//! `simulator.rs` compare the two on random streams).

use super::Simulator;
pub use crate::cache::two_level::{SettleL1, Step, Steps};
use crate::cache::{AccessKind, AccessOutcome, Watch};

/// What the runtime's capture needs of a [`Simulator`] beyond its general API (see the
/// [module documentation](self)); implemented by [`Simulator`] alone.
pub trait CaptureFastPath {
    /// Simulates the accesses `steps` gives, in order, exactly as [`Self::access_line`] would
    /// each (after what the source settled in L1 as it gave it: lines made the most recent, as
    /// [`Self::make_l1_recent`], and marked modified, as [`Self::mark_l1_dirty`]), and
    /// tells `steps` each one's outcome. On the two-level shape with no analysis they go
    /// through the hierarchy's step loop, with its stores' constants in registers; otherwise
    /// one at a time.
    fn simulate_steps<T: Steps>(&mut self, steps: &mut T);

    /// A data access of at most one L1 line (it may straddle two), simulated exactly as
    /// [`Simulator::access`] does, with its outcome returned: the L1 hit test inlined, a miss out of
    /// line through the same miss step as the per-access path. For callers that attribute each
    /// access themselves (the runtime's standalone counting) without reading the counters back.
    /// A wider access is simulated per line (as [`Simulator::access_observed`] does) and its outcome
    /// is that of its last line; callers wanting each line's outcome use `access_observed`.
    fn access_line(&mut self, addr: u64, size: u32, kind: AccessKind) -> AccessOutcome;

    /// A data access within one L1 line (it does not straddle two), simulated exactly as
    /// [`Simulator::access`] does, with its outcome returned as [`AccessOutcome::event_bits`] (never
    /// 0); `None`, having simulated nothing, for any other access. The L1 hit test and, on the
    /// two-level shape with no analysis, the miss are inlined, so the outcome comes back in a
    /// register: the runtime's standalone counting simulates every access this way.
    fn access_in_line(&mut self, addr: u64, size: u32, kind: AccessKind) -> Option<u32>;

    /// [`Self::access_in_line`] of an access its caller expects to hit the line its L1 set
    /// used last (the runtime's first write to the line a read just brought to the front):
    /// only that way is compared inline; anything else is simulated out of line.
    fn access_in_line_recent(&mut self, addr: u64, size: u32, kind: AccessKind) -> Option<u32>;

    /// Marks L1's line `block` (an address shifted right by L1's line bits) modified, counting
    /// nothing. For a caller that counted a write hit on the line its set used last itself,
    /// under [`Self::repeat_hit_shape`], and settles the line's dirty bit before the set is
    /// used again (so an eviction writes it back). The line must be in L1.
    fn mark_l1_dirty(&mut self, block: u64);

    /// Makes L1's line `block` (an address shifted right by L1's line bits) its set's most
    /// recent, counting nothing. For a caller that counted hits on its sets' most recent lines
    /// itself and kept their order, under [`Self::repeat_hit_shape`]: it replays the order
    /// before the set is used again. The line must be in L1.
    fn make_l1_recent(&mut self, block: u64);

    /// Whether an L1 hit of either kind may be left unsimulated by a caller that knows it
    /// changes no cache state (a repeat of the line its set used last): no event counts L1
    /// hits now and no analysis watches the stream. Such a caller must count the hits it
    /// skips itself, and ask again whenever the event set or the analyses change.
    fn l1_hits_unobserved(&self) -> bool;

    /// L1's shape when it lets a caller count repeat hits itself ([`RepeatHitShape`]), `None`
    /// otherwise: L1 is write-back with a power-of-two number of sets, two at least (see
    /// below), and no level below is inclusive (whose evictions would reach back into L1 sets).
    fn repeat_hit_shape(&self) -> Option<RepeatHitShape>;
}

/// The simulator's L1 as a source of steps settles it one access at a time (off the step
/// loop) and as the runtime's capture does outside the batch.
impl SettleL1 for Simulator {
    #[inline(always)]
    fn make_recent(&mut self, block: u64) {
        self.make_l1_recent(block);
    }

    #[inline(always)]
    fn mark_dirty(&mut self, block: u64) {
        self.mark_l1_dirty(block);
    }
}

impl CaptureFastPath for Simulator {
    fn simulate_steps<T: Steps>(&mut self, steps: &mut T) {
        if self.analyses.is_some() || !self.hierarchy.two_level() {
            while let Some((step, context)) = steps.next_step::<0, _>(&mut *self) {
                let bits = match self.access_in_line(step.addr, step.size, step.kind) {
                    Some(bits) => bits,
                    None => self.access_line_out_of_loop(step),
                };
                steps.outcome(context, bits);
            }
            return;
        }
        loop {
            // With nothing counting, the monitor is not asked about each miss.
            let stopped = if self.monitor.counts_nothing() {
                self.hierarchy.two_level_steps(steps, &mut ())
            } else {
                self.hierarchy.two_level_steps(steps, &mut self.monitor)
            };
            match stopped {
                // A straddling or wider access: the general walk, then on.
                Some(Some((step, context))) => {
                    steps.outcome(context, self.access_line_out_of_loop(step));
                }
                Some(None) => return,
                None => unreachable!("the hierarchy was checked to be the two-level one"),
            }
        }
    }

    #[inline(always)]
    fn access_line(&mut self, addr: u64, size: u32, kind: AccessKind) -> AccessOutcome {
        if self.hierarchy.try_l1_hit(addr, size, kind) {
            if self.monitor.sees_l1_hit(kind) {
                self.l1_hit_observed(addr, size, kind);
            }
            return AccessOutcome::l1_hit(kind);
        }
        self.access_line_missed(addr, size, kind)
    }

    #[inline(always)]
    fn access_in_line(&mut self, addr: u64, size: u32, kind: AccessKind) -> Option<u32> {
        self.in_line::<true>(addr, size, kind)
    }

    #[inline(always)]
    fn access_in_line_recent(&mut self, addr: u64, size: u32, kind: AccessKind) -> Option<u32> {
        if self.hierarchy.l1_takes(addr, size) && self.hierarchy.l1_recent_hit(addr, kind) {
            if self.monitor.sees_l1_hit(kind) {
                self.l1_hit_observed(addr, size, kind);
            }
            return Some(1 << (2 * kind as u32));
        }
        self.in_line_not_recent(addr, size, kind)
    }

    #[inline(always)]
    fn mark_l1_dirty(&mut self, block: u64) {
        let present = self.hierarchy.mark_l1_dirty(block);
        debug_assert!(present, "line {block:#x} is not in L1");
    }

    #[inline(always)]
    fn make_l1_recent(&mut self, block: u64) {
        let present = self.hierarchy.make_l1_recent(block);
        debug_assert!(present, "line {block:#x} is not in L1");
    }

    fn l1_hits_unobserved(&self) -> bool {
        self.analyses.is_none()
            && !self.monitor.counts_l1_hit(AccessKind::Read)
            && !self.monitor.counts_l1_hit(AccessKind::Write)
    }

    fn repeat_hit_shape(&self) -> Option<RepeatHitShape> {
        let spec = self.hierarchy.spec();
        let l1 = spec.data.first()?;
        let sets = l1.geometry.sets();
        // Two sets at least: `epcache cc`'s inline test tells an access that straddles two
        // lines by its last byte's tag not matching its first byte's entry, which holds only
        // when consecutive lines have different entries.
        let fits = l1.write == crate::cache::WritePolicy::WriteBack
            && sets.is_power_of_two()
            && sets >= 2
            && l1.geometry.line_bits() >= 3
            && spec.data.iter().skip(1).all(|l| !l.inclusive);
        // Under LRU every one of a set's `ways` most recent lines is still in it; under
        // tree-PLRU or random replacement only the most recent one surely is.
        let recent_lines = match l1.replacement {
            crate::cache::Replacement::Lru => l1.geometry.assoc,
            _ => 1,
        };
        fits.then(|| RepeatHitShape {
            line_bits: l1.geometry.line_bits(),
            sets,
            recent_lines,
        })
    }
}

/// An L1 under which a caller may count repeat hits itself ([`CaptureFastPath::repeat_hit_shape`]):
/// an access within one line whose block is one of its set's `recent_lines` most recently used
/// (and, for a write, was written since it became so) hits, and simulating it would change
/// nothing but L1's hit count and the order of those lines. So a caller that counts such hits
/// itself, keeps their order and, before the set is next used, makes the lines the most recent
/// in that order ([`CaptureFastPath::make_l1_recent`]) leaves the simulator as it would have
/// been. Under LRU that holds for all of a set's ways: none of its `ways` most recent lines can
/// have been evicted. Under tree-PLRU and random replacement it holds for the most recent line
/// only (a repeated hit on it is idempotent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatHitShape {
    /// log2 of L1's line size.
    pub line_bits: u32,
    /// L1's sets (a power of two, at least two).
    pub sets: u64,
    /// How many of a set's most recent lines a repeat hit may be on.
    pub recent_lines: u32,
}

/// The fast paths' out-of-line and shared parts.
impl Simulator {
    /// [`Self::access_line`] of a step the fast paths left, out of line so the loops stay small.
    #[cold]
    #[inline(never)]
    fn access_line_out_of_loop(&mut self, step: Step) -> u32 {
        self.access_line(step.addr, step.size, step.kind)
            .event_bits()
    }

    /// [`Self::access_in_line_recent`] past its one-way test, which changed nothing.
    #[inline(never)]
    fn in_line_not_recent(&mut self, addr: u64, size: u32, kind: AccessKind) -> Option<u32> {
        self.in_line::<false>(addr, size, kind)
    }

    #[inline(always)]
    fn in_line<const INLINE_MISS: bool>(
        &mut self,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) -> Option<u32> {
        // One test for both: the access lies in one line and the L1 fast path is on.
        if !self.hierarchy.l1_takes(addr, size) {
            return self.in_line_declined(addr, size, kind);
        }
        if self.hierarchy.l1_hit(addr, kind) {
            if self.monitor.sees_l1_hit(kind) {
                self.l1_hit_observed(addr, size, kind);
            }
            // `event_bits` of an L1 hit: Hit (1) in level 0's byte, moved by the kind.
            return Some(1 << (2 * kind as u32));
        }
        // L1 took the access and missed, which is what the two-level miss expects; with a
        // miss step the shape is the two-level one and no analysis runs.
        if INLINE_MISS
            && self.miss_step.is_some()
            && let Some(l2) = self.hierarchy.two_level_missed(addr, kind)
        {
            Watch::miss(&mut self.monitor, addr, kind, l2);
            return Some(AccessOutcome::l1_miss_event_bits(kind, l2));
        }
        Some(self.in_line_missed(addr, size, kind))
    }

    /// [`Self::access_in_line`] of an access L1's fast path declined: not in one line, or the
    /// fast path is off.
    #[inline(never)]
    fn in_line_declined(&mut self, addr: u64, size: u32, kind: AccessKind) -> Option<u32> {
        if (addr & (self.l1_line - 1)) + u64::from(size) > self.l1_line {
            return None;
        }
        Some(self.access_line_missed(addr, size, kind).event_bits())
    }

    /// [`Self::access_in_line`] of an L1 miss the inlined path does not simulate.
    #[inline(never)]
    fn in_line_missed(&mut self, addr: u64, size: u32, kind: AccessKind) -> u32 {
        self.access_line_missed(addr, size, kind).event_bits()
    }

    /// [`Self::access_line`] past the L1 hit test.
    #[inline(never)]
    fn access_line_missed(&mut self, addr: u64, size: u32, kind: AccessKind) -> AccessOutcome {
        if u64::from(size) > self.l1_line {
            let mut last = AccessOutcome::l1_hit(kind);
            self.access_observed(addr, size, kind, |_, o| last = *o);
            return last;
        }
        // `try_l1_hit` declined it: when L1 took it (one line, fast path on), it missed there,
        // which is what the two-level miss step expects.
        if self.hierarchy.l1_takes(addr, size) {
            let block = self.hierarchy.l1_block(addr);
            if let Some(step) = self.miss_step
                && let Some(l2) = step(&mut self.hierarchy, &mut self.monitor, addr, block, kind)
            {
                return crate::cache::two_level_outcome(kind, l2);
            }
            if let Some(l2) = self.hierarchy.two_level_missed(addr, kind) {
                Watch::miss(&mut self.monitor, addr, kind, l2);
                let outcome = crate::cache::two_level_outcome(kind, l2);
                if self.analyses.is_some() {
                    self.analyse(addr, size, kind, &outcome);
                }
                return outcome;
            }
        }
        let outcome = self.hierarchy.access_missed(addr, size, kind);
        self.monitor.observe(addr, &outcome);
        if self.analyses.is_some() {
            self.analyse(addr, size, kind, &outcome);
        }
        outcome
    }
}
