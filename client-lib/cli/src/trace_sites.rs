//! Which access sites `epcache trace convert` keeps (`--function` by a program's DWARF, or
//! `--code-range`), and the site table and data structures it writes into a partial trace.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, bail};
use epcache_sim::trace::partial::{SiteInfo, StructureRange};
use epcache_symbols::DebugInfo;

/// Valgrind maps a position-independent main executable at this address on amd64.
pub(crate) const VALGRIND_PIE_BASE: u64 = 0x10_8000;

/// `START-END`: a half-open range of code addresses in hexadecimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CodeRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl FromStr for CodeRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let hex = |v: &str| {
            u64::from_str_radix(v.trim().trim_start_matches("0x"), 16)
                .map_err(|_| format!("`{v}` in `{s}` is not a hexadecimal address"))
        };
        let Some((start, end)) = s.split_once('-') else {
            return Err(format!(
                "`{s}` is not START-END (hexadecimal, e.g. 401000-4012a0)"
            ));
        };
        let (start, end) = (hex(start)?, hex(end)?);
        if end <= start {
            return Err(format!("`{s}` is empty: its end is not above its start"));
        }
        Ok(Self { start, end })
    }
}

/// The program a lackey log was taken of, with its symbols at the addresses Valgrind ran it.
#[derive(Debug)]
pub(crate) struct Program {
    info: DebugInfo,
    bias: u64,
}

impl Program {
    /// Reads `binary`'s DWARF; `bias` is where Valgrind loaded it (by default 0 for a fixed
    /// address executable, [`VALGRIND_PIE_BASE`] for a position-independent one).
    pub(crate) fn load(binary: &Path, bias: Option<u64>) -> anyhow::Result<Self> {
        let info = DebugInfo::load_program(binary).with_context(|| {
            format!(
                "reading the symbols of `{}` (build it with -g)",
                binary.display()
            )
        })?;
        let bias = bias.unwrap_or(if info.first_load_vaddr == 0 {
            VALGRIND_PIE_BASE
        } else {
            0
        });
        Ok(Self { info, bias })
    }

    /// The run-time code range of function `name`.
    pub(crate) fn function_range(&self, name: &str, binary: &Path) -> anyhow::Result<CodeRange> {
        let ranges: Vec<CodeRange> = self
            .info
            .functions
            .iter()
            .filter(|f| f.name == name && f.high_pc > f.low_pc)
            .map(|f| CodeRange {
                start: f.low_pc + self.bias,
                end: f.high_pc + self.bias,
            })
            .collect();
        match ranges[..] {
            [range] => Ok(range),
            [] => bail!(
                "`{}` has no function `{name}` with code (is it inlined? mark it noinline, or give --code-range)",
                binary.display()
            ),
            _ => bail!(
                "`{}` has {} functions named `{name}`; give --code-range instead",
                binary.display(),
                ranges.len()
            ),
        }
    }

    /// What the DWARF says of the code at run-time address `site`.
    pub(crate) fn site_info(&self, site: u64) -> Option<SiteInfo> {
        let pc = site.checked_sub(self.bias)?;
        let (file, line) = self
            .info
            .line_at(pc)
            .map_or((String::new(), 0), |(f, l)| (f.to_owned(), l));
        let function = self
            .info
            .function_at(pc)
            .map_or(String::new(), |f| f.name.clone());
        (line != 0 || !function.is_empty()).then_some(SiteInfo {
            file,
            line,
            function,
            structure: String::new(),
        })
    }

    /// The program's global arrays and variables at their run-time addresses.
    pub(crate) fn structures(&self) -> Vec<StructureRange> {
        self.info
            .globals
            .iter()
            .filter(|g| g.size > 0 && g.descriptor.is_none())
            .map(|g| StructureRange {
                name: g.qualified_name.clone(),
                start: g.address + self.bias,
                end: g.address + self.bias + g.size,
            })
            .collect()
    }
}

/// The sites a conversion keeps: all, or those in the given ranges.
#[derive(Debug, Clone, Default)]
pub(crate) struct SiteFilter {
    ranges: Vec<CodeRange>,
}

impl SiteFilter {
    /// The filter of `--function` (resolved in `program`) and `--code-range`.
    pub(crate) fn new(
        functions: &[String],
        code_ranges: &[CodeRange],
        program: Option<(&Program, &PathBuf)>,
    ) -> anyhow::Result<Self> {
        let mut ranges = code_ranges.to_vec();
        for name in functions {
            let Some((program, binary)) = program else {
                bail!("--function needs --binary, the program the trace was taken of");
            };
            ranges.push(program.function_range(name, binary)?);
        }
        Ok(Self { ranges })
    }

    pub(crate) fn is_everything(&self) -> bool {
        self.ranges.is_empty()
    }

    #[inline]
    pub(crate) fn keeps(&self, site: u64) -> bool {
        self.ranges.is_empty() || self.ranges.iter().any(|r| (r.start..r.end).contains(&site))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_ranges_parse_and_reject_clearly() {
        assert_eq!(
            "0x401000-4012a0".parse::<CodeRange>().unwrap(),
            CodeRange {
                start: 0x401000,
                end: 0x4012a0
            }
        );
        assert!(
            "401000"
                .parse::<CodeRange>()
                .unwrap_err()
                .contains("START-END")
        );
        assert!("20-10".parse::<CodeRange>().unwrap_err().contains("empty"));
        assert!(
            "zz-10"
                .parse::<CodeRange>()
                .unwrap_err()
                .contains("hexadecimal")
        );
        let filter = SiteFilter {
            ranges: vec!["10-20".parse().unwrap()],
        };
        assert!(filter.keeps(0x10) && filter.keeps(0x1f) && !filter.keeps(0x20));
    }
}
