//! One line of `/proc/PID/maps`, read so that a file path with spaces stays whole.

/// A mapping of `/proc/PID/maps`: `start-end perms offset dev inode [path]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping<'a> {
    pub start: u64,
    pub end: u64,
    /// Offset in the file of the mapping's first byte.
    pub offset: u64,
    /// The pathname field without the kernel's " (deleted)" mark: a file path, a pseudo-path
    /// such as `[heap]`, or empty for an anonymous mapping. The kernel writes a newline in a
    /// path as `\012` and nothing else escaped, so spaces are kept as they are.
    pub path: &'a str,
    /// Whether the kernel marked the file deleted (unlinked, or replaced by a new file at
    /// `path` that is not what is mapped).
    pub deleted: bool,
}

/// Reads one line of `/proc/PID/maps` (without its newline); `None` when it is not one.
pub fn parse_maps_line(line: &str) -> Option<Mapping<'_>> {
    let mut rest = line;
    let range = next_field(&mut rest)?;
    let _perms = next_field(&mut rest)?;
    let offset = next_field(&mut rest)?;
    let _dev = next_field(&mut rest)?;
    let _inode = next_field(&mut rest)?;
    let (start, end) = range.split_once('-')?;
    // The pathname is the rest of the line after the padding that aligns it, spaces and all;
    // splitting it on whitespace lost every file under a directory with a space in its name.
    let pathname = rest.trim_start_matches(' ');
    let (path, deleted) = match pathname.strip_suffix(" (deleted)") {
        Some(path) => (path, true),
        None => (pathname, false),
    };
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        path,
        deleted,
    })
}

/// The next space-separated field of `rest`, which is left after it.
fn next_field<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let text = rest.trim_start_matches(' ');
    let end = text.find(' ').unwrap_or(text.len());
    let (field, after) = text.split_at(end);
    *rest = after;
    (!field.is_empty()).then_some(field)
}

#[cfg(test)]
mod tests {
    use super::{Mapping, parse_maps_line};

    /// Lines as Linux 6.x prints them (pathname padded to column 74).
    #[test]
    fn paths_with_spaces_and_deleted_files_stay_whole() {
        let cases = [
            (
                "5581c2a00000-5581c2a01000 r--p 00000000 08:01 1837361                    /tmp/.tmpAbC/sp dir/my prog",
                Mapping {
                    start: 0x5581_c2a0_0000,
                    end: 0x5581_c2a0_1000,
                    offset: 0,
                    path: "/tmp/.tmpAbC/sp dir/my prog",
                    deleted: false,
                },
            ),
            (
                "7f3a1c200000-7f3a1c202000 r-xp 00002000 fd:00 42                         /home/u/my libs/libk  two.so",
                Mapping {
                    start: 0x7f3a_1c20_0000,
                    end: 0x7f3a_1c20_2000,
                    offset: 0x2000,
                    path: "/home/u/my libs/libk  two.so",
                    deleted: false,
                },
            ),
            (
                "7f3a1c400000-7f3a1c401000 rw-p 00003000 fd:00 43                         /tmp/old build/prog (deleted)",
                Mapping {
                    start: 0x7f3a_1c40_0000,
                    end: 0x7f3a_1c40_1000,
                    offset: 0x3000,
                    path: "/tmp/old build/prog",
                    deleted: true,
                },
            ),
            (
                "7ffd5a3c0000-7ffd5a3e1000 rw-p 00000000 00:00 0                          [stack]",
                Mapping {
                    start: 0x7ffd_5a3c_0000,
                    end: 0x7ffd_5a3e_1000,
                    offset: 0,
                    path: "[stack]",
                    deleted: false,
                },
            ),
            (
                "7f3a1c600000-7f3a1c700000 rw-p 00000000 00:00 0 ",
                Mapping {
                    start: 0x7f3a_1c60_0000,
                    end: 0x7f3a_1c70_0000,
                    offset: 0,
                    path: "",
                    deleted: false,
                },
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(parse_maps_line(line), Some(expected), "{line}");
        }
        // An anonymous mapping may end right after the inode.
        let bare = parse_maps_line("7f3a1c600000-7f3a1c700000 rw-p 00000000 00:00 0").unwrap();
        assert_eq!((bare.path, bare.deleted), ("", false));
    }

    #[test]
    fn truncated_or_garbled_lines_are_no_mapping() {
        for line in [
            "",
            "5581c2a00000-5581c2a01000 r--p 00000000 08:01",
            "5581c2a00000 r--p 00000000 08:01 1837361 /bin/x",
            "zz-5581c2a01000 r--p 00000000 08:01 1837361 /bin/x",
            "5581c2a00000-5581c2a01000 r--p 0000000g 08:01 1837361 /bin/x",
        ] {
            assert_eq!(parse_maps_line(line), None, "{line:?}");
        }
    }
}
