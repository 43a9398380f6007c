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
//! The sequence uses only registers the call it guards would clobber (`rax`, `rcx`, `rdx`,
//! `rsi`, and the flags), leaves `rdi` (the address) for the call, and touches no stack. It
//! names the runtime's inline capture ABI (`epcache_inline_v1_*`, defined in
//! `monitor-lib/src/capture/thread_block.rs`): thread-local symbols reached with the local-exec
//! model, so it is written only for code linked into an executable (not `-fPIC`), and only into
//! AT&T-syntax listings (gcc's default).

use std::fmt::Write as _;

/// Environment variable that turns inline capture off (`off`, `0`, `no`): every access then
/// calls its hook, as in an instrumented-only build.
pub(crate) const INLINE_ENV: &str = "EPCACHE_CC_INLINE";

/// A symbol every runtime with this ABI defines: its absence explains a failed link.
pub(crate) const ABI_PROBE: &str = "epcache_inline_v1_entries";

/// Whether inline capture is wanted (it is unless switched off).
pub(crate) fn wanted() -> bool {
    !std::env::var(INLINE_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no"))
}

/// log2 of a filter entry's size, which `_v1` fixes (asserted in `capture/filter.rs`).
const ENTRY_SHIFT: u32 = 5;

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
    if words.next()? != "call" {
        return None;
    }
    let target = words.next()?;
    if words.next().is_some() {
        return None;
    }
    let name = target.strip_suffix("@PLT").unwrap_or(target);
    let name = name.strip_prefix("__tsan_")?;
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

/// Numbers the inline sites of one listing, so their labels are unique.
#[derive(Debug, Default)]
pub(crate) struct Sites {
    count: usize,
}

impl Sites {
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Writes the test for `access`, then `call` (the original hook call, the path for every
    /// access the test does not answer), then the label both paths meet at.
    pub(crate) fn write(&mut self, access: HookedAccess, call: &str, out: &mut String) {
        self.count += 1;
        let n = self.count;
        let slow = format!(".Lepcache.slow.{n}");
        let done = format!(".Lepcache.done.{n}");
        let tls = |name: &str| format!("%fs:epcache_inline_v1_{name}@tpoff");
        // The thread captures and has no switch to pick up (`Hot::synced_on`).
        let _ = writeln!(out, "\tmovl\tepcache_inline_v1_epoch(%rip), %eax");
        let _ = writeln!(out, "\tcmpl\t%eax, {}", tls("capturing_epoch"));
        let _ = writeln!(out, "\tjne\t{slow}");
        // The block's entry (`Filter::repeat_hit`): block = addr >> line bits.
        let _ = writeln!(out, "\tmovl\t{}, %ecx", tls("line_bits"));
        let _ = writeln!(out, "\tmovq\t%rdi, %rax");
        let _ = writeln!(out, "\tshrq\t%cl, %rax");
        let _ = writeln!(out, "\tmovzbl\t{}, %edx", tls("entry_mask"));
        let _ = writeln!(out, "\tandl\t%eax, %edx");
        let _ = writeln!(out, "\tshll\t${ENTRY_SHIFT}, %edx");
        let _ = writeln!(out, "\tleaq\t1(%rax,%rax), %rsi");
        same_line(access, &slow, out);
        // The entry holds !(block << 1 | written). x = inverted ^ (block << 1 | 1) is all ones
        // when the entry is the block written, all ones but bit 0 when clean: a read takes
        // either; a write to a clean entry marks it written and dirty pending (the runtime
        // marks the line dirty before it next simulates an access to the set, `filter.rs`).
        let _ = writeln!(out, "\txorq\t{}(%rdx), %rsi", tls("entries"));
        if access.write {
            let clean = format!(".Lepcache.clean.{n}");
            let count = format!(".Lepcache.count.{n}");
            let _ = writeln!(out, "\tincq\t%rsi");
            let _ = writeln!(out, "\tjne\t{clean}");
            let _ = writeln!(out, "{count}:");
            let _ = writeln!(out, "\tincq\t{}(%rdx)", tls("write_hits"));
            let _ = writeln!(out, "\tjmp\t{done}");
            // x + 1 was all ones: the entry is the block, clean.
            let _ = writeln!(out, "{clean}:");
            let _ = writeln!(out, "\tincq\t%rsi");
            let _ = writeln!(out, "\tjne\t{slow}");
            let _ = writeln!(out, "\txorq\t$1, {}(%rdx)", tls("entries"));
            let _ = writeln!(out, "\tmovl\t$1, {}(%rdx)", tls("dirty_pending"));
            let _ = writeln!(out, "\tjmp\t{count}");
        } else {
            let _ = writeln!(out, "\torq\t$1, %rsi");
            let _ = writeln!(out, "\tincq\t%rsi");
            let _ = writeln!(out, "\tjne\t{slow}");
            let _ = writeln!(out, "\tincq\t{}(%rdx)", tls("read_hits"));
            let _ = writeln!(out, "\tjmp\t{done}");
        }
        let _ = writeln!(out, "{slow}:");
        let _ = writeln!(out, "{call}");
        let _ = writeln!(out, "{done}:");
    }
}

/// Jumps to `slow` unless the access's last byte is in its first byte's line (`%cl` holds the
/// line bits; `%rax` is free). A shift by 0 leaves the flags to the xor, which set them for
/// the same value.
fn same_line(access: HookedAccess, slow: &str, out: &mut String) {
    if access.size > 1 {
        let _ = writeln!(out, "\tleaq\t{}(%rdi), %rax", access.size - 1);
        let _ = writeln!(out, "\txorq\t%rdi, %rax");
        let _ = writeln!(out, "\tshrq\t%cl, %rax");
        let _ = writeln!(out, "\tjne\t{slow}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fixed_size_read_and_write_hook_calls_are_inlined() {
        let access = |size, write| Some(HookedAccess { size, write });
        assert_eq!(hooked_access("\tcall\t__tsan_read8@PLT"), access(8, false));
        assert_eq!(hooked_access("\tcall\t__tsan_write1"), access(1, true));
        assert_eq!(
            hooked_access("\tcall\t__tsan_unaligned_write16@PLT"),
            access(16, true)
        );
        assert_eq!(
            hooked_access("\tcall\t__tsan_unaligned_read2"),
            access(2, false)
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

    #[test]
    fn each_site_has_its_own_labels_and_keeps_its_call() {
        let mut sites = Sites::default();
        let mut out = String::new();
        let call = "\tcall\t__tsan_read8@PLT";
        sites.write(
            HookedAccess {
                size: 8,
                write: false,
            },
            call,
            &mut out,
        );
        sites.write(
            HookedAccess {
                size: 1,
                write: true,
            },
            "\tcall\t__tsan_write1",
            &mut out,
        );
        assert_eq!(sites.count(), 2);
        let labels: Vec<&str> = out.lines().filter(|l| l.ends_with(':')).collect();
        assert_eq!(
            labels,
            [
                ".Lepcache.slow.1:",
                ".Lepcache.done.1:",
                ".Lepcache.count.2:",
                ".Lepcache.clean.2:",
                ".Lepcache.slow.2:",
                ".Lepcache.done.2:"
            ]
        );
        // The call follows its slow label; the read counts reads, the write writes.
        let lines: Vec<&str> = out.lines().collect();
        let slow = lines
            .iter()
            .position(|l| *l == ".Lepcache.slow.1:")
            .unwrap();
        assert_eq!(lines[slow + 1], call);
        let first_site = &out[..out.find(".Lepcache.done.1:").unwrap()];
        assert!(first_site.contains("read_hits") && !first_site.contains("write_hits"));
        assert!(
            first_site.contains("\torq\t$1"),
            "a read matches a clean entry too"
        );
        assert!(!first_site.contains("dirty_pending"));
        let second_site = &out[out.find(".Lepcache.done.1:").unwrap()..];
        assert!(second_site.contains("write_hits") && !second_site.contains("\torq\t$1"));
        // A write to a clean entry marks it written and dirty pending, then counts.
        let clean = &second_site[second_site.find(".Lepcache.clean.2:").unwrap()..];
        assert!(clean.contains("\txorq\t$1, %fs:epcache_inline_v1_entries@tpoff(%rdx)\n"));
        assert!(clean.contains("\tmovl\t$1, %fs:epcache_inline_v1_dirty_pending@tpoff(%rdx)\n"));
        // A one-byte access cannot straddle lines: no same-line test.
        assert!(!second_site.contains("leaq\t0(%rdi)"));
        assert_eq!(second_site.matches("jne").count(), 3);
    }
}
