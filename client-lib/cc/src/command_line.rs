//! The compiler command line as `epcache cc` reads it: response files expanded and spellings
//! that mean the same made one, before the command is classified and split.
//!
//! Why: `epcache cc` decides from the arguments whether a command compiles, links or both, and
//! rewrites them accordingly. An argument it cannot see into (`@args.rsp`) or a spelling it
//! does not know (`-ok.o`) made it take a compile for a link (an uninstrumented object, and
//! gcc's "linker input file unused") or pass two outputs (`cc1: output filename specified
//! twice`).

use std::path::Path;

use crate::error::{CcError, Doing as _};

/// Response files nested deeper than this are taken for a loop (gcc's own limit is similar in
/// spirit: it refuses a file that includes itself).
const MAX_NESTING: usize = 32;

/// `args` with every `@FILE` replaced by the arguments in FILE (gcc's rules: whitespace
/// separates, single and double quotes group, a backslash escapes the next character, and
/// FILE may name further `@` files) and `-oFILE` split into `-o FILE`. An `@FILE` that names no
/// readable file stays as it is, as gcc keeps it.
pub(crate) fn normalised(args: &[String]) -> Result<Vec<String>, CcError> {
    let expanded = expand(args, 0)?;
    let mut out = Vec::with_capacity(expanded.len());
    let mut is_value = false;
    for arg in expanded {
        // The value of an option that takes the next argument (`-mllvm -opt-bisect-limit=5`,
        // `-Xlinker -o...`) is passed on as it is.
        let value = std::mem::replace(&mut is_value, takes_a_value(&arg));
        match arg.strip_prefix("-o") {
            Some(file) if !file.is_empty() && !value => {
                out.push("-o".to_owned());
                out.push(file.to_owned());
            }
            _ => out.push(arg),
        }
    }
    Ok(out)
}

/// Options whose value is the next argument and may itself start with `-o`.
fn takes_a_value(arg: &str) -> bool {
    matches!(
        arg,
        "-mllvm" | "-Xclang" | "-Xlinker" | "-Xassembler" | "-Xpreprocessor" | "-o"
    )
}

fn expand(args: &[String], depth: usize) -> Result<Vec<String>, CcError> {
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        let Some(file) = arg.strip_prefix('@').filter(|f| Path::new(f).is_file()) else {
            out.push(arg.clone());
            continue;
        };
        if depth >= MAX_NESTING {
            return Err(CcError::ResponseFileLoop {
                file: file.to_owned(),
                depth: MAX_NESTING,
            });
        }
        let text =
            std::fs::read_to_string(file).doing(|| format!("reading the response file {file}"))?;
        out.extend(expand(&split(&text), depth + 1)?);
    }
    Ok(out)
}

/// A response file's text split into arguments, as gcc's `buildargv` splits it.
fn split(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut in_arg = false;
    let mut quote = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', _) => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
                in_arg = true;
            }
            (q, Some(open)) if q == open => quote = None,
            (c, Some(_)) => current.push(c),
            ('\'' | '"', None) => {
                quote = Some(c);
                in_arg = true;
            }
            (c, None) if c.is_whitespace() => {
                if in_arg {
                    args.push(std::mem::take(&mut current));
                    in_arg = false;
                }
            }
            (c, None) => {
                current.push(c);
                in_arg = true;
            }
        }
    }
    if in_arg {
        args.push(current);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn response_files_split_like_gcc_s() {
        assert_eq!(
            split("-O2 -c\tk.c\n -o \"out dir/k.o\" -D'A=1 2' a\\ b \"\" x"),
            strings(&[
                "-O2",
                "-c",
                "k.c",
                "-o",
                "out dir/k.o",
                "-DA=1 2",
                "a b",
                "",
                "x"
            ])
        );
        assert_eq!(split("  \n"), Vec::<String>::new());
    }

    #[test]
    fn response_files_are_expanded_where_they_stand_and_nested() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.rsp");
        std::fs::write(&inner, "-DINNER -c").unwrap();
        let outer = dir.path().join("outer.rsp");
        std::fs::write(&outer, format!("-O2 @{} k.c", inner.display())).unwrap();
        let line = strings(&["-g", &format!("@{}", outer.display()), "-ok.o"]);
        assert_eq!(
            normalised(&line).unwrap(),
            strings(&["-g", "-O2", "-DINNER", "-c", "k.c", "-o", "k.o"])
        );
        // An option's value is not split.
        assert_eq!(
            normalised(&strings(&[
                "-mllvm",
                "-opt-bisect-limit=5",
                "-Xlinker",
                "-oX"
            ]))
            .unwrap(),
            strings(&["-mllvm", "-opt-bisect-limit=5", "-Xlinker", "-oX"])
        );
        // Not a file: left for the compiler, which treats it the same way.
        let missing = strings(&["@no-such.rsp", "-o", "p"]);
        assert_eq!(normalised(&missing).unwrap(), missing);
        // A file naming itself is refused, not expanded forever.
        let looped = dir.path().join("loop.rsp");
        std::fs::write(&looped, format!("-c @{}", looped.display())).unwrap();
        let error = normalised(&strings(&[&format!("@{}", looped.display())])).unwrap_err();
        assert!(error.to_string().contains("nested more than"), "{error}");
    }
}
