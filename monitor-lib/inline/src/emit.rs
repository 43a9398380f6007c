//! The sequence as AT&T assembly: [`Sites::write`] writes one site in front of a hook call, for
//! every access size the hooks report (1, 2, 4, 8 and 16 bytes), reads and writes, and whatever
//! an earlier site left in the registers ([`Carried`]); [`hooked_access`] says which calls get
//! one.
//!
//! Why: with everything monitored, most accesses touch one of the few lines their L1 set
//! touched last, and the runtime answers them from a per-thread table without simulating (`capture/filter.rs` in
//! `epcache-monitor`). Reaching that table through a call per access (and the hook's own
//! checks) cost about as much as Cachegrind's whole instrumentation. Inline, the test reads
//! the same table at the same thread-local addresses and counts the same hit; every access it
//! cannot answer falls through to the original call, so results do not change.
//!
//! An access the test does not answer, within one line the runtime knows to hold a single
//! data structure, takes its table entry over inline and is appended to the thread's batch,
//! which the runtime simulates in order when it next runs on the thread: the call is left for
//! accesses that straddle lines, lines of two structures, a full batch and threads that do not
//! capture. [`crate::model`] says what each path does; the differential test runs every
//! variant assembled against it.
//!
//! Registers: the sequence writes only registers the call it guards would clobber
//! ([`CLOBBERED`] and the flags), leaves `rdi` (the address) for the call, and touches no
//! stack. Every path leaves the tag word in [`WORD`] and the table's offset mask in [`MASK`],
//! where a later site finds them when nothing in between can have written them (the caller's
//! analysis, `carried_registers.rs` in `epcache cc`, treats any instruction naming one of
//! [`CARRIED_REGISTERS`] as writing it). A change to the sequence (a new path, a path that ends
//! elsewhere, another register) must keep all three, or sites will read a stale or foreign
//! mask.
//!
//! Every number the sequence holds (shifts, masks, sizes, offsets) is written from
//! [`crate::layout`] and [`crate::tag_word`]; the thread-local words are reached with the
//! local-exec model, so the sequence is written only for code linked into an executable (not
//! `-fPIC`), and only into AT&T-syntax listings (gcc's and clang's default).

use std::fmt::Write as _;

use crate::layout::{
    self, DIRTY_MARK, META_SHIFT, OFFSET_SCALE_SHIFT, RECORD_ADDRESS, RECORD_BYTES,
    RECORD_CODE_ADDRESS, RECORD_OLD_READ_HITS, RECORD_OLD_TAG, RECORD_OLD_WRITE_HITS,
    RECORD_ORDER_SHIFT, RECORD_STRUCTURE, SLOT_STRIDE, SLOTS, TAG_WORD_SYMBOL, ThreadWord,
    WHOLE_PAGE_SHIFT, WHOLE_SLOT_MULTIPLIER, WHOLE_SLOTS,
};
use crate::order::{self, TABLE_BYTES};
use crate::tag_word::{MASK_SHIFT, MASK_UNIT_BITS};

/// Where every path of a site leaves the tag word ...
pub const WORD: &str = "%r11";
/// ... and the table's offset mask (in its low 32 bits, `%r10d`).
pub const MASK: &str = "%r10";
/// [`MASK`]'s low 32 bits.
const MASK_32: &str = "%r10d";
/// The registers a site may leave for the next: an instruction naming either, in any width
/// (`%r10d`, `%r11b`, ...), may have written it.
pub const CARRIED_REGISTERS: [&str; 2] = [MASK, WORD];
/// Every register a site writes besides the flags: all are clobbered by the call it guards.
pub const CLOBBERED: [&str; 7] = ["%rax", "%rcx", "%rdx", "%rsi", "%r8", MASK, WORD];
/// The access sizes the fixed-size hooks report.
pub const HOOK_SIZES: [u32; 5] = [1, 2, 4, 8, 16];

// The instructions' operand sizes: `movq` and `cmpq` for the 8-byte words, `movl` for the
// structure, `incb`/`decb` for `in_miss`, and scaled indexes into the whole-line cache.
const _: () = {
    assert!(ThreadWord::WholeStructure.bytes() == 4 && ThreadWord::InMiss.bytes() == 1);
    assert!(ThreadWord::Order.bytes() == 1 && ThreadWord::OrderTables.bytes() == 1);
    assert!(ThreadWord::WholeLo.bytes() == 8 && ThreadWord::WholeHi.bytes() == 8);
    assert!(ThreadWord::SyncedWord.bytes() == 8 && ThreadWord::BatchPos.bytes() == 8);
};

/// A fixed-size access a hook call reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// Bytes, one of [`HOOK_SIZES`]: no longer than the shortest line the runtime's table
    /// takes, so an access spans one line or two consecutive ones, whose entries differ,
    /// which is why one compare tells that it lies in one line (`crate::model` assumes it
    /// too).
    pub size: u32,
    pub write: bool,
}

/// The access a `call` of a fixed-size read or write hook (aligned or unaligned, through the PLT
/// or not) reports; `None` for any other instruction, including the volatile and `_pc`
/// variants, which stay calls.
pub fn hooked_access(line: &str) -> Option<Access> {
    let mut words = line.split_whitespace();
    // gcc writes `call`, clang `callq`.
    if !matches!(words.next()?, "call" | "callq") {
        return None;
    }
    let target = words.next()?;
    if words.next().is_some() {
        return None;
    }
    let name = target.strip_suffix("@PLT").unwrap_or(target);
    let name = name.strip_prefix("__tsan_")?;
    // Aligned and unaligned hooks get the same test: gcc reports packed fields with the aligned
    // ones too, so alignment is what the address usually is, not a promise.
    let name = name.strip_prefix("unaligned_").unwrap_or(name);
    let (write, size) = if let Some(size) = name.strip_prefix("read") {
        (false, size)
    } else {
        (true, name.strip_prefix("write")?)
    };
    let size = HOOK_SIZES.into_iter().find(|s| size == s.to_string())?;
    Some(Access { size, write })
}

/// What a site finds in [`MASK`] and [`WORD`] when it starts, left by an earlier site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carried {
    /// It loads the word into [`WORD`] and decodes the mask into [`MASK`].
    Nothing,
    /// [`MASK`] holds the mask; it loads the word.
    Mask,
    /// Both hold what the last site left.
    MaskAndWord,
}

impl Carried {
    /// Every case, for tests that write each variant.
    pub const ALL: [Carried; 3] = [Carried::Nothing, Carried::Mask, Carried::MaskAndWord];
}

/// Numbers the sites of one listing, so their labels are unique, and counts them.
#[derive(Debug, Default)]
pub struct Sites {
    count: usize,
    carried: usize,
}

impl Sites {
    /// Sites written.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Sites that found the mask, or the mask and the word, left by an earlier site.
    pub fn carried(&self) -> usize {
        self.carried
    }

    /// Writes the test for `access`, then `call` (the original hook call, the path for every
    /// access the test does not answer), then the count of a hit, and the label every path
    /// meets at. `carried` is what the registers hold from an earlier site; every path leaves
    /// [`WORD`] holding the tag word and [`MASK`] the table's offset mask for the next.
    ///
    /// The common path, a read whose site finds both registers and hits its entry's most
    /// recent slot, is 11 instructions, its taken branches included, and three loads: the
    /// order byte, whose low two bits name that slot (`crate::order`), the slot's tag and its
    /// count. The order stays as it is, so only the count is stored: a stream's accesses to
    /// one line, and a gather's to lines it met last, leave no store of the order byte for the
    /// next hit's load of it to wait for (such a store at every hit makes each hit on the
    /// entry wait for the one before). Any other hit compares the slots in turn, a compare
    /// and a branch each, counts, and makes its slot the most recent by one table lookup and
    /// a store. The tag of the last byte is `addr + size - 1 | tag_word`
    /// (`crate::tag_word`), so a thread with a switch to pick up matches nothing and goes to
    /// the miss path, which checks; the entry's offset is `addr & mask`, from the first byte,
    /// scaled by the addressing mode of every entry word (`crate::layout::OFFSET_SCALE_SHIFT`),
    /// which costs nothing and lets 32-byte lines have an entry each. The word and mask are
    /// carried from site to site where nothing in between can change them, since a monitored
    /// program's thread is bound by its loads (docs/performance.md).
    ///
    /// Each compare also tells that the access lies in one line: an entry holds only tags of
    /// lines whose offset is its own, and consecutive lines have different offsets (the runtime
    /// keeps at least two entries, `Filter::entries_for`), so the last byte's tag matches a
    /// slot of the first byte's entry only when both bytes are in its line. The miss path,
    /// which takes a slot over, tests that before it does.
    pub fn write(&mut self, access: Access, carried: Carried, call: &str, out: &mut String) {
        debug_assert!(HOOK_SIZES.contains(&access.size), "{access:?}");
        self.count += 1;
        self.carried += usize::from(carried != Carried::Nothing);
        let n = self.count;
        let slow = format!(".Lepcache.slow.{n}");
        let miss = format!(".Lepcache.miss.{n}");
        let hit = |slot: usize| format!(".Lepcache.hit.{n}.{slot}");
        let done = format!(".Lepcache.done.{n}");
        let back = format!(".Lepcache.back.{n}");
        match carried {
            Carried::Nothing => load_word_and_mask(out),
            Carried::Mask => load_word(out),
            Carried::MaskAndWord => {}
        }
        // The tag: the address of the last line's last byte with the key on top, which is a
        // slot's only when the access lies in the slot's line (see above) and the thread
        // has no switch to pick up.
        if access.size > 1 {
            let _ = writeln!(out, "\tleaq\t{}(%rdi), %rax", access.size - 1);
        } else {
            let _ = writeln!(out, "\tmovq\t%rdi, %rax");
        }
        let _ = writeln!(out, "\torq\t{WORD}, %rax");
        // The entry's byte offset in the table, scaled down: the first byte's address ANDed
        // with the mask (each entry word's address scales it).
        let _ = writeln!(out, "\tmovl\t%edi, %edx");
        let _ = writeln!(out, "\tandl\t{MASK_32}, %edx");
        // The entry's most recent slot first (`crate::order::MOST_RECENT_MASK` of the stored
        // order): a hit there counts and leaves the order as it is.
        let (tags, counts) = if access.write {
            (ThreadWord::WriteTags, ThreadWord::WriteHits)
        } else {
            (ThreadWord::ReadTags, ThreadWord::ReadHits)
        };
        let scan = format!(".Lepcache.scan.{n}");
        let _ = writeln!(out, "\tmovzbl\t{}, %ecx", entry(ThreadWord::Order, 0));
        let _ = writeln!(out, "\tandl\t${}, %ecx", order::MOST_RECENT_MASK);
        let _ = writeln!(out, "\taddq\t%rdx, %rcx");
        let _ = writeln!(out, "\tcmpq\t%rax, {}", taken(tags));
        let _ = writeln!(out, "\tjne\t{scan}");
        let _ = writeln!(out, "\tincq\t{}", taken(counts));
        let _ = writeln!(out, "\tjmp\t{done}");
        let _ = writeln!(out, "{scan}:");
        let count = if access.write {
            // A write matches a written slot; one that owns its line clean is marked written
            // and dirty pending (the runtime marks the line dirty before it next simulates an
            // access to the set), then counted.
            let clean = |slot: usize| format!(".Lepcache.clean.{n}.{slot}");
            for slot in 0..SLOTS {
                let _ = writeln!(out, "\tcmpq\t%rax, {}", entry(ThreadWord::WriteTags, slot));
                let _ = writeln!(out, "\tje\t{}", hit(slot));
            }
            for slot in 0..SLOTS {
                let _ = writeln!(out, "\tcmpq\t%rax, {}", entry(ThreadWord::ReadTags, slot));
                let _ = writeln!(out, "\tje\t{}", clean(slot));
            }
            miss_path(access, &miss, &slow, &back, &done, out);
            for slot in 0..SLOTS {
                let _ = writeln!(out, "{}:", clean(slot));
                let _ = writeln!(out, "\tmovq\t%rax, {}", entry(ThreadWord::WriteTags, slot));
                // The mark is the record's dirty bit, so the miss path ORs it into the meta
                // byte as it is.
                let _ = writeln!(
                    out,
                    "\tmovq\t${DIRTY_MARK}, {}",
                    entry(ThreadWord::DirtyPending, slot)
                );
                let _ = writeln!(out, "\tjmp\t{}", hit(slot));
            }
            ThreadWord::WriteHits
        } else {
            // A read matches a clean or a written slot.
            for slot in 0..SLOTS {
                let _ = writeln!(out, "\tcmpq\t%rax, {}", entry(ThreadWord::ReadTags, slot));
                let _ = writeln!(out, "\tje\t{}", hit(slot));
            }
            miss_path(access, &miss, &slow, &back, &done, out);
            ThreadWord::ReadHits
        };
        let _ = writeln!(out, "{slow}:");
        let _ = writeln!(out, "{call}");
        let _ = writeln!(out, "{back}:");
        // The call may have switched the thread, and clobbered both registers.
        load_word_and_mask(out);
        let _ = writeln!(out, "\tjmp\t{done}");
        // A hit the scan found counts, and its slot becomes the entry's most recent
        // (`crate::order`): never the most recent already (the probe above took that one), so
        // the new order is always stored.
        for slot in 0..SLOTS {
            let _ = writeln!(out, "{}:", hit(slot));
            let _ = writeln!(out, "\tincq\t{}", entry(count, slot));
            let _ = writeln!(out, "\tmovzbl\t{}, %ecx", entry(ThreadWord::Order, 0));
            let _ = writeln!(
                out,
                "\tmovzbl\t{}(%rcx), %ecx",
                tls_at(
                    ThreadWord::OrderTables,
                    order::AFTER_HIT + slot * TABLE_BYTES
                )
            );
            let _ = writeln!(out, "\tmovb\t%cl, {}", entry(ThreadWord::Order, 0));
            if slot + 1 < SLOTS {
                let _ = writeln!(out, "\tjmp\t{done}");
            }
        }
        let _ = writeln!(out, "{done}:");
    }
}

/// Loads the tag word into [`WORD`].
fn load_word(out: &mut String) {
    let _ = writeln!(out, "\tmovq\t{TAG_WORD_SYMBOL}(%rip), {WORD}");
}

/// Loads the tag word into [`WORD`] and the table's offset mask, kept in the word's top byte in
/// units of entries (`crate::tag_word::offset_mask_of`), into [`MASK`].
fn load_word_and_mask(out: &mut String) {
    load_word(out);
    let _ = writeln!(out, "\tmovq\t{WORD}, {MASK}");
    let _ = writeln!(out, "\tshrq\t${MASK_SHIFT}, {MASK}");
    let _ = writeln!(out, "\tshll\t${MASK_UNIT_BITS}, {MASK_32}");
}

/// A thread-local word, at its first value.
fn tls(word: ThreadWord) -> String {
    format!("%fs:{}@tpoff", word.symbol())
}

/// A thread-local word, `bytes` past its first value.
fn tls_at(word: ThreadWord, bytes: usize) -> String {
    match bytes {
        0 => tls(word),
        _ => format!("{}+{bytes}", tls(word)),
    }
}

/// The word of `slot` in the table entry whose byte offset, scaled down by the addressing
/// mode's scale ([`OFFSET_SCALE_SHIFT`]), is in `%rdx`.
fn entry(word: ThreadWord, slot: usize) -> String {
    debug_assert!(word.entry_offset().is_some(), "{word:?}");
    format!(
        "{}(,%rdx,{})",
        tls_at(word, slot * SLOT_STRIDE),
        1 << OFFSET_SCALE_SHIFT
    )
}

/// The word of the slot the miss path takes: `%rcx` holds the entry's scaled-down offset plus
/// the slot's number (a slot's words are one scale apart).
fn taken(word: ThreadWord) -> String {
    debug_assert!(word.entry_offset().is_some(), "{word:?}");
    format!("{}(,%rcx,{})", tls(word), 1 << OFFSET_SCALE_SHIFT)
}

/// The whole-line cache's word for the slot in `%rcx`.
fn whole(word: ThreadWord) -> String {
    format!("{}(,%rcx,{})", tls(word), word.bytes())
}

/// The word `index` of the batch record whose address is in `%rsi`.
fn record(index: usize) -> String {
    format!("{}(%rsi)", index * 8)
}

/// The miss path, at `miss`: an access (last byte's tag in `%rax`, entry offset in `%rdx`)
/// that the entry does not answer, of a thread with nothing to sync (its synced word is the
/// tag word), that lies in one line takes the entry over and is appended to the thread's
/// batch, for the runtime to simulate later in order (`Filter::inline_miss` in the runtime does
/// the same): when its line is known whole (`whole_lo <= addr < whole_hi` in the page's slot)
/// and the batch has room. The old owner's tag, hits and dirty mark move into the record, with
/// the line's data structure from the slot, and the site's code address: `back`, where the call
/// returns to, which is what the runtime is given for the same access through the call. Anything
/// else goes to `slow`; the path ends with a jump to `done`.
fn miss_path(access: Access, miss: &str, slow: &str, back: &str, done: &str, out: &mut String) {
    let meta = layout::meta(access.size, access.write);
    let _ = writeln!(out, "{miss}:");
    // The thread captures and has no switch to pick up.
    let _ = writeln!(out, "\tmovq\t{TAG_WORD_SYMBOL}(%rip), %rcx");
    let _ = writeln!(out, "\tcmpq\t%rcx, {}", tls(ThreadWord::SyncedWord));
    let _ = writeln!(out, "\tjne\t{slow}");
    if access.size > 1 {
        // One line only: the first byte's tag is the last byte's (in `%rax`).
        let _ = writeln!(out, "\torq\t%rdi, %rcx");
        let _ = writeln!(out, "\tcmpq\t%rax, %rcx");
        let _ = writeln!(out, "\tjne\t{slow}");
    }
    // The slot: `crate::layout::whole_slot`, the page number's low 32 bits hashed.
    let _ = writeln!(out, "\tmovq\t%rdi, %rcx");
    let _ = writeln!(out, "\tshrq\t${WHOLE_PAGE_SHIFT}, %rcx");
    let _ = writeln!(out, "\timull\t${WHOLE_SLOT_MULTIPLIER:#x}, %ecx, %ecx");
    let _ = writeln!(
        out,
        "\tshrl\t${}, %ecx",
        u32::BITS - WHOLE_SLOTS.trailing_zeros()
    );
    let _ = writeln!(out, "\tcmpq\t{}, %rdi", whole(ThreadWord::WholeLo));
    let _ = writeln!(out, "\tjb\t{slow}");
    let _ = writeln!(out, "\tcmpq\t{}, %rdi", whole(ThreadWord::WholeHi));
    let _ = writeln!(out, "\tjae\t{slow}");
    let _ = writeln!(out, "\tmovl\t{}, %ecx", whole(ThreadWord::WholeStructure));
    // From loading the batch position to storing it back, `in_miss` tells a signal handler
    // that interrupts here that this path will still write where it loaded: the runtime then
    // keeps the batch where it is.
    let full = format!(".Lepcache.full.{}", &miss[".Lepcache.miss.".len()..]);
    let _ = writeln!(out, "\tincb\t{}", tls(ThreadWord::InMiss));
    let _ = writeln!(out, "\tmovq\t{}, %rsi", tls(ThreadWord::BatchPos));
    let _ = writeln!(out, "\tcmpq\t{}, %rsi", tls(ThreadWord::BatchEnd));
    let _ = writeln!(out, "\tjae\t{full}");
    // The line's data structure, from the whole-line cache, with the entry's order byte before
    // the access above it, for the runtime to learn the order the slots' hits left.
    let _ = writeln!(out, "\tmovq\t%rcx, {}", record(RECORD_STRUCTURE));
    let _ = writeln!(out, "\tmovzbl\t{}, %r8d", entry(ThreadWord::Order, 0));
    let _ = writeln!(
        out,
        "\tmovb\t%r8b, {}(%rsi)",
        RECORD_STRUCTURE * 8 + RECORD_ORDER_SHIFT as usize / 8
    );
    // The entry's order after the access, and the slot it takes: the least recent one.
    let tables = ThreadWord::OrderTables;
    let _ = writeln!(
        out,
        "\tmovzbl\t{}(%r8), %ecx",
        tls_at(tables, order::AFTER_MISS)
    );
    let _ = writeln!(out, "\tmovb\t%cl, {}", entry(ThreadWord::Order, 0));
    let _ = writeln!(
        out,
        "\tmovzbl\t{}(%r8), %ecx",
        tls_at(tables, order::VICTIM)
    );
    let _ = writeln!(out, "\taddq\t%rdx, %rcx");
    // The first word: the address, its top byte the meta byte (size, write, the old dirty
    // mark), made in a register and stored once.
    let _ = writeln!(out, "\tmovq\t{}, %r8", taken(ThreadWord::DirtyPending));
    let _ = writeln!(out, "\torq\t${meta}, %r8");
    let _ = writeln!(out, "\tshlq\t${META_SHIFT}, %r8");
    let _ = writeln!(out, "\torq\t%rdi, %r8");
    let _ = writeln!(out, "\tmovq\t%r8, {}", record(RECORD_ADDRESS));
    let _ = writeln!(out, "\tmovq\t$0, {}", taken(ThreadWord::DirtyPending));
    // The old owner's tag and hits move into the record; the hits start again at 0.
    for (word, index) in [
        (ThreadWord::ReadTags, RECORD_OLD_TAG),
        (ThreadWord::ReadHits, RECORD_OLD_READ_HITS),
        (ThreadWord::WriteHits, RECORD_OLD_WRITE_HITS),
    ] {
        let _ = writeln!(out, "\tmovq\t{}, %r8", taken(word));
        let _ = writeln!(out, "\tmovq\t%r8, {}", record(index));
    }
    let _ = writeln!(out, "\tmovq\t$0, {}", taken(ThreadWord::ReadHits));
    let _ = writeln!(out, "\tmovq\t$0, {}", taken(ThreadWord::WriteHits));
    // The slot becomes the access's: its tag as read tag, and as write tag for a write.
    let _ = writeln!(out, "\tmovq\t%rax, {}", taken(ThreadWord::ReadTags));
    let written = if access.write { "%rax" } else { "$0" };
    let _ = writeln!(out, "\tmovq\t{written}, {}", taken(ThreadWord::WriteTags));
    // The site's code address, for the access's source line.
    let _ = writeln!(out, "\tleaq\t{back}(%rip), %r8");
    let _ = writeln!(out, "\tmovq\t%r8, {}", record(RECORD_CODE_ADDRESS));
    let _ = writeln!(out, "\taddq\t${RECORD_BYTES}, %rsi");
    let _ = writeln!(out, "\tmovq\t%rsi, {}", tls(ThreadWord::BatchPos));
    let _ = writeln!(out, "\tdecb\t{}", tls(ThreadWord::InMiss));
    let _ = writeln!(out, "\tjmp\t{done}");
    let _ = writeln!(out, "{full}:");
    let _ = writeln!(out, "\tdecb\t{}", tls(ThreadWord::InMiss));
    let _ = writeln!(out, "\tjmp\t{slow}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(size: u32, write: bool) -> Access {
        Access { size, write }
    }

    #[test]
    fn only_fixed_size_read_and_write_hook_calls_are_inlined() {
        for (line, size, write) in [
            ("\tcall\t__tsan_read8@PLT", 8, false),
            ("\tcall\t__tsan_write1", 1, true),
            ("\tcall\t__tsan_unaligned_write16@PLT", 16, true),
            ("\tcall\t__tsan_unaligned_read2", 2, false),
        ] {
            assert_eq!(hooked_access(line), Some(access(size, write)), "{line}");
        }
        assert_eq!(
            hooked_access("\tcallq\t__tsan_read16@PLT"),
            Some(access(16, false)),
            "clang's spelling"
        );
        for other in [
            "\tcall\t__tsan_volatile_read8@PLT",
            "\tcall\t__tsan_read8_pc@PLT",
            "\tcall\t__tsan_read_range@PLT",
            "\tcall\t__tsan_read3@PLT",
            "\tcall\t__tsan_func_entry@PLT",
            "\tjmp\t__tsan_read8@PLT",
            "\tcall\t*__tsan_read8@GOTPCREL(%rip)",
            "\tcall\tmy__tsan_read8",
            "\tmovq\t__tsan_read8@GOTPCREL(%rip), %rax",
        ] {
            assert_eq!(hooked_access(other), None, "{other}");
        }
    }

    /// The sites a test writes, one after the other.
    fn written(accesses: &[(Access, &str)]) -> (Sites, String) {
        let mut sites = Sites::default();
        let mut out = String::new();
        for (access, call) in accesses {
            sites.write(*access, Carried::Nothing, call, &mut out);
        }
        (sites, out)
    }

    /// The entry word `word` of slot `slot`, as the sites address it.
    fn entry_word(word: &str, slot: usize) -> String {
        let at = if slot == 0 {
            String::new()
        } else {
            format!("+{}", slot * 8)
        };
        format!("%fs:epcache_inline_v9_{word}@tpoff{at}(,%rdx,8)")
    }

    #[test]
    fn each_site_has_its_own_labels_and_keeps_its_call() {
        let read = "\tcall\t__tsan_read8@PLT";
        let (sites, out) = written(&[
            (access(8, false), read),
            (access(1, true), "\tcall\t__tsan_write1"),
        ]);
        assert_eq!(sites.count(), 2);
        let labels: Vec<&str> = out.lines().filter(|l| l.ends_with(':')).collect();
        let mut expected = vec![
            ".Lepcache.scan.1:".to_owned(),
            ".Lepcache.miss.1:".to_owned(),
            ".Lepcache.full.1:".to_owned(),
        ];
        expected.extend([".Lepcache.slow.1:", ".Lepcache.back.1:"].map(str::to_owned));
        expected.extend((0..SLOTS).map(|s| format!(".Lepcache.hit.1.{s}:")));
        expected.push(".Lepcache.done.1:".to_owned());
        expected.extend(
            [
                ".Lepcache.scan.2:",
                ".Lepcache.miss.2:",
                ".Lepcache.full.2:",
            ]
            .map(str::to_owned),
        );
        expected.extend((0..SLOTS).map(|s| format!(".Lepcache.clean.2.{s}:")));
        expected.extend([".Lepcache.slow.2:", ".Lepcache.back.2:"].map(str::to_owned));
        expected.extend((0..SLOTS).map(|s| format!(".Lepcache.hit.2.{s}:")));
        expected.push(".Lepcache.done.2:".to_owned());
        assert_eq!(labels, expected);
        // The call follows its slow label, returns to the label whose address the miss path
        // records, reloads the registers the next site may take and skips the count; the read
        // counts reads, the write writes.
        let lines: Vec<&str> = out.lines().collect();
        let slow = lines
            .iter()
            .position(|l| *l == ".Lepcache.slow.1:")
            .unwrap();
        assert_eq!(lines[slow + 1], read);
        assert_eq!(lines[slow + 2], ".Lepcache.back.1:");
        assert_eq!(
            lines[slow + 3..slow + 8],
            [
                "\tmovq\tepcache_inline_v9_tag_word(%rip), %r11",
                "\tmovq\t%r11, %r10",
                "\tshrq\t$56, %r10",
                "\tshll\t$5, %r10d",
                "\tjmp\t.Lepcache.done.1"
            ]
        );
        // A hit on a slot found by the scan counts in its slot and makes the slot the most
        // recent by the table of its slot.
        for slot in 0..SLOTS {
            let at = lines
                .iter()
                .position(|l| *l == format!(".Lepcache.hit.1.{slot}:"))
                .unwrap();
            assert_eq!(
                lines[at + 1..at + 5],
                [
                    format!("\tincq\t{}", entry_word("read_hits", slot)),
                    format!("\tmovzbl\t{}, %ecx", entry_word("order", 0)),
                    format!(
                        "\tmovzbl\t%fs:epcache_inline_v9_order_tables@tpoff{}(%rcx), %ecx",
                        if slot == 0 {
                            String::new()
                        } else {
                            format!("+{}", slot * 256)
                        }
                    ),
                    format!("\tmovb\t%cl, {}", entry_word("order", 0)),
                ]
            );
        }
        let (first_site, second_site) = out.split_at(out.find(".Lepcache.done.1:").unwrap());
        let first_test = &first_site[..first_site.find(".Lepcache.miss.1:").unwrap()];
        assert!(!first_test.contains("write_tags") && !first_test.contains("dirty_pending"));
        assert!(!first_site.contains("incq\t%fs:epcache_inline_v9_write_hits"));
        assert!(second_site.contains(&format!("\tincq\t{}\n", entry_word("write_hits", 3))));
        // A write matches a written slot first; one owning its line clean is marked written
        // and dirty pending, then counted.
        let second_test = &second_site[..second_site.find(".Lepcache.miss.2:").unwrap()];
        let mut compares = String::new();
        for (word, label) in [("write_tags", "hit"), ("read_tags", "clean")] {
            for slot in 0..SLOTS {
                compares.push_str(&format!(
                    "\tcmpq\t%rax, {}\n\tje\t.Lepcache.{label}.2.{slot}\n",
                    entry_word(word, slot)
                ));
            }
        }
        assert!(second_test.ends_with(&compares), "{second_test}");
        // A write tries the most recent slot's write tag first, and counts a write there.
        assert!(
            second_test.contains(
                "\tcmpq\t%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)\n\
                 \tjne\t.Lepcache.scan.2\n\
                 \tincq\t%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)\n"
            ),
            "{second_test}"
        );
        for slot in 0..SLOTS {
            let clean = &second_site[second_site
                .find(&format!(".Lepcache.clean.2.{slot}:"))
                .unwrap()..];
            assert!(clean.starts_with(&format!(
                ".Lepcache.clean.2.{slot}:\n\tmovq\t%rax, {}\n\tmovq\t$64, {}\n\tjmp\t.Lepcache.hit.2.{slot}\n",
                entry_word("write_tags", slot),
                entry_word("dirty_pending", slot)
            )));
        }
        // A one-byte access cannot straddle lines: its tag is its own address's.
        assert!(!second_test.contains("leaq"));
        assert!(second_test.contains("\tmovq\t%rdi, %rax\n"));
    }

    #[test]
    fn a_miss_takes_the_least_recent_slot_and_appends_a_record_or_calls() {
        let (_, read) = written(&[(access(8, false), "\tcall\t__tsan_read8")]);
        let (_, write) = written(&[(access(4, true), "\tcall\t__tsan_write4")]);
        for (out, meta, written) in [(&read, 8, "$0"), (&write, 4 | 1 << 5, "%rax")] {
            let miss = &out
                [out.find(".Lepcache.miss.1:").unwrap()..out.find(".Lepcache.slow.1:").unwrap()];
            let miss = &miss[..miss.find(".Lepcache.clean.1.0:").unwrap_or(miss.len())];
            // Only for a thread with nothing to sync, one-line accesses, in whole lines, while
            // the batch has room; else the call.
            assert!(
                miss.starts_with(
                    ".Lepcache.miss.1:\n\tmovq\tepcache_inline_v9_tag_word(%rip), %rcx\n\tcmpq\t%rcx, %fs:epcache_inline_v9_synced_word@tpoff\n\tjne\t.Lepcache.slow.1\n\torq\t%rdi, %rcx\n\tcmpq\t%rax, %rcx\n\tjne\t.Lepcache.slow.1\n"
                ),
                "{miss}"
            );
            assert_eq!(miss.matches("\tjb\t.Lepcache.slow.1\n").count(), 1);
            assert_eq!(miss.matches("\tjae\t.Lepcache.slow.1\n").count(), 1);
            // The batch position is loaded and stored back inside `in_miss`, on both ways out.
            assert!(miss.contains("\tincb\t%fs:epcache_inline_v9_in_miss@tpoff\n\tmovq\t%fs:epcache_inline_v9_batch_pos@tpoff, %rsi\n\tcmpq\t%fs:epcache_inline_v9_batch_end@tpoff, %rsi\n\tjae\t.Lepcache.full.1\n"), "{miss}");
            assert!(miss.ends_with(".Lepcache.full.1:\n\tdecb\t%fs:epcache_inline_v9_in_miss@tpoff\n\tjmp\t.Lepcache.slow.1\n"), "{miss}");
            // The structure, the order byte before the access above it; the order after it
            // and the slot taken, by the tables; the slot's words at `%rcx`.
            let order = entry_word("order", 0);
            let tables = "%fs:epcache_inline_v9_order_tables@tpoff";
            assert!(
                miss.contains(
                    "\tmovl\t%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx\n\
                     \tincb\t%fs:epcache_inline_v9_in_miss@tpoff\n"
                ),
                "{miss}"
            );
            assert!(
                miss.contains(&format!(
                    "\tjae\t.Lepcache.full.1\n\tmovq\t%rcx, 32(%rsi)\n\tmovzbl\t{order}, %r8d\n\
                     \tmovb\t%r8b, 36(%rsi)\n\tmovzbl\t{tables}+1024(%r8), %ecx\n\
                     \tmovb\t%cl, {order}\n\tmovzbl\t{tables}+1280(%r8), %ecx\n\
                     \taddq\t%rdx, %rcx\n"
                )),
                "{miss}"
            );
            let taken = |word: &str| format!("%fs:epcache_inline_v9_{word}@tpoff(,%rcx,8)");
            // Word 0, stored once: the meta byte (size, write, the old dirty mark) over the
            // address's top byte; the mark is cleared.
            let dirty = taken("dirty_pending");
            assert!(
                miss.contains(&format!(
                    "\tmovq\t{dirty}, %r8\n\torq\t${meta}, %r8\n\tshlq\t$56, %r8\n\
                     \torq\t%rdi, %r8\n\tmovq\t%r8, 0(%rsi)\n\tmovq\t$0, {dirty}\n"
                )),
                "{miss}"
            );
            // The old owner's tag and hits move into the record; the hits start again at 0
            // and the tags become the access's, the write tag only for a write.
            assert!(miss.contains(&format!(
                "\tmovq\t{}, %r8\n\tmovq\t%r8, 8(%rsi)\n\tmovq\t{}, %r8\n\tmovq\t%r8, 16(%rsi)\n\
                 \tmovq\t{}, %r8\n\tmovq\t%r8, 24(%rsi)\n\tmovq\t$0, {}\n\tmovq\t$0, {}\n\
                 \tmovq\t%rax, {}\n\tmovq\t{written}, {}\n",
                taken("read_tags"),
                taken("read_hits"),
                taken("write_hits"),
                taken("read_hits"),
                taken("write_hits"),
                taken("read_tags"),
                taken("write_tags"),
            )));
            assert!(miss.contains("\tleaq\t.Lepcache.back.1(%rip), %r8\n\tmovq\t%r8, 40(%rsi)\n\taddq\t$48, %rsi\n\tmovq\t%rsi, %fs:epcache_inline_v9_batch_pos@tpoff\n\tdecb\t%fs:epcache_inline_v9_in_miss@tpoff\n\tjmp\t.Lepcache.done.1\n"));
        }
    }

    #[test]
    fn every_access_compares_its_last_bytes_tag_with_its_first_bytes_entry() {
        let (_, aligned) = written(&[(access(8, false), "\tcall\t__tsan_read8")]);
        // The common path: the tag word (one load) and the mask from its top byte (3), the tag
        // (2), the offset from the first byte (2), the most recent slot's tag compared and its
        // count, then the compares with each slot's tag; no epoch compare, no alignment test,
        // no thread-local mask.
        let common = &aligned[..aligned.find(".Lepcache.miss.1:").unwrap()];
        let mut expected = String::from(
            "\tmovq\tepcache_inline_v9_tag_word(%rip), %r11\n\tmovq\t%r11, %r10\n\
             \tshrq\t$56, %r10\n\tshll\t$5, %r10d\n\tleaq\t7(%rdi), %rax\n\
             \torq\t%r11, %rax\n\tmovl\t%edi, %edx\n\tandl\t%r10d, %edx\n\
             \tmovzbl\t%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx\n\tandl\t$3, %ecx\n\
             \taddq\t%rdx, %rcx\n\tcmpq\t%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)\n\
             \tjne\t.Lepcache.scan.1\n\tincq\t%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)\n\
             \tjmp\t.Lepcache.done.1\n.Lepcache.scan.1:\n",
        );
        for slot in 0..SLOTS {
            expected.push_str(&format!(
                "\tcmpq\t%rax, {}\n\tje\t.Lepcache.hit.1.{slot}\n",
                entry_word("read_tags", slot)
            ));
        }
        assert_eq!(common, expected);
        // A site that finds the mask loads the word only; one that finds both loads nothing.
        let tail = "\tleaq\t7(%rdi), %rax\n";
        for (carried, head) in [
            (
                Carried::Mask,
                "\tmovq\tepcache_inline_v9_tag_word(%rip), %r11\n",
            ),
            (Carried::MaskAndWord, ""),
        ] {
            let mut out = String::new();
            Sites::default().write(access(8, false), carried, "\tcall\t__tsan_read8", &mut out);
            assert!(
                out.starts_with(&format!("{head}{tail}")),
                "{carried:?}: {out}"
            );
        }
        assert!(!aligned.contains("testb"), "{aligned}");
        assert!(!aligned.contains("offset_mask"), "{aligned}");
        // Aligned or not, and 16 bytes that may straddle two 8-byte lines: the same test.
        for (access, call) in [
            (access(8, false), "\tcall\t__tsan_read8"),
            (access(8, true), "\tcall\t__tsan_unaligned_write8"),
            (access(16, false), "\tcall\t__tsan_read16"),
        ] {
            let (_, out) = written(&[(access, call)]);
            let test = &out[..out.find(".Lepcache.miss.1:").unwrap()];
            let tag = format!(
                "\tleaq\t{}(%rdi), %rax\n\torq\t%r11, %rax\n",
                access.size - 1
            );
            assert!(test.contains(&tag), "{out}");
            // The offset is the first byte's (`%edi`).
            assert!(
                test.contains("\tmovl\t%edi, %edx\n\tandl\t%r10d, %edx\n"),
                "{out}"
            );
        }
        let (_, byte) = written(&[(access(1, true), "\tcall\t__tsan_write1")]);
        assert!(
            byte.contains("\tshll\t$5, %r10d\n\tmovq\t%rdi, %rax\n\torq\t%r11, %rax\n"),
            "{byte}"
        );
    }
}
