//! Every site variant, assembled with the real assembler and linked into a C harness
//! (`harness.c`) over a fake thread block laid out by the crate's constants, run in its own
//! process on seeded random streams of accesses and thread events, against the model: the hook
//! calls, the table entries and batch records written, the batch position, `in_miss` and the
//! registers each access leaves must be the model's, word for word. The model's paths are
//! counted, so the streams are known to reach every path of every variant.
//!
//! Variants: each access size the hooks report, read and write, as a site that loads the tag
//! word and mask, and as the second of two sites that finds the mask, or the mask and the
//! word, left by the first (after each of the first's paths: the registers every path leaves
//! are the contract of `carried_registers.rs` in `epcache cc`).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use epcache_inline::emit::{self, Access, Carried, HOOK_SIZES, Sites};
use epcache_inline::layout::{
    ABI_VERSION, ENTRY_BYTES, ENTRY_DIRTY_PENDING, ENTRY_ORDER, ENTRY_READ_HITS, ENTRY_READ_TAG,
    ENTRY_WRITE_HITS, ENTRY_WRITE_TAG, RECORD_BYTES, RECORD_CODE_ADDRESS, RECORD_WORDS,
    SLOT_STRIDE, SLOTS, TABLE_ENTRIES, TAG_WORD_SYMBOL, ThreadWord, WHOLE_SLOTS, whole_slot,
};
use epcache_inline::model::{
    self, Entry, ModelBlock, Path as SitePath, Registers, Slow, WholeLines,
};
use epcache_inline::order::{OrderTables, TABLES_BYTES};
use epcache_inline::tag_word;

/// Records the harness's batch holds.
const BATCH_RECORDS: u64 = 96;
/// Accesses per stream.
const ACCESSES: usize = 6000;

/// Every variant of a site's access.
fn variants() -> Vec<Access> {
    [false, true]
        .into_iter()
        .flat_map(|write| HOOK_SIZES.map(|size| Access { size, write }))
        .collect()
}

/// A function of the harness: one site that loads the registers, or two sites where the second
/// takes what the first left.
#[derive(Debug, Clone, Copy)]
enum Function {
    Single(usize),
    Pair {
        first: usize,
        second: usize,
        carried: Carried,
    },
}

fn functions(variants: usize) -> Vec<Function> {
    let mut all: Vec<Function> = (0..variants).map(Function::Single).collect();
    for carried in [Carried::Mask, Carried::MaskAndWord] {
        for first in 0..variants {
            for second in 0..variants {
                all.push(Function::Pair {
                    first,
                    second,
                    carried,
                });
            }
        }
    }
    all
}

/// The fake block: the table at offset 0, then every other word after it, aligned to its size.
struct FakeBlock {
    offsets: Vec<(ThreadWord, usize)>,
    bytes: usize,
}

impl FakeBlock {
    fn new() -> FakeBlock {
        let table = TABLE_ENTRIES * ENTRY_BYTES;
        let mut cursor = table;
        let mut offsets = Vec::new();
        for word in ThreadWord::ALL {
            let offset = match word.entry_offset() {
                Some(offset) => offset,
                None => {
                    cursor = cursor.next_multiple_of(word.bytes());
                    let at = cursor;
                    let (count, stride) = word.values();
                    cursor += count * stride;
                    at
                }
            };
            offsets.push((word, offset));
        }
        FakeBlock {
            offsets,
            bytes: cursor.next_multiple_of(ENTRY_BYTES),
        }
    }

    /// The assembly defining the block in the executable's TLS, each word's symbol at its
    /// offset, and the process-wide tag word.
    fn assembly(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "\t.section\t.tbss,\"awT\",@nobits\n\t.p2align\t6");
        let _ = writeln!(s, "\t.globl\tfake_block\n\t.type\tfake_block, @object");
        let _ = writeln!(
            s,
            "\t.size\tfake_block, {0}\nfake_block:\n\t.zero\t{0}",
            self.bytes
        );
        for (word, offset) in &self.offsets {
            let name = word.symbol();
            let _ = writeln!(s, "\t.globl\t{name}\n\t.type\t{name}, @tls_object");
            let _ = writeln!(s, "\t.set\t{name}, fake_block + {offset}");
        }
        let _ = writeln!(s, "\t.data\n\t.p2align\t3\n\t.globl\t{TAG_WORD_SYMBOL}");
        let _ = writeln!(
            s,
            "\t.type\t{TAG_WORD_SYMBOL}, @object\n\t.size\t{TAG_WORD_SYMBOL}, 8"
        );
        let _ = writeln!(s, "{TAG_WORD_SYMBOL}:\n\t.quad\t0");
        s.push_str("\t.section\t.note.GNU-stack,\"\",@progbits\n");
        s
    }

    /// The constants the harness reads: sizes and each word's offset, `OFF_<NAME>`.
    fn header(&self) -> String {
        let prefix = format!("epcache_inline_v{ABI_VERSION}_");
        let mut s =
            String::from("/* Written by differential.rs from epcache-inline's constants. */\n");
        for (name, value) in [
            ("BLOCK_BYTES", self.bytes),
            ("TABLE_OFFSET", 0),
            ("TABLE_BYTES", TABLE_ENTRIES * ENTRY_BYTES),
            ("TABLE_ENTRIES", TABLE_ENTRIES),
            ("ENTRY_BYTES", ENTRY_BYTES),
            ("RECORD_WORDS", RECORD_WORDS),
            ("RECORD_BYTES", RECORD_BYTES),
            ("RECORD_CODE_ADDRESS", RECORD_CODE_ADDRESS),
            ("WHOLE_SLOTS", WHOLE_SLOTS),
            ("BATCH_RECORDS", BATCH_RECORDS as usize),
        ] {
            let _ = writeln!(s, "#define {name} {value}u");
        }
        for (word, offset) in &self.offsets {
            let name = word.symbol().strip_prefix(&prefix).unwrap().to_uppercase();
            let _ = writeln!(s, "#define OFF_{name} {offset}u");
        }
        let _ = writeln!(s, "#define TAG_WORD_SYMBOL {TAG_WORD_SYMBOL}");
        // The order tables of every count of usable slots, the `K` command's choice.
        let _ = writeln!(s, "#define TABLES_BYTES {TABLES_BYTES}u");
        let _ = writeln!(
            s,
            "static const unsigned char order_tables[{SLOTS}][{TABLES_BYTES}] = {{"
        );
        for usable in 1..=SLOTS {
            let bytes = OrderTables::new(usable).bytes();
            let list: Vec<String> = bytes.iter().map(u8::to_string).collect();
            let _ = writeln!(s, "  {{{}}},", list.join(","));
        }
        s.push_str("};\n");
        s
    }
}

/// The numbers [`Sites`] gives each function's sites, in the order [`sites_assembly`] writes
/// them: `(first, second)`, the second 0 for a function of one site.
fn site_numbers(functions: &[Function]) -> Vec<(u64, u64)> {
    let mut next = 0;
    let mut take = || {
        next += 1;
        next
    };
    functions
        .iter()
        .map(|f| match f {
            Function::Single(_) => (take(), 0),
            Function::Pair { .. } => (take(), take()),
        })
        .collect()
}

/// The harness's site functions, written by the emitter, their table, and the table of each
/// site's code address (its call's return address, `.Lepcache.back.N`), by which the harness
/// prints a code address as the site's number.
fn sites_assembly(variants: &[Access], functions: &[Function]) -> String {
    let mut s = String::from("\t.text\n");
    let mut sites = Sites::default();
    let call = |a: Access| {
        let kind = if a.write { "write" } else { "read" };
        format!("\tcall\t__tsan_{kind}{}", a.size)
    };
    let observe = format!(
        "\tmovq\t{}, observed_word(%rip)\n\tmovq\t{}, observed_mask(%rip)\n",
        emit::WORD,
        emit::MASK
    );
    for (i, function) in functions.iter().enumerate() {
        let _ = writeln!(
            s,
            "\t.globl\tsite_function_{i}\n\t.type\tsite_function_{i}, @function"
        );
        let _ = writeln!(s, "site_function_{i}:");
        match *function {
            Function::Single(v) => {
                // The hook call needs the stack aligned as at any call.
                s.push_str("\tsubq\t$8, %rsp\n");
                sites.write(variants[v], Carried::Nothing, &call(variants[v]), &mut s);
                s.push_str(&observe);
                s.push_str("\taddq\t$8, %rsp\n\tret\n");
            }
            Function::Pair {
                first,
                second,
                carried,
            } => {
                // The second address waits in a register the sites and calls leave alone.
                s.push_str("\tpushq\t%rbx\n\tmovq\t%rsi, %rbx\n");
                sites.write(
                    variants[first],
                    Carried::Nothing,
                    &call(variants[first]),
                    &mut s,
                );
                s.push_str("\tmovq\t%rbx, %rdi\n");
                sites.write(variants[second], carried, &call(variants[second]), &mut s);
                s.push_str(&observe);
                s.push_str("\tpopq\t%rbx\n\tret\n");
            }
        }
        let _ = writeln!(s, "\t.size\tsite_function_{i}, .-site_function_{i}");
    }
    s.push_str("\t.section\t.data.rel.ro,\"aw\"\n\t.p2align\t3\n\t.globl\tsite_functions\n");
    s.push_str("site_functions:\n");
    for i in 0..functions.len() {
        let _ = writeln!(s, "\t.quad\tsite_function_{i}");
    }
    let _ = writeln!(
        s,
        "\t.globl\tsite_function_count\nsite_function_count:\n\t.quad\t{}",
        functions.len()
    );
    assert_eq!(
        sites.count() as u64,
        site_numbers(functions).last().map_or(0, |&(a, b)| a.max(b)),
        "the sites are numbered as site_numbers says"
    );
    s.push_str("\t.globl\tsite_returns\nsite_returns:\n");
    for n in 1..=sites.count() {
        let _ = writeln!(s, "\t.quad\t.Lepcache.back.{n}");
    }
    let _ = writeln!(
        s,
        "\t.globl\tsite_return_count\nsite_return_count:\n\t.quad\t{}",
        sites.count()
    );
    s.push_str("\t.section\t.note.GNU-stack,\"\",@progbits\n");
    s
}

/// Builds the harness in `dir`: each listing assembled on its own, then linked with the C.
fn build_harness(dir: &Path, variants: &[Access], functions: &[Function]) -> std::path::PathBuf {
    let block = FakeBlock::new();
    // The harness reads the whole-line cache as 8- and 4-byte values and `in_miss` as a byte.
    assert_eq!(
        [
            ThreadWord::WholeLo,
            ThreadWord::WholeHi,
            ThreadWord::WholeStructure,
            ThreadWord::InMiss
        ]
        .map(ThreadWord::bytes),
        [8, 8, 4, 1]
    );
    std::fs::write(dir.join("layout.h"), block.header()).unwrap();
    std::fs::write(dir.join("block.s"), block.assembly()).unwrap();
    std::fs::write(dir.join("sites.s"), sites_assembly(variants, functions)).unwrap();
    std::fs::write(dir.join("harness.c"), include_str!("harness.c")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("gcc")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("running gcc");
        assert!(
            out.status.success(),
            "gcc {args:?} failed (the listings are kept in {}):\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&["-c", "sites.s", "-o", "sites.o"]);
    run(&["-c", "block.s", "-o", "block.o"]);
    run(&[
        "-O1",
        "-I.",
        "harness.c",
        "sites.o",
        "block.o",
        "-o",
        "harness",
    ]);
    dir.join("harness")
}

/// One command of a stream (`harness.c` reads them).
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The process-wide tag word.
    TagWord(u64),
    /// The thread's synced word.
    Synced(u64),
    /// The batch position and end, in records from the batch's start.
    Batch(u64, u64),
    /// A slot of the whole-line cache.
    Whole { slot: usize, lines: WholeLines },
    /// The order tables of this many usable slots.
    Usable(usize),
    /// An entry emptied, as the runtime empties them.
    Clear(usize),
    /// The word the next hook call sets the tag word to.
    HookSets(u64),
    /// A call of a site function with its addresses.
    Run(usize, u64, u64),
}

impl Step {
    fn command(&self) -> String {
        match *self {
            Step::TagWord(w) => format!("W {w:x}"),
            Step::Synced(w) => format!("S {w:x}"),
            Step::Batch(p, e) => format!("B {p:x} {e:x}"),
            Step::Whole { slot, lines } => {
                format!(
                    "L {slot:x} {:x} {:x} {:x}",
                    lines.lo, lines.hi, lines.structure
                )
            }
            Step::Clear(e) => format!("C {e:x}"),
            Step::Usable(k) => format!("K {k:x}"),
            Step::HookSets(w) => format!("H {w:x}"),
            Step::Run(f, a, b) => format!("A {f:x} {a:x} {b:x}"),
        }
    }
}

/// A small seeded generator (xorshift64*), so a failing stream can be run again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A tag word with `key` and a random shape the runtime could set: 32- to 256-byte lines, a
/// power of two of entries that fits the table.
fn random_word(rng: &mut Rng, key: u8) -> u64 {
    let line_bits = 5 + rng.below(4) as u32;
    let most = 8 - (line_bits - 5) as u64;
    let entries = 1u32 << (1 + rng.below(most));
    tag_word::word_of(key, (1 << line_bits) - 1, (entries - 1) << line_bits)
}

/// `word` with the key `key`.
fn rekeyed(word: u64, key: u8) -> u64 {
    word & !tag_word::KEY_BITS | u64::from(key) << tag_word::KEY_SHIFT
}

fn random_key(rng: &mut Rng) -> u8 {
    1 + rng.below(255) as u8
}

/// A stream of `accesses` accesses with thread events between them: walks through a few
/// pages (so lines repeat), random jumps, straddling accesses, syncs, switches, drained and
/// full batches, whole-line slots that change and collide.
fn stream(seed: u64, accesses: usize, variants: &[Access], functions: &[Function]) -> Vec<Step> {
    let mut rng = Rng(seed | 1);
    let base = 0x7f12_3450_0000u64;
    let pages = [
        base,
        base + 0x1000,
        base + 0x2000,
        base + 0x3000,
        // Its whole-line slot is the first page's.
        base + (WHOLE_SLOTS as u64) * 0x1000,
        0x5555_5555_8000,
    ];
    let key = random_key(&mut rng);
    let mut word = random_word(&mut rng, key);
    let mut steps = vec![
        Step::TagWord(word),
        Step::Synced(word),
        Step::Batch(0, BATCH_RECORDS),
        Step::Usable(1 + rng.below(SLOTS as u64) as usize),
    ];
    let whole = |rng: &mut Rng, page: u64| {
        let (lo, hi) = match rng.below(4) {
            0 => (page + 1024, page + 3072),
            _ => (page, page + 4096),
        };
        Step::Whole {
            slot: whole_slot(page),
            lines: WholeLines {
                lo,
                hi,
                structure: rng.below(5) as u32,
            },
        }
    };
    for &page in &pages[..4] {
        steps.push(whole(&mut rng, page));
    }
    let mut walkers: Vec<(u64, u64)> = (0..6).map(|i| (pages[i % pages.len()], 0)).collect();
    let mut address = |rng: &mut Rng, word: u64, size: u32| {
        let w = rng.below(walkers.len() as u64) as usize;
        let (page, offset) = &mut walkers[w];
        let line = (word & tag_word::ADDRESS_MASK) + 1;
        match rng.below(100) {
            0..=9 => *offset = rng.below(4096),
            10..=17 if size > 1 => {
                *offset = (*offset / line + 1) * line - 1 - rng.below(u64::from(size) - 1);
            }
            18..=19 => *page = pages[rng.below(pages.len() as u64) as usize],
            _ => {}
        }
        *offset %= 4096;
        let addr = *page + *offset;
        *offset += u64::from(size);
        addr
    };
    let mut done = 0;
    while done < accesses {
        match rng.below(1000) {
            0..=14 => steps.push(Step::Clear(rng.below(TABLE_ENTRIES as u64) as usize)),
            15..=29 => steps.push(Step::Batch(0, rng.below(BATCH_RECORDS + 1))),
            // The runtime changes the tables only with every entry empty.
            30..=31 => {
                steps.extend((0..TABLE_ENTRIES).map(Step::Clear));
                steps.push(Step::Usable(1 + rng.below(SLOTS as u64) as usize));
            }
            32..=37 => {
                word = rekeyed(word, random_key(&mut rng));
                steps.push(Step::TagWord(word));
                if rng.below(2) == 0 {
                    steps.push(Step::Synced(word));
                }
            }
            38..=47 => steps.push(Step::Synced(word)),
            48..=51 => steps.push(Step::Synced(0)),
            52..=55 => {
                word = random_word(&mut rng, tag_word::key_of(word));
                steps.push(Step::TagWord(word));
                steps.push(Step::Synced(word));
            }
            56..=61 => {
                // The hook switches the word: later sites must reload it.
                let next = rekeyed(word, random_key(&mut rng));
                steps.push(Step::HookSets(next));
            }
            62..=81 => {
                let page = pages[rng.below(pages.len() as u64) as usize];
                steps.push(whole(&mut rng, page));
            }
            _ => {
                let f = rng.below(functions.len() as u64) as usize;
                let (first, second) = match functions[f] {
                    Function::Single(v) => (v, v),
                    Function::Pair { first, second, .. } => (first, second),
                };
                let a = address(&mut rng, word, variants[first].size);
                let b = if rng.below(10) < 7 {
                    a + u64::from(variants[first].size)
                } else {
                    address(&mut rng, word, variants[second].size)
                };
                steps.push(Step::Run(f, a, b));
                done += 1;
            }
        }
        if let Some(Step::HookSets(next)) = steps.last() {
            // The model learns of the hook's switch when the hook runs; the stream's own view
            // of the word follows at once (it only shapes later addresses).
            word = *next;
        }
    }
    steps
}

/// What the model's paths covered: each variant's paths, and each carried variant after each
/// kind of path of the site before it.
#[derive(Default)]
struct Coverage {
    paths: HashSet<(usize, SitePath)>,
    /// Each variant's hits by the slot they hit.
    slots: HashSet<(usize, usize)>,
    carried_after: HashSet<(usize, Carried, &'static str)>,
}

fn kind(path: SitePath) -> &'static str {
    match path {
        SitePath::Hit | SitePath::CleanWrite => "hit",
        SitePath::Batched => "batched",
        SitePath::Slow(_) => "call",
    }
}

/// The model's side of a stream: what the harness must print.
struct ModelRun<'a> {
    block: ModelBlock,
    hook_sets: u64,
    variants: &'a [Access],
    /// Each function's site numbers ([`site_numbers`]).
    numbers: &'a [(u64, u64)],
    accesses: u64,
}

impl ModelRun<'_> {
    fn step(
        &mut self,
        step: Step,
        functions: &[Function],
        coverage: &mut Coverage,
        out: &mut String,
    ) {
        match step {
            Step::TagWord(w) => self.block.tag_word = w,
            Step::Synced(w) => self.block.synced_word = w,
            Step::Batch(p, e) => {
                self.block.batch_pos = p * RECORD_BYTES as u64;
                self.block.batch_end = e * RECORD_BYTES as u64;
            }
            Step::Whole { slot, lines } => self.block.whole[slot] = lines,
            Step::Clear(e) => self.block.entries[e] = Entry::default(),
            Step::Usable(k) => self.block.tables = OrderTables::new(k),
            Step::HookSets(w) => self.hook_sets = w,
            Step::Run(f, a, b) => self.run(functions[f], self.numbers[f], a, b, coverage, out),
        }
    }

    fn run(
        &mut self,
        function: Function,
        (first_code, second_code): (u64, u64),
        a: u64,
        b: u64,
        coverage: &mut Coverage,
        out: &mut String,
    ) {
        let entries = self.block.entries.clone();
        let records = self.block.records.clone();
        let _ = writeln!(out, "A {}", self.accesses);
        self.accesses += 1;
        let regs = match function {
            Function::Single(v) => {
                let loaded = Registers::loaded(self.block.tag_word);
                let (regs, _) = self.site(v, loaded, a, first_code, coverage, out);
                regs
            }
            Function::Pair {
                first,
                second,
                carried,
            } => {
                let loaded = Registers::loaded(self.block.tag_word);
                let (left, path) = self.site(first, loaded, a, first_code, coverage, out);
                let found = match carried {
                    Carried::Nothing => Registers::loaded(self.block.tag_word),
                    Carried::Mask => Registers {
                        word: self.block.tag_word,
                        mask: left.mask,
                    },
                    Carried::MaskAndWord => left,
                };
                coverage.carried_after.insert((second, carried, kind(path)));
                self.site(second, found, b, second_code, coverage, out).0
            }
        };
        for (e, (before, now)) in entries.iter().zip(&self.block.entries).enumerate() {
            if before != now {
                let mut words = [0u64; ENTRY_BYTES / 8];
                for (offset, values) in [
                    (ENTRY_READ_TAG, now.read_tag),
                    (ENTRY_WRITE_TAG, now.write_tag),
                    (ENTRY_READ_HITS, now.read_hits),
                    (ENTRY_WRITE_HITS, now.write_hits),
                    (ENTRY_DIRTY_PENDING, now.dirty_pending),
                ] {
                    for (slot, value) in values.into_iter().enumerate() {
                        words[(offset + slot * SLOT_STRIDE) / 8] = value;
                    }
                }
                // The order byte is the low byte of its word, little-endian.
                words[ENTRY_ORDER / 8] |= u64::from(now.order) << (ENTRY_ORDER % 8 * 8);
                let _ = writeln!(out, "entry {e}{}", hex_words(&words));
            }
        }
        for (at, record) in &self.block.records {
            if records.get(at) != Some(record) {
                let _ = writeln!(
                    out,
                    "record {}{}",
                    at / RECORD_BYTES as u64,
                    hex_words(record)
                );
            }
        }
        let _ = writeln!(
            out,
            "after pos {:x} in_miss 0 word {:x} mask {:x}",
            self.block.batch_pos, regs.word, regs.mask
        );
    }

    /// One site of variant `v` with `regs`, numbered `code` (the harness prints code addresses
    /// as site numbers): the registers it leaves, and its path.
    fn site(
        &mut self,
        v: usize,
        regs: Registers,
        addr: u64,
        code: u64,
        coverage: &mut Coverage,
        out: &mut String,
    ) -> (Registers, SitePath) {
        let access = self.variants[v];
        let before = self.block.entries.clone();
        let path = model::site(&mut self.block, regs, access, addr, code);
        coverage.paths.insert((v, path));
        if matches!(path, SitePath::Hit | SitePath::CleanWrite) {
            let hits = |e: &Entry, slot: usize| e.read_hits[slot] + e.write_hits[slot];
            for (old, new) in before.iter().zip(&self.block.entries) {
                if let Some(slot) = (0..SLOTS).find(|&s| hits(old, s) != hits(new, s)) {
                    coverage.slots.insert((v, slot));
                }
            }
        }
        if let SitePath::Slow(_) = path {
            let kind = if access.write { 'w' } else { 'r' };
            let _ = writeln!(out, "call {} {kind} {addr:x} site {code:x}", access.size);
            if self.hook_sets != 0 {
                self.block.tag_word = std::mem::take(&mut self.hook_sets);
            }
        }
        (model::registers_after(path, regs, &self.block), path)
    }
}

fn hex_words(words: &[u64]) -> String {
    words.iter().map(|w| format!(" {w:x}")).collect()
}

/// Runs the harness on `steps`, and answers its output.
fn run_harness(harness: &Path, steps: &[Step]) -> String {
    let mut input = String::new();
    for step in steps {
        input.push_str(&step.command());
        input.push('\n');
    }
    let mut child = Command::new(harness)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the harness");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        stdin.write_all(input.as_bytes())
    });
    let out = child.wait_with_output().expect("running the harness");
    writer.join().unwrap().expect("feeding the harness");
    assert!(
        out.status.success(),
        "the harness failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Panics at the first line where the harness and the model differ, with the access and the
/// commands before it.
fn compare(expected: &str, actual: &str, steps: &[Step]) {
    let (mut last_access, mut line_no) = (None, 0);
    for (want, got) in expected.lines().zip(actual.lines()) {
        line_no += 1;
        if let Some(n) = want.strip_prefix("A ") {
            last_access = n.parse::<usize>().ok();
        }
        if want != got {
            let runs: Vec<usize> = steps
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, Step::Run(..)))
                .map(|(i, _)| i)
                .collect();
            let at = last_access.map_or(0, |n| runs[n]);
            let context: Vec<String> = steps[at.saturating_sub(6)..=at]
                .iter()
                .map(Step::command)
                .collect();
            panic!(
                "output line {line_no}, access {last_access:?}: the model says\n  {want}\nthe \
                 assembled sequence did\n  {got}\nafter the commands\n  {}",
                context.join("\n  ")
            );
        }
    }
    assert_eq!(
        expected.lines().count(),
        actual.lines().count(),
        "the harness printed a different number of lines"
    );
}

#[test]
fn every_assembled_variant_writes_what_the_model_says_on_random_streams() {
    if !epcache_test_support::tools::available(
        "gcc",
        "every_assembled_variant_writes_what_the_model_says",
    ) {
        return;
    }
    let variants = variants();
    let functions = functions(variants.len());
    let numbers = site_numbers(&functions);
    let dir = tempfile::tempdir().unwrap();
    let harness = build_harness(dir.path(), &variants, &functions);
    let mut coverage = Coverage::default();
    let mut calls = 0;
    for seed in [0x5eed_0001, 0x5eed_0002] {
        let steps = stream(seed, ACCESSES, &variants, &functions);
        let mut model = ModelRun {
            block: ModelBlock::default(),
            hook_sets: 0,
            variants: &variants,
            numbers: &numbers,
            accesses: 0,
        };
        let mut expected = String::new();
        for step in &steps {
            model.step(*step, &functions, &mut coverage, &mut expected);
        }
        let actual = run_harness(&harness, &steps);
        compare(&expected, &actual, &steps);
        calls += actual.lines().filter(|l| l.starts_with("call ")).count();
        assert_eq!(
            actual.lines().filter(|l| l.starts_with("A ")).count(),
            ACCESSES
        );
    }
    // Every path of every variant was taken, and every carried variant ran after each kind of
    // path of the site before it.
    let mut missing = Vec::new();
    for (v, access) in variants.iter().enumerate() {
        let mut paths = vec![
            SitePath::Hit,
            SitePath::Batched,
            SitePath::Slow(Slow::MustSync),
            SitePath::Slow(Slow::NotWhole),
            SitePath::Slow(Slow::BatchFull),
        ];
        if access.size > 1 {
            paths.push(SitePath::Slow(Slow::Straddles));
        }
        if access.write {
            paths.push(SitePath::CleanWrite);
        }
        for path in paths {
            if !coverage.paths.contains(&(v, path)) {
                missing.push(format!("{access:?} {path:?}"));
            }
        }
        for slot in 0..SLOTS {
            if !coverage.slots.contains(&(v, slot)) {
                missing.push(format!("{access:?} a hit on slot {slot}"));
            }
        }
        for carried in [Carried::Mask, Carried::MaskAndWord] {
            for before in ["hit", "batched", "call"] {
                if !coverage.carried_after.contains(&(v, carried, before)) {
                    missing.push(format!("{access:?} {carried:?} after a {before}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the streams never took: {missing:#?}"
    );
    assert!(calls > 1000, "{calls} hook calls");
}
