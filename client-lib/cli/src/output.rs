//! Writing results to stdout, where a closed pipe (`epcache ... | head`) ends the output quietly.

use std::io::{ErrorKind, Write};

/// Writes `text` to stdout; a reader that went away is not an error.
pub(crate) fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to stdout"))
        }
        _ => Ok(()),
    }
}
