//! Writing results to stdout, where a closed pipe (`epcache ... | head`) ends the output quietly,
//! and the commands printed for the user to paste into a shell.

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

/// Names as a message quotes them, each in backquotes, joined by `separator`:
/// `` `a`, `b` `` or `` `a` and `b` ``.
pub(crate) fn quoted<T: std::fmt::Display>(
    names: impl IntoIterator<Item = T>,
    separator: &str,
) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(separator)
}

/// `word` as one shell word: as it is when it holds only characters no shell treats specially,
/// else in single quotes (a cache spec's `;` would end the command).
pub(crate) fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=,:+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_a_shell_would_split_them() {
        assert_eq!(shell_word("r12000"), "r12000");
        assert_eq!(shell_word("/tmp/t.eppt"), "/tmp/t.eppt");
        assert_eq!(
            shell_word("D1=32K,8,64;LL=8M,16,64"),
            "'D1=32K,8,64;LL=8M,16,64'"
        );
        assert_eq!(shell_word("my trace.eppt"), "'my trace.eppt'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
