//! The tests' one source of deterministic pseudo-random streams.

/// Advances `state` by Marsaglia's xorshift64 (shifts 13, 7, 17) and returns it; a nonzero
/// state never becomes zero.
pub fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
