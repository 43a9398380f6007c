//! One thread's accesses on its way to the machine of cores (`cores.rs`): a ring the thread
//! appends each access to with the time it happened, that whichever thread holds the machine
//! simulates from (in time order with every other thread's), and whose outcomes the thread
//! counts later, in its own monitoring.
//!
//! Why a log: taking the machine's lock at every access cost two atomic operations an access,
//! and, with two threads running, the lock's host line crossed the cores at nearly every
//! access. A thread now takes the lock only when its ring is full of accesses nobody has
//! simulated, or when its counts are about to be read; and the thread that takes it simulates
//! every thread's waiting accesses, merged by time. A thread that is blocked (at a barrier, in
//! a lock, asleep) is thus never a reason for an order other than the one its accesses had:
//! its last accesses are simulated by the next thread that takes the machine, before that
//! thread's later ones.
//!
//! Who writes what: the thread alone appends (each slot's words, then `appended`, with
//! release); only the holder of the machine's lock simulates (each outcome, then `simulated`,
//! with release); the thread alone counts, reading up to `simulated` (acquire). The thread
//! appends to a slot only once it has counted the access that held it before, so the three
//! positions never overtake one another: counted <= simulated <= appended <= counted + slots.
//! Every word is an atomic read or written relaxed (a plain move on x86), so no unsafe code is
//! needed for slots another thread reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use epcache_sim::cache::{AccessKind, Machine};

/// Accesses a ring holds: a thread takes the machine at most once per this many accesses
/// (fewer when another thread simulates its accesses first). A thread whose ring is full
/// waits for the holder to simulate it, so a short ring waits often: two threads of the
/// capture bench's OpenMP Jacobi ran twice as long with 64 slots and about 5% longer with 256;
/// 4096 and more gained nothing over this (40 KiB a thread).
pub(super) const LOG_SLOTS: usize = 1024;

/// One access and, once simulated, its outcome.
#[derive(Default)]
struct Slot {
    /// When it happened: comparable between threads (`cores::now`).
    time: AtomicU64,
    addr: AtomicU64,
    /// The size, and bit 32 set for a write.
    shape: AtomicU64,
    /// The code address (0: unknown).
    pc: AtomicU64,
    /// The outcome's event bits ([`Machine::access_bits`]), written when simulated.
    outcome: AtomicU64,
}

const WRITE_BIT: u64 = 1 << 32;

/// A thread's ring, shared between the thread ([`LogWriter`]) and the machine's holders.
///
/// The two positions sit in cache lines of their own, apart from the fields only read: the
/// thread stores `appended` at every access and a holder stores `simulated` run by run, and a
/// store to a line the other side reads takes that line from it (sharing one line, the thread's
/// next read of `slots` waited for the holder's store at nearly every access).
pub(super) struct AccessLog {
    /// The core of the machine the thread is.
    core: usize,
    /// A fixed length, so a position's slot is a mask with no bounds check.
    slots: Box<[Slot; LOG_SLOTS]>,
    /// Accesses appended so far.
    appended: LineOfItsOwn<AtomicU64>,
    /// Accesses simulated so far.
    simulated: LineOfItsOwn<AtomicU64>,
}

/// A value alone in its cache line (lines are at most 128 bytes on the hosts the runtime
/// supports; 64 on x86-64).
#[repr(align(128))]
struct LineOfItsOwn<T>(T);

impl<T> std::ops::Deref for LineOfItsOwn<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl AccessLog {
    /// The accesses waiting to be simulated, as positions `[from, to)`: read under the
    /// machine's lock, the only place `simulated` moves.
    pub(super) fn waiting(&self) -> (u64, u64) {
        (
            self.simulated.load(Ordering::Relaxed),
            self.appended.load(Ordering::Acquire),
        )
    }

    /// When the access at position `at` (waiting) happened.
    #[inline]
    pub(super) fn time_at(&self, at: u64) -> u64 {
        self.slot(at).time.load(Ordering::Relaxed)
    }

    /// Simulates the waiting access at position `at` on `machine` and keeps its outcome;
    /// under the machine's lock.
    #[inline]
    pub(super) fn simulate(&self, at: u64, machine: &mut Machine) {
        let slot = self.slot(at);
        let addr = slot.addr.load(Ordering::Relaxed);
        let shape = slot.shape.load(Ordering::Relaxed);
        let kind = if shape & WRITE_BIT != 0 {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        let bits = machine.access_bits(self.core, addr, shape as u32, kind);
        slot.outcome.store(u64::from(bits), Ordering::Relaxed);
    }

    /// Every access before position `to` is simulated, its outcome kept; under the machine's
    /// lock.
    pub(super) fn simulated_up_to(&self, to: u64) {
        self.simulated.store(to, Ordering::Release);
    }

    #[inline]
    fn slot(&self, at: u64) -> &Slot {
        &self.slots[at as usize % LOG_SLOTS]
    }
}

/// A simulated access, as its thread counts it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Simulated {
    pub(super) addr: u64,
    pub(super) pc: u64,
    /// The outcome's event bits, levels and coherence events
    /// ([`CoreOutcome::event_bits`](epcache_sim::cache::CoreOutcome::event_bits)).
    pub(super) bits: u32,
}

/// The thread's side of its ring: it appends and counts.
pub(super) struct LogWriter {
    log: Arc<AccessLog>,
    appended: u64,
    counted: u64,
}

impl LogWriter {
    /// A ring for a thread on core `core`, and the thread's side of it.
    pub(super) fn new(core: usize) -> (LogWriter, Arc<AccessLog>) {
        let log = Arc::new(AccessLog {
            core,
            slots: Box::new(std::array::from_fn(|_| Slot::default())),
            appended: LineOfItsOwn(AtomicU64::new(0)),
            simulated: LineOfItsOwn(AtomicU64::new(0)),
        });
        let writer = LogWriter {
            log: Arc::clone(&log),
            appended: 0,
            counted: 0,
        };
        (writer, log)
    }

    /// The ring this side writes.
    pub(super) fn log(&self) -> &Arc<AccessLog> {
        &self.log
    }

    /// Appends an access of at most one line (a wider one is simulated at once, never
    /// logged) that happened at `time`; `false`, appending nothing, when every slot holds an
    /// access not yet counted.
    #[inline]
    pub(super) fn append(
        &mut self,
        time: u64,
        addr: u64,
        size: u32,
        kind: AccessKind,
        pc: u64,
    ) -> bool {
        if self.appended - self.counted == LOG_SLOTS as u64 {
            return false;
        }
        let slot = self.log.slot(self.appended);
        slot.time.store(time, Ordering::Relaxed);
        slot.addr.store(addr, Ordering::Relaxed);
        let write = if kind == AccessKind::Write {
            WRITE_BIT
        } else {
            0
        };
        slot.shape.store(u64::from(size) | write, Ordering::Relaxed);
        slot.pc.store(pc, Ordering::Relaxed);
        self.appended += 1;
        self.log.appended.store(self.appended, Ordering::Release);
        true
    }

    /// Whether accesses appended are still waiting to be simulated.
    pub(super) fn waiting(&self) -> bool {
        self.log.simulated.load(Ordering::Acquire) != self.appended
    }

    /// Hands `count` every access simulated and not yet counted, in order.
    #[inline]
    pub(super) fn count_simulated(&mut self, mut count: impl FnMut(Simulated)) {
        let simulated = self.log.simulated.load(Ordering::Acquire);
        while self.counted != simulated {
            let slot = self.log.slot(self.counted);
            count(Simulated {
                addr: slot.addr.load(Ordering::Relaxed),
                pc: slot.pc.load(Ordering::Relaxed),
                bits: slot.outcome.load(Ordering::Relaxed) as u32,
            });
            self.counted += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use epcache_sim::cache::CoreOutcome;

    fn machine() -> Machine {
        Machine::new(&"D1=1K,2,64;LL=8K,8,64,shared".parse().unwrap(), 2).unwrap()
    }

    #[test]
    fn a_full_ring_refuses_until_its_accesses_are_simulated_and_counted() {
        let (mut writer, log) = LogWriter::new(1);
        let mut m = machine();
        for i in 0..LOG_SLOTS as u64 {
            assert!(writer.append(i, 0x1000 + 8 * i, 8, AccessKind::Read, 0x40_0000 + i));
        }
        assert!(!writer.append(0, 0, 8, AccessKind::Read, 0));
        assert!(writer.waiting());
        let (from, to) = log.waiting();
        assert_eq!((from, to), (0, LOG_SLOTS as u64));
        for at in from..to / 2 {
            log.simulate(at, &mut m);
        }
        log.simulated_up_to(to / 2);
        // Simulated is not counted: the ring is still full.
        assert!(!writer.append(0, 0, 8, AccessKind::Read, 0));
        let mut counted = Vec::new();
        writer.count_simulated(|s| counted.push(s));
        assert_eq!(counted.len(), LOG_SLOTS / 2);
        // In order, with their code addresses and outcomes: 8-byte reads walk 64-byte lines,
        // so one in eight misses (on core 1, whose counts the machine keeps).
        for (i, s) in counted.iter().enumerate() {
            assert_eq!(s.addr, 0x1000 + 8 * i as u64);
            assert_eq!(s.pc, 0x40_0000 + i as u64);
            assert_eq!(
                CoreOutcome::from_event_bits(s.bits).outcome.kind,
                AccessKind::Read
            );
        }
        let misses = counted
            .iter()
            .filter(|s| {
                CoreOutcome::from_event_bits(s.bits).outcome.levels[0]
                    == epcache_sim::cache::LevelResult::Miss
            })
            .count();
        assert_eq!(misses, LOG_SLOTS / 2 / 8);
        assert_eq!(m.core_stats(1, 0).read_misses, misses as u64);
        assert!(writer.append(7, 0x9000, 4, AccessKind::Write, 0));
    }
}
