//! The online compressor of one stream: a run of accesses in arithmetic progression (an RSD),
//! then one repetition group per nesting level (PRSDs), each closed and handed on as soon as an
//! access does not fit it.

use super::{Descriptor, Dim, MAX_DEPTH};

/// What the compressor hands back: a descriptor to write, or an access to keep raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Closed {
    Desc(Descriptor),
    Raw { seq: u64, addr: u64 },
}

/// The open run: accesses whose sequence numbers and addresses both step by `stride`.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: (u64, u64),
    last: (u64, u64),
    stride: (u64, u64),
    count: u64,
}

/// Repetitions of one descriptor shape, each shifted by `shift` from the one before.
#[derive(Debug, Clone)]
struct Group {
    inner: Descriptor,
    count: u64,
    shift: (u64, u64),
    /// Base of the latest repetition.
    last: (u64, u64),
}

impl Group {
    fn new(inner: Descriptor) -> Self {
        let last = (inner.seq, inner.addr);
        Self {
            inner,
            count: 1,
            shift: (0, 0),
            last,
        }
    }

    /// Adds `d` as the next repetition if it has the same shape at the same shift.
    fn try_extend(&mut self, d: &Descriptor) -> bool {
        if self.inner.dims != d.dims || self.inner.dims.len() >= MAX_DEPTH {
            return false;
        }
        // `d` starts after every element of the latest repetition (a stream is in order), so
        // the shift is always larger than the inner span, as the format requires.
        let shift = (d.seq - self.last.0, d.addr.wrapping_sub(self.last.1));
        if self.count > 1 && shift != self.shift {
            return false;
        }
        self.shift = shift;
        self.count += 1;
        self.last = (d.seq, d.addr);
        true
    }

    /// The length of the runs (one-dimensional descriptors) this group repeats, 0 when it
    /// repeats something else: what [`Self::completed_by`] of a run needs first.
    fn run_length(&self) -> u64 {
        match self.inner.dims.as_slice() {
            [only] => only.count,
            _ => 0,
        }
    }

    /// Whether a descriptor of `inner` dimensions then `outer`, starting at `base`, is exactly
    /// this group's next repetition. The one below closes it at once when it is, so a run
    /// that could go on (the last row of a matrix continuing into the next) does not swallow
    /// the first accesses of the next repetition and break the shape.
    fn completed_by(&self, inner: &[Dim], outer: Dim, base: (u64, u64)) -> bool {
        let Some((last, rest)) = self.inner.dims.split_last() else {
            return false;
        };
        *last == outer
            && rest == inner
            && (self.count == 1
                || (
                    base.0.wrapping_sub(self.last.0),
                    base.1.wrapping_sub(self.last.1),
                ) == self.shift)
    }

    fn into_descriptor(self) -> Descriptor {
        let mut d = self.inner;
        if self.count > 1 {
            d.dims.push(Dim {
                count: self.count,
                seq_stride: self.shift.0,
                addr_stride: self.shift.1,
            });
        }
        d
    }
}

/// One stream's compressor: bounded state, whatever the length of the stream.
#[derive(Debug, Clone)]
pub(super) struct StreamCompressor {
    stream: u32,
    run: Option<Run>,
    /// `groups[l]` repeats descriptors of up to `l + 1` dimensions.
    groups: [Option<Group>; MAX_DEPTH - 1],
    /// The length of the runs `groups[0]` repeats (0 for none): the one length at which the
    /// open run is compared against it. Kept here, beside the run, because every access asks
    /// and the group's dimensions lie behind a pointer (a load every access waited for).
    completing_length: u64,
}

impl StreamCompressor {
    pub(super) fn new(stream: u32) -> Self {
        Self {
            stream,
            run: None,
            groups: Default::default(),
            completing_length: 0,
        }
    }

    /// Adds the stream's next access; whatever it closes goes to `out`.
    #[inline]
    pub(super) fn push(&mut self, seq: u64, addr: u64, out: &mut Vec<Closed>) {
        if let Some(run) = &mut self.run {
            let delta = (seq - run.last.0, addr.wrapping_sub(run.last.1));
            if run.count == 1 || delta == run.stride {
                run.stride = delta;
                run.count += 1;
                run.last = (seq, addr);
                // Only a run as long as the runs the group above repeats can complete it: one
                // compare per access, the whole test when the lengths agree.
                if run.count == self.completing_length
                    && let Some(up) = &self.groups[0]
                {
                    let done = Dim {
                        count: run.count,
                        seq_stride: run.stride.0,
                        addr_stride: run.stride.1,
                    };
                    let run = *run;
                    if up.completed_by(&[], done, run.first) {
                        self.run = None;
                        self.close_run(run, out);
                    }
                }
                return;
            }
            let run = *run;
            self.close_run(run, out);
        }
        self.run = Some(Run {
            first: (seq, addr),
            last: (seq, addr),
            stride: (0, 0),
            count: 1,
        });
    }

    /// Closes everything still open.
    pub(super) fn finish(&mut self, out: &mut Vec<Closed>) {
        if let Some(run) = self.run.take() {
            self.close_run(run, out);
        }
        for level in 0..self.groups.len() {
            if let Some(group) = self.groups[level].take() {
                self.offer(level + 1, group.into_descriptor(), out);
            }
        }
        self.completing_length = 0;
    }

    /// Closes `run`, then notes the length of the runs the first group now repeats.
    fn close_run(&mut self, run: Run, out: &mut Vec<Closed>) {
        self.offer_run(run, out);
        self.completing_length = self.groups[0].as_ref().map_or(0, Group::run_length);
    }

    fn offer_run(&mut self, run: Run, out: &mut Vec<Closed>) {
        if run.count == 1 {
            out.push(Closed::Raw {
                seq: run.first.0,
                addr: run.first.1,
            });
            return;
        }
        let d = Descriptor {
            stream: self.stream,
            seq: run.first.0,
            addr: run.first.1,
            dims: vec![Dim {
                count: run.count,
                seq_stride: run.stride.0,
                addr_stride: run.stride.1,
            }],
        };
        self.offer(0, d, out);
    }

    /// Offers a closed descriptor to the group of `level`, closing that group when `d` does not
    /// repeat it.
    fn offer(&mut self, level: usize, d: Descriptor, out: &mut Vec<Closed>) {
        let Some(slot) = self.groups.get_mut(level) else {
            emit(d, out);
            return;
        };
        match slot {
            None => *slot = Some(Group::new(d)),
            Some(group) => {
                if group.try_extend(&d) {
                    let done = Dim {
                        count: group.count,
                        seq_stride: group.shift.0,
                        addr_stride: group.shift.1,
                    };
                    let base = (group.inner.seq, group.inner.addr);
                    let complete = self.groups.get(level + 1).is_some_and(|up| {
                        up.as_ref().is_some_and(|up| {
                            let inner = &self.groups[level].as_ref().expect("just extended").inner;
                            up.completed_by(&inner.dims, done, base)
                        })
                    });
                    if complete {
                        let group = self.groups[level].take().expect("just extended");
                        self.offer(level + 1, group.into_descriptor(), out);
                    }
                    return;
                }
                let closed = std::mem::replace(group, Group::new(d));
                self.offer(level + 1, closed.into_descriptor(), out);
            }
        }
    }
}

/// Writes `d` out, or its elements raw when it is a lone pair (cheaper raw than described).
fn emit(d: Descriptor, out: &mut Vec<Closed>) {
    if let [dim] = d.dims[..]
        && dim.count == 2
    {
        out.push(Closed::Raw {
            seq: d.seq,
            addr: d.addr,
        });
        out.push(Closed::Raw {
            seq: d.seq + dim.seq_stride,
            addr: d.addr.wrapping_add(dim.addr_stride),
        });
        return;
    }
    out.push(Closed::Desc(d));
}
