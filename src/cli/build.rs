//! `pocketdock build`.

use std::fmt::Write as _;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::engine::{BuildLine, Engine};
use crate::error::Error;
use crate::images::{self, BuildOutcome};
use crate::project::Project;

#[derive(Debug, clap::Args)]
#[command(after_help = build_help())]
pub struct Args {
    /// Profiles to build [default: all].
    #[arg(value_name = "PROFILE")]
    profiles: Vec<String>,
    /// Build every profile: the shipped ones and the project's own (what no
    /// PROFILE also does).
    #[arg(long, short = 'a', conflicts_with = "profiles")]
    all: bool,
    /// Build even when the image is up to date (its build context is unchanged).
    #[arg(long, short = 'f')]
    force: bool,
    /// Value of a Dockerfile `ARG`, repeatable (e.g. ARDUINO_CLI_VERSION=1.1.1
    /// for embedded). Part of the image's digest: other values rebuild.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_build_arg)]
    build_arg: Vec<(String, String)>,
}

fn parse_build_arg(s: &str) -> Result<(String, String), String> {
    crate::sandbox::spec::parse_env(s).map_err(|e| e.to_string())
}

fn build_help() -> String {
    let mut s = String::from("Profiles:\n");
    // clap builds every command's help on every invocation: read the
    // project's profiles only when help is asked for.
    // Help is printed while the arguments are parsed, before the
    // invocation's context exists: find the project here.
    let asked = std::env::args().any(|a| a == "-h" || a == "--help" || a == "help");
    let listed = if asked {
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        images::all_in(&Project::find(&cwd))
    } else {
        Ok(images::shipped().collect())
    };
    let (all, problem) = match listed {
        Ok(all) => (all, None),
        Err(e) => (images::shipped().collect(), Some(e)),
    };
    for p in &all {
        let _ = writeln!(s, "  {:<10} {} ({})", p.name, p.about, p.image);
    }
    if let Some(e) = problem {
        let _ = writeln!(s, "  (project profiles not listed: {e})");
    }
    let _ = write!(
        s,
        "\nA project adds its own profiles as {}/NAME/Dockerfile (the directory is the \
         build context; the image is pocketdock-PROJECT/NAME).\n\
         An image whose label pocketdock.context-sha256 matches the profile's build \
         context is up to date and not rebuilt (--force rebuilds).\n\
         Base images are never pulled: `FROM` images must already be on the engine.",
        images::PROJECT_PROFILES_DIR
    );
    s
}

pub async fn run(ctx: &super::Context, engine: &Engine, a: Args) -> Result<u8, Error> {
    let project = ctx.project_lenient();
    let selected = if a.all || a.profiles.is_empty() {
        images::all_in(project)?
    } else {
        a.profiles
            .iter()
            .map(|n| images::profile_in(project, n))
            .collect::<Result<Vec<_>, _>>()?
    };
    let args: std::collections::BTreeMap<String, String> = a.build_arg.iter().cloned().collect();
    for p in &selected {
        let started = Instant::now();
        // The global --quiet prints only the summary line of each build.
        let quiet = ctx.verbosity == super::Verbosity::Quiet;
        let mut announced = false;
        let announce = |announced: &mut bool| {
            if !*announced {
                *announced = true;
                eprintln!(
                    "building {} ({}) on {}",
                    p.image,
                    p.name,
                    engine.info().kind.cli()
                );
            }
        };
        if a.force {
            announce(&mut announced);
        }
        let outcome = images::build_with(engine, p, a.force, &args, |line| {
            announce(&mut announced);
            if let (BuildLine::Log(text), false) = (line, quiet) {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
            }
        })
        .await?;
        println!("{}", summary(&p.image, &outcome, started.elapsed()));
    }
    Ok(0)
}

/// The line printed for one profile.
fn summary(image: &str, outcome: &BuildOutcome, elapsed: Duration) -> String {
    if outcome.built {
        format!("built {image} in {:.1}s", elapsed.as_secs_f64())
    } else {
        format!(
            "{image} is up to date (context sha256 {}…); --force rebuilds",
            &outcome.digest[..outcome.digest.len().min(12)]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_says_built_or_up_to_date() {
        let mut o = BuildOutcome {
            built: true,
            digest: "abcdef0123456789".repeat(4),
            image_id: None,
        };
        assert_eq!(
            summary("pocketdock/minimal", &o, Duration::from_millis(1500)),
            "built pocketdock/minimal in 1.5s"
        );
        o.built = false;
        assert_eq!(
            summary("pocketdock/minimal", &o, Duration::ZERO),
            "pocketdock/minimal is up to date (context sha256 abcdef012345…); --force rebuilds"
        );
    }
}
