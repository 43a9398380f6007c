//! The symbols of one line of GNU assembler (AT&T syntax), as the dual compilation
//! (`dual_asm.rs`) renames them and the carried-register analysis (`carried_registers.rs`) reads
//! labels: quoted strings, comments, register names (`%rax`) and `@` keywords are never symbols.

/// Whether `c` may start a symbol (a label, a function or variable name, a directive).
pub(crate) fn is_symbol_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '$')
}

/// Whether `c` may continue a symbol.
pub(crate) fn is_symbol_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$')
}

/// The symbol-like tokens of `text` outside quoted strings and comments, skipping register
/// names (`%rax`).
pub(crate) fn symbols(text: &str) -> impl Iterator<Item = &str> {
    tokens(text).filter_map(|t| match t {
        Token::Symbol(s) => Some(s),
        Token::Other(_) => None,
    })
}

/// A piece of an assembler line: a symbol, or anything else kept as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    Symbol(&'a str),
    Other(&'a str),
}

/// Splits a line into symbol tokens and everything else, so renaming touches symbols only.
pub(crate) fn tokens(text: &str) -> impl Iterator<Item = Token<'_>> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        let c = bytes[i] as char;
        if c == '"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(bytes.len());
            return Some(Token::Other(&text[start..i]));
        }
        if c == '#' {
            i = bytes.len();
            return Some(Token::Other(&text[start..]));
        }
        // `%rax` is a register and `@function`, `f@PLT` are keywords, not symbols.
        let after_register = start > 0 && matches!(bytes[start - 1], b'%' | b'@');
        if is_symbol_start(c) {
            while i < bytes.len() && is_symbol_char(bytes[i] as char) {
                i += 1;
            }
            let token = &text[start..i];
            return Some(if after_register {
                Token::Other(token)
            } else {
                Token::Symbol(token)
            });
        }
        if c.is_ascii_digit() {
            // Numbers (and numeric local labels like `1f`) are never renamed.
            while i < bytes.len() && is_symbol_char(bytes[i] as char) {
                i += 1;
            }
            return Some(Token::Other(&text[start..i]));
        }
        i += c.len_utf8().max(1);
        while i < text.len() && !text.is_char_boundary(i) {
            i += 1;
        }
        Some(Token::Other(&text[start..i]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_skip_strings_comments_and_registers() {
        let found: Vec<&str> = symbols("A+8(%rip), %rax # B").collect();
        assert_eq!(found, ["A"]);
        let found: Vec<&str> = symbols("f@PLT, @function").collect();
        assert_eq!(found, ["f"]);
        let found: Vec<&str> = symbols("\"C \\\" D\", E").collect();
        assert_eq!(found, ["E"]);
    }
}
