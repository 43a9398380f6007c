//! epcache-client's integration tests, one binary: the typed client against a real embedded
//! daemon and real target processes (`daemon_client.rs`), and over TLS with the `tls` feature
//! (`daemon_tls.rs`). The targets are this binary run again in the child role.

mod daemon_client;
mod daemon_tls;

use epcache_test_support::roles;

/// Plays the synthetic target when this binary was started as one (see
/// `epcache_test_support::roles`); a no-op in an ordinary run.
#[test]
fn child_role() {
    epcache_test_support::client::child_role();
}

#[test]
fn the_child_role_filter_names_one_test() {
    roles::assert_names_one_test(roles::CHILD_ROLE_TEST);
}
