//! A manifest's bytes into text a parser can trust: read with a cap,
//! UTF-8 checked, a byte order mark dropped, NUL bytes refused.
//!
//! yaml-rust2 stops at a NUL byte as if the file ended there, so
//! `run: echo hi\0; rm -rf /tmp/x` would quietly run a truncated job; and a
//! file that is not UTF-8 would otherwise fail with no position. Each is a
//! diagnostic at the offending byte instead.

use std::io::Read;
use std::path::Path;

use super::limits::Limit;
use crate::diag::{Diagnostic, ManifestError, Source, Span};

/// Read at most `cap` bytes of `path` as text; more is an error, so
/// `/dev/zero` is not read to the end.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Result<String, ManifestError> {
    let read_error = |source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Checked before opening: opening a FIFO for reading waits for a writer.
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if !meta.is_file() {
        return Err(not_a_file(path, meta.file_type()).into());
    }
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(path, cap).into());
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
        let source = Source::new(path, text);
        let bad = e.as_bytes()[at];
        Diagnostic::new(
            &source,
            Span::new(at, at + 1),
            format!("the manifest is not UTF-8 text: byte 0x{bad:02x} cannot start or continue a character here"),
        )
        .hint("save the file as UTF-8")
        .into()
    })
}

/// The error for a path that is a FIFO, a device, a directory or a socket.
fn not_a_file(path: &Path, kind: std::fs::FileType) -> Diagnostic {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Diagnostic::whole_file(
        path,
        format!("{} is {what}, not a regular file", path.display()),
    )
    .hint("give the path of a regular file; for generated text, write it to a file first (`generate > job.yaml`)")
}

/// The error for a file larger than `cap` bytes.
pub(crate) fn too_large(path: &Path, cap: u64) -> Diagnostic {
    Diagnostic::whole_file(
        path,
        format!("the manifest is larger than {cap} bytes (the `file_size` limit)"),
    )
    .hint(Limit::FileSize.how_to_raise())
}

/// `text` without a leading byte order mark.
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// An error at the first NUL byte of `source`, if it has one.
pub(crate) fn check_nul(source: &Source) -> Result<(), Diagnostic> {
    match source.text().find('\0') {
        None => Ok(()),
        Some(at) => Err(Diagnostic::new(
            source,
            Span::new(at, at + 1),
            "the manifest contains a NUL byte",
        )
        .hint("a manifest is text: remove the NUL byte (it would otherwise end the file here)")),
    }
}
