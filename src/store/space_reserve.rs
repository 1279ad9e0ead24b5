//! A little disk space set aside so a record can still be closed when the
//! disk fills.
//!
//! A step that prints more than the disk holds fills it through its log;
//! without room, `instance.toml` would stay `running` and the last history
//! lines would be lost. So a job record starts by writing a small reserve
//! file; on the first "no space left" the recorder stops writing step
//! output, frees the reserve, and spends it on what says how the job ended.
//! The file is removed when the job ends (a killed runner leaves it: it is
//! part of the record directory, and goes with it).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The reserve's file name in a record directory.
pub(super) const RESERVE_FILE: &str = ".space-reserve";

/// Bytes set aside beyond twice the size of `instance.toml`.
const BASE: usize = 64 * 1024;

/// The reserve of one record directory, while it is held.
#[derive(Debug)]
pub(super) struct SpaceReserve {
    path: Option<PathBuf>,
}

impl SpaceReserve {
    /// Set aside room in `dir` for a record whose `instance.toml` is about
    /// `record_bytes` long (it is rewritten beside itself: twice that). When
    /// even that cannot be written, nothing is held.
    pub(super) fn claim(dir: &Path, record_bytes: usize) -> SpaceReserve {
        let path = dir.join(RESERVE_FILE);
        let zeros = vec![0u8; BASE + 2 * record_bytes];
        let written = File::create(&path).and_then(|mut f| f.write_all(&zeros));
        if written.is_err() {
            let _ = std::fs::remove_file(&path);
            return SpaceReserve { path: None };
        }
        SpaceReserve { path: Some(path) }
    }

    /// Free the reserve; true when it was held (so there is room now).
    pub(super) fn release(&mut self) -> bool {
        match self.path.take() {
            Some(p) => std::fs::remove_file(p).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_then_freed_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = SpaceReserve::claim(tmp.path(), 1000);
        let len = std::fs::metadata(tmp.path().join(RESERVE_FILE))
            .unwrap()
            .len();
        assert_eq!(len, (BASE + 2000) as u64);
        assert!(r.release());
        assert!(!tmp.path().join(RESERVE_FILE).exists());
        assert!(!r.release());
    }
}
