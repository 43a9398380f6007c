//! A bearer token read from a file, for the daemon (`epcached --token-file`) and for tools
//! (`epcache --token-file`). The token grants whoever holds it the power to drive the user's
//! programs over TCP, so a file that other users may read is refused, as ssh refuses a private
//! key others can read: the runtime directory gets the same care (`discovery.rs`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// It could not be read.
    #[error("cannot read the token file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// Users other than its owner may read it.
    #[error(
        "the token file {} can be read by other users (mode {mode:03o}): anyone who reads it can drive your programs; make it private (`chmod 600 {}`) and, as it may have been read, make a new token",
        path.display(),
        path.display()
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The environment variable meant to hold the token names a file instead.
    #[error(
        "{var} holds the token itself, and names the file {} here: give --token-file {} instead (or {var}=\"$(cat {})\")",
        path.display(),
        path.display(),
        path.display()
    )]
    NamesAFile {
        /// The variable.
        var: String,
        /// The file it names.
        path: PathBuf,
    },
}

/// The bearer token: read from `token_file` when one is given, else the value of the
/// environment variable `var` (the token itself), else none. A value naming an existing file is
/// refused: sent as the token, it would have the daemon refuse it, and the user hunt for a wrong
/// secret.
pub fn bearer_token(
    token_file: Option<&Path>,
    var: &str,
) -> Result<Option<String>, TokenFileError> {
    match token_file {
        Some(path) => read_token_file(path).map(Some),
        None => token_value(var, std::env::var(var).ok()),
    }
}

/// [`bearer_token`]'s reading of `var`'s `value`.
fn token_value(var: &str, value: Option<String>) -> Result<Option<String>, TokenFileError> {
    let Some(token) = value.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let named = Path::new(token.trim());
    if token.starts_with('/') && named.is_file() {
        return Err(TokenFileError::NamesAFile {
            var: var.to_owned(),
            path: named.to_owned(),
        });
    }
    Ok(Some(token))
}

/// The token in `path`, trimmed, if only its owner may read the file.
pub fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    let read = |source| TokenFileError::Read {
        path: path.to_owned(),
        source,
    };
    let mode = std::fs::metadata(path).map_err(read)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(TokenFileError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(std::fs::read_to_string(path)
        .map_err(read)?
        .trim()
        .to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_private_token_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "a-token-long-enough-to-be-accepted\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_token_file(&path).unwrap(),
            "a-token-long-enough-to-be-accepted"
        );
        for mode in [0o644, 0o640, 0o604] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_token_file(&path).unwrap_err();
            assert!(matches!(e, TokenFileError::Exposed { .. }), "{mode:o}: {e}");
            assert!(e.to_string().contains("chmod 600"), "{e}");
        }
        assert!(matches!(
            read_token_file(&dir.path().join("missing")),
            Err(TokenFileError::Read { .. })
        ));
    }

    #[test]
    fn a_token_variable_holds_the_token_and_one_naming_a_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "a-token-long-enough-to-be-accepted\n").unwrap();
        let value = |v: &str| token_value("EPCACHE_TOKEN", Some(v.to_owned()));
        assert_eq!(
            value("s3cret-value").unwrap().as_deref(),
            Some("s3cret-value")
        );
        assert_eq!(token_value("EPCACHE_TOKEN", None).unwrap(), None);
        assert_eq!(value("").unwrap(), None);
        let e = value(path.to_str().unwrap()).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("give --token-file {} instead", path.display())),
            "{e}"
        );
    }
}
