//! The memory the threads' simulated caches take together. Each thread builds a hierarchy of
//! its own (its sets bounded per hierarchy when the spec is parsed; a thread that is a core of
//! the machine only levels of one line, the machine holding the sets), so a large cache times
//! many threads can still exhaust a shared node. Each hierarchy is held here for as long as it lives
//! ([`Held`]); when those alive pass half the memory the machine had available when the first
//! was built (`MemAvailable`), the runtime says so once, with the figures and what to change.
//! It warns rather than refuses: a thread refused its hierarchy would go uncounted, and the
//! machine may well have the room.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes of the hierarchies alive, and how many they are.
static BYTES: AtomicU64 = AtomicU64::new(0);
static HIERARCHIES: AtomicU64 = AtomicU64::new(0);
static SAID: AtomicBool = AtomicBool::new(false);

/// One thread's hierarchy, counted while it lives.
#[derive(Debug)]
pub(super) struct Held {
    bytes: u64,
}

impl Held {
    /// Counts a hierarchy of `bytes` (`HierarchySpec::state_bytes`) that `cache` describes,
    /// warning once when the hierarchies alive take more than half the memory available.
    pub(super) fn new(bytes: u64, cache: &str) -> Held {
        let total = BYTES
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        let count = HIERARCHIES.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(available) = *available_at_first()
            && over_budget(total, available)
            && !SAID.swap(true, Ordering::Relaxed)
        {
            eprintln!("{}", warning(cache, bytes, count, total, available));
        }
        Held { bytes }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
        HIERARCHIES.fetch_sub(1, Ordering::Relaxed);
    }
}

fn over_budget(total: u64, available: u64) -> bool {
    total > available / 2
}

fn warning(cache: &str, latest: u64, count: u64, total: u64, available: u64) -> String {
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    format!(
        "epcache: warning: the simulated caches take {:.2} GiB ({count} hierarchies of `{cache}`, \
         the latest {:.2} GiB), more than half the {:.2} GiB this machine had available; the \
         program may run out of memory. A smaller cache (EPCACHE_CACHE) or fewer threads \
         (OMP_NUM_THREADS) needs less",
        gib(total),
        gib(latest),
        gib(available)
    )
}

/// `MemAvailable` from `/proc/meminfo` when first asked; None when it cannot be read.
fn available_at_first() -> &'static Option<u64> {
    static AVAILABLE: OnceLock<Option<u64>> = OnceLock::new();
    AVAILABLE.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        mem_available(&text)
    })
}

/// The `MemAvailable:` line of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let meminfo =
            "MemTotal:       24576000 kB\nMemFree:  1000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(meminfo), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
    }

    #[test]
    fn the_warning_names_the_figures_and_what_to_change() {
        assert!(!over_budget(1 << 30, 2 << 30));
        assert!(over_budget((1 << 30) + 1, 2 << 30));
        let text = warning("D1=32K,8,64;LL=1G,16,64", 192 << 20, 64, 12 << 30, 20 << 30);
        for part in [
            "64 hierarchies",
            "12.00 GiB",
            "latest 0.19 GiB",
            "20.00 GiB",
            "EPCACHE_CACHE",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }
}
