//! Monitor events named after PAPI presets (`PAPI_L1_LDM`, ...), matched against access outcomes with one AND.
//!
//! Besides read/write x hit/miss per level, a [`Machine`](crate::cache::Machine) of several
//! cores adds coherence events: `EPC_L<n>_COHM` (misses on a line another core's write
//! invalidated), split into `EPC_L<n>_FSM` (false sharing) and `EPC_L<n>_TSM` (true sharing),
//! and `PAPI_CA_INV` (writes that invalidated another core's copy), PAPI's name for
//! invalidation requests. They are outcome bits like the others (the upper half of each level's
//! byte), so static counts, histograms and requests take them unchanged; a single simulated
//! core never produces them, so they count zero there.

use std::fmt;
use std::str::FromStr;

use crate::cache::{
    AccessOutcome, COHERENCE_MISS, FALSE_SHARING_MISS, HierarchySpec, INVALIDATION, MAX_LEVELS,
    TRUE_SHARING_MISS,
};

/// Outcome bits, as [`AccessOutcome::bits_at`] produces them.
const READ_HIT: u8 = 1;
const READ_MISS: u8 = 2;
const WRITE_HIT: u8 = 4;
const WRITE_MISS: u8 = 8;

/// The kinds of event a level can count, with their PAPI (or, where PAPI has none, epcache) suffix.
const KINDS: &[(&str, &str, u8, &str)] = &[
    (
        "PAPI",
        "DCA",
        READ_HIT | READ_MISS | WRITE_HIT | WRITE_MISS,
        "data cache accesses",
    ),
    ("PAPI", "DCR", READ_HIT | READ_MISS, "data cache reads"),
    ("PAPI", "DCW", WRITE_HIT | WRITE_MISS, "data cache writes"),
    ("PAPI", "DCH", READ_HIT | WRITE_HIT, "data cache hits"),
    ("PAPI", "DCM", READ_MISS | WRITE_MISS, "data cache misses"),
    ("PAPI", "LDM", READ_MISS, "load (read) misses"),
    ("PAPI", "STM", WRITE_MISS, "store (write) misses"),
    ("EPC", "LDH", READ_HIT, "load (read) hits (no PAPI preset)"),
    (
        "EPC",
        "STH",
        WRITE_HIT,
        "store (write) hits (no PAPI preset)",
    ),
];

/// The coherence kinds a level can count (a machine of several cores only), as [`KINDS`].
const COHERENCE_KINDS: &[(&str, &str, u8, &str)] = &[
    (
        "EPC",
        "COHM",
        COHERENCE_MISS,
        "coherence misses: on a line another core's write invalidated",
    ),
    (
        "EPC",
        "FSM",
        FALSE_SHARING_MISS,
        "false-sharing misses: coherence misses on bytes no other core wrote",
    ),
    (
        "EPC",
        "TSM",
        TRUE_SHARING_MISS,
        "true-sharing misses: coherence misses on bytes another core wrote",
    ),
];

/// `PAPI_CA_INV`'s name and description: a machine-wide event, kept at level 1's byte.
const INVALIDATIONS: (&str, &str) = (
    "PAPI_CA_INV",
    "invalidation requests: writes that invalidated another core's copy of the line",
);

/// Every kind with its name parts, access kinds first.
fn every_kind() -> impl Iterator<Item = &'static (&'static str, &'static str, u8, &'static str)> {
    KINDS.iter().chain(COHERENCE_KINDS)
}

/// A countable event: a set of (read/write x hit/miss) outcomes at one data level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Event {
    /// Data level, 0 for L1.
    level: u8,
    mask: u8,
}

impl Event {
    /// L1 load misses (`PAPI_L1_LDM`).
    pub const L1_LDM: Event = Event {
        level: 0,
        mask: READ_MISS,
    };
    /// L1 store misses (`PAPI_L1_STM`).
    pub const L1_STM: Event = Event {
        level: 0,
        mask: WRITE_MISS,
    };
    /// L1 reads (`PAPI_L1_DCR`).
    pub const L1_DCR: Event = Event {
        level: 0,
        mask: READ_HIT | READ_MISS,
    };
    /// L1 writes (`PAPI_L1_DCW`).
    pub const L1_DCW: Event = Event {
        level: 0,
        mask: WRITE_HIT | WRITE_MISS,
    };
    /// L1 read hits (`EPC_L1_LDH`).
    pub const L1_LDH: Event = Event {
        level: 0,
        mask: READ_HIT,
    };
    /// L1 write hits (`EPC_L1_STH`).
    pub const L1_STH: Event = Event {
        level: 0,
        mask: WRITE_HIT,
    };
    /// L1 false-sharing misses (`EPC_L1_FSM`).
    pub const L1_FSM: Event = Event {
        level: 0,
        mask: FALSE_SHARING_MISS,
    };
    /// L1 true-sharing misses (`EPC_L1_TSM`).
    pub const L1_TSM: Event = Event {
        level: 0,
        mask: TRUE_SHARING_MISS,
    };
    /// Invalidation requests (`PAPI_CA_INV`).
    pub const CA_INV: Event = Event {
        level: 0,
        mask: INVALIDATION,
    };

    /// Whether this is a coherence event, which only a machine of several cores counts.
    pub fn is_coherence(&self) -> bool {
        self.mask & (COHERENCE_MISS | FALSE_SHARING_MISS | TRUE_SHARING_MISS | INVALIDATION) != 0
    }

    /// Why this coherence miss event can never count on a machine of `cores` cores of `spec`:
    /// its level is one copy shared by every core, which no core's write invalidates for
    /// another. `None` for any other event, or a level with several copies.
    pub fn never_counts_on(&self, spec: &HierarchySpec, cores: usize) -> Option<String> {
        if self.mask & (COHERENCE_MISS | FALSE_SHARING_MISS | TRUE_SHARING_MISS) == 0 {
            return None;
        }
        let level = spec.data.get(self.level())?;
        if level.sharing.group_size(cores) < cores {
            return None;
        }
        let with_copies: Vec<&str> = spec
            .data
            .iter()
            .filter(|l| l.sharing.group_size(cores) < cores)
            .map(|l| l.name.as_str())
            .collect();
        Some(format!(
            "{self} would count nothing: {} is one cache shared by all {cores} cores, so no core's write invalidates a line there for another; coherence misses happen at levels with a copy per core or per group ({})",
            level.name,
            with_copies.join(", ")
        ))
    }

    /// Data level the event counts at, 0 for L1.
    pub fn level(&self) -> usize {
        usize::from(self.level)
    }

    /// Whether `outcome` is an occurrence of this event.
    #[inline]
    pub fn matches(&self, outcome: &AccessOutcome) -> bool {
        outcome.event_bits() & self.outcome_bits() != 0
    }

    /// The event as a mask over [`AccessOutcome::event_bits`].
    #[inline]
    pub fn outcome_bits(&self) -> u32 {
        u32::from(self.mask) << (8 * self.level)
    }

    /// A compact numeric form for shared memory and wire formats: level in bits 8..16, outcome
    /// mask in bits 0..8. [`Event::from_code`] accepts exactly the codes this produces.
    pub fn code(&self) -> u32 {
        u32::from(self.level) << 8 | u32::from(self.mask)
    }

    /// The event with numeric form `code`, or `None` if no event has it.
    pub fn from_code(code: u32) -> Option<Event> {
        let level = (code >> 8) as usize;
        let mask = (code & 0xff) as u8;
        let known = every_kind().any(|k| k.2 == mask) || (mask == INVALIDATION && level == 0);
        (code >> 16 == 0 && level < MAX_LEVELS && known).then_some(Event {
            level: level as u8,
            mask,
        })
    }

    /// Every event name for a hierarchy of `levels` data levels, with a description: the
    /// access events of every level, then the coherence events.
    pub fn catalogue(levels: usize) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for kinds in [KINDS, COHERENCE_KINDS] {
            for level in 0..levels.min(MAX_LEVELS) {
                for &(prefix, suffix, _, what) in kinds {
                    out.push((
                        format!("{prefix}_L{}_{suffix}", level + 1),
                        format!("level {} {what}", level + 1),
                    ));
                }
            }
        }
        if levels > 0 {
            out.push((INVALIDATIONS.0.to_owned(), INVALIDATIONS.1.to_owned()));
        }
        out
    }

    /// The coherence events a standalone report of a machine of several cores lists:
    /// `PAPI_CA_INV`, then `EPC_L<n>_{COHM,FSM,TSM}` for every level.
    pub fn coherence(levels: usize) -> Vec<Event> {
        std::iter::once(Event::CA_INV)
            .chain((0..levels.min(MAX_LEVELS) as u8).flat_map(|level| {
                COHERENCE_KINDS
                    .iter()
                    .map(move |k| Event { level, mask: k.2 })
            }))
            .collect()
    }

    /// The events a standalone report lists for every level.
    pub fn all(levels: usize) -> Vec<Event> {
        (0..levels.min(MAX_LEVELS) as u8)
            .flat_map(|level| KINDS.iter().map(move |k| Event { level, mask: k.2 }))
            .collect()
    }
}

/// An event that a given hierarchy cannot count: unknown, or at a level it does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Not an event name at all.
    #[error(transparent)]
    Unknown(#[from] UnknownEvent),
    /// A level the hierarchy lacks.
    #[error(
        "event {event} counts at cache level {}, but the cache `{spec}` has {levels} data level(s); use an event of levels 1 to {levels}, or a cache with more levels",
        event.level() + 1
    )]
    NoSuchLevel {
        /// The event.
        event: Event,
        /// Data levels the hierarchy has.
        levels: usize,
        /// The hierarchy, as its spec text.
        spec: String,
    },
}

impl Event {
    /// The event `name`, checked against the data levels of `spec`: what a request must pass
    /// before it is placed, and what `epcache run` checks before the program starts.
    pub fn for_hierarchy(
        name: &str,
        spec: &crate::cache::HierarchySpec,
    ) -> Result<Event, EventError> {
        let event: Event = name.parse()?;
        if event.level() >= spec.data.len() {
            return Err(EventError::NoSuchLevel {
                event,
                levels: spec.data.len(),
                spec: spec.to_string(),
            });
        }
        Ok(event)
    }
}

/// An event name that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown event `{name}`{hint}; events are PAPI_L<n>_{{DCA,DCR,DCW,DCH,DCM,LDM,STM}}, EPC_L<n>_{{LDH,STH}} and, between cores, EPC_L<n>_{{COHM,FSM,TSM}} for levels 1 to {max}, and PAPI_CA_INV"
)]
pub struct UnknownEvent {
    pub name: String,
    hint: String,
    max: usize,
}

impl FromStr for Event {
    type Err = UnknownEvent;

    fn from_str(name: &str) -> Result<Self, UnknownEvent> {
        let upper = name.trim().to_ascii_uppercase();
        if upper == INVALIDATIONS.0 {
            return Ok(Event::CA_INV);
        }
        let parsed = (|| {
            let (prefix, rest) = upper.split_once("_L")?;
            let (level, suffix) = rest.split_once('_')?;
            let level: usize = level.parse().ok()?;
            if !(1..=MAX_LEVELS).contains(&level) {
                return None;
            }
            let kind = every_kind().find(|k| k.0 == prefix && k.1 == suffix)?;
            Some(Event {
                level: (level - 1) as u8,
                mask: kind.2,
            })
        })();
        parsed.ok_or_else(|| {
            // Someone writing PAPI_L1_LDH or EPC_L1_LDM has the right idea and the wrong prefix.
            let hint = every_kind()
                .find(|k| upper.ends_with(&format!("_{}", k.1)))
                .map(|k| format!(" (did you mean {}_L<n>_{}?)", k.0, k.1))
                .unwrap_or_default();
            UnknownEvent {
                name: name.to_owned(),
                hint,
                max: MAX_LEVELS,
            }
        })
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Event::CA_INV {
            return f.write_str(INVALIDATIONS.0);
        }
        let kind = every_kind()
            .find(|k| k.2 == self.mask)
            .expect("events are only built from KINDS");
        write!(f, "{}_L{}_{}", kind.0, self.level + 1, kind.1)
    }
}

impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{AccessKind, LevelResult};

    fn outcome(kind: AccessKind, l1: LevelResult, l2: LevelResult) -> AccessOutcome {
        let mut levels = [LevelResult::NotReached; MAX_LEVELS];
        levels[0] = l1;
        levels[1] = l2;
        AccessOutcome { kind, levels }
    }

    #[test]
    fn names_round_trip() {
        for (name, _) in Event::catalogue(3) {
            let e: Event = name.parse().unwrap();
            assert_eq!(e.to_string(), name);
        }
        // Nine access kinds and three coherence kinds per level, and PAPI_CA_INV.
        assert_eq!(Event::catalogue(3).len(), 27 + 9 + 1);
        for e in Event::all(MAX_LEVELS)
            .into_iter()
            .chain(Event::coherence(MAX_LEVELS))
        {
            assert_eq!(Event::from_code(e.code()), Some(e));
        }
        // The standalone report's list of every level's events is the access events alone.
        assert_eq!(Event::all(3).len(), 27);
        assert!(Event::all(MAX_LEVELS).iter().all(|e| !e.is_coherence()));
        // PAPI_CA_INV lives at level 1's byte only.
        assert_eq!(Event::from_code(1 << 8 | u32::from(INVALIDATION)), None);
        assert_eq!(Event::from_code(0), None);
        assert_eq!(Event::from_code(0x1_0002), None);
        assert_eq!(Event::from_code((MAX_LEVELS as u32) << 8 | 2), None);
    }

    #[test]
    fn events_match_the_right_outcomes() {
        use AccessKind::*;
        use LevelResult::*;
        let read_miss_both = outcome(Read, Miss, Miss);
        let write_hit = outcome(Write, Hit, NotReached);
        let ldm: Event = "PAPI_L1_LDM".parse().unwrap();
        let l2_ldm: Event = "PAPI_L2_LDM".parse().unwrap();
        let dch: Event = "PAPI_L1_DCH".parse().unwrap();
        let l2_dca: Event = "PAPI_L2_DCA".parse().unwrap();
        assert!(ldm.matches(&read_miss_both) && !ldm.matches(&write_hit));
        assert!(l2_ldm.matches(&read_miss_both));
        assert!(dch.matches(&write_hit) && !dch.matches(&read_miss_both));
        assert!(!l2_dca.matches(&write_hit), "L2 was not reached");
        assert_eq!(ldm, Event::L1_LDM);
    }

    #[test]
    fn coherence_events_match_the_coherence_bits_of_a_machine() {
        use crate::cache::{AccessKind, HierarchySpec, Machine};
        let spec: HierarchySpec = "D1=1K,2,64;L2=8K,4,64,shared".parse().unwrap();
        let mut m = Machine::new(&spec, 2).unwrap();
        let names = [
            "PAPI_CA_INV",
            "EPC_L1_COHM",
            "EPC_L1_FSM",
            "EPC_L1_TSM",
            "EPC_L2_COHM",
        ];
        let events: Vec<Event> = names
            .iter()
            .map(|n| Event::for_hierarchy(n, &spec).unwrap())
            .collect();
        assert_eq!(events[0], Event::CA_INV);
        assert_eq!(events[2], Event::L1_FSM);
        assert!(events.iter().all(Event::is_coherence));
        assert_eq!(events[0].to_string(), "PAPI_CA_INV");
        let mut counts = [0u64; 5];
        for round in 0..10 {
            for core in 0..2 {
                let bits = m
                    .access(core, 0x100 + 8 * core as u64, 8, AccessKind::Write)
                    .event_bits();
                for (count, e) in counts.iter_mut().zip(&events) {
                    *count += u64::from(bits & e.outcome_bits() != 0);
                }
                // Access events match exactly as on one core.
                let miss = bits & Event::L1_STM.outcome_bits() != 0;
                assert!(miss, "round {round}");
            }
        }
        // 20 writes: 19 invalidations, 18 false-sharing misses at L1, none at the shared L2.
        assert_eq!(counts, [19, 18, 18, 0, 0]);
        // That shared L2 is refused before a run, the private L1 and invalidations are not.
        let why = events[4].never_counts_on(&spec, 2).unwrap();
        assert!(why.contains("L2 is one cache shared by all 2 cores") && why.contains("(D1)"));
        assert!(
            events[..4]
                .iter()
                .all(|e| e.never_counts_on(&spec, 2).is_none())
        );
        // Shared by groups of two of four cores, L2 has two copies to invalidate.
        let grouped: HierarchySpec = "D1=1K,2,64;L2=8K,4,64,shared=2".parse().unwrap();
        assert_eq!(events[4].never_counts_on(&grouped, 4), None);
        assert!(events[4].never_counts_on(&grouped, 2).is_some());
        assert!(Event::for_hierarchy("EPC_L3_FSM", &spec).is_err());
        assert!("epc_l1_tsm".parse::<Event>().is_ok());
    }

    #[test]
    fn unknown_events_are_explained() {
        let e = "PAPI_L1_LDH".parse::<Event>().unwrap_err().to_string();
        assert!(e.contains("did you mean EPC_L<n>_LDH"), "{e}");
        let e = "PAPI_L9_LDM".parse::<Event>().unwrap_err().to_string();
        assert!(e.contains("levels 1 to 4"), "{e}");
    }

    #[test]
    fn an_event_is_checked_against_the_levels_of_a_hierarchy() {
        let spec = crate::cache::HierarchySpec::parse("D1=32K,8,64;L2=1M,16,64").unwrap();
        assert_eq!(
            Event::for_hierarchy("PAPI_L1_LDM", &spec),
            Ok(Event::L1_LDM)
        );
        assert!(Event::for_hierarchy("PAPI_L2_DCM", &spec).is_ok());
        let deep = Event::for_hierarchy("PAPI_L3_DCM", &spec).unwrap_err();
        assert!(
            matches!(deep, EventError::NoSuchLevel { levels: 2, .. }),
            "{deep}"
        );
        assert!(deep.to_string().contains("cache level 3"), "{deep}");
        let unknown = Event::for_hierarchy("PAPI_L1_XYZ", &spec).unwrap_err();
        assert!(matches!(unknown, EventError::Unknown(_)), "{unknown}");
    }
}
