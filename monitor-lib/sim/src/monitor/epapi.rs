//! ePAPI: a PAPI-like event-set lifecycle (add, start, read, stop, reset) over the counter array,
//! extended with histograms, as the EP-Cache paper describes its "PAPI alike interface".
//!
//! Misuse is refused the way PAPI refuses it: adding to or starting a running set is PAPI_EISRUN,
//! reading or stopping a set that is not running is PAPI_ENOTRUN, an unknown name is PAPI_ENOEVNT.
//! Histograms are the extension: they are read with [`EventSet::read_histogram`] at any time,
//! because the monitor control component stops the set at a region's exit and reads them after.

use super::counter_array::{
    CounterArray, CounterArrayConfig, Histogram, HistogramId, MonitorError, SpillStats, StaticId,
};
use super::{Event, FieldLayout, UnknownEvent};
use crate::cache::{AccessKind, AccessOutcome, Hierarchy, LevelResult, Watch};
use crate::ranges::AddressRange;

/// Position of a counted event in an [`EventSet`], and of its value in what `read` and `stop` return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventIndex(pub usize);

/// Position of a histogram in an [`EventSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistogramIndex(pub usize);

/// Misuse of an event set, or a request the counter array cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpapiError {
    /// The action needs a stopped set (PAPI_EISRUN).
    #[error("cannot {action}: the event set is running; stop it first (PAPI_EISRUN)")]
    IsRunning { action: &'static str },
    /// The action needs a running set (PAPI_ENOTRUN).
    #[error("cannot {action}: the event set is not running; start it first (PAPI_ENOTRUN)")]
    NotRunning { action: &'static str },
    /// Starting a set with nothing in it.
    #[error("cannot start an empty event set; add an event or a histogram first (PAPI_EINVAL)")]
    Empty,
    /// The name is not an event (PAPI_ENOEVNT).
    #[error(transparent)]
    UnknownEvent(#[from] UnknownEvent),
    /// The event is at a level the simulated hierarchy does not have (PAPI_ENOEVNT).
    #[error(
        "event {event} counts at level {level}, but the simulated hierarchy has {levels} data level(s) (PAPI_ENOEVNT)"
    )]
    LevelNotSimulated {
        event: Event,
        level: usize,
        levels: usize,
    },
    /// A histogram bucket of zero lines, or one too wide to express in bytes.
    #[error(
        "histogram of {event}: a bucket of {bucket_lines} lines of {line_bytes} bytes is not possible; give at least 1 line"
    )]
    BucketWidth {
        event: Event,
        bucket_lines: u64,
        line_bytes: u32,
    },
    /// A histogram index this set never gave out.
    #[error("no histogram at index {index}; this event set has {count}")]
    NoSuchHistogram { index: usize, count: usize },
    /// The counter array refused the binding.
    #[error(transparent)]
    Monitor(#[from] MonitorError),
}

/// An event set over one counter array: what to count, and whether counting is on.
#[derive(Debug, Clone)]
pub struct EventSet {
    array: CounterArray,
    running: bool,
    /// The outcome bits (see [`AccessOutcome::event_bits`]) the bindings count while running,
    /// 0 while stopped: one AND rejects an access that counts nowhere, running or not.
    active: u32,
    /// Whether an L1 hit of each kind (by `AccessKind as usize`) meets `active`: the
    /// simulator's hit path asks this for every hit, and one byte compare is its cheapest form.
    counts_hit: [bool; 2],
    /// `counts_hit`, or hits watched by someone else (the simulator's analyses): what the
    /// simulator's hit path tests, one byte for both.
    sees_hit: [bool; 2],
    hits_watched: bool,
    /// The lone histogram's outcome bits while running (see [`CounterArray::solo_bits`]), 0
    /// otherwise: a miss meeting them is counted inline.
    solo: u32,
    line_bytes: u32,
    data_levels: usize,
    events: Vec<StaticId>,
    histograms: Vec<HistogramId>,
}

impl EventSet {
    /// An empty, stopped event set over a fresh array; bucket widths are given in lines of
    /// `line_bytes`, and events deeper than `data_levels` are refused.
    pub fn new(
        config: CounterArrayConfig,
        line_bytes: u32,
        data_levels: usize,
    ) -> Result<Self, EpapiError> {
        Ok(Self {
            array: CounterArray::new(config)?,
            running: false,
            active: 0,
            counts_hit: [false; 2],
            sees_hit: [false; 2],
            hits_watched: false,
            solo: 0,
            line_bytes,
            data_levels,
            events: Vec::new(),
            histograms: Vec::new(),
        })
    }

    /// An event set sized for `hierarchy`: buckets in its first data level's lines, events at its levels.
    pub fn for_hierarchy(
        config: CounterArrayConfig,
        hierarchy: &Hierarchy,
    ) -> Result<Self, EpapiError> {
        Self::new(config, hierarchy.line_size(0), hierarchy.depth())
    }

    /// Whether accesses are being counted.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The counter array underneath, for its configuration and spill counts.
    pub fn counter_array(&self) -> &CounterArray {
        &self.array
    }

    /// Spills of every counter of the set since it was built or last reset.
    pub fn spills(&self) -> SpillStats {
        self.array.spills()
    }

    fn parse_event(&self, name: &str) -> Result<Event, EpapiError> {
        let event: Event = name.parse()?;
        if event.level() >= self.data_levels {
            return Err(EpapiError::LevelNotSimulated {
                event,
                level: event.level() + 1,
                levels: self.data_levels,
            });
        }
        Ok(event)
    }

    /// Counts the PAPI event `name` (e.g. `PAPI_L1_LDM`) on accesses inside `range`.
    pub fn add_event(&mut self, name: &str, range: AddressRange) -> Result<EventIndex, EpapiError> {
        if self.running {
            return Err(EpapiError::IsRunning {
                action: "add an event",
            });
        }
        let event = self.parse_event(name)?;
        self.events.push(self.array.bind_static(range, event)?);
        Ok(EventIndex(self.events.len() - 1))
    }

    /// Histograms the PAPI event `name` over `range` in buckets of `bucket_lines` cache lines.
    pub fn add_histogram(
        &mut self,
        name: &str,
        range: AddressRange,
        bucket_lines: u64,
    ) -> Result<HistogramIndex, EpapiError> {
        if self.running {
            return Err(EpapiError::IsRunning {
                action: "add a histogram",
            });
        }
        let event = self.parse_event(name)?;
        let bucket_bytes = bucket_lines
            .checked_mul(u64::from(self.line_bytes))
            .filter(|&bytes| bytes > 0)
            .ok_or(EpapiError::BucketWidth {
                event,
                bucket_lines,
                line_bytes: self.line_bytes,
            })?;
        self.histograms
            .push(self.array.bind_histogram(range, event, bucket_bytes)?);
        Ok(HistogramIndex(self.histograms.len() - 1))
    }

    /// Histograms the PAPI event `name` over `range` by field: one bucket per member of
    /// `fields`, summed over every element, then one for the padding.
    pub fn add_field_histogram(
        &mut self,
        name: &str,
        range: AddressRange,
        fields: FieldLayout,
    ) -> Result<HistogramIndex, EpapiError> {
        if self.running {
            return Err(EpapiError::IsRunning {
                action: "add a histogram",
            });
        }
        let event = self.parse_event(name)?;
        self.histograms
            .push(self.array.bind_field_histogram(range, event, fields)?);
        Ok(HistogramIndex(self.histograms.len() - 1))
    }

    /// Starts counting; counts continue from where the last stop left them (use `reset` to zero).
    pub fn start(&mut self) -> Result<(), EpapiError> {
        if self.running {
            return Err(EpapiError::IsRunning { action: "start" });
        }
        if self.events.is_empty() && self.histograms.is_empty() {
            return Err(EpapiError::Empty);
        }
        self.running = true;
        self.set_active(self.array.interest());
        Ok(())
    }

    /// Stops counting and returns the events' values, in the order they were added.
    pub fn stop(&mut self) -> Result<Vec<u64>, EpapiError> {
        if !self.running {
            return Err(EpapiError::NotRunning { action: "stop" });
        }
        self.running = false;
        self.set_active(0);
        self.values()
    }

    /// The events' values while running, in the order they were added.
    pub fn read(&self) -> Result<Vec<u64>, EpapiError> {
        if !self.running {
            return Err(EpapiError::NotRunning { action: "read" });
        }
        self.values()
    }

    fn values(&self) -> Result<Vec<u64>, EpapiError> {
        self.events
            .iter()
            .map(|&id| Ok(self.array.read_static(id)?))
            .collect()
    }

    /// A histogram's buckets and spills, running or not.
    pub fn read_histogram(&self, index: HistogramIndex) -> Result<Histogram, EpapiError> {
        let id = self
            .histograms
            .get(index.0)
            .ok_or(EpapiError::NoSuchHistogram {
                index: index.0,
                count: self.histograms.len(),
            })?;
        Ok(self.array.read_histogram(*id)?)
    }

    /// Zeroes every count and spill statistic, running or not.
    pub fn reset(&mut self) {
        self.array.reset();
    }

    /// Removes every event and histogram (PAPI_cleanup_eventset); refused while running.
    pub fn cleanup(&mut self) -> Result<(), EpapiError> {
        if self.running {
            return Err(EpapiError::IsRunning { action: "clean up" });
        }
        self.array.clear();
        self.events.clear();
        self.histograms.clear();
        Ok(())
    }

    /// The simulator's entry point for every data access: one AND rejects an access no
    /// binding counts, or any access while the set is stopped.
    #[inline(always)]
    pub fn observe(&mut self, addr: u64, outcome: &AccessOutcome) {
        let bits = outcome.event_bits();
        if bits & self.active != 0 {
            self.array.observe_matching(addr, bits);
        }
    }

    /// [`Self::observe`] of an access given as its event bits: what a core of a
    /// [`Machine`](crate::cache::Machine) gives ([`CoreOutcome::event_bits`]), coherence
    /// bits included.
    ///
    /// [`CoreOutcome::event_bits`]: crate::cache::CoreOutcome::event_bits
    #[inline]
    pub fn observe_bits(&mut self, addr: u64, bits: u32) {
        if bits & self.active != 0 {
            self.array.observe_matching(addr, bits);
        }
    }

    /// Whether no access would count anywhere now (stopped, or nothing bound).
    #[inline(always)]
    pub(crate) fn counts_nothing(&self) -> bool {
        self.active | self.solo == 0
    }

    /// Whether an L1 hit of `kind` would count anywhere now, so the simulator's fast path can
    /// skip building its outcome.
    #[inline(always)]
    pub fn counts_l1_hit(&self, kind: AccessKind) -> bool {
        self.counts_hit[kind as usize]
    }

    /// Whether an L1 hit of `kind` counts anywhere now or is watched by whoever called
    /// [`Self::set_hits_watched`].
    #[inline(always)]
    pub(crate) fn sees_l1_hit(&self, kind: AccessKind) -> bool {
        self.sees_hit[kind as usize]
    }

    /// Whether something besides the bindings watches L1 hits (the simulator's analyses), so
    /// that [`Self::sees_l1_hit`] answers for both.
    pub(crate) fn set_hits_watched(&mut self, on: bool) {
        self.hits_watched = on;
        self.set_active(self.active);
    }

    /// What [`Self::set_hits_watched`] said last.
    pub(crate) fn hits_watched(&self) -> bool {
        self.hits_watched
    }

    /// Sets `active` and what follows from it.
    fn set_active(&mut self, active: u32) {
        self.active = active;
        self.counts_hit = [AccessKind::Read, AccessKind::Write]
            .map(|kind| AccessOutcome::l1_hit(kind).event_bits() & active != 0);
        self.sees_hit = self.counts_hit.map(|counts| counts || self.hits_watched);
        // Bindings change only while stopped, so the array's solo histogram stays as it is
        // until the next start.
        self.solo = if active != 0 {
            self.array.solo_bits()
        } else {
            0
        };
    }
}

/// The monitor watching a batch in the hierarchy's two-level loop.
impl Watch for EventSet {
    #[inline(always)]
    fn wants_hits(&self) -> bool {
        self.counts_l1_hit(AccessKind::Read) || self.counts_l1_hit(AccessKind::Write)
    }

    #[inline(always)]
    fn hit(&mut self, addr: u64, kind: AccessKind) {
        self.observe(addr, &AccessOutcome::l1_hit(kind));
    }

    #[inline(always)]
    fn miss(&mut self, addr: u64, kind: AccessKind, l2: LevelResult) {
        let bits = AccessOutcome::l1_miss_event_bits(kind, l2);
        // With one histogram alone `active` is its bits: a miss that does not meet them
        // counts nowhere.
        if bits & self.solo != 0 {
            self.array.observe_solo(addr);
        } else if bits & self.active != 0 {
            self.array.observe_matching(addr, bits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::MAX_LEVELS;

    const BASE: u64 = 0x4000;

    fn outcome(kind: AccessKind, l1: LevelResult, l2: LevelResult) -> AccessOutcome {
        let mut levels = [LevelResult::NotReached; MAX_LEVELS];
        levels[0] = l1;
        levels[1] = l2;
        AccessOutcome { kind, levels }
    }

    fn two_level_set() -> EventSet {
        EventSet::new(CounterArrayConfig::default(), 32, 2).unwrap()
    }

    #[test]
    fn coherence_events_are_counted_statically_and_in_histograms_per_core() {
        use crate::cache::{HierarchySpec, Machine};
        let spec: HierarchySpec = "D1=1K,2,64;L2=8K,4,64,shared".parse().unwrap();
        let mut machine = Machine::new(&spec, 2).unwrap();
        // One event set per core, as the runtime keeps one per thread: packed counters in the
        // first line of the array, padded ones in lines 2 and 3.
        let array = AddressRange::new(BASE, 256);
        let mut sets: Vec<EventSet> = (0..2)
            .map(|_| {
                let mut set = EventSet::new(CounterArrayConfig::default(), 64, 2).unwrap();
                set.add_event("EPC_L1_FSM", array).unwrap();
                set.add_event("PAPI_CA_INV", array).unwrap();
                set.add_event("EPC_L1_TSM", array).unwrap();
                set.add_histogram("EPC_L1_FSM", array, 1).unwrap();
                set.start().unwrap();
                set
            })
            .collect();
        for _ in 0..100 {
            for core in 0..2u64 {
                for addr in [BASE + 8 * core, BASE + 128 + 64 * core] {
                    let out = machine.access(core as usize, addr, 8, AccessKind::Write);
                    sets[core as usize].observe_bits(addr, out.event_bits());
                }
            }
        }
        let [a, b] = [&sets[0], &sets[1]].map(|s| s.read().unwrap());
        // Core 0's first write is cold; every later one finds its copy taken: 99 + 100.
        assert_eq!(a[0] + b[0], 198);
        assert_eq!(a[1] + b[1], 199);
        assert_eq!(a[2] + b[2], 0);
        for set in &sets {
            let hist = set.read_histogram(HistogramIndex(0)).unwrap();
            // All in the packed line's bucket; none in the padded ones'; sums to the static count.
            assert_eq!(hist.buckets[1..], [0, 0, 0]);
            assert_eq!(hist.total(), set.read().unwrap()[0]);
        }
    }

    #[test]
    fn counts_only_between_start_and_stop() {
        use AccessKind::*;
        use LevelResult::*;
        let mut set = two_level_set();
        let array = AddressRange::new(BASE, 256);
        set.add_event("PAPI_L1_LDM", array).unwrap();
        assert_eq!(set.add_event("papi_l2_dcm", array).unwrap(), EventIndex(1));
        let h = set.add_histogram("PAPI_L1_DCA", array, 2).unwrap();
        set.observe(BASE, &outcome(Read, Miss, Miss));
        assert!(!set.counts_l1_hit(Read), "a stopped set counts nothing");
        set.start().unwrap();
        assert!(set.counts_l1_hit(Read) && set.counts_l1_hit(Write));
        set.observe(BASE, &outcome(Read, Miss, Miss));
        set.observe(BASE + 64, &outcome(Write, Miss, Miss));
        set.observe(BASE + 255, &outcome(Read, Hit, NotReached));
        assert_eq!(set.read().unwrap(), vec![1, 2]);
        assert_eq!(set.stop().unwrap(), vec![1, 2]);
        set.observe(BASE, &outcome(Read, Miss, Miss));
        let hist = set.read_histogram(h).unwrap();
        assert_eq!(hist.bucket_bytes, 64);
        assert_eq!(hist.buckets, vec![1, 1, 0, 1]);
        // A restart continues the counts; reset zeroes them.
        set.start().unwrap();
        set.observe(BASE, &outcome(Read, Miss, Hit));
        assert_eq!(set.read().unwrap(), vec![2, 2]);
        set.reset();
        assert_eq!(set.read().unwrap(), vec![0, 0]);
        assert_eq!(set.read_histogram(h).unwrap().total(), 0);
        assert!(set.is_running());
    }

    #[test]
    fn misuse_is_refused_as_papi_refuses_it() {
        let mut set = two_level_set();
        let array = AddressRange::new(BASE, 256);
        assert_eq!(set.start(), Err(EpapiError::Empty));
        assert!(matches!(set.read(), Err(EpapiError::NotRunning { .. })));
        assert!(matches!(set.stop(), Err(EpapiError::NotRunning { .. })));
        set.add_event("PAPI_L1_DCR", array).unwrap();
        set.start().unwrap();
        assert!(set.counts_l1_hit(AccessKind::Read) && !set.counts_l1_hit(AccessKind::Write));
        let e = set.start().unwrap_err();
        assert!(e.to_string().contains("PAPI_EISRUN"), "{e}");
        let e = set.add_event("PAPI_L1_DCW", array).unwrap_err();
        assert_eq!(
            e,
            EpapiError::IsRunning {
                action: "add an event"
            }
        );
        assert!(matches!(
            set.add_histogram("PAPI_L1_DCW", array, 1),
            Err(EpapiError::IsRunning { .. })
        ));
        assert!(matches!(set.cleanup(), Err(EpapiError::IsRunning { .. })));
        set.stop().unwrap();
        set.cleanup().unwrap();
        assert_eq!(set.start(), Err(EpapiError::Empty));
    }

    #[test]
    fn bad_event_names_and_widths_are_explained() {
        let mut set = two_level_set();
        let array = AddressRange::new(BASE, 256);
        let e = set.add_event("PAPI_L1_LDH", array).unwrap_err();
        let parse_error = "PAPI_L1_LDH".parse::<Event>().unwrap_err();
        assert_eq!(e.to_string(), parse_error.to_string());
        let e = set.add_event("PAPI_L3_LDM", array).unwrap_err();
        assert!(e.to_string().contains("has 2 data level(s)"), "{e}");
        let e = set.add_histogram("PAPI_L1_LDM", array, 0).unwrap_err();
        assert!(matches!(e, EpapiError::BucketWidth { .. }), "{e}");
        let e = set
            .read_histogram(HistogramIndex(0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("this event set has 0"), "{e}");
    }

    #[test]
    fn running_out_of_counters_names_the_counter_count() {
        let config = CounterArrayConfig {
            counters: 2,
            counter_bits: 32,
        };
        let mut set = EventSet::new(config, 64, 1).unwrap();
        let array = AddressRange::new(BASE, 256);
        set.add_event("PAPI_L1_DCR", array).unwrap();
        set.add_event("PAPI_L1_DCW", array).unwrap();
        let e = set.add_histogram("PAPI_L1_DCM", array, 1).unwrap_err();
        assert!(matches!(e, EpapiError::Monitor(_)));
        assert!(e.to_string().contains("all 2 counter(s)"), "{e}");
    }

    #[test]
    fn the_inlined_miss_path_counts_as_the_general_one() {
        // One histogram and no static binding takes the inlined path; narrow counters overflow
        // and few counters make buckets allocate and evict, which go out of line. The general
        // path is `observe`, which never takes the inlined one.
        use AccessKind::*;
        use LevelResult::*;
        for (counters, bits, event) in [
            (3, 8, "PAPI_L1_LDM"),
            (64, 8, "PAPI_L2_DCA"),
            (2, 32, "PAPI_L1_DCM"),
        ] {
            let config = CounterArrayConfig {
                counters,
                counter_bits: bits,
            };
            let build = || {
                let mut set = EventSet::new(config, 32, 2).unwrap();
                set.add_histogram(event, AddressRange::new(BASE, 4000), 3)
                    .unwrap();
                set.start().unwrap();
                set
            };
            let (mut general, mut inlined) = (build(), build());
            let mut x = 3u64;
            for _ in 0..50_000 {
                crate::test_rng::xorshift(&mut x);
                // Mostly inside the range, some below and above it.
                let addr = BASE - 100 + x % 4200;
                let kind = if x >> 40 & 1 == 0 { Read } else { Write };
                let l2 = [Hit, Miss][(x >> 41 & 1) as usize];
                let o = outcome(kind, Miss, l2);
                general.observe(addr, &o);
                Watch::miss(&mut inlined, addr, kind, l2);
            }
            let h = HistogramIndex(0);
            let (a, b) = (
                general.read_histogram(h).unwrap(),
                inlined.read_histogram(h).unwrap(),
            );
            assert_eq!(a, b, "{counters} counters of {bits} bits, {event}");
            assert!(a.total() > 0);
            assert_eq!(general.spills(), inlined.spills());
            // 42 buckets: 64 counters hold them all and overflow; fewer evict.
            if counters == 64 {
                assert!(general.spills().overflows > 0);
            } else {
                assert!(general.spills().evictions > 0, "{counters}, {bits}");
            }
        }
    }
}
