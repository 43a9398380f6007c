//! Opening a trace (a file or `-` for stdin) and telling lackey text, `.epct` and partial traces
//! apart by their magic.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Stdin};
use std::path::Path;

use anyhow::Context;
use clap::ValueEnum;
use epcache_sim::trace::epct::EPCT_MAGIC;
use epcache_sim::trace::partial::PARTIAL_MAGIC;

/// The trace formats epcache reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TraceFormat {
    /// Valgrind `--tool=lackey --trace-mem=yes` output.
    Lackey,
    /// epcache's compact binary format (`epcache trace convert`).
    Epct,
    /// A partial data trace (`epcache trace convert --to partial`): data accesses with their
    /// code addresses, compressed into regular section descriptors.
    Partial,
}

impl TraceFormat {
    pub(crate) fn name(self) -> &'static str {
        match self {
            TraceFormat::Lackey => "lackey",
            TraceFormat::Epct => "epct",
            TraceFormat::Partial => "partial",
        }
    }
}

const BUFFER_LEN: usize = 1 << 20;

/// A buffered trace source; an enum rather than a boxed trait so reads stay statically dispatched.
#[derive(Debug)]
pub(crate) enum TraceInput {
    File(BufReader<File>),
    /// Standard input itself rather than its lock, so a reader can move to another thread
    /// (`epcache replay --threads`); the buffer takes the lock once per fill.
    Stdin(BufReader<Stdin>),
}

impl TraceInput {
    /// Opens `path`, or stdin when it is `-`.
    pub(crate) fn open(path: &Path) -> anyhow::Result<Self> {
        if path == Path::new("-") {
            return Ok(TraceInput::Stdin(BufReader::with_capacity(
                BUFFER_LEN,
                io::stdin(),
            )));
        }
        let file = File::open(path)
            .with_context(|| format!("cannot open trace file `{}`", path.display()))?;
        Ok(TraceInput::File(BufReader::with_capacity(BUFFER_LEN, file)))
    }

    /// The format the first bytes show, without consuming them.
    pub(crate) fn sniff_format(&mut self) -> io::Result<TraceFormat> {
        let start = self.fill_buf()?;
        let starts_with = |magic: &[u8]| {
            !start.is_empty() && start.starts_with(&magic[..start.len().min(magic.len())])
        };
        if starts_with(&EPCT_MAGIC) && starts_with(&PARTIAL_MAGIC) {
            // Both formats' common first bytes, and nothing after them: cut too early to tell.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the file has only {} byte(s), the start of an epct or a partial trace cut before it says which",
                    start.len()
                ),
            ));
        }
        Ok(if starts_with(&EPCT_MAGIC) {
            TraceFormat::Epct
        } else if starts_with(&PARTIAL_MAGIC) {
            TraceFormat::Partial
        } else {
            TraceFormat::Lackey
        })
    }
}

impl Read for TraceInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            TraceInput::File(r) => r.read(buf),
            TraceInput::Stdin(r) => r.read(buf),
        }
    }
}

impl BufRead for TraceInput {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            TraceInput::File(r) => r.fill_buf(),
            TraceInput::Stdin(r) => r.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            TraceInput::File(r) => r.consume(amount),
            TraceInput::Stdin(r) => r.consume(amount),
        }
    }
}
