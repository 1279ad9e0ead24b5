//! Byte sizes as users write them: `512`, `64k`, `10m`, `1g` (binary units).

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// What a size may look like, for error messages.
pub const SIZE_FORMS: &str =
    "a whole number of bytes with an optional unit k, m or g (powers of 1024), e.g. 512, 64k, 10m, 1g";

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The size in bytes.
    #[must_use]
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = || Error::Invalid {
            what: "size",
            value: s.to_string(),
            expected: SIZE_FORMS,
        };
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_suffix('b').unwrap_or(&t);
        let t = t.strip_suffix('i').unwrap_or(t);
        let (digits, mult) = match t.as_bytes().last() {
            Some(b'k') => (&t[..t.len() - 1], 1u64 << 10),
            Some(b'm') => (&t[..t.len() - 1], 1 << 20),
            Some(b'g') => (&t[..t.len() - 1], 1 << 30),
            Some(b'0'..=b'9') => (t, 1),
            _ => return Err(invalid()),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let n: u64 = digits.parse().map_err(|_| invalid())?;
        n.checked_mul(mult).map(ByteSize).ok_or_else(invalid)
    }
}

impl fmt::Display for ByteSize {
    /// Human form with one decimal: `42.1 MiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut v = self.0 as f64;
        let mut unit = 0;
        while v >= 1024.0 && unit < UNITS.len() - 1 {
            v /= 1024.0;
            unit += 1;
        }
        if unit == 0 {
            write!(f, "{} B", self.0)
        } else {
            write!(f, "{v:.1} {}", UNITS[unit])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!("512".parse::<ByteSize>().unwrap().0, 512);
        assert_eq!("64k".parse::<ByteSize>().unwrap().0, 64 * 1024);
        assert_eq!("10m".parse::<ByteSize>().unwrap().0, 10 * 1024 * 1024);
        assert_eq!("1g".parse::<ByteSize>().unwrap().0, 1 << 30);
        assert_eq!("256M".parse::<ByteSize>().unwrap().0, 256 << 20);
        assert_eq!("1k".parse::<ByteSize>().unwrap().0, 1024);
        assert_eq!("2MiB".parse::<ByteSize>().unwrap().0, 2 << 20);
    }

    #[test]
    fn rejects_other_forms_with_the_accepted_ones() {
        for bad in [
            "",
            "m",
            "1.5m",
            "-1",
            "10x",
            "ten",
            "1 k",
            "99999999999999999999g",
        ] {
            let err = bad.parse::<ByteSize>().unwrap_err().to_string();
            assert!(err.contains("e.g. 512, 64k, 10m, 1g"), "{bad}: {err}");
        }
    }

    #[test]
    fn displays_human_units() {
        assert_eq!(ByteSize(512).to_string(), "512 B");
        assert_eq!(ByteSize(256 << 20).to_string(), "256.0 MiB");
        assert_eq!(ByteSize(1536).to_string(), "1.5 KiB");
    }
}
