//! The per-project key secrets are hashed with: an HMAC lets a changed
//! secret change the step's key while neither the value nor a plain hash
//! of it (which a short secret could be guessed back from) is stored.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::key::Key;

/// 32 random bytes, kept in a 0600 file of the project's cache.
#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// A key from given bytes (tests, and callers that keep their own).
    #[must_use]
    pub fn from_bytes(bytes: [u8; 32]) -> SecretKey {
        SecretKey(bytes)
    }

    /// Read the key at `path`, or make one there. Two processes making it
    /// at once agree: the file is written aside and linked into place,
    /// and the loser reads the winner's. A key readable by others is
    /// refused, since it would let them test guesses of a secret.
    pub fn load_or_create(path: &Path) -> io::Result<SecretKey> {
        match read(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut bytes = [0u8; 32];
        fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        let linked = fs::hard_link(&tmp, path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
            _ => read(path),
        }
    }

    /// The key at `path`, if one was made: a reader that must not write
    /// (`plan --cache`) takes none as "nothing with a secret is cached".
    pub fn load(path: &Path) -> io::Result<Option<SecretKey>> {
        match read(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            other => other.map(Some),
        }
    }

    /// The HMAC-SHA256 of a secret's name and value.
    ///
    /// # Panics
    ///
    /// Never: HMAC takes a key of any length.
    #[must_use]
    pub fn mac(&self, name: &str, value: &str) -> Key {
        let mut m =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        m.update(&(name.len() as u64).to_le_bytes());
        m.update(name.as_bytes());
        m.update(value.as_bytes());
        Key(m.finalize().into_bytes().into())
    }
}

fn read(path: &Path) -> io::Result<SecretKey> {
    let meta = fs::metadata(path)?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} may be read by other users; make it 0600 (chmod 600) or delete it",
                path.display()
            ),
        ));
    }
    let bytes = fs::read(path)?;
    let arr: [u8; 32] = bytes.try_into().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not a 32-byte key; delete it to make a new one",
                path.display()
            ),
        )
    })?;
    Ok(SecretKey(arr))
}
