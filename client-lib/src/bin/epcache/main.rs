//! The `epcache` command line.

#![forbid(unsafe_code)]

fn main() {}
