//! The CLI as people expect it: completions, man pages, colour, global
//! `--quiet`/`--verbose`, `stop --all`, `create --timeout`, `list` columns,
//! and asking before destroying. Each through the built binary.

use std::path::Path;
use std::process::Command;

use crate::common::{bin, project, stderr, stdout, unique, Cleanup, TestProject};
use crate::pd::Pd;

fn create(dir: &Path, c: &mut Cleanup, prefix: &str, extra: &[&str]) -> String {
    let name = unique(prefix);
    c.add(name.clone());
    let mut args = vec!["create", "--name", &name];
    args.extend_from_slice(extra);
    let o = Pd::at(dir).output(&args);
    assert!(o.status.success(), "create: {}", stderr(&o));
    name
}

/// Run `script` in bash with the built binary first on PATH.
fn bash(script: &str) -> String {
    let dir = bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .env("PATH", path)
        .output()
        .expect("bash");
    assert!(o.status.success(), "bash: {}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

#[test]
fn bash_completion_loads_and_completes_a_subcommand_and_its_flags() {
    let got = bash(
        r#"source <(pocketdock completions bash)
        COMP_WORDS=(pocketdock comp); COMP_CWORD=1
        COMP_LINE="pocketdock comp"; COMP_POINT=${#COMP_LINE}
        _pocketdock_names pocketdock comp pocketdock
        echo "sub:${COMPREPLY[*]}"
        COMP_WORDS=(pocketdock logs --fol); COMP_CWORD=2
        COMP_LINE="pocketdock logs --fol"; COMP_POINT=${#COMP_LINE}
        _pocketdock_names pocketdock --fol logs
        echo "flag:${COMPREPLY[*]}"
        COMP_WORDS=(pocketdock cancel la); COMP_CWORD=2
        COMP_LINE="pocketdock cancel la"; COMP_POINT=${#COMP_LINE}
        _pocketdock_names pocketdock la cancel
        echo "job:${COMPREPLY[*]}"
        complete -p pocketdock"#,
    );
    assert!(got.contains("sub:completions\n"), "{got}");
    assert!(got.contains("flag:--follow\n"), "{got}");
    assert!(got.contains("job:last"), "{got}");
    assert!(got.contains("-F _pocketdock_names"), "{got}");
}

#[test]
fn completion_scripts_for_every_shell_and_a_clear_error_for_others() {
    for (shell, marker) in [
        ("zsh", "#compdef pocketdock"),
        ("fish", "complete -c pocketdock"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        Pd::new()
            .no_engine()
            .args(["completions", shell])
            .code(0)
            .stdout_has(marker);
    }
    Pd::new()
        .no_engine()
        .args(["completions", "tcsh"])
        .code(2)
        .stderr_has("possible values: bash, elvish, fish, powershell, zsh");
}

#[test]
fn man_pages_render_with_man() {
    let pd = Pd::new().no_engine();
    let page = pd.cmd(["man"]).code(0).stdout();
    std::fs::write(pd.path().join("pocketdock.1"), &page).unwrap();
    let pages = pd.path().join("pages");
    pd.cmd(["man", "--dir", pages.to_str().unwrap()])
        .code(0)
        .stdout_has("man pages into");
    for (file, want) in [
        (pd.path().join("pocketdock.1"), "completions"),
        (pages.join("pocketdock-logs.1"), "--follow"),
        (pages.join("pocketdock-stop.1"), "--all"),
    ] {
        let o = Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .expect("man (install man-db)");
        let text = stdout(&o);
        assert!(o.status.success(), "{}: {}", file.display(), stderr(&o));
        assert!(text.contains("NAME"), "{text}");
        // Hyphens may render as U+2010 on a UTF-8 locale.
        assert!(
            text.replace('\u{2010}', "-").contains(want),
            "{}: no {want}:\n{text}",
            file.display()
        );
    }
}

#[test]
fn quiet_drops_hints_and_verbose_adds_the_engine_and_time() {
    let pd = Pd::new().no_engine();
    let normal = pd.cmd(["logs"]).code(0);
    assert!(
        normal.stderr().contains("no job records"),
        "{}",
        normal.stderr()
    );
    let quiet = pd.cmd(["logs", "--quiet"]).code(0);
    assert_eq!(quiet.stderr(), "");
    pd.cmd(["-q", "logs"]).code(0);
    pd.cmd(["logs", "--verbose"])
        .code(0)
        .stderr_has("pocketdock: engine socket")
        .stderr_has(" ms");
    pd.cmd(["logs", "--quiet", "--verbose"])
        .code(2)
        .stderr_has("cannot be used with");
}

#[test]
fn reboot_fresh_asks_first() {
    Pd::new()
        .no_engine()
        .args(["reboot", "some-box", "--fresh"])
        .code(2)
        .stderr_has("pass -y");
}

#[tokio::test]
async fn list_shows_age_memory_and_colours_status_only_when_allowed() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("colour");
    let name = create(dir.path(), &mut c, "colour", &["--mem", "128m"]);
    let plain = Pd::at(dir.path()).output(&["list"]);
    let text = stdout(&plain);
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(!text.contains('\u{1b}'), "no colour into a pipe: {text:?}");
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("AGE") && header.contains("MEMORY"),
        "{header}"
    );
    let row = text.lines().find(|l| l.starts_with(&name)).unwrap();
    assert!(row.contains(" ago") && row.contains("/ 128"), "{row}");

    let forced = Pd::at(dir.path())
        .envs(&[("CLICOLOR_FORCE", "1")])
        .output(&["list"]);
    assert!(
        stdout(&forced).contains("\u{1b}[32mrunning\u{1b}[0m"),
        "{:?}",
        stdout(&forced)
    );
    let no_color = Pd::at(dir.path())
        .envs(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])
        .output(&["list"]);
    assert!(
        !stdout(&no_color).contains('\u{1b}'),
        "{:?}",
        stdout(&no_color)
    );
}

#[tokio::test]
async fn stop_all_asks_then_stops_every_running_sandbox_of_the_project() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("stopall");
    let a = create(dir.path(), &mut c, "stopall", &[]);
    let b = create(dir.path(), &mut c, "stopall", &[]);
    let other = project("stopall-other");
    let kept = create(other.path(), &mut c, "stopall", &[]);

    let refused = Pd::at(dir.path()).output(&["stop", "--all"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("pass -y"), "{}", stderr(&refused));

    let o = Pd::at(dir.path()).output(&["stop", "--all", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for n in [&a, &b] {
        assert!(
            stdout(&o).contains(&format!("stopped {n}")),
            "{}",
            stdout(&o)
        );
        let state = engine.inspect_container(n, false).await.unwrap().state;
        assert!(!state.running, "{n} still running");
    }
    let state = engine.inspect_container(&kept, false).await.unwrap().state;
    assert!(state.running, "another project's sandbox was stopped");
    let again = Pd::at(dir.path()).output(&["stop", "--all", "-y"]);
    assert!(again.status.success());
    assert!(
        stderr(&again).contains("no running sandboxes"),
        "{}",
        stderr(&again)
    );
    let usage = Pd::at(dir.path()).output(&["stop"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[tokio::test]
async fn create_timeout_is_the_default_of_later_runs() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("deftimeout");
    let name = create(dir.path(), &mut c, "deftimeout", &["--timeout", "1"]);
    let o = Pd::at(dir.path()).output(&["run", &name, "sleep 5; echo late"]);
    assert_eq!(o.status.code(), Some(124), "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("late"));
    let o = Pd::at(dir.path()).output(&["run", &name, "--timeout", "20", "sleep 2; echo in-time"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("in-time"));
    // Without `create --timeout`, the old default stands.
    let plain = create(dir.path(), &mut c, "deftimeout", &[]);
    let o = Pd::at(dir.path()).output(&["run", &plain, "sleep 2; echo ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

const PASSING: &str = "version: 1\nname: ok\nsandboxes: {box: {}}\nsteps:\n  a: {run: echo hello}\n  b: {run: echo world, needs: [a]}\n";
const FAILING: &str = "version: 1\nname: bad\nsandboxes: {box: {}}\nsteps:\n  a: {run: echo hello}\n  boom: {run: 'echo why-it-broke; exit 3', needs: [a]}\n";

#[tokio::test]
async fn apply_quiet_prints_only_the_final_line_or_the_failure() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "quiet");
    std::fs::write(dir.path().join("ok.yaml"), PASSING).unwrap();
    std::fs::write(dir.path().join("bad.yaml"), FAILING).unwrap();

    let o = Pd::at(dir.path()).output(&["apply", "-q", "ok.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("job succeeded in "), "{out}");
    assert_eq!(stderr(&o), "");

    // Plain (piped) and progress alike: the failure explains itself.
    for output in ["plain", "progress"] {
        let o = Pd::at(dir.path()).output(&["apply", "bad.yaml", "--quiet", "--output", output]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let out = stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{output}: {out}");
        assert_eq!(lines[0], "[boom@box] why-it-broke", "{out}");
        assert!(lines[1].starts_with("✗ boom@box exit 3 ("), "{out}");
        assert!(lines[2].starts_with("job failed in "), "{out}");
    }
    // Not quiet: everything.
    let o = Pd::at(dir.path()).output(&["apply", "ok.yaml"]);
    assert!(stdout(&o).contains("[a@box] hello"), "{}", stdout(&o));
}

#[tokio::test]
async fn apply_colours_status_words_only_when_allowed() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "colour-apply");
    std::fs::write(dir.path().join("bad.yaml"), FAILING).unwrap();
    let failed_mark = "\u{1b}[31m✗\u{1b}[0m boom@box";

    let piped = Pd::at(dir.path()).output(&["apply", "bad.yaml"]);
    assert_eq!(piped.status.code(), Some(1), "{}", stderr(&piped));
    assert!(!stdout(&piped).contains('\u{1b}'), "{:?}", stdout(&piped));

    let always = Pd::at(dir.path()).output(&["apply", "bad.yaml", "--color", "always"]);
    assert!(
        stdout(&always).contains(failed_mark),
        "{:?}",
        stdout(&always)
    );
    assert!(
        stdout(&always).contains("job \u{1b}[31mfailed\u{1b}[0m in "),
        "{:?}",
        stdout(&always)
    );
    // CLICOLOR_FORCE asks for colour, NO_COLOR refuses it, --color decides.
    let forced = Pd::at(dir.path())
        .envs(&[("CLICOLOR_FORCE", "1")])
        .output(&["apply", "bad.yaml"]);
    assert!(
        stdout(&forced).contains(failed_mark),
        "{:?}",
        stdout(&forced)
    );
    let refused = Pd::at(dir.path())
        .envs(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])
        .output(&["apply", "bad.yaml"]);
    assert!(
        !stdout(&refused).contains('\u{1b}'),
        "{:?}",
        stdout(&refused)
    );
    let never = Pd::at(dir.path())
        .envs(&[("CLICOLOR_FORCE", "1")])
        .output(&["--color", "never", "apply", "bad.yaml"]);
    assert!(!stdout(&never).contains('\u{1b}'), "{:?}", stdout(&never));
}

#[test]
fn quiet_silences_notes_of_every_command_but_not_errors() {
    let pd = Pd::new().no_engine();
    pd.cmd(["init"]).code(0);
    pd.cmd(["init"])
        .code(0)
        .stderr_has("already has a `project:` section");
    let again = pd.cmd(["init", "-q"]).code(0);
    assert_eq!(again.stderr(), "");
    pd.cmd(["logs", "no-such-job", "-q"])
        .code(2)
        .stderr_has("error: invalid job record `no-such-job`");
}

/// Run pocketdock with `args` writing into a pipe nobody reads.
fn into_closed_pipe(dir: &Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd = Pd::at(dir).command(args);
    cmd.stdout(writer);
    cmd.output().expect("run pocketdock")
}

#[tokio::test]
async fn a_closed_stdout_ends_quietly_not_in_a_panic() {
    let dir = project("pipe");
    let grading = crate::common::repo().join("examples/grading/job.yaml");
    let grading = grading.to_str().unwrap();
    // Needs no engine: a plan is printed with print!.
    let o = into_closed_pipe(dir.path(), &["plan", grading, "--json"]);
    assert_eq!(o.status.code(), Some(141), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let _engine = engine_or_skip!();
    let o = into_closed_pipe(dir.path(), &["list", "--all", "--json"]);
    assert_eq!(o.status.code(), Some(141), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}
