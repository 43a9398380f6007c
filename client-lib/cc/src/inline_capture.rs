//! Inline capture for `epcache cc`: whether it is wanted, and the rewrite of a whole listing
//! (clang's) with the inline repeat-hit test in front of each fixed-size access hook call.
//!
//! The sequence itself, the thread-block words it reads, and the model of what it does are
//! `epcache-inline`'s (`monitor-lib/inline/`), which the runtime uses too, so neither side
//! holds a copy of the other's constants. This driver decides where a sequence goes: into the
//! instrumented copy of a dual-compiled function (`dual_asm.rs`), or into clang's
//! instrumented-only listing here, only for code linked into an executable (not `-fPIC`: the
//! sequence reaches thread-local words with the local-exec model) and only into AT&T-syntax
//! listings (gcc's and clang's default). Which sites find the tag word and mask left in
//! registers by an earlier one is `carried_registers.rs`'s analysis.

use epcache_inline::emit::{Sites, hooked_access};

use crate::carried_registers;

/// Environment variable that turns inline capture off (`off`, `0`, `no`): every access then
/// calls its hook, as in an instrumented-only build.
pub const INLINE_ENV: &str = "EPCACHE_CC_INLINE";

/// Whether inline capture is wanted (it is unless switched off).
pub(crate) fn wanted() -> bool {
    !std::env::var(INLINE_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no"))
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
