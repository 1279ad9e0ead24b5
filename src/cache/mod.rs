//! The step cache: what a step's result is keyed on, and (above the key)
//! where results are kept.
//!
//! The key is pure: it hashes what the caller hands it (an image digest,
//! rendered fields, a digest of pushed content, secrets as HMACs), so it
//! never depends on the project's path, on map order or on the time. See
//! docs/cache.md.
//!
//! - `key`: [`Key`], a sandbox's base state and a step's key;
//! - `content`: the digest of a host file or tree a push sends;
//! - `entry`: what is kept of a step that succeeded, published atomically;
//! - `listing`: entries by last hit, and their removal;
//! - `secret_key`: the per-project HMAC key, so secrets count without
//!   their values being stored anywhere.

mod content;
mod entry;
mod key;
mod listing;
mod secret_key;

pub use content::content_digest;
pub use entry::{CacheDir, Entry, EntryFile, EntryPython, STDOUT_KEPT};
pub use key::{BaseState, Key, StepKeyInput};
pub use listing::Listed;
pub use secret_key::SecretKey;
