//! `pocketdock completions`, `pocketdock man`, and the hidden `__complete`
//! that completion scripts call for names. The scripts and pages are
//! generated from the clap definitions, so they never drift from the flags;
//! only the name lookup (sandboxes, job records) is ours, since clap cannot
//! know what exists on the engine or on disk.

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::Shell;

use super::{Cli, Context};
use crate::error::Error;
use crate::fleet::manage::{self, Scope};
use crate::store::Store;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    source <(pocketdock completions bash)\n  \
    pocketdock completions zsh > \"${fpath[1]}/_pocketdock\"\n  \
    pocketdock completions fish > ~/.config/fish/completions/pocketdock.fish\n\n\
    The bash script also completes sandbox names (run, shell, stop, ...) and job\n\
    records (logs), asking the engine and the project as you type.")]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock man | man -l -\n  \
    pocketdock man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write pocketdock.1 and one pocketdock-COMMAND.1 per command into DIR
    /// (created if missing), instead of the main page to stdout.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// What `__complete` lists.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Names {
    /// Sandboxes of the current project, stopped ones included.
    Sandboxes,
    /// Job records of the current project, and `last`.
    Jobs,
}

#[derive(Debug, clap::Args)]
pub struct CompleteArgs {
    /// Which names.
    #[arg(value_enum)]
    names: Names,
}

/// Commands whose first argument is a sandbox name.
const SANDBOX_COMMANDS: &str = "run shell python push pull info stop resume reboot kill \
    shutdown snapshot systemd";

/// Print the completion script for one shell.
pub fn completions(a: &CompletionsArgs) -> u8 {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "pocketdock", &mut out);
    if a.shell == Shell::Bash {
        out.extend_from_slice(bash_names().as_bytes());
    }
    let _ = std::io::stdout().lock().write_all(&out);
    0
}

/// A wrapper around clap's bash function: the first argument of a command
/// that takes a sandbox (or, for `logs` and `cancel`, a job record)
/// completes from names.
fn bash_names() -> String {
    format!(
        r#"
_pocketdock_names() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}"
    if [[ $COMP_CWORD -eq 2 && "$cur" != -* ]]; then
        local kind=""
        case " {SANDBOX_COMMANDS} " in
            *" ${{COMP_WORDS[1]}} "*) kind=sandboxes ;;
        esac
        [[ "${{COMP_WORDS[1]}}" == logs || "${{COMP_WORDS[1]}}" == cancel ]] && kind="jobs"
        if [[ -n "$kind" ]]; then
            local names
            names="$(pocketdock __complete "$kind" 2>/dev/null)"
            [[ "${{COMP_WORDS[1]}}" == logs ]] && names="$names $(pocketdock __complete sandboxes 2>/dev/null)"
            COMPREPLY=( $(compgen -W "$names" -- "$cur") )
            return 0
        fi
    fi
    _pocketdock "$@"
}}
if [[ "${{BASH_VERSINFO[0]}}" -eq 4 && "${{BASH_VERSINFO[1]}}" -ge 4 || "${{BASH_VERSINFO[0]}}" -gt 4 ]]; then
    complete -F _pocketdock_names -o nosort -o bashdefault -o default pocketdock
else
    complete -F _pocketdock_names -o bashdefault -o default pocketdock
fi
"#
    )
}

/// Write the man page(s).
pub fn man(a: &ManArgs) -> Result<u8, Error> {
    let cmd = Cli::command();
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        clap_mangen::generate_to(cmd, dir)
            .map_err(|e| Error::io(format!("write man pages into {}", dir.display()), e))?;
        let pages = std::fs::read_dir(dir).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".1"))
                .count()
        });
        println!("wrote {pages} man pages into {}", dir.display());
    } else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut out)
            .map_err(|e| Error::io("render the man page", e))?;
        let _ = std::io::stdout().lock().write_all(&out);
    }
    Ok(0)
}

/// Print one name per line; say nothing on any error (a completion must
/// never print a message into the command line being typed).
pub async fn complete(ctx: &Context, a: &CompleteArgs) -> u8 {
    let names: Vec<String> = match a.names {
        Names::Jobs => {
            let mut names: Vec<String> = Store::at(&ctx.root)
                .jobs()
                .into_iter()
                .map(|j| j.id)
                .collect();
            names.insert(0, "last".into());
            names
        }
        Names::Sandboxes => {
            let Ok(project) = ctx.project() else {
                return 0;
            };
            let scope = Scope::Project(project.name.clone());
            let Ok(backend) = ctx.backend().await else {
                return 0;
            };
            manage::list_sandboxes(&backend, &scope, true)
                .await
                .map(|rows| rows.into_iter().map(|r| r.name).collect())
                .unwrap_or_default()
        }
    };
    for n in names {
        println!("{n}");
    }
    0
}
