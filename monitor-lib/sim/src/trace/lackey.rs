//! A streaming reader of Valgrind `lackey --trace-mem=yes` logs.
//!
//! Lackey writes `I  ADDR,SIZE` for instruction fetches and ` L `, ` S `, ` M ` lines for loads,
//! stores and modifies (hexadecimal addresses, decimal sizes), mixed with Valgrind's own
//! `==pid==` messages and, when its log shares a stream with the program, the program's output.
//! Lines with the trace prefixes must parse; every other line is skipped and counted.

use std::io::{BufRead, Read};

use super::{TraceKind, TraceRecord};

/// Why a lackey log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LackeyError {
    #[error("cannot read the trace after line {line}")]
    Io {
        line: u64,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "line {line} is longer than {MAX_LINE_BYTES} bytes without a newline: not a lackey log (give the log of `valgrind --tool=lackey --trace-mem=yes`)"
    )]
    LineTooLong { line: u64 },
    #[error("line {line}: malformed trace line `{text}`: {why}")]
    Malformed {
        line: u64,
        /// The offending line, cut to a readable length.
        text: String,
        why: &'static str,
    },
}

/// The longest line read: a lackey record is a few dozen bytes and valgrind's own lines are
/// short, so a longer one is some other file (`/dev/zero`, a binary), which would otherwise
/// be read into memory whole.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;

/// Reads [`TraceRecord`]s from a lackey log, one line at a time, reusing one line buffer.
#[derive(Debug)]
pub struct LackeyReader<R> {
    input: R,
    line: Vec<u8>,
    line_number: u64,
    bytes_read: u64,
    skipped_lines: u64,
    finished: bool,
}

impl<R: BufRead> LackeyReader<R> {
    /// Wraps a buffered reader positioned at the start of a log.
    pub fn new(input: R) -> Self {
        Self {
            input,
            line: Vec::with_capacity(128),
            line_number: 0,
            bytes_read: 0,
            skipped_lines: 0,
            finished: false,
        }
    }

    /// Lines read so far, trace or not.
    pub fn lines_read(&self) -> u64 {
        self.line_number
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Lines that were not trace lines (Valgrind's messages, the program's output).
    pub fn skipped_lines(&self) -> u64 {
        self.skipped_lines
    }

    /// The next record, `Ok(None)` at the end of the log. A line that lies whole in the
    /// reader's buffer is parsed where it lies; only one split across two fills (or the last,
    /// without a newline) is copied out first.
    pub fn next_record(&mut self) -> Result<Option<TraceRecord>, LackeyError> {
        loop {
            let io_error = |line, source| LackeyError::Io { line, source };
            let buffered = self
                .input
                .fill_buf()
                .map_err(|source| io_error(self.line_number, source))?;
            let (parsed, len) = match memchr::memchr(b'\n', buffered) {
                Some(end) => {
                    let line = &buffered[..=end];
                    let parsed = parse_line(line).with_text(line);
                    self.input.consume(end + 1);
                    (parsed, end + 1)
                }
                None => {
                    self.line.clear();
                    let len = (&mut self.input)
                        .take(MAX_LINE_BYTES)
                        .read_until(b'\n', &mut self.line)
                        .map_err(|source| io_error(self.line_number, source))?;
                    if len == 0 {
                        return Ok(None);
                    }
                    if len as u64 == MAX_LINE_BYTES && self.line.last() != Some(&b'\n') {
                        return Err(LackeyError::LineTooLong {
                            line: self.line_number + 1,
                        });
                    }
                    (parse_line(&self.line).with_text(&self.line), len)
                }
            };
            self.line_number += 1;
            self.bytes_read += len as u64;
            match parsed {
                Parsed::Record(record) => return Ok(Some(record)),
                Parsed::Other => self.skipped_lines += 1,
                Parsed::Malformed { text, why } => {
                    return Err(LackeyError::Malformed {
                        line: self.line_number,
                        text,
                        why,
                    });
                }
            }
        }
    }
}

/// A line parsed, with a malformed line's text kept for the error (the line itself may be
/// gone from the buffer by then).
enum Parsed {
    Record(TraceRecord),
    Other,
    Malformed { text: String, why: &'static str },
}

impl Line {
    #[inline]
    fn with_text(self, line: &[u8]) -> Parsed {
        match self {
            Line::Record(record) => Parsed::Record(record),
            Line::Other => Parsed::Other,
            Line::Malformed(why) => Parsed::Malformed {
                text: printable_excerpt(line),
                why,
            },
        }
    }
}

impl<R: BufRead> Iterator for LackeyReader<R> {
    type Item = Result<TraceRecord, LackeyError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        let item = self.next_record().transpose();
        super::end_at_error(item, &mut self.finished)
    }
}

enum Line {
    Record(TraceRecord),
    Other,
    Malformed(&'static str),
}

/// Inlined: returned through memory, a `Line` was stored in pieces and read back whole, a
/// store the load could not be forwarded from, which took half of `next_record`'s samples.
#[inline(always)]
fn parse_line(line: &[u8]) -> Line {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (kind, rest) = match line {
        [b'I', b' ', b' ', rest @ ..] => (TraceKind::Instr, rest),
        [b' ', b'L', b' ', rest @ ..] => (TraceKind::Load, rest),
        [b' ', b'S', b' ', rest @ ..] => (TraceKind::Store, rest),
        [b' ', b'M', b' ', rest @ ..] => (TraceKind::Modify, rest),
        _ => return Line::Other,
    };
    match parse_addr_size(rest) {
        Ok((addr, size)) => Line::Record(TraceRecord { kind, addr, size }),
        Err(why) => Line::Malformed(why),
    }
}

fn parse_addr_size(text: &[u8]) -> Result<(u64, u32), &'static str> {
    let Some(comma) = memchr::memchr(b',', text) else {
        return Err("expected ADDRESS,SIZE");
    };
    let (hex, dec) = (&text[..comma], &text[comma + 1..]);
    if hex.is_empty() || hex.len() > 16 {
        return Err("the address must be 1 to 16 hexadecimal digits");
    }
    let mut addr = 0u64;
    for &b in hex {
        let digit = HEX_DIGITS[usize::from(b)];
        if digit == NOT_HEX {
            return Err("the address is not hexadecimal");
        }
        addr = (addr << 4) | u64::from(digit);
    }
    if dec.is_empty() {
        return Err("the size is missing");
    }
    let mut size = 0u32;
    for &b in dec {
        if !b.is_ascii_digit() {
            return Err("the size is not a decimal number");
        }
        size = size
            .checked_mul(10)
            .and_then(|s| s.checked_add(u32::from(b - b'0')))
            .ok_or("the size is too large")?;
    }
    if size == 0 {
        return Err("the size is zero");
    }
    Ok((addr, size))
}

/// [`HEX_DIGITS`] of a byte that is not a hexadecimal digit.
const NOT_HEX: u8 = 0xFF;

/// Each byte's value as a hexadecimal digit, or [`NOT_HEX`]: one load a digit, where a match on
/// three ranges took several compares and branches (an address is most of a line).
static HEX_DIGITS: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => NOT_HEX,
        };
        b += 1;
    }
    table
};

fn printable_excerpt(line: &[u8]) -> String {
    const MAX: usize = 80;
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<Vec<TraceRecord>, LackeyError> {
        LackeyReader::new(text.as_bytes()).collect()
    }

    fn rec(kind: TraceKind, addr: u64, size: u32) -> TraceRecord {
        TraceRecord { kind, addr, size }
    }

    #[test]
    fn lines_split_across_buffer_fills_read_as_whole_ones() {
        // Every buffer size from one byte up: lines are parsed in place, copied when split
        // across two fills, and the last one may lack its newline.
        let log = "==1== Lackey\nI  0401ab70,3\n S 1fff000758,8\r\n L 1ffefff8a8,32\n M 0060a0b0,4";
        let expected = read_all(log).unwrap();
        assert_eq!(expected.len(), 4);
        for capacity in 1..=log.len() + 1 {
            let input = std::io::BufReader::with_capacity(capacity, log.as_bytes());
            let mut reader = LackeyReader::new(input);
            let got: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
            assert_eq!(got, expected, "buffer of {capacity} bytes");
            assert_eq!((reader.lines_read(), reader.skipped_lines()), (5, 1));
            assert_eq!(reader.bytes_read(), log.len() as u64);
        }
        let bad = "I  0401ab70,3\n L 12,zz\n";
        for capacity in [1, 5, 16, 64] {
            let input = std::io::BufReader::with_capacity(capacity, bad.as_bytes());
            let err = LackeyReader::new(input).nth(1).unwrap().unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("line 2: malformed trace line ` L 12,zz`"),
                "{capacity}: {err}"
            );
        }
    }

    #[test]
    fn an_endless_line_is_refused_after_a_bounded_read() {
        // `/dev/zero` as a trace: refused at the first line, not read into memory for ever.
        let input = std::io::BufReader::new(std::io::repeat(0));
        let mut reader = LackeyReader::new(input);
        let err = reader.next_record().unwrap_err();
        assert!(matches!(err, LackeyError::LineTooLong { line: 1 }), "{err}");
        assert!(err.to_string().contains("not a lackey log"), "{err}");
    }

    #[test]
    fn reads_every_kind_and_skips_valgrind_messages() {
        let log = "==8270== Lackey, an example Valgrind tool\n\
                   ==8270== \n\
                   I  0401ab70,3\n \
                   S 1fff000758,8\n \
                   L 1ffefff8a8,32\n \
                   M 0060a0b0,4\n\
                   --8270-- a warning\n\
                   ==8270== Counted 1 call\n";
        let mut reader = LackeyReader::new(log.as_bytes());
        let records: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            records,
            [
                rec(TraceKind::Instr, 0x0401_ab70, 3),
                rec(TraceKind::Store, 0x1f_ff00_0758, 8),
                rec(TraceKind::Load, 0x1f_feff_f8a8, 32),
                rec(TraceKind::Modify, 0x0060_a0b0, 4),
            ]
        );
        assert_eq!(reader.skipped_lines(), 4);
        assert_eq!(reader.lines_read(), 8);
        assert_eq!(reader.bytes_read(), log.len() as u64);
    }

    #[test]
    fn accepts_crlf_and_a_missing_final_newline() {
        let records = read_all("I  10,4\r\n L ff,8").unwrap();
        assert_eq!(
            records,
            [
                rec(TraceKind::Instr, 0x10, 4),
                rec(TraceKind::Load, 0xff, 8)
            ]
        );
    }

    #[test]
    fn program_output_that_only_resembles_a_trace_is_skipped() {
        assert_eq!(read_all("I am the program\nLoad 1,2\n").unwrap(), []);
    }

    #[test]
    fn every_byte_reads_as_the_hexadecimal_digit_it_is() {
        for b in 0..=255u8 {
            let expected = char::from(b).to_digit(16).map_or(NOT_HEX, |d| d as u8);
            assert_eq!(HEX_DIGITS[usize::from(b)], expected, "byte {b:#x}");
        }
        assert_eq!(parse_addr_size(b"0aBcDeF9,12"), Ok((0xabc_def9, 12)));
    }

    #[test]
    fn malformed_trace_lines_name_their_line_number() {
        let cases = [
            ("I  0401ab70\n", "expected ADDRESS,SIZE"),
            ("I  04g1,3\n", "the address is not hexadecimal"),
            (" L ,3\n", "the address must be 1 to 16 hexadecimal digits"),
            (
                " S 11112222333344445,3\n",
                "the address must be 1 to 16 hexadecimal digits",
            ),
            (" M 10,\n", "the size is missing"),
            (" M 10,4x\n", "the size is not a decimal number"),
            (" M 10,99999999999\n", "the size is too large"),
            (" L 10,0\n", "the size is zero"),
        ];
        for (bad, expected) in cases {
            let log = format!("==1== hello\nI  10,4\n{bad}I  14,4\n");
            match read_all(&log) {
                Err(LackeyError::Malformed { line, why, .. }) => {
                    assert_eq!((line, why), (3, expected), "for {bad:?}");
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn the_stream_ends_after_an_error() {
        let mut reader = LackeyReader::new("I  zz,1\nI  10,4\n".as_bytes());
        assert!(matches!(reader.next(), Some(Err(_))));
        assert!(reader.next().is_none());
    }

    #[test]
    fn long_malformed_lines_are_cut_in_the_message() {
        let log = format!("I  1,{}\n", "9".repeat(300));
        let err = read_all(&log).unwrap_err().to_string();
        assert!(err.len() < 200, "{err}");
        assert!(err.starts_with("line 1: malformed trace line"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = LackeyReader::new(&bytes[..]).count();
        }
    }
}
