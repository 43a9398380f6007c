//! epcache-sim's integration tests, one binary: property tests of the counter array through its
//! public interface (`counter_array_props.rs`).

mod counter_array_props;
