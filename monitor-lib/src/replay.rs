//! Replaying a trace through a hierarchy, with Cachegrind-compatible totals.
