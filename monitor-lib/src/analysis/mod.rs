//! Per-data-structure analyses from the seed papers: reuse and spatial use, evictors, miss classes, reuse distance.
