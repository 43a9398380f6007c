//! Access traces: Valgrind lackey logs and epcache's compact binary format.
