//! Whether a process is alive and is the one we think, from /proc: a pid alone can be reused, so
//! the segment header and discovery records also carry the process start time.

use std::path::Path;

/// A process's state as far as epcache cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Running (or sleeping, stopped...), with this start time.
    Alive {
        /// Clock ticks after boot (/proc/PID/stat field 22).
        start_time: u64,
    },
    /// Gone, or a zombie waiting to be reaped.
    Dead,
}

/// Reads /proc/`pid`/stat.
pub fn liveness(pid: u32) -> Liveness {
    let Ok(stat) = std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"))
    else {
        return Liveness::Dead;
    };
    // The command name may contain spaces and parentheses; fields after the last ')' are fixed.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return Liveness::Dead;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    match (fields.first(), fields.get(19).and_then(|t| t.parse().ok())) {
        (Some(&"Z" | &"X" | &"x"), _) | (None, _) | (_, None) => Liveness::Dead,
        (Some(_), Some(start_time)) => Liveness::Alive { start_time },
    }
}

/// Whether `pid` is alive and started at `start_time` (so not a reused pid).
pub fn is_same_process_alive(pid: u32, start_time: u64) -> bool {
    liveness(pid) == Liveness::Alive { start_time }
}

/// This process's start time.
pub fn own_start_time() -> u64 {
    match liveness(std::process::id()) {
        Liveness::Alive { start_time } => start_time,
        Liveness::Dead => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_pid_zero_is_not() {
        let me = own_start_time();
        assert!(me > 0);
        assert!(is_same_process_alive(std::process::id(), me));
        assert!(!is_same_process_alive(std::process::id(), me + 1));
        assert_eq!(liveness(0), Liveness::Dead);
    }

    #[test]
    fn a_reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(liveness(pid), Liveness::Dead);
    }
}
