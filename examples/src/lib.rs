//! Shared helpers of the example programs in `src/bin` (each example is a binary there).

#![forbid(unsafe_code)]
