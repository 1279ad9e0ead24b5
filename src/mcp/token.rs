//! The bearer token of the HTTP transport, when the user keeps none in a
//! file: made anew from the kernel's random source (a token guards code
//! execution, so no ordinary PRNG).

use std::fmt::Write as _;
use std::io::Read;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_new_each_time() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
