//! The simulated associative counter array: static counters per (range, event), and a shared pool of
//! counters allocated on demand to histogram buckets, spilling to software on eviction or overflow.
//!
//! # The model (ours: the EP-Cache papers publish no counter count, allocation or overflow policy)
//!
//! The array has a fixed number of counters, each `counter_bits` wide. A static binding holds one
//! counter for as long as it is bound. Every other counter belongs to the *dynamic pool*, shared by
//! all histograms: a counter in the pool carries a tag (histogram, bucket) and an access is matched
//! against the tags associatively. On a tag miss the access takes a free counter; when none is free
//! the monitor picks a victim, raises what would be an interrupt, and software adds the victim's
//! value to a per-bucket accumulator before the counter is re-tagged. A counter that would wrap
//! raises the overflow interrupt instead: software adds 2^bits and the counter restarts at 0.
//! Software-side values and counter values together are the count, so nothing is lost and a
//! histogram's buckets always sum to the static count of the same range and event.
//!
//! # Victim policy: clock (second chance) over "incremented since the hand last passed"
//!
//! Every spill is an interrupt, so the policy should keep the counters that will be incremented
//! soon. Accesses to a data structure have the locality of the loop that walks it, so recency of
//! increment predicts the next increment well, and a sweep over an array leaves behind buckets that
//! are finished: least-recently-incremented is the right target. True LRU needs an ordering of all
//! counters updated on every increment, which hardware would not build for a CAM and which would
//! cost the simulator's hot path more than one store. Clock needs one reference bit per counter,
//! set on increment (a store into the counter's own cache line), and walks the bits only on a tag
//! miss with no free counter, where it is amortised O(1).
//!
//! A freshly tagged counter starts *unreferenced*: it has to be incremented again before the hand
//! comes round to earn its second chance. The hand has just passed it, so it gets a full turn to
//! prove reuse, and a stream of buckets touched once (a sweep over a large array) then recycles
//! its own counters instead of pushing out the hot buckets of the same loop. For a cyclic pattern
//! over more buckets than counters it degrades exactly like LRU (every tag miss spills). The unit
//! tests pin both behaviours down.
//!
//! Evictions are charged to the histogram whose counter was evicted, because that is the histogram
//! whose bucket went through software.

use serde::Serialize;

use super::Event;
use super::field_layout::{FieldLayout, FieldLayoutError};
use crate::cache::AccessOutcome;
use crate::ranges::AddressRange;

/// Marks a bucket whose value lives only in software (no counter holds its tag).
const NO_COUNTER: u32 = u32::MAX;

/// Most buckets one histogram may have: the tag map costs 12 bytes per bucket and must stay
/// resident, and a bucket index must fit a tag.
pub const MAX_BUCKETS: u64 = 1 << 24;

/// Shape of the simulated counter array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CounterArrayConfig {
    /// Number of hardware counters, static and dynamic together.
    pub counters: usize,
    /// Width of each counter; a counter that would reach 2^bits spills to software.
    pub counter_bits: u32,
}

impl Default for CounterArrayConfig {
    fn default() -> Self {
        Self {
            counters: 64,
            counter_bits: 32,
        }
    }
}

impl CounterArrayConfig {
    /// Checks the shape is one the model supports.
    pub fn validate(&self) -> Result<(), MonitorError> {
        if self.counters == 0 {
            return Err(MonitorError::NoCounters);
        }
        if self.counters >= NO_COUNTER as usize {
            return Err(MonitorError::TooManyCounters {
                counters: self.counters,
            });
        }
        if !(8..=64).contains(&self.counter_bits) {
            return Err(MonitorError::CounterWidth {
                bits: self.counter_bits,
            });
        }
        Ok(())
    }

    /// Largest value a counter holds before the next increment overflows it.
    fn counter_max(&self) -> u64 {
        u64::MAX >> (64 - self.counter_bits)
    }
}

/// Handle of a static binding; never reused within one [`CounterArray`], so a stale handle is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct StaticId(u32);

/// Handle of a histogram binding; never reused within one [`CounterArray`], so a stale handle is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct HistogramId(u32);

/// How often counter values went to software, by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SpillStats {
    /// A dynamic counter was taken from its bucket for another one (a tag miss with no free counter),
    /// or given up because a static binding claimed it.
    pub evictions: u64,
    /// A counter reached 2^counter_bits and restarted at 0.
    pub overflows: u64,
}

impl SpillStats {
    /// Spills of either cause.
    pub fn total(&self) -> u64 {
        self.evictions + self.overflows
    }
}

/// A histogram read from the array: hardware and software parts summed per bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Histogram {
    /// What the buckets count.
    pub event: Event,
    /// The bytes the histogram covers.
    pub range: AddressRange,
    /// Width of every bucket but possibly the last; a by-field histogram's element size.
    pub bucket_bytes: u64,
    /// `buckets[i]` counts accesses in `[range.start + i * bucket_bytes, ..+ bucket_bytes)`,
    /// the last bucket cut at `range.end`; for a by-field histogram, accesses to member `i` of
    /// every element, the last bucket the padding.
    pub buckets: Vec<u64>,
    /// A by-field histogram's members (see `field_layout.rs`).
    pub fields: Option<FieldLayout>,
    /// Spills charged to this histogram since it was bound or last reset.
    pub spills: SpillStats,
}

impl Histogram {
    /// Sum of all buckets: equals the static count of the same range and event.
    pub fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// What can go wrong configuring or reading the counter array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MonitorError {
    /// The configuration asked for no counters.
    #[error(
        "a counter array needs at least 1 counter; configure counters >= 1 (the default is 64)"
    )]
    NoCounters,
    /// More counters than a counter index can name.
    #[error(
        "a counter array of {counters} counters is not supported; configure fewer than 4294967295"
    )]
    TooManyCounters { counters: usize },
    /// The configured counter width is outside 8..=64 bits.
    #[error("counters of {bits} bits are not supported; choose a width from 8 to 64 bits")]
    CounterWidth { bits: u32 },
    /// No counter is left for another static binding.
    #[error(
        "cannot bind {event} over [{start:#x}, {end:#x}) statically: {why}; unbind a static binding or configure more counters"
    )]
    StaticFull {
        event: Event,
        start: u64,
        end: u64,
        why: String,
    },
    /// Static bindings hold every counter, so a histogram would have no dynamic pool.
    #[error(
        "cannot bind a histogram of {event} over [{start:#x}, {end:#x}): all {counters} counter(s) are held by static bindings and the histogram needs at least 1; unbind a static binding or configure more counters"
    )]
    NoDynamicCounters {
        event: Event,
        start: u64,
        end: u64,
        counters: usize,
    },
    /// A histogram over no bytes.
    #[error(
        "histogram of {event}: the address range [{start:#x}, {end:#x}) is empty; give the data structure's first byte and its length"
    )]
    EmptyRange { event: Event, start: u64, end: u64 },
    /// A histogram with zero-byte buckets.
    #[error(
        "histogram of {event} over [{start:#x}, {end:#x}): a bucket width of 0 bytes is not possible; use a multiple of the line size"
    )]
    ZeroBucket { event: Event, start: u64, end: u64 },
    /// A histogram whose bucket map would exceed [`MAX_BUCKETS`].
    #[error(
        "histogram of {event} over [{start:#x}, {end:#x}) with {bucket_bytes}-byte buckets would have {buckets} buckets, more than the {max} supported; use wider buckets"
    )]
    TooManyBuckets {
        event: Event,
        start: u64,
        end: u64,
        bucket_bytes: u64,
        buckets: u64,
        max: u64,
    },
    /// A static handle that is not (or no longer) bound in this array.
    #[error(
        "no static binding {0:?} in this counter array (it was unbound or cleared, or belongs to another array)"
    )]
    UnknownStatic(StaticId),
    /// A histogram handle that is not (or no longer) bound in this array.
    #[error(
        "no histogram {0:?} in this counter array (it was unbound or cleared, or belongs to another array)"
    )]
    UnknownHistogram(HistogramId),
    /// A by-field histogram whose layout is not one.
    #[error("histogram of {event} over [{start:#x}, {end:#x}) by field: {why}")]
    Fields {
        event: Event,
        start: u64,
        end: u64,
        why: FieldLayoutError,
    },
}

/// One counter held by a static binding.
#[derive(Debug, Clone)]
struct StaticBinding {
    id: StaticId,
    range: AddressRange,
    event: Event,
    counter: u64,
    /// Accumulated by overflow interrupts.
    software: u64,
}

/// A histogram and its software side.
#[derive(Debug, Clone)]
struct HistogramBinding {
    id: HistogramId,
    range: AddressRange,
    event: Event,
    bucket_bytes: u64,
    bucket_index: BucketIndex,
    /// A by-field histogram's bucket for each byte of its element (indexed by the offset modulo
    /// the element size, which `bucket_index` is then [`BucketIndex::Periodic`] of); empty otherwise.
    bucket_of_byte: Vec<u32>,
    fields: Option<FieldLayout>,
    /// `event.outcome_bits()`, kept so the hot path does not compute it per access.
    outcome_bits: u32,
    /// Where this histogram's buckets start in the array's `slot_of_bucket`.
    first_slot: usize,
    /// Values that went to software on eviction or overflow.
    software: Vec<u64>,
    spills: SpillStats,
}

impl HistogramBinding {
    #[inline]
    fn bucket_of(&self, addr: u64) -> usize {
        let offset = addr - self.range.start;
        match self.bucket_index {
            BucketIndex::Periodic(element_bytes) => {
                self.bucket_of_byte[(offset % element_bytes) as usize] as usize
            }
            index => index.of(offset) as usize,
        }
    }
}

/// How an offset into a histogram's range becomes a bucket index without a 64-bit division on
/// the hot path where possible: a division costs tens of cycles, more than the rest of `observe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BucketIndex {
    /// Power-of-two width: `offset >> shift`.
    Shift(u32),
    /// `offset * reciprocal / 2^64`, with `reciprocal = ceil(2^64 / width)`, exact for every
    /// offset of the range (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
    /// 2019, theorem 1: exact for offsets below 2^N when width <= 2^(64 - N)).
    Reciprocal(u64),
    /// Widths too large for the exact reciprocal of such a long range.
    Divide(u64),
    /// A by-field histogram over elements of this many bytes: the bucket is looked up by the
    /// offset within the element ([`HistogramBinding::bucket_of`]); never the inlined path's.
    Periodic(u64),
}

impl BucketIndex {
    fn new(width: u64, range_len: u64) -> Self {
        if width.is_power_of_two() {
            return Self::Shift(width.trailing_zeros());
        }
        let offset_bits = 64 - (range_len - 1).leading_zeros();
        if offset_bits == 0 || width <= 1 << (64 - offset_bits) {
            // Not a power of two, so 2^64 / width is not whole and the ceiling is floor + 1.
            Self::Reciprocal(u64::MAX / width + 1)
        } else {
            Self::Divide(width)
        }
    }

    #[inline]
    fn of(self, offset: u64) -> u64 {
        match self {
            Self::Shift(shift) => offset >> shift,
            Self::Reciprocal(reciprocal) => {
                ((u128::from(offset) * u128::from(reciprocal)) >> 64) as u64
            }
            Self::Divide(width) | Self::Periodic(width) => offset / width,
        }
    }
}

/// A counter of the dynamic pool and the tag it holds.
#[derive(Debug, Clone, Copy)]
struct PoolCounter {
    value: u64,
    /// Position of the owning histogram in `CounterArray::histograms`, or [`NO_COUNTER`] when free.
    owner: u32,
    bucket: u32,
    /// Incremented since the clock hand last passed.
    referenced: bool,
}

impl PoolCounter {
    const FREE: PoolCounter = PoolCounter {
        value: 0,
        owner: NO_COUNTER,
        bucket: 0,
        referenced: false,
    };
}

/// The simulated associative counter array (see the module documentation for the model).
#[derive(Debug, Clone)]
pub struct CounterArray {
    config: CounterArrayConfig,
    counter_max: u64,
    statics: Vec<StaticBinding>,
    histograms: Vec<HistogramBinding>,
    /// The CAM lookup done in O(1): the pool counter holding each bucket's tag, or
    /// [`NO_COUNTER`], for every histogram's buckets one after the other (in binding order,
    /// from each binding's `first_slot`). One vector at a fixed offset of the array, so the
    /// lone histogram's lookup (whose buckets start at 0) does not go through the bindings.
    slot_of_bucket: Vec<u32>,
    /// Every counter not held by a static binding.
    pool: Vec<PoolCounter>,
    /// Indices into `pool` of untagged counters.
    free: Vec<u32>,
    clock_hand: usize,
    spills: SpillStats,
    next_id: u32,
    /// The outcome bits (see [`AccessOutcome::event_bits`]) any binding counts; an access
    /// with none of them is rejected in one AND before any binding is looked at.
    interest: u32,
    /// The lone histogram's constants, for the inlined miss path.
    solo: Solo,
}

/// When a histogram is the array's only binding (the common request), what the inlined miss
/// path needs of it, copied out of the binding so that a miss reads them at fixed offsets of
/// the array instead of through the bindings' vectors.
#[derive(Debug, Clone, Copy, Default)]
struct Solo {
    /// The histogram's outcome bits; 0 (matching nothing) when the array is not one histogram
    /// alone, or its buckets need a division.
    bits: u32,
    start: u64,
    len: u64,
    /// A bucket is `(offset * mul / 2^64) >> shift`: the reciprocal with shift 0, or a
    /// power-of-two width `2^s` as `mul = 2^63`, `shift = s - 1`, so one formula serves both
    /// without a branch.
    mul: u64,
    shift: u32,
}

impl Solo {
    fn of(statics: &[StaticBinding], histograms: &[HistogramBinding]) -> Self {
        let ([], [h]) = (statics, histograms) else {
            return Self::default();
        };
        let (mul, shift) = match h.bucket_index {
            BucketIndex::Shift(s) if s >= 1 => (1 << 63, s - 1),
            BucketIndex::Reciprocal(r) => (r, 0),
            _ => return Self::default(),
        };
        Self {
            bits: h.outcome_bits,
            start: h.range.start,
            len: h.range.len(),
            mul,
            shift,
        }
    }

    #[inline(always)]
    fn bucket(self, offset: u64) -> usize {
        (((u128::from(offset) * u128::from(self.mul)) >> 64) as u64 >> self.shift) as usize
    }
}

impl CounterArray {
    /// An array with no bindings; every counter starts in the dynamic pool.
    pub fn new(config: CounterArrayConfig) -> Result<Self, MonitorError> {
        config.validate()?;
        Ok(Self {
            config,
            counter_max: config.counter_max(),
            statics: Vec::new(),
            histograms: Vec::new(),
            slot_of_bucket: Vec::new(),
            pool: vec![PoolCounter::FREE; config.counters],
            // Reversed so counters are handed out from index 0 up, which keeps tests readable.
            free: (0..config.counters as u32).rev().collect(),
            clock_hand: 0,
            spills: SpillStats::default(),
            next_id: 0,
            interest: 0,
            solo: Solo::default(),
        })
    }

    /// The shape this array was built with.
    pub fn config(&self) -> CounterArrayConfig {
        self.config
    }

    /// Counters currently in the dynamic pool (not held by static bindings).
    pub fn dynamic_counters(&self) -> usize {
        self.pool.len()
    }

    /// Spills of every binding since the array was built, reset or cleared.
    pub fn spills(&self) -> SpillStats {
        self.spills
    }

    fn take_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Binds a counter to `event` on accesses inside `range`, for as long as the binding lives.
    pub fn bind_static(
        &mut self,
        range: AddressRange,
        event: Event,
    ) -> Result<StaticId, MonitorError> {
        let counters = self.config.counters;
        let why = if self.statics.len() >= counters {
            Some(format!(
                "all {counters} counters are held by static bindings"
            ))
        } else if !self.histograms.is_empty() && self.pool.len() <= 1 {
            Some(format!(
                "{} of the {counters} counters are static and the last one is the dynamic pool of {} bound histogram(s)",
                self.statics.len(),
                self.histograms.len()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(MonitorError::StaticFull {
                event,
                start: range.start,
                end: range.end,
                why,
            });
        }
        self.shrink_pool();
        let id = StaticId(self.take_id());
        self.statics.push(StaticBinding {
            id,
            range,
            event,
            counter: 0,
            software: 0,
        });
        self.refresh_interest();
        Ok(id)
    }

    /// Gives the pool's last counter to a static binding, sending its value to software first.
    fn shrink_pool(&mut self) {
        let last = self.pool.len() - 1;
        let counter = self.pool.pop().expect("callers check a counter is left");
        if counter.owner == NO_COUNTER {
            self.free.retain(|&c| c as usize != last);
        } else {
            self.spill_to_software(counter);
            self.spills.evictions += 1;
            self.histograms[counter.owner as usize].spills.evictions += 1;
        }
        if self.clock_hand >= self.pool.len() {
            self.clock_hand = 0;
        }
    }

    /// Binds a histogram of `event` over `range` with buckets `bucket_bytes` wide (the caller
    /// keeps it a multiple of the line size); its counters come from the dynamic pool on demand.
    pub fn bind_histogram(
        &mut self,
        range: AddressRange,
        event: Event,
        bucket_bytes: u64,
    ) -> Result<HistogramId, MonitorError> {
        let (start, end) = (range.start, range.end);
        if range.is_empty() {
            return Err(MonitorError::EmptyRange { event, start, end });
        }
        if bucket_bytes == 0 {
            return Err(MonitorError::ZeroBucket { event, start, end });
        }
        let buckets = range.len().div_ceil(bucket_bytes);
        if buckets > MAX_BUCKETS {
            return Err(MonitorError::TooManyBuckets {
                event,
                start,
                end,
                bucket_bytes,
                buckets,
                max: MAX_BUCKETS,
            });
        }
        let index = BucketIndex::new(bucket_bytes, range.len());
        self.bind(range, event, bucket_bytes, index, buckets as usize, None)
    }

    /// Binds a by-field histogram of `event` over `range`, an array of `fields.element_bytes`
    /// elements from its first byte: one bucket per member of `fields`, summed over every
    /// element, and one for the padding (see `field_layout.rs`).
    pub fn bind_field_histogram(
        &mut self,
        range: AddressRange,
        event: Event,
        fields: FieldLayout,
    ) -> Result<HistogramId, MonitorError> {
        let (start, end) = (range.start, range.end);
        if range.is_empty() {
            return Err(MonitorError::EmptyRange { event, start, end });
        }
        let table = fields
            .bucket_of_byte()
            .map_err(|why| MonitorError::Fields {
                event,
                start,
                end,
                why,
            })?;
        let element_bytes = fields.element_bytes;
        let buckets = fields.buckets();
        self.bind(
            range,
            event,
            element_bytes,
            BucketIndex::Periodic(element_bytes),
            buckets,
            Some((fields, table)),
        )
    }

    fn bind(
        &mut self,
        range: AddressRange,
        event: Event,
        bucket_bytes: u64,
        bucket_index: BucketIndex,
        buckets: usize,
        fields: Option<(FieldLayout, Vec<u32>)>,
    ) -> Result<HistogramId, MonitorError> {
        if self.pool.is_empty() {
            return Err(MonitorError::NoDynamicCounters {
                event,
                start: range.start,
                end: range.end,
                counters: self.config.counters,
            });
        }
        let id = HistogramId(self.take_id());
        let first_slot = self.slot_of_bucket.len();
        self.slot_of_bucket.resize(first_slot + buckets, NO_COUNTER);
        let (fields, bucket_of_byte) = fields.map_or((None, Vec::new()), |(f, t)| (Some(f), t));
        self.histograms.push(HistogramBinding {
            id,
            range,
            event,
            bucket_bytes,
            bucket_index,
            bucket_of_byte,
            fields,
            outcome_bits: event.outcome_bits(),
            first_slot,
            software: vec![0; buckets],
            spills: SpillStats::default(),
        });
        self.refresh_interest();
        Ok(id)
    }

    /// Releases a static counter back to the dynamic pool; its count is discarded.
    pub fn unbind_static(&mut self, id: StaticId) -> Result<(), MonitorError> {
        let pos = self.static_position(id)?;
        self.statics.remove(pos);
        self.free.push(self.pool.len() as u32);
        self.pool.push(PoolCounter::FREE);
        self.refresh_interest();
        Ok(())
    }

    /// Removes a histogram and frees the counters holding its buckets; its counts are discarded.
    pub fn unbind_histogram(&mut self, id: HistogramId) -> Result<(), MonitorError> {
        let pos = self.histogram_position(id)?;
        let removed = self.histograms.remove(pos);
        let buckets = removed.software.len();
        self.slot_of_bucket
            .drain(removed.first_slot..removed.first_slot + buckets);
        for h in &mut self.histograms[pos..] {
            h.first_slot -= buckets;
        }
        let pos = pos as u32;
        for (index, counter) in self.pool.iter_mut().enumerate() {
            if counter.owner == pos {
                *counter = PoolCounter::FREE;
                self.free.push(index as u32);
            } else if counter.owner != NO_COUNTER && counter.owner > pos {
                // Owners are positions in `histograms`, which just shifted down by one.
                counter.owner -= 1;
            }
        }
        self.refresh_interest();
        Ok(())
    }

    /// Zeroes every count, software side and spill statistic; bindings stay and every dynamic
    /// counter becomes free, as after a hardware reset.
    pub fn reset(&mut self) {
        for s in &mut self.statics {
            s.counter = 0;
            s.software = 0;
        }
        self.slot_of_bucket.fill(NO_COUNTER);
        for h in &mut self.histograms {
            h.software.fill(0);
            h.spills = SpillStats::default();
        }
        self.pool.fill(PoolCounter::FREE);
        self.free = (0..self.pool.len() as u32).rev().collect();
        self.clock_hand = 0;
        self.spills = SpillStats::default();
    }

    /// Removes every binding and zeroes everything; handles given out before stay invalid.
    pub fn clear(&mut self) {
        let next_id = self.next_id;
        *self = Self::new(self.config).expect("the config was validated when the array was built");
        self.next_id = next_id;
        self.refresh_interest();
    }

    fn refresh_interest(&mut self) {
        self.interest = self
            .statics
            .iter()
            .map(|s| s.event.outcome_bits())
            .chain(self.histograms.iter().map(|h| h.event.outcome_bits()))
            .fold(0, |a, b| a | b);
        self.solo = Solo::of(&self.statics, &self.histograms);
    }

    /// The outcome bits (see [`AccessOutcome::event_bits`]) any binding counts.
    pub(crate) fn interest(&self) -> u32 {
        self.interest
    }

    /// Counts one access: every static binding and every histogram whose range holds `addr` and
    /// whose event matches `outcome` is incremented. `outcome` is a data-path outcome.
    #[inline(always)]
    pub fn observe(&mut self, addr: u64, outcome: &AccessOutcome) {
        if outcome.event_bits() & self.interest != 0 {
            self.observe_matching(addr, outcome.event_bits());
        }
    }

    /// The outcome bits of the lone histogram the inlined miss path counts
    /// ([`Self::observe_solo`]), 0 when the array is not one histogram alone (or its buckets
    /// need a division). Bindings change only while the event set is stopped, so the event set
    /// reads this once when it starts.
    pub(crate) fn solo_bits(&self) -> u32 {
        self.solo.bits
    }

    /// [`Self::observe_matching`] for an access whose outcome bits meet [`Self::solo_bits`],
    /// inlined: one histogram and no static binding, the access counted by a counter that
    /// holds its bucket and will not overflow. A tag miss or an overflow goes straight to its
    /// interrupt (a column walk tag-misses on a third of its misses).
    #[inline(always)]
    pub(crate) fn observe_solo(&mut self, addr: u64) {
        let solo = self.solo;
        let offset = addr.wrapping_sub(solo.start);
        if offset >= solo.len {
            return;
        }
        let bucket = solo.bucket(offset);
        // `solo.bits` is nonzero only while the array is one histogram alone, whose buckets
        // start at 0 and cover `solo.len`: the lookup succeeds.
        let Some(&slot) = self.slot_of_bucket.get(bucket) else {
            self.observe_matching(addr, solo.bits);
            return;
        };
        // As in `count_in_histogram`: a bucket without a counter holds NO_COUNTER, past the
        // end of the pool.
        match self.pool.get_mut(slot as usize) {
            Some(counter) if counter.value != self.counter_max => {
                counter.referenced = true;
                counter.value += 1;
            }
            Some(_) => self.overflow(slot),
            None => self.allocate(0, bucket),
        }
    }

    /// [`Self::observe`] past its one-AND prefilter; kept out of line, so the prefilter is all
    /// that an access no binding counts costs the caller's loop.
    #[inline(never)]
    pub(crate) fn observe_matching(&mut self, addr: u64, bits: u32) {
        if !self.statics.is_empty() {
            self.count_statics(bits, addr);
        }
        // One histogram is the common request, and straight-line code without a loop needs no
        // saved registers on its way through.
        if self.histograms.len() == 1 {
            self.count_in_histogram(0, bits, addr);
        } else {
            self.count_in_histograms(bits, addr);
        }
    }

    #[inline(never)]
    fn count_in_histograms(&mut self, bits: u32, addr: u64) {
        for position in 0..self.histograms.len() {
            self.count_in_histogram(position, bits, addr);
        }
    }

    /// Counts the access in histogram `position` if its event and range take it.
    #[inline(always)]
    fn count_in_histogram(&mut self, position: usize, bits: u32, addr: u64) {
        let h = &self.histograms[position];
        // The event test first: one AND, and most accesses a miss event sees are hits.
        if bits & h.outcome_bits == 0 || !h.range.contains(addr) {
            return;
        }
        let bucket = h.bucket_of(addr);
        let slot = self.slot_of_bucket[h.first_slot + bucket];
        // A bucket without a counter holds NO_COUNTER, past the end of the pool: the tag test
        // and the bounds test are one comparison.
        match self.pool.get_mut(slot as usize) {
            Some(counter) if counter.value != self.counter_max => {
                counter.referenced = true;
                counter.value += 1;
            }
            Some(_) => self.overflow(slot),
            None => self.allocate(position, bucket),
        }
    }

    #[inline(never)]
    fn count_statics(&mut self, bits: u32, addr: u64) {
        let counter_max = self.counter_max;
        for s in &mut self.statics {
            if bits & s.event.outcome_bits() == 0 || !s.range.contains(addr) {
                continue;
            }
            if s.counter == counter_max {
                s.software = s.software.saturating_add(counter_max).saturating_add(1);
                s.counter = 0;
                self.spills.overflows += 1;
            } else {
                s.counter += 1;
            }
        }
    }

    /// A tag miss: tags a free counter, or a victim's, with (histogram, bucket) and counts the access in it.
    #[cold]
    #[inline(never)]
    fn allocate(&mut self, position: usize, bucket: usize) {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let victim = self.clock_victim();
                let counter = self.pool[victim];
                self.spill_to_software(counter);
                self.spills.evictions += 1;
                self.histograms[counter.owner as usize].spills.evictions += 1;
                victim as u32
            }
        };
        self.pool[slot as usize] = PoolCounter {
            value: 1,
            owner: position as u32,
            bucket: bucket as u32,
            referenced: false,
        };
        self.slot_of_bucket[self.histograms[position].first_slot + bucket] = slot;
    }

    /// Second chance: skips (and clears) counters incremented since the hand last passed them.
    fn clock_victim(&mut self) -> usize {
        loop {
            let hand = self.clock_hand;
            // A wrap, not a modulo: a division costs tens of cycles on every allocation.
            let next = hand + 1;
            self.clock_hand = if next == self.pool.len() { 0 } else { next };
            let counter = &mut self.pool[hand];
            if counter.referenced {
                counter.referenced = false;
            } else {
                return hand;
            }
        }
    }

    /// Adds a tagged counter's value to its bucket's software side and unlinks the tag.
    fn spill_to_software(&mut self, counter: PoolCounter) {
        let h = &mut self.histograms[counter.owner as usize];
        let bucket = counter.bucket as usize;
        h.software[bucket] = h.software[bucket].saturating_add(counter.value);
        self.slot_of_bucket[h.first_slot + bucket] = NO_COUNTER;
    }

    /// The overflow interrupt of a dynamic counter: software takes 2^bits, the counter restarts at 0.
    /// (Software saturates at `u64::MAX`, which only 64-bit counters could reach.)
    #[cold]
    #[inline(never)]
    fn overflow(&mut self, slot: u32) {
        let counter = &mut self.pool[slot as usize];
        counter.referenced = true;
        counter.value = 0;
        let h = &mut self.histograms[counter.owner as usize];
        let bucket = counter.bucket as usize;
        h.software[bucket] = h.software[bucket]
            .saturating_add(self.counter_max)
            .saturating_add(1);
        h.spills.overflows += 1;
        self.spills.overflows += 1;
    }

    fn static_position(&self, id: StaticId) -> Result<usize, MonitorError> {
        self.statics
            .iter()
            .position(|s| s.id == id)
            .ok_or(MonitorError::UnknownStatic(id))
    }

    fn histogram_position(&self, id: HistogramId) -> Result<usize, MonitorError> {
        self.histograms
            .iter()
            .position(|h| h.id == id)
            .ok_or(MonitorError::UnknownHistogram(id))
    }

    /// The count of a static binding: the counter plus what its overflows sent to software.
    pub fn read_static(&self, id: StaticId) -> Result<u64, MonitorError> {
        let s = &self.statics[self.static_position(id)?];
        Ok(s.software.saturating_add(s.counter))
    }

    /// A histogram's buckets, each the software side plus the counter holding the bucket's tag, if any.
    pub fn read_histogram(&self, id: HistogramId) -> Result<Histogram, MonitorError> {
        let h = &self.histograms[self.histogram_position(id)?];
        let buckets = h
            .software
            .iter()
            .zip(&self.slot_of_bucket[h.first_slot..h.first_slot + h.software.len()])
            .map(|(&software, &slot)| {
                let in_counter = if slot == NO_COUNTER {
                    0
                } else {
                    self.pool[slot as usize].value
                };
                software.saturating_add(in_counter)
            })
            .collect();
        Ok(Histogram {
            event: h.event,
            range: h.range,
            bucket_bytes: h.bucket_bytes,
            buckets,
            fields: h.fields.clone(),
            spills: h.spills,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{AccessKind, LevelResult, MAX_LEVELS};

    const BASE: u64 = 0x1000;

    fn l1(kind: AccessKind, result: LevelResult) -> AccessOutcome {
        let mut levels = [LevelResult::NotReached; MAX_LEVELS];
        levels[0] = result;
        AccessOutcome { kind, levels }
    }

    fn read_hit() -> AccessOutcome {
        l1(AccessKind::Read, LevelResult::Hit)
    }

    fn array(counters: usize, counter_bits: u32) -> CounterArray {
        CounterArray::new(CounterArrayConfig {
            counters,
            counter_bits,
        })
        .unwrap()
    }

    #[test]
    fn round_robin_over_more_buckets_than_counters_spills_on_every_tag_miss() {
        let mut a = array(2, 32);
        let range = AddressRange::new(BASE, 96);
        let h = a.bind_histogram(range, Event::L1_DCR, 32).unwrap();
        let rounds = 10;
        for _ in 0..rounds {
            for bucket in 0..3 {
                a.observe(BASE + bucket * 32 + 4, &read_hit());
            }
        }
        let hist = a.read_histogram(h).unwrap();
        assert_eq!(hist.buckets, vec![10, 10, 10]);
        // The first two accesses find free counters; every later one misses its tag and evicts.
        let expected = SpillStats {
            evictions: 3 * rounds - 2,
            overflows: 0,
        };
        assert_eq!(hist.spills, expected);
        assert_eq!(a.spills(), expected);
    }

    #[test]
    fn a_hot_bucket_keeps_its_counter_through_a_stream_of_one_touch_buckets() {
        let mut a = array(2, 32);
        let h = a
            .bind_histogram(AddressRange::new(BASE, 64 * 100), Event::L1_DCR, 64)
            .unwrap();
        let streamed = 50;
        for bucket in 1..=streamed {
            a.observe(BASE, &read_hit());
            a.observe(BASE + bucket * 64, &read_hit());
        }
        let hist = a.read_histogram(h).unwrap();
        assert_eq!(hist.buckets[0], streamed);
        assert_eq!(hist.total(), 2 * streamed);
        // Only the streamed buckets are evicted; the first of them took the free counter.
        assert_eq!(hist.spills.evictions, streamed - 1);
    }

    #[test]
    fn enough_counters_means_no_spills() {
        let mut a = array(4, 32);
        let h = a
            .bind_histogram(AddressRange::new(BASE, 128), Event::L1_DCR, 32)
            .unwrap();
        for i in 0..1000 {
            a.observe(BASE + (i * 7) % 128, &read_hit());
        }
        let hist = a.read_histogram(h).unwrap();
        assert_eq!(hist.total(), 1000);
        assert_eq!(a.spills(), SpillStats::default());
    }

    #[test]
    fn an_8_bit_counter_overflows_on_the_256th_increment() {
        let mut a = array(2, 8);
        let range = AddressRange::new(BASE, 64);
        let s = a.bind_static(range, Event::L1_DCR).unwrap();
        let h = a.bind_histogram(range, Event::L1_DCR, 64).unwrap();
        for _ in 0..255 {
            a.observe(BASE, &read_hit());
        }
        assert_eq!(a.spills().overflows, 0);
        a.observe(BASE, &read_hit());
        // One overflow each for the static counter and the bucket's counter.
        assert_eq!(a.spills().overflows, 2);
        assert_eq!(a.read_static(s).unwrap(), 256);
        let hist = a.read_histogram(h).unwrap();
        assert_eq!(hist.buckets, vec![256]);
        assert_eq!(hist.spills.overflows, 1);
        for _ in 0..257 {
            a.observe(BASE, &read_hit());
        }
        assert_eq!(a.read_static(s).unwrap(), 513);
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![513]);
        assert_eq!(a.spills().overflows, 4);
    }

    #[test]
    fn a_64_bit_counter_is_accepted_and_counts() {
        let mut a = array(1, 64);
        let s = a
            .bind_static(AddressRange::new(BASE, 8), Event::L1_DCR)
            .unwrap();
        a.observe(BASE, &read_hit());
        assert_eq!(a.read_static(s).unwrap(), 1);
    }

    #[test]
    fn static_bindings_take_counters_from_the_dynamic_pool() {
        let mut a = array(3, 32);
        let range = AddressRange::new(BASE, 64);
        let s1 = a.bind_static(range, Event::L1_LDM).unwrap();
        assert_eq!(a.dynamic_counters(), 2);
        let h = a.bind_histogram(range, Event::L1_DCR, 32).unwrap();
        // Both buckets get a counter.
        a.observe(BASE, &read_hit());
        a.observe(BASE + 32, &read_hit());
        a.observe(BASE + 32, &l1(AccessKind::Read, LevelResult::Miss));
        assert_eq!(a.spills(), SpillStats::default());
        // Claiming a counter for a second static binding sends one bucket's value to software.
        let s2 = a.bind_static(range, Event::L1_DCR).unwrap();
        assert_eq!(a.dynamic_counters(), 1);
        assert_eq!(a.spills().evictions, 1);
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![1, 2]);
        let refused = a.bind_static(range, Event::L1_DCW).unwrap_err();
        assert!(
            refused.to_string().contains("of the 3 counters"),
            "{refused}"
        );
        // One dynamic counter left, holding bucket 0: after the first access every access evicts.
        for _ in 0..5 {
            a.observe(BASE, &read_hit());
            a.observe(BASE + 32, &read_hit());
        }
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![6, 7]);
        assert_eq!(a.spills().evictions, 1 + 9);
        assert_eq!(a.read_static(s1).unwrap(), 1);
        assert_eq!(a.read_static(s2).unwrap(), 10);
        // Giving a static counter back lets the histogram hold both buckets again.
        a.unbind_static(s1).unwrap();
        assert_eq!(a.dynamic_counters(), 2);
        let before = a.spills().evictions;
        for _ in 0..5 {
            a.observe(BASE, &read_hit());
            a.observe(BASE + 32, &read_hit());
        }
        assert_eq!(a.spills().evictions, before);
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![11, 12]);
    }

    #[test]
    fn histograms_need_a_dynamic_counter() {
        let mut a = array(1, 32);
        let range = AddressRange::new(BASE, 64);
        a.bind_static(range, Event::L1_DCR).unwrap();
        let e = a.bind_histogram(range, Event::L1_LDM, 32).unwrap_err();
        assert!(matches!(
            e,
            MonitorError::NoDynamicCounters { counters: 1, .. }
        ));
        assert!(e.to_string().contains("all 1 counter(s)"), "{e}");
        let e = a.bind_static(range, Event::L1_LDM).unwrap_err();
        assert!(e.to_string().contains("all 1 counters"), "{e}");
    }

    #[test]
    fn only_matching_accesses_inside_the_range_count() {
        let mut a = array(4, 32);
        let range = AddressRange::new(BASE, 100);
        let misses = a.bind_static(range, Event::L1_LDM).unwrap();
        // 48-byte buckets: a division, and a last bucket cut short at the range's end.
        let h = a.bind_histogram(range, Event::L1_LDM, 48).unwrap();
        let read_miss = l1(AccessKind::Read, LevelResult::Miss);
        for addr in [
            BASE - 1,
            BASE,
            BASE + 47,
            BASE + 48,
            BASE + 96,
            BASE + 99,
            BASE + 100,
        ] {
            a.observe(addr, &read_miss);
        }
        a.observe(BASE, &read_hit());
        a.observe(BASE, &l1(AccessKind::Write, LevelResult::Miss));
        assert_eq!(a.read_static(misses).unwrap(), 5);
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![2, 1, 2]);
    }

    #[test]
    fn reset_zeroes_counts_and_keeps_bindings() {
        let mut a = array(1, 8);
        let range = AddressRange::new(BASE, 64);
        let h = a.bind_histogram(range, Event::L1_DCR, 32).unwrap();
        for i in 0..300 {
            a.observe(BASE + (i % 2) * 32, &read_hit());
        }
        assert!(a.spills().evictions > 0);
        a.reset();
        assert_eq!(a.spills(), SpillStats::default());
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![0, 0]);
        a.observe(BASE + 32, &read_hit());
        assert_eq!(a.read_histogram(h).unwrap().buckets, vec![0, 1]);
        assert_eq!(a.spills(), SpillStats::default());
    }

    #[test]
    fn unbinding_a_histogram_frees_its_counters_for_the_others() {
        let mut a = array(2, 32);
        let range = AddressRange::new(BASE, 128);
        let first = a.bind_histogram(range, Event::L1_DCR, 64).unwrap();
        let second = a.bind_histogram(range, Event::L1_DCR, 32).unwrap();
        let third = a.bind_histogram(range, Event::L1_DCR, 128).unwrap();
        for addr in [BASE, BASE + 64, BASE + 96] {
            a.observe(addr, &read_hit());
        }
        a.unbind_histogram(first).unwrap();
        assert_eq!(
            a.read_histogram(first).unwrap_err(),
            MonitorError::UnknownHistogram(first)
        );
        // The remaining histograms moved down in the array; their counters must follow.
        for addr in [BASE, BASE + 64, BASE + 96] {
            a.observe(addr, &read_hit());
        }
        assert_eq!(a.read_histogram(second).unwrap().buckets, vec![2, 0, 2, 2]);
        assert_eq!(a.read_histogram(third).unwrap().buckets, vec![6]);
    }

    #[test]
    fn a_histogram_left_alone_by_unbinding_counts_the_same_on_the_solo_path() {
        // Its buckets moved to the front of the array's slot map when the ones bound before
        // it went, which the solo path (buckets from slot 0) relies on.
        let build = || {
            let mut a = array(3, 8);
            let range = AddressRange::new(BASE, 4096);
            let first = a.bind_histogram(range, Event::L1_DCR, 256).unwrap();
            let kept = a.bind_histogram(range, Event::L1_DCR, 64).unwrap();
            let third = a.bind_histogram(range, Event::L1_DCR, 1024).unwrap();
            a.observe(BASE, &read_hit());
            a.unbind_histogram(first).unwrap();
            a.unbind_histogram(third).unwrap();
            (a, kept)
        };
        let ((mut general, kept), (mut solo, _)) = (build(), build());
        assert_eq!(solo.solo_bits(), Event::L1_DCR.outcome_bits());
        let mut x = 5u64;
        for _ in 0..5000 {
            crate::test_rng::xorshift(&mut x);
            let addr = BASE - 64 + x % 4300;
            general.observe(addr, &read_hit());
            solo.observe_solo(addr);
        }
        let (a, b) = (solo.read_histogram(kept), general.read_histogram(kept));
        assert_eq!(a, b);
        assert!(a.unwrap().spills.total() > 0);
    }

    #[test]
    fn stale_and_foreign_handles_are_refused() {
        let mut a = array(2, 32);
        let range = AddressRange::new(BASE, 64);
        let s = a.bind_static(range, Event::L1_DCR).unwrap();
        let h = a.bind_histogram(range, Event::L1_DCR, 32).unwrap();
        a.clear();
        assert_eq!(a.dynamic_counters(), 2);
        assert_eq!(a.read_static(s), Err(MonitorError::UnknownStatic(s)));
        assert_eq!(
            a.unbind_histogram(h),
            Err(MonitorError::UnknownHistogram(h))
        );
        // Handles are not reused after a clear, so the old ones stay invalid.
        let s2 = a.bind_static(range, Event::L1_DCR).unwrap();
        assert_ne!(s2, s);
        assert!(a.read_static(s).is_err());
        assert!(
            a.unbind_static(s)
                .unwrap_err()
                .to_string()
                .contains("was unbound or cleared")
        );
    }

    #[test]
    fn bad_configurations_and_histograms_are_explained() {
        let bad = |counters, counter_bits| {
            CounterArray::new(CounterArrayConfig {
                counters,
                counter_bits,
            })
            .unwrap_err()
        };
        assert_eq!(bad(0, 32), MonitorError::NoCounters);
        assert_eq!(bad(4, 7), MonitorError::CounterWidth { bits: 7 });
        assert!(matches!(
            CounterArrayConfig {
                counters: u32::MAX as usize,
                counter_bits: 32
            }
            .validate(),
            Err(MonitorError::TooManyCounters { .. })
        ));
        assert!(bad(4, 65).to_string().contains("from 8 to 64"));
        assert_eq!(CounterArrayConfig::default().counters, 64);
        assert_eq!(CounterArrayConfig::default().counter_bits, 32);

        let mut a = array(2, 32);
        let e = a
            .bind_histogram(AddressRange::new(BASE, 0), Event::L1_LDM, 32)
            .unwrap_err();
        assert!(matches!(e, MonitorError::EmptyRange { .. }), "{e}");
        let e = a
            .bind_histogram(AddressRange::new(BASE, 64), Event::L1_LDM, 0)
            .unwrap_err();
        assert!(e.to_string().contains("PAPI_L1_LDM"), "{e}");
        assert!(e.to_string().contains("multiple of the line size"), "{e}");
        let e = a
            .bind_histogram(AddressRange::new(0, 1 << 40), Event::L1_LDM, 32)
            .unwrap_err();
        assert!(e.to_string().contains("use wider buckets"), "{e}");
    }

    #[test]
    fn bucket_indices_equal_division_at_every_edge() {
        let widths = [1, 3, 24, 48, 1600, 4096, (1 << 20) + 64, 3 << 30];
        let lengths = [1, 2, 100, 40_000, 1 << 32, MAX_BUCKETS * (3 << 30)];
        let mut paths = std::collections::HashSet::new();
        for width in widths {
            for len in lengths {
                let index = BucketIndex::new(width, len);
                paths.insert(std::mem::discriminant(&index));
                let mut offsets = vec![0, len - 1, len / 2, len / 3];
                // Offsets on each side of bucket boundaries, where an inexact reciprocal would slip.
                for k in [1, 2, 7, len / width / 2, len / width] {
                    let edge = k.saturating_mul(width);
                    offsets.extend([edge.saturating_sub(1), edge, edge.saturating_add(1)]);
                }
                for offset in offsets.into_iter().filter(|&o| o < len) {
                    assert_eq!(
                        index.of(offset),
                        offset / width,
                        "{index:?}, width {width}, offset {offset}"
                    );
                }
            }
        }
        assert_eq!(paths.len(), 3, "every index path is exercised");
    }

    #[test]
    fn histograms_serialize_with_event_names() {
        let mut a = array(1, 32);
        let h = a
            .bind_histogram(AddressRange::new(BASE, 64), Event::L1_LDM, 32)
            .unwrap();
        a.observe(BASE + 40, &l1(AccessKind::Read, LevelResult::Miss));
        let json = serde_json::to_value(a.read_histogram(h).unwrap()).unwrap();
        assert_eq!(json["event"], "PAPI_L1_LDM");
        assert_eq!(json["buckets"], serde_json::json!([0, 1]));
        assert_eq!(json["spills"]["evictions"], 0);
    }

    use super::super::field_layout::particle_for_tests as particle;

    #[test]
    fn a_by_field_histogram_sums_each_member_over_every_element() {
        // Two counters for five buckets: evictions and overflows (8-bit counters) go through
        // software and the buckets stay exact.
        let mut a = array(3, 8);
        let range = AddressRange::new(BASE, 4 * 32);
        let total = a.bind_static(range, Event::L1_DCR).unwrap();
        let h = a
            .bind_field_histogram(range, Event::L1_DCR, particle())
            .unwrap();
        // x of every element 100 times; y of element 1; id of element 2; padding of element 3;
        // an 8-byte read from byte 6 straddles x and y and counts for x (its first byte).
        for _ in 0..100 {
            for element in 0..4 {
                a.observe(BASE + 32 * element, &read_hit());
            }
        }
        a.observe(BASE + 32 + 8, &read_hit());
        a.observe(BASE + 64 + 24, &read_hit());
        a.observe(BASE + 96 + 28, &read_hit());
        a.observe(BASE + 6, &read_hit());
        // Outside the range: nothing.
        a.observe(BASE + 128, &read_hit());
        let read = a.read_histogram(h).unwrap();
        assert_eq!(read.buckets, [401, 1, 0, 1, 1]);
        assert_eq!(read.total(), a.read_static(total).unwrap());
        assert_eq!(read.bucket_bytes, 32);
        assert_eq!(read.fields, Some(particle()));
        assert!(read.spills.overflows >= 1, "{:?}", read.spills);
    }

    #[test]
    fn a_by_field_histogram_takes_no_inlined_path_and_counts_alone() {
        let mut a = array(4, 32);
        let range = AddressRange::new(BASE, 10 * 32);
        let h = a
            .bind_field_histogram(range, Event::L1_DCR, particle())
            .unwrap();
        assert_eq!(
            a.solo_bits(),
            0,
            "the inlined path knows only contiguous buckets"
        );
        for element in 0..10 {
            a.observe(BASE + 32 * element + 16, &read_hit());
        }
        assert_eq!(a.read_histogram(h).unwrap().buckets, [0, 0, 10, 0, 0]);
    }

    #[test]
    fn a_bad_field_layout_is_refused_naming_the_range() {
        let mut a = array(4, 32);
        let mut bad = particle();
        bad.members[3].bytes = 16;
        let e = a
            .bind_field_histogram(AddressRange::new(BASE, 64), Event::L1_DCR, bad)
            .unwrap_err();
        assert!(e.to_string().contains("0x1000"), "{e}");
        assert!(e.to_string().contains("member 3"), "{e}");
        let e = a
            .bind_field_histogram(AddressRange::new(BASE, 0), Event::L1_DCR, particle())
            .unwrap_err();
        assert!(matches!(e, MonitorError::EmptyRange { .. }), "{e}");
    }
}
