//! A once-a-second progress line on stderr for long runs, shown only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::numbers::{grouped, millions_per_second};

/// Prints `N records, R M/s` over itself at most once a second.
#[derive(Debug)]
pub(crate) struct Progress {
    enabled: bool,
    start: Instant,
    last_print: Instant,
    printed: bool,
}

impl Progress {
    /// A meter that stays silent unless stderr is a terminal.
    pub(crate) fn on_terminal() -> Self {
        let now = Instant::now();
        Self {
            enabled: std::io::stderr().is_terminal(),
            start: now,
            last_print: now,
            printed: false,
        }
    }

    /// Reports `records` done so far (cheap enough to call every million records).
    pub(crate) fn update(&mut self, records: u64) {
        if !self.enabled || self.last_print.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last_print = Instant::now();
        let rate = millions_per_second(records, self.start.elapsed().as_secs_f64());
        let mut err = std::io::stderr().lock();
        // A failed progress line is not worth failing the run for.
        let _ = write!(
            err,
            "\r{} records, {rate:.1} M records/s ",
            grouped(records)
        );
        let _ = err.flush();
        self.printed = true;
    }

    /// Erases the progress line so the report starts on a clean line.
    pub(crate) fn finish(&mut self) {
        if self.printed {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.printed = false;
        }
    }
}
