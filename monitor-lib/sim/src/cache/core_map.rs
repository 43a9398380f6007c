//! Which core of a machine each thread is: the syntax of `EPCACHE_CORES` (`epcache run --cores`),
//! shared by the runtime, which places its threads by it, and the tools, which check it before a
//! program starts.
//!
//! `N` cores (1 to [`MAX_CORES`]) or `host` (as many as the host has CPUs), optionally followed
//! by `:c0,c1,...`, the cores of the first threads in the order they start capturing; the rest
//! go round-robin. Empty or `off` asks for no machine.

use super::MAX_CORES;

/// The environment variable the runtime reads a core map from (`epcache run --cores` sets it).
pub const CORES_ENV: &str = "EPCACHE_CORES";

/// How threads map to the cores of a machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreMap {
    /// Cores of the machine.
    pub cores: usize,
    /// The cores of the first threads, in the order threads start capturing.
    pub placement: Vec<usize>,
}

/// What is wrong with a core map's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreMapError {
    #[error("`{0}` is not a number of cores; {HOW}")]
    NotACount(String),
    #[error("a machine has 1 to {MAX_CORES} cores, not {0}; {HOW}")]
    OutOfRange(usize),
    #[error("`{core}` is not a core from 0 to {last}; {HOW}")]
    NoSuchCore { core: String, last: usize },
    #[error("`{0}` has an empty place in the threads' cores after `:`; {HOW}")]
    EmptyCore(String),
}

/// What every refusal of a core map says to do.
const HOW: &str = "give a number of cores such as 4, or host, optionally followed by the threads' cores, as in 2:0,1";

impl CoreMap {
    /// Parses a core map; `None` for empty or `off`; `host_cpus` is what `host` stands for.
    pub fn parse(text: &str, host_cpus: usize) -> Result<Option<CoreMap>, CoreMapError> {
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let (count, placement) = text.split_once(':').unwrap_or((text, ""));
        let count = count.trim();
        let cores = if count.eq_ignore_ascii_case("host") {
            host_cpus
        } else {
            count
                .parse()
                .map_err(|_| CoreMapError::NotACount(count.to_owned()))?
        };
        if !(1..=MAX_CORES).contains(&cores) {
            return Err(CoreMapError::OutOfRange(cores));
        }
        let placement = placement
            .split(',')
            .map(str::trim)
            .filter(|_| text.contains(':'))
            .map(|c| match c.parse::<usize>() {
                _ if c.is_empty() => Err(CoreMapError::EmptyCore(text.to_owned())),
                Ok(core) if core < cores => Ok(core),
                _ => Err(CoreMapError::NoSuchCore {
                    core: c.to_owned(),
                    last: cores - 1,
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(CoreMap { cores, placement }))
    }

    /// The core of the `thread`th thread to start capturing: as placed, else round-robin.
    pub fn core_of(&self, thread: usize) -> usize {
        self.placement
            .get(thread)
            .copied()
            .unwrap_or(thread % self.cores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_are_a_count_or_the_host_and_threads_are_placed_as_asked() {
        assert_eq!(CoreMap::parse("", 8), Ok(None));
        assert_eq!(CoreMap::parse("off", 8), Ok(None));
        let four = CoreMap::parse("4", 8).unwrap().unwrap();
        assert_eq!(
            (0..6).map(|t| four.core_of(t)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 0, 1]
        );
        assert_eq!(CoreMap::parse("host", 8).unwrap().unwrap().cores, 8);
        let placed = CoreMap::parse("2:1,1, 0", 8).unwrap().unwrap();
        assert_eq!(
            (0..5).map(|t| placed.core_of(t)).collect::<Vec<_>>(),
            [1, 1, 0, 1, 0]
        );
        let e = CoreMap::parse("four", 8).unwrap_err().to_string();
        assert!(
            e.contains("`four` is not a number") && e.contains("as in 2:0,1"),
            "{e}"
        );
        assert!(
            CoreMap::parse("0", 8)
                .unwrap_err()
                .to_string()
                .contains("1 to 64 cores")
        );
        assert!(CoreMap::parse("65", 8).is_err());
        assert!(
            CoreMap::parse("2:0,2", 8)
                .unwrap_err()
                .to_string()
                .contains("`2` is not a core from 0 to 1")
        );
        for empty in ["2:", "2:0,", "2:0,,1", "2: "] {
            let e = CoreMap::parse(empty, 8).unwrap_err().to_string();
            assert!(e.contains("empty place"), "{empty}: {e}");
        }
    }
}
