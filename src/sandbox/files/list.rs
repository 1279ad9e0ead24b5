//! Listing a directory in the sandbox: `stat` lines from one exec, parsed.

use super::Files;
use super::{container_path, FileEntry, FileKind};
use crate::engine::demux::StreamKind;
use crate::engine::ExecSpec;
use crate::error::{Error, Result};
use crate::sandbox::commands::{sh, wait_exit};

impl Files<'_> {
    /// List a directory in the sandbox (a file lists as itself).
    pub async fn list_files(self, path: &str) -> Result<Vec<FileEntry>> {
        const SCRIPT: &str = r#"if [ -d "$1" ]; then cd -- "$1" || exit 3
  for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then stat -c '%s %f %Y %n' -- "$f"; fi; done
elif [ -e "$1" ] || [ -L "$1" ]; then stat -c '%s %f %Y %n' -- "$1"
else exit 4; fi"#;
        let path = container_path(path)?;
        let mut argv = sh(SCRIPT);
        argv.extend(["sh".to_string(), path.clone()]);
        let spec = ExecSpec {
            cmd: argv,
            ..Default::default()
        };
        let (code, out) = self.exec_capture(&spec).await?;
        match code {
            0 => Ok(out.lines().filter_map(parse_stat_line).collect()),
            4 => Err(self.path_missing(&path)),
            _ => Err(Error::Protocol {
                op: "list files",
                detail: format!("listing {path} failed (exit {code}): {}", out.trim()),
            }),
        }
    }

    /// Run an exec to the end; exit code and stdout (stderr appended).
    async fn exec_capture(self, spec: &ExecSpec) -> Result<(i64, String)> {
        let backend = &self.sb.backend;
        let id = match self.sb.helper().exec_create_as(spec).await {
            Ok(id) => id,
            Err(e) => return Err(crate::sandbox::explain(self.sb, e).await),
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut stream = backend.exec_start(&id, false).await?;
        while stream
            .next(&mut |k, d| match k {
                StreamKind::Stdout => out.extend_from_slice(d),
                _ => err.extend_from_slice(d),
            })
            .await?
        {}
        let code = wait_exit(backend, &id).await?;
        out.extend_from_slice(&err);
        Ok((code, String::from_utf8_lossy(&out).into_owned()))
    }
}

fn parse_stat_line(line: &str) -> Option<FileEntry> {
    let mut parts = line.splitn(4, ' ');
    let size = parts.next()?.parse().ok()?;
    let raw_mode = u32::from_str_radix(parts.next()?, 16).ok()?;
    let mtime = parts.next()?.parse().ok()?;
    let name = parts.next()?;
    let kind = match raw_mode & 0o170_000 {
        0o040_000 => FileKind::Dir,
        0o100_000 => FileKind::File,
        0o120_000 => FileKind::Symlink,
        _ => FileKind::Other,
    };
    Some(FileEntry {
        name: name.rsplit('/').next().unwrap_or(name).to_string(),
        size,
        mode: raw_mode & 0o7777,
        kind,
        mtime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let e = parse_stat_line("19 81ed 1700000000 run me.sh").unwrap();
        assert_eq!(
            (e.name.as_str(), e.size, e.mode, e.kind),
            ("run me.sh", 19, 0o755, FileKind::File)
        );
        assert_eq!(
            parse_stat_line("4096 41ed 1 d").unwrap().kind,
            FileKind::Dir
        );
        assert_eq!(
            parse_stat_line("7 a1ff 1 l").unwrap().kind,
            FileKind::Symlink
        );
        assert!(parse_stat_line("garbage").is_none());
    }
}
