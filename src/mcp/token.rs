//! The bearer token of the HTTP transport: read from a file the user
//! keeps, or made anew from the kernel's random source (a token guards
//! code execution, so no ordinary PRNG).

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// A new token: 32 random bytes, hex.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io("read /dev/urandom for a token", e))?;
    Ok(bytes.iter().fold(String::with_capacity(64), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

/// The token in `path`: one line, no spaces inside.
pub fn read_token_file(path: &Path) -> Result<String> {
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
    fn tokens_are_new_each_time_and_files_must_hold_one_line() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
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
