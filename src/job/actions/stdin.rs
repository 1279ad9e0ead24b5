//! `run.stdin`: what a command reads on its standard input.
//!
//! A command's stdin is closed on both ways a command runs (the helper and
//! the engine's exec), so the text or host file is put in the sandbox as a
//! file first (in the directory it shares with the host, when it has one), and the command runs as `{ rm F; exec CMD; } < F`: the
//! shell opens the file as stdin, removes it (the open file stays readable)
//! and becomes the command, which reads the bytes and then end of file.

use std::path::Path;

use super::{ActionCtx, Use};
use crate::job::step_error::StepError;
use crate::plan::Stdin;
use crate::sandbox::{Lang, RunOptions};

/// Put `stdin` in the sandbox and make `cmd` read it: the command and
/// options to run instead.
pub(super) async fn feed(
    ctx: &ActionCtx<'_>,
    stdin: &Stdin,
    dir: &str,
    cmd: &str,
    options: &mut RunOptions,
) -> Result<String, StepError> {
    let name = format!(".pocketdock-stdin-{:016x}", fastrand::u64(..));
    if let Stdin::File(path) = stdin {
        check_file(ctx, path)?;
    }
    // In the directory the sandbox shares with the host, the file is
    // written on the host: no engine call.
    let file = match ctx.sandbox.helper().shared_dir().await {
        Some((host, inside)) if place_on_host(stdin, &host.join(&name)).is_ok() => {
            format!("{inside}/{name}")
        }
        _ => {
            let file = format!("{dir}/{name}");
            let placed = match stdin {
                Stdin::Text(text) => ctx.sandbox.write_file(&file, text.as_bytes()).await,
                Stdin::File(path) => ctx.sandbox.push(path, &file).await.map(drop),
            };
            placed.map_err(|e| ctx.error(e))?;
            file
        }
    };
    let wrapped = wrap(&options.lang.argv(cmd), &file);
    options.lang = Lang::Sh;
    Ok(wrapped)
}

/// Write `stdin` at `to`, readable by whatever user the command runs as.
fn place_on_host(stdin: &Stdin, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // A new file only: nothing the sandbox put there is followed.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    match stdin {
        Stdin::Text(text) => std::io::Write::write_all(&mut file, text.as_bytes())?,
        Stdin::File(path) => drop(std::io::copy(&mut std::fs::File::open(path)?, &mut file)?),
    }
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

/// A host file for stdin: inside the project, and a regular file.
fn check_file(ctx: &ActionCtx<'_>, path: &Path) -> Result<(), StepError> {
    ctx.host_paths
        .check(path, Use::StdinFile)
        .map_err(StepError::HostPath)?;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(StepError::Stdin(format!(
            "stdin file {} is not a regular file\nhint: give `stdin: {{file: PATH}}` a file, or the text itself as `stdin`",
            path.display()
        ))),
        Err(e) => Err(StepError::Stdin(format!(
            "cannot read stdin file {}: {e}\nhint: the path is relative to the manifest's directory",
            path.display()
        ))),
    }
}

/// `sh -c` script that runs `argv` with `file` as its stdin, the file
/// removed once open.
fn wrap(argv: &[String], file: &str) -> String {
    let f = quote(file);
    let cmd: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    format!(
        "{{ rm -f -- {f} 2>/dev/null; exec {}; }} < {f}",
        cmd.join(" ")
    )
}

/// `s` in single quotes for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_reads_the_file_and_the_file_goes() {
        let argv = Lang::Python.argv("print('it''s')");
        assert_eq!(
            wrap(&argv, "/tmp/in"),
            r"{ rm -f -- '/tmp/in' 2>/dev/null; exec 'python3' '-c' 'print('\''it'\'''\''s'\'')'; } < '/tmp/in'"
        );
    }

    #[test]
    fn a_quoted_script_comes_back_whole() {
        let script = "echo \"$HOME\" 'a b' \\ `x` $(y)";
        let wrapped = wrap(&Lang::Sh.argv(script), "/tmp/in");
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf '%s' {}", quote(script))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), script);
        assert!(wrapped.contains(&quote(script)));
    }
}
