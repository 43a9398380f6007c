//! What the tests that run real tools share: whether a tool is here, failing loudly under CI.

use std::process::{Command, Stdio};

/// Whether `tool` runs here. A missing tool fails the test under CI (`CI=true`), where
/// everything the tests need is installed, and otherwise skips it loudly.
pub(crate) fn available(tool: &str, who: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let message = format!("{who}: {tool} not found (apt-get install -y {tool})");
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "FAILED under CI: {message}"
        );
        eprintln!("\n*** SKIPPED *** {message}\n");
    }
    found
}
