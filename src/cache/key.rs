//! [`Key`]: a SHA-256 over length-prefixed, tagged fields, so that no two
//! different inputs can spell the same byte stream.

use std::fmt;

use sha2::{Digest, Sha256};

/// A cache key: 32 bytes, shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// The key as 64 lowercase hex digits.
    #[must_use]
    pub fn hex(&self) -> String {
        use fmt::Write;
        self.0.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// Parse 64 hex digits.
    #[must_use]
    pub fn from_hex(s: &str) -> Option<Key> {
        if s.len() != 64 || !s.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Key(out))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", &self.hex()[..12])
    }
}

/// A hasher that frames every field: a tag, then each part length-prefixed.
pub(super) struct Framed(Sha256);

impl Framed {
    pub(super) fn new(domain: &str) -> Framed {
        let mut f = Framed(Sha256::new());
        f.part(domain.as_bytes());
        f
    }

    pub(super) fn part(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    /// Raw bytes with no prefix (file contents, after their length).
    pub(super) fn raw(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(super) fn field(&mut self, tag: &str, value: &[u8]) {
        self.part(tag.as_bytes());
        self.part(value);
    }

    pub(super) fn opt(&mut self, tag: &str, value: Option<&str>) {
        match value {
            Some(v) => self.field(tag, format!("s{v}").as_bytes()),
            None => self.field(tag, b"-"),
        }
    }

    /// Pairs sorted by name, so the order they were declared in does not count.
    pub(super) fn pairs(&mut self, tag: &str, pairs: &[(String, String)]) {
        let mut sorted: Vec<&(String, String)> = pairs.iter().collect();
        sorted.sort();
        self.field(tag, &(sorted.len() as u64).to_le_bytes());
        for (k, v) in sorted {
            self.part(k.as_bytes());
            self.part(v.as_bytes());
        }
    }

    pub(super) fn finish(self) -> Key {
        Key(self.0.finalize().into())
    }
}

/// What a sandbox starts from, before any step.
#[derive(Debug, Clone, Default)]
pub struct BaseState<'a> {
    /// The engine's image id (`sha256:…`), never a tag: a retagged image
    /// is another state.
    pub image_digest: &'a str,
    /// The sandbox's user, when it sets one.
    pub user: Option<&'a str>,
    /// The sandbox's working directory, when it sets one.
    pub workdir: Option<&'a str>,
    /// The sandbox's environment, in any order.
    pub env: &'a [(String, String)],
}

impl BaseState<'_> {
    /// The key of this state.
    #[must_use]
    pub fn key(&self) -> Key {
        let mut h = Framed::new("pocketdock-cache-base-v1");
        h.field("image", self.image_digest.as_bytes());
        h.opt("user", self.user);
        h.opt("workdir", self.workdir);
        h.pairs("env", self.env);
        h.finish()
    }
}

/// What a step's key is made of. The caller renders the fields first, so
/// values from other sandboxes' outputs count through them.
#[derive(Debug, Clone, Default)]
pub struct StepKeyInput {
    /// The key of the sandbox's state before the step.
    pub prev: Option<Key>,
    /// `run`, `push`, `pull`, `snapshot`.
    pub kind: String,
    /// Rendered fields by name (`cmd`, `lang`, `user`, `cwd`, `dst`, …),
    /// in any order; the timeout is not one of them.
    pub fields: Vec<(String, String)>,
    /// The step's environment, in any order.
    pub env: Vec<(String, String)>,
    /// For a push, the digest of what it sends ([`super::content_digest`]).
    pub content: Option<Key>,
    /// `cache_key:` extra inputs (strings, or digests of files), in order.
    pub extra: Vec<String>,
    /// Each secret the step receives: its name and the HMAC of its value
    /// ([`super::SecretKey::mac`]), never the value.
    pub secrets: Vec<(String, Key)>,
}

impl StepKeyInput {
    /// The step's key: also the key of the sandbox's state after it.
    #[must_use]
    pub fn key(&self) -> Key {
        let mut h = Framed::new("pocketdock-cache-step-v1");
        h.field("prev", self.prev.as_ref().map_or(&[][..], |k| &k.0[..]));
        h.field("kind", self.kind.as_bytes());
        h.pairs("fields", &self.fields);
        h.pairs("env", &self.env);
        h.field(
            "content",
            self.content.as_ref().map_or(&[][..], |k| &k.0[..]),
        );
        h.field("extra", &(self.extra.len() as u64).to_le_bytes());
        for e in &self.extra {
            h.part(e.as_bytes());
        }
        let secrets: Vec<(String, String)> = self
            .secrets
            .iter()
            .map(|(n, m)| (n.clone(), m.hex()))
            .collect();
        h.pairs("secrets", &secrets);
        h.finish()
    }
}

#[cfg(test)]
#[path = "key_tests.rs"]
mod tests;
