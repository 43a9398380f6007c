//! A request's results across region instances, on every thread: each thread adds its
//! instances' counts into the same rows, under one lock, and publishes them all. (Each thread
//! writing only its own, the last thread to end an instance would overwrite the others': a
//! request on an OpenMP loop would count one thread's half of the array.) A summed or
//! per-instance request has one row for all threads; a per-thread request one row per thread, in
//! the order the threads first ended an instance (the result block sums the threads past its room
//! into a last row, `layout::write_result`).
//!
//! # One bucket geometry for every instance
//!
//! A request on an allocatable or an allocation site binds, at each instance of its region, to
//! the data as it is then, and the data may have grown or shrunk since the last instance (an
//! array reallocated every time step, a site's newer block). Bars summed by position over
//! buckets of different widths would add the first tenth of one size to the first tenth of
//! another, and labels drawn from the last size would then name elements the counts are not of.
//! So every instance of a summed or per-thread request cuts its data in buckets of one width,
//! counted from the data's first byte: a bucket counts the same elements in every instance.
//! The width is the first instance's (as the request asked: a count of buckets over that size,
//! or a width in lines); an instance too large for that width in the buckets allowed (the count
//! asked for, or a row of the result block) doubles it, and the rows summed so far merge their
//! buckets pairwise, which is exact because a doubled bucket is two old ones. The result says
//! the width and the smallest and largest sizes counted (`layout::BucketGeometry`), so a tool
//! labels the buckets by what they count and can say that the sizes differed. A per-instance
//! request reports its latest instance alone, in that instance's own buckets.

use std::collections::BTreeMap;
use std::sync::Mutex;

use epcache_shm::layout::{
    Aggregation, BucketGeometry, Mode, RequestResult, ResultRow, ResultText,
};
use epcache_shm::target::ActiveRequest;

/// Every request's results so far, by slot.
static SLOT_TOTALS: Mutex<BTreeMap<u32, SlotTotals>> = Mutex::new(BTreeMap::new());

/// One request's rows, for the generation of its slot they belong to.
#[derive(Debug, Default)]
struct SlotTotals {
    generation: u32,
    rows: Vec<ResultRow>,
    /// How the rows' buckets cut the data (all zero before a histogram instance bound).
    geometry: BucketGeometry,
}

impl SlotTotals {
    /// The totals of `request`'s generation: emptied when the tool replaced the request, `None`
    /// when `request` is older than what is summed here (an instance bound before the tool
    /// replaced the request, ending after another thread began summing the new one: it must not
    /// reset those sums, and its result is stale anyway).
    fn of<'a>(
        slots: &'a mut BTreeMap<u32, SlotTotals>,
        request: &ActiveRequest,
    ) -> Option<&'a mut SlotTotals> {
        let totals = slots.entry(request.slot).or_default();
        if (request.generation.wrapping_sub(totals.generation) as i32) < 0 {
            return None;
        }
        if totals.generation != request.generation {
            *totals = SlotTotals {
                generation: request.generation,
                ..SlotTotals::default()
            };
        }
        Some(totals)
    }

    /// Makes the rows' buckets `bucket_bytes` wide, merging those narrower.
    fn widen_rows(&mut self, bucket_bytes: u64) {
        let from = self.geometry.bucket_bytes;
        if from != 0 && from < bucket_bytes {
            for row in &mut self.rows {
                regroup(&mut row.buckets, from, bucket_bytes);
            }
        }
        self.geometry.bucket_bytes = self.geometry.bucket_bytes.max(bucket_bytes);
    }
}

/// The bucket width an instance of `request` over `range_bytes` cuts its data into. `own` is
/// the width the request gives for this instance alone (`monitoring::bucket_bytes`): a
/// per-instance request uses it; a summed or per-thread one keeps the width of its earlier
/// instances. Either doubles it until the data fits the buckets allowed: the count asked for,
/// and at most `room`, the buckets a row of the result block holds.
pub(crate) fn bucket_width(request: &ActiveRequest, own: u64, room: u64) -> u64 {
    let allowed = match request.spec.mode {
        Mode::Histogram {
            buckets,
            bucket_bytes: 0,
        } => u64::from(buckets.max(1)).min(room),
        _ => room,
    }
    .max(1);
    let len = request.range.len();
    let fit = |mut width: u64| {
        while len.div_ceil(width) > allowed && width <= u64::MAX / 2 {
            width *= 2;
        }
        width
    };
    if request.spec.aggregation == Aggregation::PerInstance {
        return fit(own.max(1));
    }
    // A poisoned lock only means another thread panicked mid-publish; the sums stand.
    let mut slots = SLOT_TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(totals) = SlotTotals::of(&mut slots, request) else {
        return fit(own.max(1));
    };
    let width = match totals.geometry.bucket_bytes {
        0 => fit(own.max(1)),
        earlier => fit(earlier),
    };
    totals.widen_rows(width);
    width
}

/// Adds one instance's counts of `request` (`instance`, with buckets `bucket_bytes` wide over
/// the data it bound, of `sizes` bytes at the least and the most while it counted) to its
/// totals and has `write` publish the result, under the totals' lock: a thread that wrote
/// after releasing it could overwrite a later thread's result, which holds its counts too,
/// with its own older one. Nothing when the request was replaced meanwhile.
pub(crate) fn add(
    request: &ActiveRequest,
    mut instance: ResultRow,
    bucket_bytes: u64,
    sizes: InstanceSizes,
    text: ResultText,
    write: impl FnOnce(&RequestResult),
) {
    let histogram = matches!(request.spec.mode, Mode::Histogram { .. });
    let mut slots = SLOT_TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(totals) = SlotTotals::of(&mut slots, request) else {
        return;
    };
    let per_instance = request.spec.aggregation == Aggregation::PerInstance;
    if histogram {
        if per_instance {
            totals.geometry = BucketGeometry {
                bucket_bytes,
                smallest: sizes.smallest,
                largest: sizes.largest,
            };
        } else {
            totals.widen_rows(bucket_bytes);
            let width = totals.geometry.bucket_bytes;
            if bucket_bytes < width {
                regroup(&mut instance.buckets, bucket_bytes, width);
            }
            // An instance whose data never existed says nothing of the sizes.
            let g = &mut totals.geometry;
            let so_far = InstanceSizes {
                smallest: g.smallest,
                largest: g.largest,
            };
            let now = so_far.with(sizes.smallest).with(sizes.largest);
            (g.smallest, g.largest) = (now.smallest, now.largest);
        }
    }
    match totals
        .rows
        .iter_mut()
        .find(|r| r.threads == instance.threads)
    {
        None => totals.rows.push(instance),
        // The latest instance's counts, after as many instances as there were.
        Some(row) if per_instance => {
            *row = ResultRow {
                instances: row.instances + 1,
                ..instance
            };
        }
        Some(row) => {
            row.instances += 1;
            row.total += instance.total;
            if row.buckets.len() < instance.buckets.len() {
                row.buckets.resize(instance.buckets.len(), 0);
            }
            for (a, b) in row.buckets.iter_mut().zip(&instance.buckets) {
                *a += b;
            }
        }
    }
    write(&RequestResult {
        generation: request.generation,
        rows: totals.rows.clone(),
        geometry: totals.geometry,
        text,
    });
}

/// The sizes one instance's data had while it counted (an array allocated, grown or freed
/// inside it): both 0 when it never existed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct InstanceSizes {
    pub(crate) smallest: u64,
    pub(crate) largest: u64,
}

impl InstanceSizes {
    /// The sizes with data of `bytes` seen too (no data: nothing).
    pub(crate) fn with(self, bytes: u64) -> InstanceSizes {
        match (bytes, self.largest) {
            (0, _) => self,
            (_, 0) => InstanceSizes {
                smallest: bytes,
                largest: bytes,
            },
            _ => InstanceSizes {
                smallest: self.smallest.min(bytes),
                largest: self.largest.max(bytes),
            },
        }
    }
}

/// Buckets `from` bytes wide, summed into buckets `to` bytes wide over the same bytes: each
/// into the one holding its first byte (exact when `to` is a multiple of `from`, as the widths
/// of one request always are).
pub(crate) fn regroup(buckets: &mut Vec<u64>, from: u64, to: u64) {
    let mut wide: Vec<u64> = Vec::with_capacity(buckets.len());
    for (i, &count) in buckets.iter().enumerate() {
        let at = (i as u128 * u128::from(from) / u128::from(to)) as usize;
        if wide.len() <= at {
            wide.resize(at + 1, 0);
        }
        wide[at] += count;
    }
    *buckets = wide;
}

#[cfg(test)]
mod tests {
    use epcache_shm::layout::{RegionIndex, RequestSpec, RequestTarget, RowThreads};
    use epcache_sim::monitor::Event;
    use epcache_sim::ranges::AddressRange;

    use super::*;

    /// A request in `slot` for a histogram of `buckets` buckets over `len` bytes (a slot per
    /// test: the totals are the process's).
    fn request(slot: u32, aggregation: Aggregation, len: u64, buckets: u32) -> ActiveRequest {
        ActiveRequest {
            slot,
            generation: 1,
            spec: RequestSpec {
                region: RegionIndex(0),
                target: RequestTarget::Range(AddressRange::new(0x10000, len)),
                event: "PAPI_L1_DCR".parse::<Event>().unwrap(),
                mode: Mode::Histogram {
                    buckets,
                    bucket_bytes: 0,
                },
                aggregation,
                analyses: 0,
            },
            range: AddressRange::new(0x10000, len),
        }
    }

    /// One instance reading every 8-byte element of `len` bytes once, cut as the runtime cuts
    /// it: `(own width, width used, result)`.
    fn instance(slot: u32, aggregation: Aggregation, len: u64) -> (u64, RequestResult) {
        let r = request(slot, aggregation, len, 10);
        let own = len.div_ceil(10).div_ceil(64) * 64;
        let width = bucket_width(&r, own, 1024);
        let buckets: Vec<u64> = (0..len.div_ceil(width))
            .map(|i| (len - i * width).min(width) / 8)
            .collect();
        let row = ResultRow {
            threads: RowThreads::All,
            instances: 1,
            total: len / 8,
            buckets,
        };
        let mut result = None;
        let sizes = InstanceSizes::default().with(len);
        add(&r, row, width, sizes, ResultText::None, |r| {
            result = Some(r.clone())
        });
        (width, result.unwrap())
    }

    #[test]
    fn instances_of_different_sizes_sum_the_same_elements_into_each_bucket() {
        // 1,000, then 3,000, then 2,000 doubles: element k is read once per instance that has
        // it. 832-byte buckets for the first; the second needs 3,328 (29 would not fit 10).
        assert_eq!(instance(40, Aggregation::Summed, 8000).0, 832);
        assert_eq!(instance(40, Aggregation::Summed, 24_000).0, 3328);
        let (width, result) = instance(40, Aggregation::Summed, 16_000);
        assert_eq!(width, 3328);
        let expected: Vec<u64> = (0..24_000u64.div_ceil(3328))
            .map(|i| {
                let elements = (i * 416 + 1)..=((i + 1) * 416).min(3000);
                elements
                    .map(|k| [1000, 3000, 2000].iter().filter(|&&n| n >= k).count() as u64)
                    .sum()
            })
            .collect();
        assert_eq!(result.rows[0].buckets, expected);
        assert_eq!(result.rows[0].total, 6000);
        assert_eq!(expected.iter().sum::<u64>(), 6000);
        assert_eq!(
            result.geometry,
            BucketGeometry {
                bucket_bytes: 3328,
                smallest: 8000,
                largest: 24_000
            }
        );
    }

    #[test]
    fn a_per_instance_result_keeps_its_own_buckets() {
        instance(41, Aggregation::PerInstance, 24_000);
        let (width, result) = instance(41, Aggregation::PerInstance, 8000);
        assert_eq!(width, 832);
        assert_eq!(result.rows[0].instances, 2);
        assert_eq!(result.rows[0].buckets.len(), 10);
        assert_eq!(result.geometry.largest, 8000);
        assert!(!result.geometry.sizes_differ());
    }

    #[test]
    fn a_width_in_lines_doubles_only_past_the_result_blocks_room() {
        let mut r = request(42, Aggregation::Summed, 64 * 1024, 1);
        r.spec.mode = Mode::Histogram {
            buckets: 1,
            bucket_bytes: 64,
        };
        assert_eq!(bucket_width(&r, 64, 1024), 64);
        r.range = AddressRange::new(0x10000, 64 * 4096);
        assert_eq!(bucket_width(&r, 64, 1024), 256);
    }

    #[test]
    fn regrouping_sums_neighbours_and_keeps_every_count() {
        let mut b = vec![1, 2, 3, 4, 5];
        regroup(&mut b, 64, 128);
        assert_eq!(b, vec![3, 7, 5]);
        regroup(&mut b, 128, 512);
        assert_eq!(b, vec![15]);
    }
}
