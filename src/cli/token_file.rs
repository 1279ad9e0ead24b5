//! `--token-file`, for `serve` and `mcp`: the bearer token a user keeps
//! in a file.

use std::path::Path;

use crate::error::Error;

/// The token in `path`: one line, no spaces inside.
pub(super) fn read_token_file(path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("read the token file {}", path.display()), e))?;
    let token = text.trim().to_string();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(Error::Invalid {
            what: "token file",
            value: path.display().to_string(),
            expected: "one line holding the token, with no spaces inside \
                       (e.g. `openssl rand -hex 32 > FILE`)",
        });
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_holds_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, "abc\n").unwrap();
        assert_eq!(read_token_file(&f).unwrap(), "abc");
        std::fs::write(&f, "a b\n").unwrap();
        assert!(read_token_file(&f).is_err());
        std::fs::write(&f, "\n").unwrap();
        assert!(read_token_file(&f).is_err());
    }
}
