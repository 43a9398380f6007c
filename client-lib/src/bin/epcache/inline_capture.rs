//! Inline capture for `epcache cc`: in the instrumented copy of a dual-compiled function, each
//! call to a fixed-size TSan access hook is preceded by the runtime's repeat-hit test, written
//! inline, so most accesses of a kernel that walks its arrays line by line cost a few
//! instructions and no call.
//!
//! Why: with everything monitored, most accesses touch the line their L1 set touched last, and
//! the runtime answers them from a per-thread table without simulating (`capture/filter.rs`).
//! Reaching that table through a call per access (and the hook's own checks) cost about as much
//! as Cachegrind's whole instrumentation. Inline, the test reads the same table at the same
//! thread-local addresses and counts the same hit; every access it cannot answer falls through
//! to the original call, so results do not change (tested by building one source with and
//! without it).
//!
//! An access the test does not answer, within one line the runtime knows to hold a single
//! data structure, takes its filter entry over inline and is appended to the thread's batch,
//! which the runtime simulates in order when it next runs on the thread (`capture/filter.rs`):
//! the call is left for accesses that straddle lines, lines of two structures, a full batch
//! and threads that do not capture.
//!
//! The sequence uses only registers the call it guards would clobber (`rax`, `rcx`, `rdx`,
//! `rsi`, `r8`, `r10`, `r11`, `xmm0` and the flags), leaves `rdi` (the address) for the call,
//! and touches no stack. It leaves the tag word in `r11` and the table's offset mask in `r10`,
//! where a later site finds them when nothing in between can have written them
//! (`carried_registers.rs`). It names the runtime's inline capture ABI (`epcache_inline_v6_*`,
//! defined in `monitor-lib/src/capture/thread_block.rs`): thread-local symbols reached with the
//! local-exec model, so it is written only for code linked into an executable (not `-fPIC`),
//! and only into AT&T-syntax listings (gcc's and clang's default).

use std::fmt::Write as _;

use crate::carried_registers::{self, Carried};

/// Environment variable that turns inline capture off (`off`, `0`, `no`): every access then
/// calls its hook, as in an instrumented-only build.
pub(crate) const INLINE_ENV: &str = "EPCACHE_CC_INLINE";

/// A symbol every runtime with this ABI defines: its absence explains a failed link.
pub(crate) const ABI_PROBE: &str = "epcache_inline_v6_read_tags";

/// Whether inline capture is wanted (it is unless switched off).
pub(crate) fn wanted() -> bool {
    !std::env::var(INLINE_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no"))
}

/// A fixed-size access a hook call reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HookedAccess {
    pub(crate) size: u8,
    pub(crate) write: bool,
}

/// The access a `call` of a fixed-size read or write hook (aligned or unaligned, through the PLT
/// or not) reports; `None` for any other instruction, including the volatile and `_pc`
/// variants, which stay calls.
pub(crate) fn hooked_access(line: &str) -> Option<HookedAccess> {
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
    let size = match size {
        "1" => 1,
        "2" => 2,
        "4" => 4,
        "8" => 8,
        "16" => 16,
        _ => return None,
    };
    Some(HookedAccess { size, write })
}

/// `listing` (a whole compiler listing, AT&T syntax) with every fixed-size hook call preceded
/// by the inline test, and how many calls got one: for clang's instrumented-only objects, whose
/// every function is the captured copy (gcc's go through `dual_asm.rs`, which does the same to
/// the captured copies it merges). The test is safe in front of any such call: it uses only
/// registers the call clobbers anyway and leaves the call's argument as it was.
pub(crate) fn rewrite_listing(listing: &str) -> (String, Sites) {
    let mut sites = Sites::default();
    let mut out = String::with_capacity(listing.len() * 2);
    let lines: Vec<&str> = listing.lines().collect();
    let carried = carried_registers::carried(&lines, |l| hooked_access(l).is_some());
    for (line, carried) in lines.iter().zip(carried) {
        match hooked_access(line) {
            Some(access) => sites.write(access, carried, line, &mut out),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, sites)
}

/// Numbers the inline sites of one listing, so their labels are unique.
#[derive(Debug, Default)]
pub(crate) struct Sites {
    count: usize,
    carried: usize,
}

impl Sites {
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Sites that found the mask, or the mask and the word, left by an earlier site.
    pub(crate) fn carried(&self) -> usize {
        self.carried
    }

    /// Writes the test for `access`, then `call` (the original hook call, the path for every
    /// access the test does not answer), then the count of a hit, and the label every path
    /// meets at. `carried` is what the registers hold from an earlier site
    /// (`carried_registers.rs`); every path leaves `%r11` holding the tag word and `%r10` the
    /// table's offset mask for the next.
    ///
    /// The common path of a read whose site finds both is 7 instructions, its taken branch to
    /// the count included, and two loads: the tag compared and the count. The tag word holds
    /// L1's line bits, a key (`tag_key.rs` in the runtime) that changes at every switch the
    /// thread must sync for, and the table's offset mask in its top byte. The tag of the last
    /// byte is `addr + size - 1 | tag_word`, so a thread with a switch to pick up matches
    /// nothing and goes to the miss path, which checks; the entry's offset is `addr & mask`,
    /// from the first byte (entries are 64 bytes, one per line, so the address needs no shift).
    /// Carrying the word and mask from site to site took the monitored matmul bench's run
    /// about 4% shorter than loading and decoding them at every site.
    ///
    /// One compare also tells that the access lies in one line: an entry holds only tags of
    /// lines whose offset is its own, and consecutive lines have different offsets (the runtime
    /// keeps at least two entries, `Filter::entries_for`), so the last byte's tag matches the
    /// first byte's entry only when both bytes are in its line. The miss path, which takes the
    /// entry over, tests that before it does.
    pub(crate) fn write(
        &mut self,
        access: HookedAccess,
        carried: Carried,
        call: &str,
        out: &mut String,
    ) {
        self.count += 1;
        self.carried += usize::from(carried != Carried::Nothing);
        let n = self.count;
        let slow = format!(".Lepcache.slow.{n}");
        let miss = format!(".Lepcache.miss.{n}");
        let hit = format!(".Lepcache.hit.{n}");
        let done = format!(".Lepcache.done.{n}");
        match carried {
            Carried::Nothing => load_word_and_mask(out),
            Carried::Mask => load_word(out),
            Carried::MaskAndWord => {}
        }
        // The tag: the address of the last line's last byte with the key on top, which is the
        // entry's only when the access lies in the entry's line (see above) and the thread
        // has no switch to pick up.
        if access.size > 1 {
            let _ = writeln!(out, "\tleaq\t{}(%rdi), %rax", access.size - 1);
        } else {
            let _ = writeln!(out, "\tmovq\t%rdi, %rax");
        }
        let _ = writeln!(out, "\torq\t%r11, %rax");
        // The entry's byte offset in the table (`Filter::offset`): the first byte's address
        // ANDed with the mask.
        let _ = writeln!(out, "\tmovl\t%edi, %edx");
        let _ = writeln!(out, "\tandl\t%r10d, %edx");
        let count = if access.write {
            // A write matches a written entry; one that owns its block clean is marked written
            // and dirty pending (the runtime marks the line dirty before it next simulates an
            // access to the set, `filter.rs`), then counted.
            let clean = format!(".Lepcache.clean.{n}");
            let _ = writeln!(out, "\tcmpq\t%rax, {}", entry("write_tags"));
            let _ = writeln!(out, "\tje\t{hit}");
            let _ = writeln!(out, "\tcmpq\t%rax, {}", entry("read_tags"));
            let _ = writeln!(out, "\tje\t{clean}");
            miss_path(access, &miss, &slow, &done, out);
            let _ = writeln!(out, "{clean}:");
            let _ = writeln!(out, "\tmovq\t%rax, {}", entry("write_tags"));
            // The mark is the record's dirty bit (`DIRTY_MARK`), so the miss path ORs it
            // into the meta byte as it is.
            let _ = writeln!(out, "\tmovq\t$64, {}", entry("dirty_pending"));
            let _ = writeln!(out, "\tjmp\t{hit}");
            "write_hits"
        } else {
            // A read matches a clean or a written entry.
            let _ = writeln!(out, "\tcmpq\t%rax, {}", entry("read_tags"));
            let _ = writeln!(out, "\tje\t{hit}");
            miss_path(access, &miss, &slow, &done, out);
            "read_hits"
        };
        let _ = writeln!(out, "{slow}:");
        let _ = writeln!(out, "{call}");
        // The call may have switched the thread, and clobbered both registers.
        load_word_and_mask(out);
        let _ = writeln!(out, "\tjmp\t{done}");
        let _ = writeln!(out, "{hit}:");
        let _ = writeln!(out, "\tincq\t{}", entry(count));
        let _ = writeln!(out, "{done}:");
    }
}

/// The process-wide tag word of the inline capture ABI (not thread-local).
const TAG_WORD: &str = "epcache_inline_v6_tag_word";

/// Loads the tag word into `%r11`.
fn load_word(out: &mut String) {
    let _ = writeln!(out, "\tmovq\t{TAG_WORD}(%rip), %r11");
}

/// Loads the tag word into `%r11` and the table's offset mask, kept in the word's top byte in
/// units of 64 (`tag_key.rs`), into `%r10`.
fn load_word_and_mask(out: &mut String) {
    load_word(out);
    let _ = writeln!(out, "\tmovq\t%r11, %r10");
    let _ = writeln!(out, "\tshrq\t$56, %r10");
    let _ = writeln!(out, "\tshll\t$6, %r10d");
}

/// A thread-local word of the inline capture ABI.
fn tls(name: &str) -> String {
    format!("%fs:epcache_inline_v6_{name}@tpoff")
}

/// The word `name` of the filter entry whose byte offset is in `%rdx`.
fn entry(name: &str) -> String {
    format!("{}(%rdx)", tls(name))
}

/// The word at byte `offset` of the batch record whose address is in `%rsi`.
fn record(offset: u8) -> String {
    format!("{offset}(%rsi)")
}

/// The miss path, at `miss`: an access (last byte's tag in `%rax`, entry offset in `%rdx`)
/// that the entry does not answer, of a thread with nothing to sync (its synced word is the
/// tag word), that lies in one line takes the entry over and is appended to the thread's
/// batch, for the runtime to simulate later in order (`Filter::inline_miss` is its model): when
/// its line is known whole (`whole_lo <= addr < whole_hi` in the page's slot) and the batch has
/// room. The old owner's tag, hits and dirty mark move into the record, with the line's data
/// structure from the slot. Anything else goes to
/// `slow`; the path ends with a jump to `done`.
fn miss_path(access: HookedAccess, miss: &str, slow: &str, done: &str, out: &mut String) {
    let meta = (access.size & 31) | u8::from(access.write) << 5;
    let _ = writeln!(out, "{miss}:");
    // The thread captures and has no switch to pick up (`Hot::synced_word`).
    let _ = writeln!(out, "\tmovq\t{TAG_WORD}(%rip), %rcx");
    let _ = writeln!(out, "\tcmpq\t%rcx, {}", tls("synced_word"));
    let _ = writeln!(out, "\tjne\t{slow}");
    if access.size > 1 {
        // One line only: the first byte's tag is the last byte's (in `%rax`).
        let _ = writeln!(out, "\torq\t%rdi, %rcx");
        let _ = writeln!(out, "\tcmpq\t%rax, %rcx");
        let _ = writeln!(out, "\tjne\t{slow}");
    }
    let _ = writeln!(out, "\tmovq\t%rdi, %rcx");
    let _ = writeln!(out, "\tshrq\t$12, %rcx");
    let _ = writeln!(out, "\tandl\t$63, %ecx");
    let _ = writeln!(out, "\tcmpq\t{}(,%rcx,8), %rdi", tls("whole_lo"));
    let _ = writeln!(out, "\tjb\t{slow}");
    let _ = writeln!(out, "\tcmpq\t{}(,%rcx,8), %rdi", tls("whole_hi"));
    let _ = writeln!(out, "\tjae\t{slow}");
    let _ = writeln!(out, "\tmovl\t{}(,%rcx,4), %ecx", tls("whole_structure"));
    // From loading the batch position to storing it back, `in_miss` tells a signal handler
    // that interrupts here that this path will still write where it loaded: the runtime then
    // keeps the batch where it is (`Filter::in_miss`).
    let full = format!(".Lepcache.full.{}", &miss[".Lepcache.miss.".len()..]);
    let _ = writeln!(out, "\tincb\t{}", tls("in_miss"));
    let _ = writeln!(out, "\tmovq\t{}, %rsi", tls("batch_pos"));
    let _ = writeln!(out, "\tcmpq\t{}, %rsi", tls("batch_end"));
    let _ = writeln!(out, "\tjae\t{full}");
    // Word 0: the address, its top byte the meta byte (size, write, the old dirty mark),
    // made in a register and stored once.
    let _ = writeln!(out, "\tmovq\t{}, %r8", entry("dirty_pending"));
    let _ = writeln!(out, "\torq\t${meta}, %r8");
    let _ = writeln!(out, "\tshlq\t$56, %r8");
    let _ = writeln!(out, "\torq\t%rdi, %r8");
    let _ = writeln!(out, "\tmovq\t%r8, {}", record(0));
    let _ = writeln!(out, "\tmovq\t$0, {}", entry("dirty_pending"));
    // Word 1: the old tag.
    let _ = writeln!(out, "\tmovq\t{}, %r8", entry("read_tags"));
    let _ = writeln!(out, "\tmovq\t%r8, {}", record(8));
    // Words 2 and 3: the old read and write hits, adjacent in the entry as in the record,
    // moved and cleared 16 bytes at a time. The call clobbers every `xmm` register, so the
    // program keeps nothing in them across the site (and the compiler clears the upper
    // halves before the call, so legacy SSE costs no AVX transition).
    let _ = writeln!(out, "\tmovdqu\t{}, %xmm0", entry("read_hits"));
    let _ = writeln!(out, "\tmovdqu\t%xmm0, {}", record(16));
    let _ = writeln!(out, "\tpxor\t%xmm0, %xmm0");
    let _ = writeln!(out, "\tmovdqu\t%xmm0, {}", entry("read_hits"));
    // The entry becomes the access's: its tag as read tag, and as write tag for a write.
    let _ = writeln!(out, "\tmovq\t%rax, %xmm0");
    if access.write {
        let _ = writeln!(out, "\tpunpcklqdq\t%xmm0, %xmm0");
    }
    let _ = writeln!(out, "\tmovdqu\t%xmm0, {}", entry("read_tags"));
    // Word 4: the line's data structure, from the whole-line cache.
    let _ = writeln!(out, "\tmovq\t%rcx, {}", record(32));
    let _ = writeln!(out, "\taddq\t$40, %rsi");
    let _ = writeln!(out, "\tmovq\t%rsi, {}", tls("batch_pos"));
    let _ = writeln!(out, "\tdecb\t{}", tls("in_miss"));
    let _ = writeln!(out, "\tjmp\t{done}");
    let _ = writeln!(out, "{full}:");
    let _ = writeln!(out, "\tdecb\t{}", tls("in_miss"));
    let _ = writeln!(out, "\tjmp\t{slow}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(size: u8, write: bool) -> HookedAccess {
        HookedAccess { size, write }
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
    fn written(accesses: &[(HookedAccess, &str)]) -> (Sites, String) {
        let mut sites = Sites::default();
        let mut out = String::new();
        for (access, call) in accesses {
            sites.write(*access, Carried::Nothing, call, &mut out);
        }
        (sites, out)
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
        assert_eq!(
            labels,
            [
                ".Lepcache.miss.1:",
                ".Lepcache.full.1:",
                ".Lepcache.slow.1:",
                ".Lepcache.hit.1:",
                ".Lepcache.done.1:",
                ".Lepcache.miss.2:",
                ".Lepcache.full.2:",
                ".Lepcache.clean.2:",
                ".Lepcache.slow.2:",
                ".Lepcache.hit.2:",
                ".Lepcache.done.2:"
            ]
        );
        // The call follows its slow label, reloads the registers the next site may take and
        // skips the count; the read counts reads, the write writes.
        let lines: Vec<&str> = out.lines().collect();
        let slow = lines
            .iter()
            .position(|l| *l == ".Lepcache.slow.1:")
            .unwrap();
        assert_eq!(lines[slow + 1], read);
        assert_eq!(
            lines[slow + 2..slow + 7],
            [
                "\tmovq\tepcache_inline_v6_tag_word(%rip), %r11",
                "\tmovq\t%r11, %r10",
                "\tshrq\t$56, %r10",
                "\tshll\t$6, %r10d",
                "\tjmp\t.Lepcache.done.1"
            ]
        );
        assert_eq!(
            lines[slow + 8],
            "\tincq\t%fs:epcache_inline_v6_read_hits@tpoff(%rdx)"
        );
        let (first_site, second_site) = out.split_at(out.find(".Lepcache.done.1:").unwrap());
        let first_test = &first_site[..first_site.find(".Lepcache.miss.1:").unwrap()];
        assert!(!first_test.contains("write_tags") && !first_test.contains("dirty_pending"));
        assert!(!first_site.contains("incq\t%fs:epcache_inline_v6_write_hits"));
        assert!(second_site.contains("\tincq\t%fs:epcache_inline_v6_write_hits@tpoff(%rdx)\n"));
        // A write matches a written entry first; one owning its block clean is marked written
        // and dirty pending, then counted.
        let second_test = &second_site[..second_site.find(".Lepcache.miss.2:").unwrap()];
        assert!(second_test.contains(
            "\tcmpq\t%rax, %fs:epcache_inline_v6_write_tags@tpoff(%rdx)\n\tje\t.Lepcache.hit.2\n\tcmpq\t%rax, %fs:epcache_inline_v6_read_tags@tpoff(%rdx)\n\tje\t.Lepcache.clean.2\n"
        ));
        let clean = &second_site[second_site.find(".Lepcache.clean.2:").unwrap()..];
        assert!(clean.starts_with(
            ".Lepcache.clean.2:\n\tmovq\t%rax, %fs:epcache_inline_v6_write_tags@tpoff(%rdx)\n\tmovq\t$64, %fs:epcache_inline_v6_dirty_pending@tpoff(%rdx)\n\tjmp\t.Lepcache.hit.2\n"
        ));
        // A one-byte access cannot straddle lines: its tag is its own address's.
        assert!(!second_test.contains("leaq"));
        assert!(second_test.contains("\tmovq\t%rdi, %rax\n"));
    }

    #[test]
    fn a_miss_takes_the_entry_over_and_appends_a_record_or_calls() {
        let (_, read) = written(&[(access(8, false), "\tcall\t__tsan_read8")]);
        let (_, write) = written(&[(access(4, true), "\tcall\t__tsan_write4")]);
        for (out, meta, written) in [(&read, 8, "$0"), (&write, 4 | 1 << 5, "%rax")] {
            let miss = &out
                [out.find(".Lepcache.miss.1:").unwrap()..out.find(".Lepcache.slow.1:").unwrap()];
            let miss = &miss[..miss.find(".Lepcache.clean.1:").unwrap_or(miss.len())];
            // Only for a thread with nothing to sync, one-line accesses, in whole lines, while
            // the batch has room; else the call.
            assert!(
                miss.starts_with(
                    ".Lepcache.miss.1:\n\tmovq\tepcache_inline_v6_tag_word(%rip), %rcx\n\tcmpq\t%rcx, %fs:epcache_inline_v6_synced_word@tpoff\n\tjne\t.Lepcache.slow.1\n\torq\t%rdi, %rcx\n\tcmpq\t%rax, %rcx\n\tjne\t.Lepcache.slow.1\n"
                ),
                "{miss}"
            );
            assert_eq!(
                miss.matches("\tjb\t.Lepcache.slow.1\n").count(),
                1,
                "{miss}"
            );
            assert_eq!(
                miss.matches("\tjae\t.Lepcache.slow.1\n").count(),
                1,
                "{miss}"
            );
            // The batch position is loaded and stored back inside `in_miss`, on both ways out.
            assert!(miss.contains("\tincb\t%fs:epcache_inline_v6_in_miss@tpoff\n\tmovq\t%fs:epcache_inline_v6_batch_pos@tpoff, %rsi\n\tcmpq\t%fs:epcache_inline_v6_batch_end@tpoff, %rsi\n\tjae\t.Lepcache.full.1\n"), "{miss}");
            assert!(miss.ends_with(".Lepcache.full.1:\n\tdecb\t%fs:epcache_inline_v6_in_miss@tpoff\n\tjmp\t.Lepcache.slow.1\n"), "{miss}");
            // The meta byte over the address's top byte: size, write, the old dirty mark.
            let entry = |word: &str| format!("%fs:epcache_inline_v6_{word}@tpoff(%rdx)");
            // Word 0, stored once: the meta byte (size, write, the old dirty mark) over the
            // address's top byte; the mark is cleared.
            let dirty = entry("dirty_pending");
            assert!(
                miss.contains(&format!(
                    "\tmovq\t{dirty}, %r8\n\torq\t${meta}, %r8\n\tshlq\t$56, %r8\n\
                     \torq\t%rdi, %r8\n\tmovq\t%r8, 0(%rsi)\n\tmovq\t$0, {dirty}\n"
                )),
                "{miss}"
            );
            // The old owner's tag and its two hit counts (16 bytes at once) move into the
            // record; the counts start again at 0 and the tags become the access's, the
            // write tag only for a write.
            let tags = entry("read_tags");
            let hits = entry("read_hits");
            assert!(miss.contains(&format!("\tmovq\t{tags}, %r8\n\tmovq\t%r8, 8(%rsi)\n")));
            assert!(miss.contains(&format!(
                "\tmovdqu\t{hits}, %xmm0\n\tmovdqu\t%xmm0, 16(%rsi)\n\
                 \tpxor\t%xmm0, %xmm0\n\tmovdqu\t%xmm0, {hits}\n"
            )));
            let both = if written == "%rax" {
                "\tpunpcklqdq\t%xmm0, %xmm0\n"
            } else {
                ""
            };
            assert!(
                miss.contains(&format!(
                    "\tmovq\t%rax, %xmm0\n{both}\tmovdqu\t%xmm0, {tags}\n"
                )),
                "{miss}"
            );
            assert_eq!(miss.matches("write_tags").count(), 0, "{miss}");
            assert_eq!(miss.matches("write_hits").count(), 0, "{miss}");
            assert!(
                miss.contains(
                    "\tmovl\t%fs:epcache_inline_v6_whole_structure@tpoff(,%rcx,4), %ecx\n"
                )
            );
            assert!(miss.contains("\tmovq\t%rcx, 32(%rsi)\n\taddq\t$40, %rsi\n\tmovq\t%rsi, %fs:epcache_inline_v6_batch_pos@tpoff\n\tdecb\t%fs:epcache_inline_v6_in_miss@tpoff\n\tjmp\t.Lepcache.done.1\n"));
        }
    }

    #[test]
    fn every_access_compares_its_last_bytes_tag_with_its_first_bytes_entry() {
        let (_, aligned) = written(&[(access(8, false), "\tcall\t__tsan_read8")]);
        // The common path: the tag word (one load) and the mask from its top byte (3), the tag
        // (2), the offset from the first byte (2), the compare (2) before the miss label, then
        // the count; no epoch compare, no alignment test, no thread-local mask.
        let common = &aligned[..aligned.find(".Lepcache.miss.1:").unwrap()];
        assert_eq!(
            common,
            "\tmovq\tepcache_inline_v6_tag_word(%rip), %r11\n\tmovq\t%r11, %r10\n\
             \tshrq\t$56, %r10\n\tshll\t$6, %r10d\n\tleaq\t7(%rdi), %rax\n\
             \torq\t%r11, %rax\n\tmovl\t%edi, %edx\n\tandl\t%r10d, %edx\n\
             \tcmpq\t%rax, %fs:epcache_inline_v6_read_tags@tpoff(%rdx)\n\tje\t.Lepcache.hit.1\n"
        );
        // A site that finds the mask loads the word only; one that finds both loads nothing.
        let tail = "\tleaq\t7(%rdi), %rax\n";
        for (carried, head) in [
            (
                Carried::Mask,
                "\tmovq\tepcache_inline_v6_tag_word(%rip), %r11\n",
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
            byte.contains("\tshll\t$6, %r10d\n\tmovq\t%rdi, %rax\n\torq\t%r11, %rax\n"),
            "{byte}"
        );
    }
}
