//! `pocketdock-agent write PATH MODE MTIME`: stdin into the file PATH, for
//! a push of one file. `tar -x` reads a pipe in 10 KiB records and took
//! twice as long as the copy itself; this splices the pipe into the file.
//!
//! As `tar -x -p -o` would: the file is written beside PATH and renamed
//! over it (a link at PATH is replaced, never followed), with MODE (octal)
//! and MTIME (seconds since the epoch), owned by whoever runs it. Nothing
//! is left at PATH or beside it when anything fails; exit
//! [`wire::WRITE_REFUSED`] when the file cannot even be created.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::wire;

/// Write stdin to `path`; the process's exit code.
pub fn run(path: &str, mode: &str, mtime: &str) -> i32 {
    let (Ok(mode), Ok(mtime)) = (u32::from_str_radix(mode, 8), mtime.parse::<u64>()) else {
        eprintln!("pocketdock-agent: write: MODE is octal, MTIME seconds");
        return 2;
    };
    let path = Path::new(path);
    let temp = beside(path);
    let failed = |e: io::Error, code| {
        let _ = std::fs::remove_file(&temp);
        eprintln!("pocketdock-agent: write {}: {e}", path.display());
        code
    };
    // Refused before any input is read: the caller stops sending at once.
    let file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
    {
        Ok(f) => f,
        Err(e) => return failed(e, wire::WRITE_REFUSED),
    };
    match write(file, mode & 0o7777, mtime).and_then(|()| std::fs::rename(&temp, path)) {
        Ok(()) => 0,
        Err(e) => failed(e, 1),
    }
}

/// A name in `path`'s directory that nothing else uses.
fn beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(Default::default, std::ffi::OsStr::to_os_string);
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".pocketdock-{}", std::process::id()));
    path.with_file_name(temp)
}

fn write(mut file: File, mode: u32, mtime: u64) -> io::Result<()> {
    // From a pipe, std's copy splices: no pass through this process.
    io::copy(&mut io::stdin().lock(), &mut file)?;
    file.set_permissions(Permissions::from_mode(mode))?;
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_file_is_a_hidden_sibling() {
        let t = beside(Path::new("/home/u/out.bin"));
        assert_eq!(t.parent(), Some(Path::new("/home/u")));
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".out.bin.pocketdock-"), "{name}");
    }
}
