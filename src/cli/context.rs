//! What one invocation runs against, resolved once before any command:
//! the current directory, its project and settings, the engine socket, and
//! which standard streams are terminals. Commands take it from here; nothing
//! below the CLI reads the current directory or the environment itself.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::engine::Engine;
use crate::error::Error;
use crate::images;
use crate::project::Project;
use crate::sandbox::SandboxSpec;

/// One invocation's surroundings.
#[derive(Debug)]
pub struct Context {
    /// The directory pocketdock was started in.
    pub cwd: PathBuf,
    /// The root of the project around `cwd`.
    pub root: PathBuf,
    /// The project, its settings read on first use (most `run`s need none),
    /// and whether they loaded without a mistake; the defaults stand in
    /// when they did not (see [`Context::project`]).
    project: OnceLock<(Project, bool)>,
    /// Engine socket: `--socket`, else the install-level `socket` setting
    /// (unless `POCKETDOCK_SOCKET` is set); `None` leaves the choice to
    /// the engine's own detection.
    pub socket: Option<PathBuf>,
    /// Where [`Context::socket`] came from, for a message that it cannot
    /// be reached.
    socket_source: &'static str,
    /// Standard input is a terminal (someone can answer a question).
    pub stdin_is_terminal: bool,
    /// Standard output is a terminal.
    pub stdout_is_terminal: bool,
    /// Standard error is a terminal (progress bars make sense).
    pub stderr_is_terminal: bool,
    /// `$TERM`, for an attached shell.
    pub term: Option<String>,
    /// Running in GitHub Actions (`GITHUB_ACTIONS=true`).
    pub github_actions: bool,
    /// `--quiet` / `--verbose`.
    pub verbosity: Verbosity,
    /// Colour on stdout: `--color`, else a terminal without `NO_COLOR`
    /// (see [`Context::set_color`]).
    pub stdout_color: bool,
    /// GitHub Actions' files and workspace (`$GITHUB_STEP_SUMMARY`,
    /// `$GITHUB_OUTPUT`, `$GITHUB_WORKSPACE`), when set.
    pub github: GithubEnv,
    /// `--backend` and `--namespace` (see [`Context::backend`]).
    pub backend_args: super::backend_args::BackendArgs,
}

/// How much a command says besides its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// Results and errors only.
    Quiet,
    /// Results, errors, hints and notes.
    #[default]
    Normal,
    /// Also the engine socket and the time taken.
    Verbose,
}

impl Verbosity {
    /// From the global `--quiet` and `--verbose` flags.
    #[must_use]
    pub fn from_flags(quiet: bool, verbose: bool) -> Verbosity {
        match (quiet, verbose) {
            (true, _) => Verbosity::Quiet,
            (false, true) => Verbosity::Verbose,
            (false, false) => Verbosity::Normal,
        }
    }

    /// Print a hint or note on stderr, unless quiet (for a task that
    /// outlives the borrowed [`Context`]).
    pub fn note(self, text: impl std::fmt::Display) {
        if self != Verbosity::Quiet {
            eprintln!("{text}");
        }
    }
}

impl Context {
    /// Apply `--color`: every `anstream` writer (tables, status words)
    /// follows it, and [`Context::stdout_color`] gets anstream's answer for
    /// stdout (`auto`: a terminal, no `NO_COLOR`, `CLICOLOR`/`CLICOLOR_FORCE`
    /// honoured), for writers that colour on their own (the reporters).
    pub fn set_color(&mut self, when: clap::ColorChoice) {
        let choice = match when {
            clap::ColorChoice::Always => anstream::ColorChoice::Always,
            clap::ColorChoice::Never => anstream::ColorChoice::Never,
            clap::ColorChoice::Auto => anstream::ColorChoice::Auto,
        };
        choice.write_global();
        self.stdout_color =
            anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never;
    }

    /// Print a hint or note on stderr, unless `--quiet`.
    pub fn note(&self, text: impl std::fmt::Display) {
        self.verbosity.note(text);
    }

    /// Print each of a sandbox's warnings (see `Sandbox::warnings`) on
    /// stderr, unless `--quiet`.
    pub fn warn_all(&self, warnings: &[String]) {
        for w in warnings {
            self.note(format_args!("pocketdock: warning: {w}"));
        }
    }
}

/// The GitHub Actions environment a job reports into; each `None` when unset.
#[derive(Debug, Clone, Default)]
pub struct GithubEnv {
    /// `$GITHUB_STEP_SUMMARY`: the Markdown summary file.
    pub step_summary: Option<PathBuf>,
    /// `$GITHUB_OUTPUT`: the step outputs file.
    pub output: Option<PathBuf>,
    /// `$GITHUB_WORKSPACE`: annotation paths are relative to it.
    pub workspace: Option<PathBuf>,
}

impl GithubEnv {
    fn from_process() -> GithubEnv {
        let path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        GithubEnv {
            step_summary: path("GITHUB_STEP_SUMMARY"),
            output: path("GITHUB_OUTPUT"),
            workspace: path("GITHUB_WORKSPACE"),
        }
    }
}

impl Context {
    /// Resolve everything from the process: current directory, project,
    /// settings, socket and terminals.
    pub fn from_process(socket_flag: Option<PathBuf>) -> Result<Context, Error> {
        let (socket, socket_source) = match socket_flag {
            Some(s) => (Some(s), "--socket"),
            None if std::env::var_os("POCKETDOCK_SOCKET").is_some_and(|s| !s.is_empty()) => {
                (None, "POCKETDOCK_SOCKET")
            }
            None => (configured_socket()?, "the `socket` setting"),
        };
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        Ok(Context {
            root: Project::root_of(&cwd),
            cwd,
            project: OnceLock::new(),
            socket,
            socket_source,
            stdin_is_terminal: std::io::stdin().is_terminal(),
            stdout_is_terminal: std::io::stdout().is_terminal(),
            stderr_is_terminal: std::io::stderr().is_terminal(),
            term: std::env::var("TERM").ok(),
            github_actions: std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
            verbosity: Verbosity::Normal,
            stdout_color: false,
            github: GithubEnv::from_process(),
            backend_args: super::backend_args::BackendArgs::default(),
        })
    }

    fn loaded(&self) -> &(Project, bool) {
        self.project.get_or_init(|| match Project::load(&self.cwd) {
            Ok(p) => (p, true),
            Err(_) => (Project::find(&self.cwd), false),
        })
    }

    /// The project; a mistake in its settings is an error pointing at it.
    pub fn project(&self) -> Result<&Project, Error> {
        let (project, ok) = self.loaded();
        if !ok {
            // Read again only to build the error: errors cannot be kept.
            Project::load(&self.cwd)?;
        }
        Ok(project)
    }

    /// The project, with default settings in place of ones that failed to load.
    #[must_use]
    pub fn project_lenient(&self) -> &Project {
        &self.loaded().0
    }

    /// Connect to the engine on [`Context::socket`] (for the verbs that
    /// measure or compare an engine itself; the rest take
    /// [`Context::backend`]).
    pub async fn engine(&self) -> Result<Engine, Error> {
        match &self.socket {
            Some(s) => Engine::connect_named(s, self.socket_source).await,
            None => Engine::connect().await,
        }
    }

    /// Connect, and name the engine chosen when detection found others
    /// answering too: for the commands that build or create on it.
    pub async fn engine_announced(&self) -> Result<Engine, Error> {
        let engine = self.engine().await?;
        if self.socket.is_none() && self.verbosity != Verbosity::Quiet {
            let env = |k: &str| std::env::var(k).ok();
            if let Some(line) = crate::engine::choice::announcement(&engine, env).await {
                eprintln!("{line}");
            }
        }
        Ok(engine)
    }

    /// `path` made absolute against the current directory.
    #[must_use]
    pub fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }
}

/// A sandbox spec for `image`, or else profile `profile`, or else profile
/// `default`, resolved in `project`: the image, the profile's name, and the
/// profile's network default.
pub(super) fn resolve_spec(
    project: &Project,
    profile: Option<&str>,
    image: Option<&str>,
    default: &str,
) -> Result<SandboxSpec, Error> {
    if let Some(image) = image {
        // An image that is a profile's gets its label and network default.
        return Ok(match images::profile_for_image(project, image) {
            Some(p) => SandboxSpec::for_profile(p.name, image, p.network),
            None => SandboxSpec::for_image(image),
        });
    }
    let p = images::profile_in(project, profile.unwrap_or(default))?;
    Ok(SandboxSpec::for_profile(p.name, p.image, p.network))
}
/// The install-level `socket` setting.
fn configured_socket() -> Result<Option<PathBuf>, Error> {
    let Some(file) = crate::project::config::install_file() else {
        return Ok(None);
    };
    let layer = crate::project::config::read_layer(&file, true).map_err(Error::Settings)?;
    let mut config = crate::project::Config::default();
    config.apply(layer);
    Ok(config.socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(root: &Path) -> Project {
        Project {
            root: root.to_path_buf(),
            name: "p".into(),
            config: crate::project::Config::default(),
        }
    }

    #[test]
    fn specs_resolve_profiles_and_images_in_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let p = project(tmp.path());
        let dev = resolve_spec(&p, Some("dev"), None, "minimal").unwrap();
        assert_eq!(
            (dev.image.as_str(), dev.profile.as_deref(), dev.network),
            ("pocketdock/dev", Some("dev"), true)
        );
        let fallback = resolve_spec(&p, None, None, "agent").unwrap();
        assert_eq!(fallback.profile.as_deref(), Some("agent"));
        // A profile's image keeps the profile's label and network default.
        let by_image = resolve_spec(&p, None, Some("localhost/pocketdock/dev"), "minimal").unwrap();
        assert_eq!(
            (by_image.image.as_str(), by_image.profile.as_deref()),
            ("localhost/pocketdock/dev", Some("dev"))
        );
        assert!(by_image.network);
        let other = resolve_spec(&p, None, Some("alpine:3"), "minimal").unwrap();
        assert_eq!((other.profile, other.network), (None, false));
        assert!(matches!(
            resolve_spec(&p, Some("huge"), None, "minimal"),
            Err(Error::UnknownProfile { .. })
        ));
    }
}
