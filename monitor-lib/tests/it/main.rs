//! epcache-monitor's integration tests, one binary: the checked-in C header and Fortran module
//! against the runtime's C ABI (`c_header.rs`). The runtime's captured behaviour is tested
//! through real programs by epcache-cli's and epcache-examples' tests.

mod c_header;
