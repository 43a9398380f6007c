//! epcache-daemon's integration tests, one binary: the MRI end to end (`mri.rs`), halts a tool
//! abandons (`abandoned_halts.rs`), the `epcached` binary (`epcached.rs`), a daemon restarted
//! under live targets (`restart.rs`) and what other users and hostile clients cannot do
//! (`security.rs`). The targets are this binary run again in the child role; `support.rs` holds
//! the raw MRI clients they share.

mod abandoned_halts;
mod epcached;
mod mri;
mod restart;
mod security;
mod support;

use epcache_test_support::roles;

/// Plays the synthetic target when this binary was started as one (see
/// `epcache_test_support::roles`); a no-op in an ordinary run.
#[test]
fn child_role() {
    epcache_test_support::processes::child_role();
}

#[test]
fn the_child_role_filters_name_one_test_each() {
    roles::assert_names_one_test(roles::CHILD_ROLE_TEST);
    roles::assert_names_one_test(&security::intruder_role_test());
}
