//! Conversion of the monitor's cache description and results into MRI messages (the only place it happens).

use epcache_monitor::cache::{HierarchySpec, LevelSpec, Replacement, WritePolicy};
use epcache_proto::v1;

/// The MRI description of a target's simulated hardware.
pub fn cache_model(spec: &HierarchySpec, counters: u32, counter_bits: u32) -> v1::CacheModel {
    let level = |l: &LevelSpec, instruction_only: bool| {
        let (replacement, random_seed) = match l.replacement {
            Replacement::Lru => (v1::Replacement::Lru, 0),
            Replacement::TreePlru => (v1::Replacement::TreePlru, 0),
            Replacement::Random { seed } => (v1::Replacement::Random, seed),
        };
        let write_policy = match l.write {
            WritePolicy::WriteBack => v1::WritePolicy::WriteBack,
            WritePolicy::WriteThrough => v1::WritePolicy::WriteThrough,
        };
        v1::CacheLevel {
            name: l.name.clone(),
            size_bytes: l.geometry.size,
            associativity: l.geometry.assoc,
            line_size: l.geometry.line_size,
            replacement: replacement as i32,
            random_seed,
            write_policy: write_policy as i32,
            inclusive: l.inclusive,
            instruction_only,
        }
    };
    v1::CacheModel {
        spec: spec.to_string(),
        levels: spec
            .instr
            .iter()
            .map(|l| level(l, true))
            .chain(spec.data.iter().map(|l| level(l, false)))
            .collect(),
        counters,
        counter_bits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_model_lists_every_level_with_its_policies() {
        let spec: HierarchySpec = "I1=32K,8,64;D1=32K,8,64,plru;L2=1M,16,64,random:5,wt,inclusive"
            .parse()
            .unwrap();
        let m = cache_model(&spec, 64, 32);
        assert_eq!(m.spec, spec.to_string());
        let names: Vec<_> = m.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["I1", "D1", "L2"]);
        assert!(m.levels[0].instruction_only && !m.levels[1].instruction_only);
        assert_eq!(m.levels[1].replacement(), v1::Replacement::TreePlru);
        assert_eq!(m.levels[2].replacement(), v1::Replacement::Random);
        assert_eq!(m.levels[2].random_seed, 5);
        assert_eq!(m.levels[2].write_policy(), v1::WritePolicy::WriteThrough);
        assert!(m.levels[2].inclusive);
        assert_eq!(m.levels[2].size_bytes, 1 << 20);
        assert_eq!((m.counters, m.counter_bits), (64, 32));
    }
}
