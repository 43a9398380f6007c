//! Child roles: a test that needs a second process (a monitored target, a process of another
//! user) runs its own test binary again, filtered to one test that plays the part when an
//! environment variable asks for it and does nothing in an ordinary run.
//!
//! Each crate has one integration-test binary (`tests/it/main.rs`), whose tests are named by
//! their module path (`security::intruder_role`). The shared role, [`CHILD_ROLE_TEST`], is a
//! `#[test] fn child_role()` at the root of `main.rs`, so its name is the same in every crate;
//! a role a module keeps to itself is named with [`test_path`]. [`assert_names_one_test`] checks
//! that a name filters exactly one test of the binary: a child started with a stale name runs no
//! test at all and only says so by never becoming ready.

use std::process::Command;

/// The test at the root of every `tests/it/main.rs` that plays the crate's shared child roles.
pub const CHILD_ROLE_TEST: &str = "child_role";

/// The arguments that make a test binary run only the test named `test` (its full path in the
/// binary), its output not captured (the parent reads what the child prints), on one thread.
pub fn rerun_args(test: &str) -> [&str; 4] {
    ["--exact", test, "--nocapture", "--test-threads=1"]
}

/// This test binary, to be started again as the test named `test` (see [`rerun_args`]).
pub fn rerun(test: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args(rerun_args(test));
    command
}

/// The name the test harness gives the function `name` of the module `module` (`module_path!()`
/// where it is defined): the module path without the binary's own name, `it::security` and
/// `intruder_role` giving `security::intruder_role`.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_binary, within)) => format!("{within}::{name}"),
        None => name.to_owned(),
    }
}

/// Fails unless `test` names exactly one test of this test binary (as `--exact` filters).
pub fn assert_names_one_test(test: &str) {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args(["--list", "--exact", test])
        .output()
        .expect("listing this test binary's tests");
    let listing = String::from_utf8_lossy(&out.stdout);
    let tests: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    assert_eq!(
        tests,
        [test],
        "a child started with the filter `{test}` runs {} tests of this binary; \
         the role's test was moved or renamed",
        tests.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_path_leaves_out_the_binary_s_name() {
        assert_eq!(
            test_path("it::security", "intruder_role"),
            "security::intruder_role"
        );
        assert_eq!(test_path("it::a::b", "role"), "a::b::role");
        assert_eq!(test_path("it", CHILD_ROLE_TEST), "child_role");
    }

    #[test]
    fn the_one_test_filtered_is_found_and_a_stale_name_is_not() {
        assert_names_one_test(&test_path(
            module_path!(),
            "a_test_path_leaves_out_the_binary_s_name",
        ));
        let stale = std::panic::catch_unwind(|| assert_names_one_test("no_such_role"));
        assert!(stale.is_err(), "a name naming no test passed");
    }
}
