//! The cache spec syntax (`D1=32768,2,32;LL=1M,8,64`), the named presets and the host's caches from sysfs.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::level::{CacheLevel, MAX_HIERARCHY_STATE_BYTES, too_large};
use super::{CacheError, Geometry, MAX_LEVELS, Replacement, WritePolicy};

/// Set (to `1`) by a launcher that printed the warnings of the spec it passes in
/// `EPCACHE_CACHE` (`epcache run`), so the runtime does not print them again.
pub const CACHE_WARNED_ENV: &str = "EPCACHE_CACHE_WARNED";

/// One level of a hierarchy, as described by a user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LevelSpec {
    /// `I1`, `D1`, `L2`, `LL`, ...: how reports name the level.
    pub name: String,
    pub geometry: Geometry,
    pub replacement: Replacement,
    pub write: WritePolicy,
    /// Whether this level holds everything the levels above it hold (it back-invalidates them).
    pub inclusive: bool,
    /// Which cores of a [`Machine`](super::Machine) share one copy of this level. A single
    /// thread's hierarchy is the same whatever this says.
    #[serde(skip_serializing_if = "Sharing::is_private")]
    pub sharing: Sharing,
}

/// Which cores share one copy of a level: `shared` in a spec shares it among all cores,
/// `shared=N` among groups of N consecutive cores; without either the level is private.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    /// One copy per core.
    #[default]
    Private,
    /// One copy per group of `cores` consecutive cores, or one for all cores when `None`.
    Shared { cores: Option<u32> },
}

impl Sharing {
    /// Whether each core has its own copy.
    pub fn is_private(&self) -> bool {
        *self == Sharing::Private
    }

    /// How many consecutive cores of a machine of `cores` cores share one copy (at least 1).
    pub fn group_size(&self, cores: usize) -> usize {
        match *self {
            Sharing::Private => 1,
            Sharing::Shared { cores: None } => cores.max(1),
            Sharing::Shared { cores: Some(n) } => (n as usize).clamp(1, cores.max(1)),
        }
    }
}

/// A whole hierarchy: an optional I1 and the data (or unified) levels, first to last.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HierarchySpec {
    pub instr: Option<LevelSpec>,
    pub data: Vec<LevelSpec>,
}

/// The preset names a spec may be, with what each one is.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "host",
        "this machine's caches, read from /sys/devices/system/cpu/cpu0/cache",
    ),
    (
        "cachegrind",
        "what valgrind --tool=cachegrind simulates here: host I1, D1 and last level as LL, LL sets rounded as Cachegrind does",
    ),
    (
        "r12000",
        "MIPS R12000 L1 data cache as in the METRIC paper: D1=32K,2,32",
    ),
    ("pentium-m", "Pentium M: D1=32K,8,64;L2=1M,8,64"),
];

const SYSFS_CACHE: &str = "/sys/devices/system/cpu/cpu0/cache";

impl HierarchySpec {
    /// Resolves a preset name or parses level syntax.
    pub fn parse(spec: &str) -> Result<Self, CacheError> {
        spec.parse()
    }

    /// Cachegrind's model of the given host caches: I1, D1 and the last level as LL, with
    /// Cachegrind's rounding of a non-power-of-two set count (it keeps the largest power of two
    /// sets and as many ways as fit in the size).
    pub fn cachegrind_model_of(host: &HierarchySpec) -> HierarchySpec {
        let first = host.data.first();
        let last = host.data.last().filter(|_| host.data.len() > 1);
        let level = |name: &str, g: Geometry| LevelSpec {
            name: name.to_owned(),
            geometry: g,
            replacement: Replacement::Lru,
            write: WritePolicy::WriteBack,
            inclusive: false,
            sharing: Sharing::Private,
        };
        // Cachegrind's defaults when it cannot read the host.
        let default_l1 = Geometry::new(65536, 2, 64).expect("valid default");
        let default_ll = Geometry::new(262_144, 8, 64).expect("valid default");
        let i1 = host.instr.as_ref().map_or(default_l1, |l| l.geometry);
        let d1 = first.map_or(default_l1, |l| l.geometry);
        let ll = last.map_or(default_ll, |l| cachegrind_round_sets(l.geometry));
        HierarchySpec {
            instr: Some(level("I1", i1)),
            data: vec![level("D1", d1), level("LL", ll)],
        }
    }

    /// The same levels (names, line sizes, policies, sharing) of one line each: the hierarchy a
    /// thread that is a core of a [`Machine`](super::Machine) keeps for its counts alone. The
    /// machine simulates its accesses; the thread's own hierarchy is asked only for its depth,
    /// its line sizes and the totals the machine's outcomes add to, so its sets would be
    /// memory that nothing reads (a shared last level of gigabytes, once per thread).
    pub fn counting_shell(&self) -> HierarchySpec {
        let shell = |l: &LevelSpec| LevelSpec {
            geometry: Geometry::new(u64::from(l.geometry.line_size), 1, l.geometry.line_size)
                .unwrap_or(l.geometry),
            ..l.clone()
        };
        HierarchySpec {
            instr: self.instr.as_ref().map(shell),
            data: self.data.iter().map(shell).collect(),
        }
    }

    /// Every level, the instruction cache first.
    pub fn levels(&self) -> impl Iterator<Item = &LevelSpec> {
        self.instr.iter().chain(&self.data)
    }

    /// The bytes one hierarchy of this spec allocates for its levels' sets (each thread
    /// simulates one).
    pub fn state_bytes(&self) -> u64 {
        // One core's machine has one copy of every level.
        self.machine_state_bytes(1)
    }

    /// The bytes a machine of `cores` cores of this spec allocates for its levels' sets: a
    /// copy of each level per group of cores sharing it.
    pub fn machine_state_bytes(&self, cores: usize) -> u64 {
        self.levels().fold(0u64, |sum, l| {
            let copies = (cores.max(1) / l.sharing.group_size(cores)).max(1) as u64;
            sum.saturating_add(
                CacheLevel::state_bytes(l.geometry, l.replacement).saturating_mul(copies),
            )
        })
    }

    /// What is legal but most likely a typo: a data level smaller than, or with shorter lines
    /// than, the level above it (`D1=32K,8,64;L2=16K,8,64`). The simulation runs as given; tools
    /// print these before the program starts, and the runtime at its start unless
    /// [`CACHE_WARNED_ENV`] says a launcher did.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for pair in self.data.windows(2) {
            let (upper, lower) = (&pair[0], &pair[1]);
            if lower.geometry.size < upper.geometry.size {
                out.push(format!(
                    "{} ({} bytes) is smaller than {} above it ({} bytes); did you mean a larger {}?",
                    lower.name, lower.geometry.size, upper.name, upper.geometry.size, lower.name
                ));
            }
            if lower.geometry.line_size < upper.geometry.line_size {
                out.push(format!(
                    "{} has {}-byte lines, shorter than {}'s {}-byte lines; lower levels usually have lines at least as long",
                    lower.name, lower.geometry.line_size, upper.name, upper.geometry.line_size
                ));
            }
        }
        out
    }
}

fn cachegrind_round_sets(g: Geometry) -> Geometry {
    let sets = g.sets();
    if sets.is_power_of_two() {
        return g;
    }
    let new_sets = 1u64 << (63 - sets.leading_zeros());
    let line = u64::from(g.line_size);
    let assoc = (g.size / (new_sets * line)) as u32;
    Geometry::new(u64::from(assoc) * new_sets * line, assoc, g.line_size).unwrap_or(g)
}

impl FromStr for HierarchySpec {
    type Err = CacheError;

    fn from_str(spec: &str) -> Result<Self, CacheError> {
        let spec = spec.trim();
        match spec {
            "host" => return host_spec_from_sysfs(Path::new(SYSFS_CACHE)),
            "cachegrind" => {
                let host = host_spec_from_sysfs(Path::new(SYSFS_CACHE)).unwrap_or(HierarchySpec {
                    instr: None,
                    data: Vec::new(),
                });
                return Ok(Self::cachegrind_model_of(&host));
            }
            "r12000" => return "D1=32K,2,32".parse(),
            "pentium-m" => return "D1=32K,8,64;L2=1M,8,64".parse(),
            _ => {}
        }
        let err = |why: String| CacheError::Spec {
            spec: spec.to_owned(),
            why,
        };
        if !spec.contains('=') {
            let names: Vec<_> = PRESETS.iter().map(|(n, _)| *n).collect();
            return Err(err(format!(
                "not a preset ({}) and not levels like `D1=32K,8,64;L2=1M,16,64`",
                names.join(", ")
            )));
        }
        let mut out = HierarchySpec {
            instr: None,
            data: Vec::new(),
        };
        for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let level = parse_level(part).map_err(|why| err(format!("in `{part}`: {why}")))?;
            if out.levels().any(|l| l.name == level.name) {
                return Err(err(format!("level {} is given twice", level.name)));
            }
            if level.name == "I1" {
                out.instr = Some(level);
            } else {
                out.data.push(level);
            }
        }
        if out.data.is_empty() {
            return Err(err(
                "no data level: give at least one, such as D1=32K,8,64".into()
            ));
        }
        if out.data.len() > MAX_LEVELS {
            return Err(err(format!(
                "{} data levels; a hierarchy has at most {MAX_LEVELS}",
                out.data.len()
            )));
        }
        check_sharing(&out.data).map_err(err)?;
        check_memory(&out).map_err(err)?;
        Ok(out)
    }
}

fn parse_level(part: &str) -> Result<LevelSpec, String> {
    let (name, rest) = part
        .split_once('=')
        .ok_or("expected NAME=SIZE,ASSOC,LINE")?;
    let name = name.trim().to_ascii_uppercase();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "`{name}` is not a level name (use I1, D1, L2, L3, LL, ...)"
        ));
    }
    let fields: Vec<&str> = rest.split(',').map(str::trim).collect();
    if fields.len() < 3 {
        return Err("expected SIZE,ASSOC,LINE after the name".into());
    }
    let size = parse_size(fields[0])?;
    let assoc: u32 = fields[1]
        .parse()
        .map_err(|_| format!("associativity `{}` is not a number", fields[1]))?;
    let line = parse_size(fields[2])?;
    let line = u32::try_from(line).map_err(|_| format!("line size {line} is too large"))?;
    let geometry = Geometry::new(size, assoc, line).map_err(|e| e.to_string())?;
    let mut level = LevelSpec {
        name,
        geometry,
        replacement: Replacement::Lru,
        write: WritePolicy::WriteBack,
        inclusive: false,
        sharing: Sharing::Private,
    };
    for opt in &fields[3..] {
        match opt.to_ascii_lowercase().as_str() {
            "lru" => level.replacement = Replacement::Lru,
            "plru" | "tree-plru" => level.replacement = Replacement::TreePlru,
            "random" => level.replacement = Replacement::Random { seed: 1 },
            "wb" | "write-back" => level.write = WritePolicy::WriteBack,
            "wt" | "write-through" => level.write = WritePolicy::WriteThrough,
            "inclusive" => level.inclusive = true,
            "shared" => level.sharing = Sharing::Shared { cores: None },
            "private" => level.sharing = Sharing::Private,
            other => {
                if let Some(cores) = other.strip_prefix("shared=") {
                    let cores: u32 = cores.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                        format!(
                            "`shared={cores}` needs a number of cores of at least 1, as in shared=2"
                        )
                    })?;
                    level.sharing = Sharing::Shared { cores: Some(cores) };
                } else if let Some(seed) = other.strip_prefix("random:") {
                    let seed = seed
                        .parse()
                        .map_err(|_| format!("random seed `{seed}` is not a number"))?;
                    level.replacement = Replacement::Random { seed };
                } else {
                    return Err(format!(
                        "unknown option `{other}` (options: lru, plru, random[:SEED], wb, wt, inclusive, shared[=CORES], private)"
                    ));
                }
            }
        }
    }
    if level.replacement == Replacement::TreePlru && (!assoc.is_power_of_two() || assoc > 64) {
        return Err("plru needs a power-of-two associativity of at most 64".into());
    }
    Ok(level)
}

/// Refuses a hierarchy whose levels together would take more than
/// [`MAX_HIERARCHY_STATE_BYTES`] of simulator state, naming the largest level.
fn check_memory(spec: &HierarchySpec) -> Result<(), String> {
    let bytes = |l: &LevelSpec| CacheLevel::state_bytes(l.geometry, l.replacement);
    let total = spec.state_bytes();
    if total <= MAX_HIERARCHY_STATE_BYTES {
        return Ok(());
    }
    let largest = spec
        .levels()
        .max_by_key(|l| bytes(l))
        .expect("a data level");
    Err(too_large(
        total,
        &format!("{} most, {} sets", largest.name, largest.geometry.sets()),
    ))
}

/// Sharing must widen going down, so the levels of a machine form a tree: a private level never
/// sits below a shared one, and each group size divides the next one's.
fn check_sharing(data: &[LevelSpec]) -> Result<(), String> {
    for pair in data.windows(2) {
        let (upper, lower) = (&pair[0], &pair[1]);
        let fits = match (upper.sharing, lower.sharing) {
            (Sharing::Private, _) => true,
            (Sharing::Shared { .. }, Sharing::Private) => false,
            (Sharing::Shared { cores: None }, Sharing::Shared { cores }) => cores.is_none(),
            (Sharing::Shared { cores: Some(_) }, Sharing::Shared { cores: None }) => true,
            (Sharing::Shared { cores: Some(a) }, Sharing::Shared { cores: Some(b) }) => b % a == 0,
        };
        if !fits {
            return Err(format!(
                "{} is shared by fewer cores than {} above it; sharing must widen going down (private, then shared=N, then shared by all), each group size dividing the next",
                lower.name, upper.name
            ));
        }
    }
    Ok(())
}

/// How many CPUs a sysfs CPU list (`0`, `0-3`, `0,64`, `0-1,8-9`) names.
fn count_cpu_list(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                1
            }
        };
    }
    Some(n)
}

/// Parses `32768`, `32K`, `1M`, `2G` (binary multiples).
/// A size in bytes as cache specs write it: a number with an optional K, M or G suffix
/// (powers of 1024), as in `32K`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (digits, mult) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("size `{s}` is not a number (K, M and G suffixes are allowed)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size `{s}` is too large"))
}

impl fmt::Display for HierarchySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for l in self.levels() {
            if !first {
                f.write_str(";")?;
            }
            first = false;
            let g = l.geometry;
            write!(f, "{}={},{},{}", l.name, g.size, g.assoc, g.line_size)?;
            match l.replacement {
                Replacement::Lru => {}
                Replacement::TreePlru => f.write_str(",plru")?,
                Replacement::Random { seed } => write!(f, ",random:{seed}")?,
            }
            if l.write == WritePolicy::WriteThrough {
                f.write_str(",wt")?;
            }
            if l.inclusive {
                f.write_str(",inclusive")?;
            }
            match l.sharing {
                Sharing::Private => {}
                Sharing::Shared { cores: None } => f.write_str(",shared")?,
                Sharing::Shared { cores: Some(n) } => write!(f, ",shared={n}")?,
            }
        }
        Ok(())
    }
}

/// Reads the caches of one CPU from a sysfs directory laid out like `/sys/devices/system/cpu/cpu0/cache`.
///
/// Level-1 instruction cache becomes `I1`, level-1 data `D1`, and unified levels `L2`, `L3`, ...
pub fn host_spec_from_sysfs(dir: &Path) -> Result<HierarchySpec, CacheError> {
    let host_err = |path: &Path, why: String| CacheError::Host {
        path: path.display().to_string(),
        why,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| {
        host_err(
            dir,
            format!("{e}; give the caches explicitly, e.g. --cache 'D1=32K,8,64;L2=1M,16,64'"),
        )
    })?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let read = |file: &str| -> Result<String, CacheError> {
            let p = path.join(file);
            std::fs::read_to_string(&p)
                .map(|s| s.trim().to_owned())
                .map_err(|e| host_err(&p, e.to_string()))
        };
        let level: u32 = read("level")?
            .parse()
            .map_err(|_| host_err(&path, "level is not a number".into()))?;
        let kind = read("type")?;
        let size = parse_size(&read("size")?).map_err(|e| host_err(&path, e))?;
        let assoc: u32 = read("ways_of_associativity")?
            .parse()
            .map_err(|_| host_err(&path, "ways_of_associativity is not a number".into()))?;
        let line: u32 = read("coherency_line_size")?
            .parse()
            .map_err(|_| host_err(&path, "coherency_line_size is not a number".into()))?;
        let geometry =
            Geometry::new(size, assoc, line).map_err(|e| host_err(&path, e.to_string()))?;
        // A kernel without the file says nothing about sharing: the level is taken as private.
        let sharing = match read("shared_cpu_list") {
            Err(_) => Sharing::Private,
            Ok(list) => match count_cpu_list(&list) {
                Some(0 | 1) => Sharing::Private,
                Some(n) => Sharing::Shared { cores: Some(n) },
                None => {
                    return Err(host_err(
                        &path.join("shared_cpu_list"),
                        format!("`{list}` is not a CPU list"),
                    ));
                }
            },
        };
        found.push((level, kind, geometry, sharing));
    }
    found.sort_by_key(|(level, kind, _, _)| (*level, kind != "Instruction"));
    let mut spec = HierarchySpec {
        instr: None,
        data: Vec::new(),
    };
    for (level, kind, geometry, sharing) in found {
        let name = match (level, kind.as_str()) {
            (1, "Instruction") => "I1".to_owned(),
            (1, _) => "D1".to_owned(),
            (_, "Instruction") => continue,
            (n, _) => format!("L{n}"),
        };
        let l = LevelSpec {
            name,
            geometry,
            replacement: Replacement::Lru,
            write: WritePolicy::WriteBack,
            inclusive: false,
            sharing,
        };
        if l.name == "I1" {
            spec.instr = Some(l);
        } else {
            spec.data.push(l);
        }
    }
    if spec.data.is_empty() {
        return Err(host_err(dir, "no data cache is described there".into()));
    }
    check_sharing(&spec.data).map_err(|why| host_err(dir, why))?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels_with_suffixes_and_options() {
        let s: HierarchySpec = "D1=32K,2,32;L2=1M,8,64,plru,inclusive;L3=8M,16,64,random:9,wt"
            .parse()
            .unwrap();
        assert_eq!(s.data.len(), 3);
        assert_eq!(s.data[0].geometry.size, 32768);
        assert_eq!(s.data[1].replacement, Replacement::TreePlru);
        assert!(s.data[1].inclusive);
        assert_eq!(s.data[2].replacement, Replacement::Random { seed: 9 });
        assert_eq!(s.data[2].write, WritePolicy::WriteThrough);
        // The canonical form parses back to the same thing.
        let again: HierarchySpec = s.to_string().parse().unwrap();
        assert_eq!(again, s);
    }

    /// A core's counting hierarchy has the spec's levels, lines and policies, and next to no
    /// sets: a 1 GiB shared last level costs each thread one line, not 1 GiB.
    #[test]
    fn a_counting_shell_keeps_the_levels_and_drops_their_sets() {
        let s: HierarchySpec =
            "I1=32K,8,64;D1=32K,2,32;L2=1M,8,64,plru,inclusive;L3=1G,16,128,shared"
                .parse()
                .unwrap();
        let shell = s.counting_shell();
        let shape = |h: &HierarchySpec| -> Vec<_> {
            h.levels()
                .map(|l| {
                    (
                        l.name.clone(),
                        l.geometry.line_size,
                        l.replacement,
                        l.inclusive,
                        l.sharing,
                    )
                })
                .collect()
        };
        assert_eq!(shape(&shell), shape(&s));
        assert!(
            shell
                .levels()
                .all(|l| l.geometry.sets() == 1 && l.geometry.assoc == 1)
        );
        assert!(s.state_bytes() > 1 << 26);
        assert!(shell.state_bytes() < 4096, "{}", shell.state_bytes());
        crate::simulator::Simulator::new(&shell, Default::default()).unwrap();
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let e = |s: &str| s.parse::<HierarchySpec>().unwrap_err().to_string();
        assert!(e("D1=32K,2").contains("SIZE,ASSOC,LINE"));
        assert!(e("D1=32K,x,32").contains("associativity `x`"));
        assert!(e("D1=32K,2,48").contains("power of two"));
        assert!(e("D1=32K,2,32,fifo").contains("unknown option `fifo`"));
        assert!(e("D1=32K,2,32;D1=64K,2,32").contains("twice"));
        assert!(e("I1=32K,2,32").contains("no data level"));
        assert!(e("skylake").contains("not a preset"));
        assert!(e("D1=48K,12,64,plru").contains("power-of-two"));
    }

    #[test]
    fn presets_have_the_documented_shapes() {
        let r: HierarchySpec = "r12000".parse().unwrap();
        assert_eq!(r.to_string(), "D1=32768,2,32");
        let p: HierarchySpec = "pentium-m".parse().unwrap();
        assert_eq!(p.to_string(), "D1=32768,8,64;L2=1048576,8,64");
    }

    fn fake_sysfs(dir: &Path, caches: &[(u32, &str, &str, u32, u32)]) {
        for (i, (level, kind, size, ways, line)) in caches.iter().enumerate() {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
            std::fs::write(d.join("ways_of_associativity"), format!("{ways}\n")).unwrap();
            std::fs::write(d.join("coherency_line_size"), format!("{line}\n")).unwrap();
        }
    }

    #[test]
    fn reads_host_caches_and_rounds_ll_like_cachegrind() {
        // The caches of the machines this was written on, as sysfs lists them.
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(
            dir.path(),
            &[
                (1, "Data", "48K", 12, 64),
                (1, "Instruction", "32K", 8, 64),
                (2, "Unified", "2048K", 16, 64),
                (3, "Unified", "107520K", 15, 64),
            ],
        );
        let host = host_spec_from_sysfs(dir.path()).unwrap();
        assert_eq!(
            host.to_string(),
            "I1=32768,8,64;D1=49152,12,64;L2=2097152,16,64;L3=110100480,15,64"
        );
        // Cachegrind 3.19 prints, on that host: "simulated LL cache: line_size 64 assoc 26
        // total_size 109,051,904".
        let cg = HierarchySpec::cachegrind_model_of(&host);
        assert_eq!(
            cg.to_string(),
            "I1=32768,8,64;D1=49152,12,64;LL=109051904,26,64"
        );
    }

    #[test]
    fn sharing_is_parsed_printed_and_must_widen_going_down() {
        let s =
            HierarchySpec::parse("D1=32K,8,64;L2=1M,16,64,shared=2;L3=32M,16,64,shared").unwrap();
        assert_eq!(s.data[0].sharing, Sharing::Private);
        assert_eq!(s.data[1].sharing, Sharing::Shared { cores: Some(2) });
        assert_eq!(s.data[2].sharing, Sharing::Shared { cores: None });
        assert_eq!(
            s.to_string(),
            "D1=32768,8,64;L2=1048576,16,64,shared=2;L3=33554432,16,64,shared"
        );
        assert_eq!(HierarchySpec::parse(&s.to_string()).unwrap(), s);
        assert_eq!(s.data[1].sharing.group_size(8), 2);
        assert_eq!(s.data[2].sharing.group_size(8), 8);
        assert_eq!(s.data[1].sharing.group_size(1), 1);
        // A spec without `shared` prints and serialises as before.
        let plain = HierarchySpec::parse("D1=32K,8,64;L2=1M,16,64").unwrap();
        assert_eq!(plain.to_string(), "D1=32768,8,64;L2=1048576,16,64");
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("sharing"), "{json}");
        let e = |s: &str| s.parse::<HierarchySpec>().unwrap_err().to_string();
        assert!(e("D1=32K,8,64,shared;L2=1M,16,64").contains("sharing must widen"));
        assert!(e("D1=32K,8,64,shared=2;L2=1M,16,64,shared=3").contains("dividing"));
        assert!(e("D1=32K,8,64;L2=1M,16,64,shared;L3=4M,16,64,shared=2").contains("L3"));
        assert!(e("D1=32K,8,64,shared=0").contains("at least 1"));
        assert!(e("D1=32K,8,64,shared=x").contains("shared=2"));
    }

    #[test]
    fn the_host_says_which_cpus_share_each_level() {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(
            dir.path(),
            &[
                (1, "Data", "48K", 12, 64),
                (2, "Unified", "2048K", 16, 64),
                (3, "Unified", "107520K", 15, 64),
            ],
        );
        // This machine's kernel: L1 with its SMT sibling, L2 alone, L3 with 0-1 and 8-9.
        std::fs::write(dir.path().join("index0/shared_cpu_list"), "0,64\n").unwrap();
        std::fs::write(dir.path().join("index1/shared_cpu_list"), "0\n").unwrap();
        std::fs::write(dir.path().join("index2/shared_cpu_list"), "0-1,8-9\n").unwrap();
        let host = host_spec_from_sysfs(dir.path()).unwrap_err();
        // L2 private below a shared L1 is not a tree: said, with the directory.
        assert!(host.to_string().contains("sharing must widen"), "{host}");
        std::fs::write(dir.path().join("index1/shared_cpu_list"), "0,64\n").unwrap();
        let host = host_spec_from_sysfs(dir.path()).unwrap();
        assert_eq!(
            host.to_string(),
            "D1=49152,12,64,shared=2;L2=2097152,16,64,shared=2;L3=110100480,15,64,shared=4"
        );
        std::fs::write(dir.path().join("index2/shared_cpu_list"), "0-x\n").unwrap();
        let e = host_spec_from_sysfs(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a CPU list"), "{e}");
        assert_eq!(count_cpu_list("0-63"), Some(64));
        assert_eq!(count_cpu_list("3-1"), None);
    }

    #[test]
    fn missing_sysfs_suggests_an_explicit_spec() {
        let e = host_spec_from_sysfs(Path::new("/nonexistent/cache")).unwrap_err();
        assert!(e.to_string().contains("--cache"));
    }

    #[test]
    fn a_lower_level_smaller_than_the_one_above_is_warned_about() {
        let spec = HierarchySpec::parse("D1=32K,8,64;L2=16K,8,32;L3=1M,16,64").unwrap();
        let warnings = spec.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("L2 (16384 bytes) is smaller than D1"),
            "{warnings:?}"
        );
        assert!(warnings[1].contains("32-byte lines"), "{warnings:?}");
        assert!(
            HierarchySpec::parse("D1=32K,8,64;L2=1M,16,64")
                .unwrap()
                .warnings()
                .is_empty()
        );
    }

    /// A spec whose sets would not fit in memory is refused before anything is allocated,
    /// naming the level; the largest real last levels (a gigabyte) still fit.
    #[test]
    fn a_hierarchy_too_large_to_simulate_is_refused() {
        let e = HierarchySpec::parse("D1=32K,8,64;L2=1M,16,64;L3=2M,16,64;L4=4M,16,64;L5=8M,16,64")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("5 data levels; a hierarchy has at most 4"),
            "{e}"
        );
        for spec in ["D1=8G,1,64", "D1=32K,8,64;L2=4G,4,64;L3=4G,4,64"] {
            let e = HierarchySpec::parse(spec).unwrap_err().to_string();
            assert!(e.contains("GiB of memory per thread"), "{e}");
        }
        let e = HierarchySpec::parse("D1=8G,1,64").unwrap_err().to_string();
        assert!(e.contains("(D1 most, 134217728 sets)"), "{e}");
        for spec in ["D1=32K,8,64;LL=1G,16,64", "D1=32K,8,64;LL=1G,32,64,plru"] {
            HierarchySpec::parse(spec).unwrap();
        }
        // A level built directly is held to the same bound.
        let huge = Geometry::new(8 << 30, 1, 64).unwrap();
        assert!(CacheLevel::new(huge, Replacement::Lru).is_err());
        // What the estimate says is what a packed level allocates.
        let g = Geometry::new(1 << 20, 8, 64).unwrap();
        assert_eq!(CacheLevel::state_bytes(g, Replacement::Lru), 2048 * 128);
    }
}
