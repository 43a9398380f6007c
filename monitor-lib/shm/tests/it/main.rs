//! epcache-shm's integration tests, one binary: the segment protocol between a target and a tool
//! in two real processes (`segment_protocol.rs`).

mod segment_protocol;

/// Plays a child process's part when this binary was started as one (see
/// `epcache_test_support::roles`); a no-op in an ordinary run.
#[test]
fn child_role() {
    segment_protocol::play_role();
}

#[test]
fn the_child_role_filter_names_one_test() {
    epcache_test_support::roles::assert_names_one_test(
        epcache_test_support::roles::CHILD_ROLE_TEST,
    );
}
