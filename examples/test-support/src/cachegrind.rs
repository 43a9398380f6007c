//! Real Valgrind runs the tests compare epcache with: Cachegrind's summary or its per-function
//! and per-file counts for one cache shape, and lackey's memory trace.
//!
//! Valgrind runs are deterministic, but only for the same environment, working directory and
//! kinds of stdout and stderr: glibc's start-up and stdio take different paths otherwise (stdout
//! on /dev/null versus a file changed Ir by 54 here). So [`summary`] and [`lackey_trace`], whose
//! results are compared with each other, start the program the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::tools::check_output;

/// Cachegrind's nine cache events, in the order of its `events:` line.
pub const EVENTS: [&str; 9] = [
    "Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
];

/// One cache level's shape: (size in bytes, ways, line bytes).
pub type Geometry = (u64, u64, u64);

/// An I1, a D1 and the level below them, written for both Cachegrind and epcache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub i1: Geometry,
    pub d1: Geometry,
    pub ll: Geometry,
}

impl Shape {
    /// The I1 of the shapes whose instruction side is not compared: any valid shape does.
    pub const ANY_I1: Geometry = (32 << 10, 8, 64);

    /// METRIC's MIPS R12000 L1 (32 KB, 2-way, 32 B lines); the level below is not in the paper.
    pub const R12000: Shape = Shape {
        i1: Self::ANY_I1,
        d1: (32 << 10, 2, 32),
        ll: (1 << 20, 16, 64),
    };
    /// The EP-Cache Gauss figures of DESIGN.md: an 8 KB, 2-way, 32 B-line L1.
    pub const GAUSS: Shape = Shape {
        i1: Self::ANY_I1,
        d1: (8 << 10, 2, 32),
        ll: (1 << 20, 16, 64),
    };
    /// The cache-reuse paper's Pentium M: 32 KB and 1 MB, both 8-way with 64 B lines.
    pub const PENTIUM_M: Shape = Shape {
        i1: Self::ANY_I1,
        d1: (32 << 10, 8, 64),
        ll: (1 << 20, 8, 64),
    };
    /// DTrack's Alpha 21264-like DL1 (64 KB, 2-way, 64 B) and direct-mapped 512 KB L2.
    pub const DTRACK: Shape = Shape {
        i1: Self::ANY_I1,
        d1: (64 << 10, 2, 64),
        ll: (512 << 10, 1, 64),
    };

    /// `--I1=S,A,L --D1=S,A,L --LL=S,A,L`, the same for Cachegrind and `epcache replay`.
    pub fn cachegrind_args(&self) -> [String; 3] {
        [
            format!("--I1={}", written(self.i1)),
            format!("--D1={}", written(self.d1)),
            format!("--LL={}", written(self.ll)),
        ]
    }

    /// The three levels in `EPCACHE_CACHE`'s syntax (`I1=..;D1=..;LL=..`), as replay takes them.
    pub fn replay_spec(&self) -> String {
        let (i1, d1, ll) = (written(self.i1), written(self.d1), written(self.ll));
        format!("I1={i1};D1={d1};LL={ll}")
    }

    /// The data side in `EPCACHE_CACHE`'s syntax, as a captured program takes it. The lower
    /// level is called L2 so its events are `PAPI_L2_*`.
    pub fn epcache_spec(&self) -> String {
        let (s, a, l) = self.d1;
        let (ls, la, ll) = self.ll;
        format!("D1={s},{a},{l};L2={ls},{la},{ll}")
    }
}

/// `S,A,L`, as both tools write a level.
fn written((size, ways, line): Geometry) -> String {
    format!("{size},{ways},{line}")
}

/// Compiles the C source `source` with `gcc -O2 [defines]` into `dir`, named after its stem.
pub fn compile_c(source: &Path, dir: &Path, defines: &[&str]) -> PathBuf {
    let name = source.file_stem().expect("a source file name");
    let binary = dir.join(name);
    let out = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .args(defines)
        .arg(source)
        .output()
        .expect("running gcc");
    check_output(&format!("gcc {}", source.display()), &out);
    binary
}

/// Records `program`'s lackey memory trace into `trace`.
pub fn lackey_trace(program: &Path, trace: &Path) {
    let args = [
        "--tool=lackey".to_owned(),
        "--trace-mem=yes".to_owned(),
        format!("--log-file={}", trace.display()),
    ];
    quiet_valgrind(&args, program);
}

/// Runs `program` under Cachegrind with `shape` and returns its summary, event name to count.
pub fn summary(program: &Path, shape: &Shape) -> BTreeMap<String, u64> {
    let dir = program.parent().expect("program in a directory");
    let (i1, d1, ll) = (written(shape.i1), written(shape.d1), written(shape.ll));
    let out_file = dir.join(format!("cachegrind.{i1}.{d1}.{ll}.out"));
    let mut args = vec!["--tool=cachegrind".to_owned(), "--cache-sim=yes".to_owned()];
    args.extend(shape.cachegrind_args());
    args.push(format!("--cachegrind-out-file={}", out_file.display()));
    quiet_valgrind(&args, program);
    let text = std::fs::read_to_string(&out_file).expect("reading Cachegrind's output");
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {}", out_file.display()))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let names = line("events:");
    let values = line("summary:");
    assert_eq!(names.len(), values.len(), "events and summary disagree");
    names
        .into_iter()
        .zip(values.iter().map(|v| v.parse().expect("a count")))
        .collect()
}

/// Cachegrind's data-side counts for one function or source file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgCounts {
    pub dr: u64,
    pub d1mr: u64,
    pub dw: u64,
    pub d1mw: u64,
    pub dlmr: u64,
    pub dlmw: u64,
}

impl CgCounts {
    pub fn accesses(&self) -> u64 {
        self.dr + self.dw
    }

    pub fn misses(&self) -> u64 {
        self.d1mr + self.d1mw
    }

    /// METRIC's miss ratio: L1 misses over L1 accesses, reads and writes together.
    pub fn miss_ratio(&self) -> f64 {
        self.misses() as f64 / self.accesses() as f64
    }
}

/// One Cachegrind run: the program's stdout, each function's counts and each source file's.
#[derive(Debug, Clone)]
pub struct CgRun {
    pub stdout: String,
    pub functions: BTreeMap<String, CgCounts>,
    pub files: BTreeMap<String, CgCounts>,
    /// Each source line's counts, by (file as Cachegrind names it, line).
    pub lines: BTreeMap<(String, u32), CgCounts>,
}

impl CgRun {
    /// The counts of the function named `name`, or of the one whose name ends in `suffix` when
    /// the exact name is absent (Fortran's `__mod_MOD_name`, Rust's `crate::name`).
    pub fn function(&self, name: &str) -> CgCounts {
        if let Some(c) = self.functions.get(name) {
            return *c;
        }
        let matches: Vec<_> = self
            .functions
            .iter()
            .filter(|(f, _)| {
                f.ends_with(&format!("_MOD_{name}")) || f.ends_with(&format!("::{name}"))
            })
            .collect();
        match matches.as_slice() {
            [(_, c)] => **c,
            _ => panic!(
                "no single Cachegrind function for `{name}` (found {:?}) among {:?}",
                matches.iter().map(|m| m.0).collect::<Vec<_>>(),
                self.functions.keys().collect::<Vec<_>>()
            ),
        }
    }

    /// The counts of all code in the source file whose path ends with `suffix` (`c/adi.c`):
    /// everything the program's own source does, which is what capture instruments.
    pub fn source_file(&self, suffix: &str) -> CgCounts {
        let matches: Vec<_> = self
            .files
            .iter()
            .filter(|(f, _)| f.ends_with(suffix))
            .collect();
        match matches.as_slice() {
            [(_, c)] => **c,
            _ => panic!(
                "no single Cachegrind file ending in {suffix} among {:?}",
                self.files.keys().collect::<Vec<_>>()
            ),
        }
    }
}

/// Runs `program args` under Cachegrind with `shape`, its stdout kept, and reads its
/// per-function and per-file counts from the `fn=` and `fl=` sections of `cachegrind.out`
/// (sturdier than parsing `cg_annotate`'s table).
pub fn per_function(program: &Path, args: &[&str], shape: &Shape) -> CgRun {
    let dir = program.parent().expect("program in a directory");
    let out_file = dir.join(format!(
        "cachegrind.out.{}",
        program.file_name().unwrap().to_string_lossy()
    ));
    let out = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .args(shape.cachegrind_args())
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env_remove("EPCACHE_REPORT")
        .stdin(Stdio::null())
        .output()
        .expect("running valgrind");
    check_output(&format!("cachegrind on {}", program.display()), &out);
    let text = std::fs::read_to_string(&out_file).expect("reading Cachegrind's output");
    let (functions, files) = parse_out_file(&text);
    CgRun {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        functions,
        files,
        lines: parse_out_file_lines(&text),
    }
}

impl std::ops::AddAssign for CgCounts {
    fn add_assign(&mut self, other: CgCounts) {
        self.dr += other.dr;
        self.d1mr += other.d1mr;
        self.dlmr += other.dlmr;
        self.dw += other.dw;
        self.d1mw += other.d1mw;
        self.dlmw += other.dlmw;
    }
}

/// Where a Cachegrind output file's `events:` line puts the data-side counts in a cost line.
struct DataColumns {
    dr: usize,
    d1mr: usize,
    dlmr: usize,
    dw: usize,
    d1mw: usize,
    dlmw: usize,
}

impl DataColumns {
    fn of(text: &str) -> DataColumns {
        let events: Vec<&str> = text
            .lines()
            .find_map(|l| l.strip_prefix("events:"))
            .expect("an events: line in Cachegrind's output")
            .split_whitespace()
            .collect();
        let index = |name: &str| {
            events
                .iter()
                .position(|e| *e == name)
                .unwrap_or_else(|| panic!("Cachegrind ran without the {name} event: {events:?}"))
        };
        DataColumns {
            dr: index("Dr"),
            d1mr: index("D1mr"),
            dlmr: index("DLmr"),
            dw: index("Dw"),
            d1mw: index("D1mw"),
            dlmw: index("DLmw"),
        }
    }

    /// The data-side counts of a cost line's `fields` after its line number (trailing zeros
    /// may be left off).
    fn counts<'a>(&self, fields: impl Iterator<Item = &'a str>) -> CgCounts {
        let counts: Vec<u64> = fields
            .map(|v| v.parse().expect("a count in a Cachegrind cost line"))
            .collect();
        let at = |i: usize| counts.get(i).copied().unwrap_or(0);
        CgCounts {
            dr: at(self.dr),
            d1mr: at(self.d1mr),
            dlmr: at(self.dlmr),
            dw: at(self.dw),
            d1mw: at(self.d1mw),
            dlmw: at(self.dlmw),
        }
    }
}

/// Per-function and per-file count maps.
pub type CountMaps = (BTreeMap<String, CgCounts>, BTreeMap<String, CgCounts>);

/// Sums the cost lines under each `fn=` (a function may appear under several `fl=` files) and
/// under each `fl=`.
pub fn parse_out_file(text: &str) -> CountMaps {
    let columns = DataColumns::of(text);
    let mut functions: BTreeMap<String, CgCounts> = BTreeMap::new();
    let mut files: BTreeMap<String, CgCounts> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut file = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fl=") {
            file = name.trim().to_owned();
            continue;
        }
        if let Some(name) = line.strip_prefix("fn=") {
            current = Some(name.trim().to_owned());
            continue;
        }
        let Some(name) = &current else { continue };
        if !line.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        // A cost line: the source line, then one count per event.
        let counts = columns.counts(line.split_whitespace().skip(1));
        *functions.entry(name.clone()).or_default() += counts;
        *files.entry(file.clone()).or_default() += counts;
    }
    (functions, files)
}

/// Sums the cost lines per source line: (the `fl=` file, the line), over every function whose
/// code holds it (a line inlined into several functions, or in the `fi=` of another's).
pub fn parse_out_file_lines(text: &str) -> BTreeMap<(String, u32), CgCounts> {
    let columns = DataColumns::of(text);
    let mut lines: BTreeMap<(String, u32), CgCounts> = BTreeMap::new();
    let mut file = String::new();
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("fl=")
            .or_else(|| line.strip_prefix("fi="))
            .or_else(|| line.strip_prefix("fe="))
        {
            file = name.trim().to_owned();
            continue;
        }
        if !line.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(number) = fields.next().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        *lines.entry((file.clone(), number)).or_default() += columns.counts(fields);
    }
    lines
}

/// Runs `valgrind TOOL_ARGS program` in the program's directory with nothing on stdin and
/// stdout, failing on a non-zero exit.
fn quiet_valgrind(tool_args: &[String], program: &Path) {
    let dir = program.parent().expect("program in a directory");
    let out = Command::new("valgrind")
        .args(tool_args)
        .arg(program)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("running valgrind");
    check_output(
        &format!("valgrind {tool_args:?} {}", program.display()),
        &out,
    );
}
