//! Several arrays allocated in one statement told apart: `allocate(t(n,n), tnew(n,n))` of a
//! subroutine's arrays (whose descriptors, on the stack, the runtime cannot follow) or C's
//! `double *a = malloc(..), *b = malloc(..);` name their blocks `t@heat.f90:6` and
//! `tnew@heat.f90:6` rather than one `heat.f90:6` for both.
//!
//! The statement's arrays come from its source text (`epcache_symbols::allocated_objects`);
//! which array a block is comes from its allocation call: the compiled function holding the
//! call is scanned for direct calls (`e8 rel32`) to the same function whose return addresses
//! lie on the same line, and the call's rank among them, in address order, is its array's rank
//! in the statement (compilers emit one call per array, in order); a call made inside a wrapper
//! the compiler inlined into the statement (`vec_new` around `xmalloc`) is ranked by the
//! statement's line among the positions its inline chain passes through. A block is named by its
//! array only when those calls are exactly as many as the arrays the text lists: a statement
//! split over lines, calls merged by the optimiser (gfortran -O2 can share one call between
//! two arrays), or text that does not read, leave the line's name, and the report says when
//! such a line's name covers several arrays (`several_arrays`).
//!
//! Cost: once per allocation call that names a tracked block, never on the access path. The
//! code is read from `/proc/self/mem` (no unsafe code here), at most [`MAX_FUNCTION_BYTES`].

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use epcache_symbols::{allocated_objects, is_fortran_source, rel32_target};

use super::program;

/// Functions longer than this are not scanned for their calls.
const MAX_FUNCTION_BYTES: u64 = 1 << 20;

/// Source lines read longer than this are not taken apart.
const MAX_LINE_BYTES: usize = 4096;

#[derive(Default)]
struct Known {
    /// Each allocation call's array, once worked out (`None`: the line's name stands).
    arrays: HashMap<u64, Option<String>>,
    /// Source files read, by path, as lines (`None`: unreadable).
    sources: HashMap<String, Option<Vec<String>>>,
}

static KNOWN: Mutex<Option<Known>> = Mutex::new(None);

/// The array the allocation call returning to `call` allocates, when its line (`file`:`line`,
/// the call's position `depth` frames out from its innermost one: 0 for a call made on the
/// line, 1 for one inside a wrapper inlined there) is a statement allocating several and the
/// call can be told apart from the others (see the module's doc).
pub(super) fn array_of_call(call: u64, file: &str, line: u32, depth: usize) -> Option<String> {
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let known = known.get_or_insert_with(Known::default);
    if let Some(array) = known.arrays.get(&call) {
        return array.clone();
    }
    let array = work_out(known, call, file, line, depth);
    known.arrays.insert(call, array.clone());
    array
}

fn work_out(known: &mut Known, call: u64, file: &str, line: u32, depth: usize) -> Option<String> {
    let text = known
        .sources
        .entry(file.to_owned())
        .or_insert_with(|| read_source(file))
        .as_ref()?
        .get(usize::try_from(line).ok()?.checked_sub(1)?)?;
    if text.len() > MAX_LINE_BYTES {
        return None;
    }
    let arrays = allocated_objects(text, is_fortran_source(file));
    if arrays.len() < 2 {
        return None;
    }
    let calls = calls_on_line(call, file, line, depth)?;
    if calls.len() != arrays.len() {
        return None;
    }
    let rank = calls.iter().position(|&c| c == call)?;
    arrays.into_iter().nth(rank)
}

fn read_source(path: &str) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.lines().map(str::to_owned).collect())
}

/// The return addresses of the direct calls, in the compiled function holding `call`, to the
/// function `call` calls, whose position `depth` frames out from the innermost (through the
/// functions inlined there) is `file`:`line`; in address order.
fn calls_on_line(call: u64, file: &str, line: u32, depth: usize) -> Option<Vec<u64>> {
    let object = program::object_at(call.checked_sub(1)?)?;
    let bias = object.bias;
    let function = object
        .info
        .function_at(call.checked_sub(bias)?.checked_sub(1)?)?;
    let start = function.low_pc.checked_add(bias)?;
    let bytes = function.high_pc.checked_sub(function.low_pc)?;
    if bytes > MAX_FUNCTION_BYTES || call < start.checked_add(5)? {
        return None;
    }
    let code = read_code(start, bytes)?;
    let at = usize::try_from(call - start - 5).ok()?;
    let target = call_target(&code, at, start)?;
    let base = |path: &str| path.rsplit('/').next().unwrap_or(path).to_owned();
    let file = base(file);
    let mut calls = Vec::new();
    for i in 0..code.len().saturating_sub(4) {
        if call_target(&code, i, start) != Some(target) {
            continue;
        }
        let returns = start + i as u64 + 5;
        let position = if depth == 0 {
            object.info.line_at(returns - bias - 1)
        } else {
            object
                .info
                .positions_at(returns - bias - 1)
                .get(depth)
                .copied()
        };
        if position.is_some_and(|(f, l)| l == line && base(f) == file) {
            calls.push(returns);
        }
    }
    Some(calls)
}

/// The target of a direct call (`e8 rel32`) at byte `at` of `code`, which starts at `start`.
fn call_target(code: &[u8], at: usize, start: u64) -> Option<u64> {
    rel32_target(code, at, start)
        .filter(|&(opcode, _)| opcode == 0xe8)
        .map(|(_, target)| target)
}

fn read_code(start: u64, bytes: u64) -> Option<Vec<u8>> {
    let memory = File::open("/proc/self/mem").ok()?;
    let mut code = vec![0; usize::try_from(bytes).ok()?];
    memory.read_exact_at(&mut code, start).ok()?;
    Some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_call_is_decoded_to_its_target() {
        // call +0x10 at 0x1000 (returns to 0x1005, goes to 0x1015); call -0x20 at 0x1005.
        let code = [0xe8, 0x10, 0, 0, 0, 0xe8, 0xe0, 0xff, 0xff, 0xff, 0x90];
        assert_eq!(call_target(&code, 0, 0x1000), Some(0x1015));
        assert_eq!(call_target(&code, 5, 0x1000), Some(0x1000 + 10 - 0x20));
        assert_eq!(call_target(&code, 10, 0x1000), None);
        assert_eq!(call_target(&code, 7, 0x1000), None);
    }
}
