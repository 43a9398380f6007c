//! Heap blocks by allocation site: a tracked block becomes a data structure named after the
//! source line of its allocation (`gauss.c:42`), and stops being one when freed.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::ranges::AddressRange;
use crate::shm::layout::DataStructureKind;

use super::{data, program, state};

#[derive(Debug, Default)]
struct Sites {
    /// Return address → site name (`None`: no line information, not tracked).
    names: HashMap<u64, Option<String>>,
    /// Live tracked blocks by start address.
    live: HashMap<u64, ()>,
}

static SITES: Mutex<Option<Sites>> = Mutex::new(None);

/// A block of `bytes` at `start` was allocated from the call returning to `return_pc`.
pub(super) fn allocated(start: u64, bytes: u64, return_pc: u64) {
    if return_pc == 0 || state::in_runtime() || !state::tracking_started() {
        return;
    }
    let previous = state::enter_runtime();
    let name = {
        let mut guard = SITES.lock().unwrap_or_else(|e| e.into_inner());
        let sites = guard.get_or_insert_with(Sites::default);
        let name = sites
            .names
            .entry(return_pc)
            .or_insert_with(|| {
                let site = program::program()?.call_site(return_pc)?;
                let file = site
                    .file
                    .rsplit('/')
                    .next()
                    .unwrap_or(&site.file)
                    .to_owned();
                Some(format!("{file}:{}", site.line))
            })
            .clone();
        if name.is_some() {
            sites.live.insert(start, ());
        }
        name
    };
    if let Some(name) = name {
        data::register(
            &name,
            AddressRange::new(start, bytes),
            DataStructureKind::AllocationSite,
        );
    }
    state::leave_runtime(previous);
}

/// The block at `start` is being freed.
pub(super) fn freed(start: u64) {
    if state::in_runtime() {
        return;
    }
    let previous = state::enter_runtime();
    let tracked = SITES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .is_some_and(|s| s.live.remove(&start).is_some());
    if tracked {
        data::unregister(start);
    }
    state::leave_runtime(previous);
}
