//! The step cache end to end (issue 21): a second apply with nothing
//! changed is all `cached` with the same artifacts; a changed source
//! reruns only its chain; what cannot be cached is refused with its
//! reason; a secret's value is in no entry, label or log.

use std::path::Path;

use pocketdock::Engine;
use serde_json::Value;

use crate::common::{on_fresh_runtime, stderr, stdout, TestProject};

/// Removes the project's cache images when dropped, pass or fail.
pub(crate) struct CacheImages {
    engine: Engine,
    project: String,
}

impl CacheImages {
    pub(crate) fn new(engine: &Engine, dir: &TestProject) -> CacheImages {
        let project = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        CacheImages {
            engine: engine.clone(),
            project,
        }
    }

    pub(crate) async fn labels(&self) -> Vec<String> {
        let filter = vec![format!("pocketdock.project={}", self.project)];
        // Podman fails a listing when another test removes an image meanwhile.
        let mut images = self.engine.list_images(&filter).await;
        for _ in 0..5 {
            if images.is_ok() {
                break;
            }
            images = self.engine.list_images(&filter).await;
        }
        let images = images.unwrap();
        images
            .iter()
            .flat_map(|i| i.labels.values().cloned())
            .collect()
    }
}

impl Drop for CacheImages {
    fn drop(&mut self) {
        let project = self.project.clone();
        on_fresh_runtime(&self.engine, |engine| async move {
            let filter = vec![format!("pocketdock.project={project}")];
            // Children first: an image a later one was committed on top of
            // cannot go before it; a few passes take a whole chain.
            for _ in 0..4 {
                let mut left = engine.list_images(&filter).await.unwrap_or_default();
                left.retain(|i| i.labels.contains_key("pocketdock.cache-key"));
                if left.is_empty() {
                    break;
                }
                left.sort_by_key(|i| std::cmp::Reverse(i.created));
                for i in left {
                    let _ = engine.remove_image(&i.id, true).await;
                }
            }
        });
    }
}

/// Two boards, each a chain: push its source, build, pull the result.
const BOARDS: &str = r#"version: 1
name: fw
cache: true
sandboxes:
  b:
    network: false
    matrix: { board: [f4, h7] }
steps:
  send:
    push: { src: "./src/{{ matrix.board }}", dst: /work }
  build:
    run: |
      mkdir -p /work/out && cat /work/main.c > /work/out/fw.bin && echo "size=$(wc -c < /work/out/fw.bin)" >> "$POCKETDOCK_OUTPUT"
  get:
    pull: { src: /work/out/fw.bin, dst: "./out/{{ matrix.board }}.bin" }
  report:
    run: echo "{{ matrix.board }} is {{ steps.build.outputs.size }} bytes"
"#;

fn boards(dir: &Path) {
    for (b, text) in [("f4", "int f4;\n"), ("h7", "int h7_board;\n")] {
        std::fs::create_dir_all(dir.join("src").join(b)).unwrap();
        std::fs::write(dir.join("src").join(b).join("main.c"), text).unwrap();
    }
    std::fs::write(dir.join("job.yaml"), BOARDS).unwrap();
}

/// `apply --output ndjson`: each step's final status, by step id.
pub(crate) fn apply(dir: &TestProject, extra: &[&str]) -> Vec<(String, String)> {
    let mut args = vec!["apply", "job.yaml"];
    args.extend(extra);
    statuses(&apply_ndjson(dir, &args, 0))
}

/// `pocketdock ARGS --output ndjson`, which must exit `code`: its stdout.
pub(crate) fn apply_ndjson(dir: &TestProject, args: &[&str], code: i32) -> String {
    let mut args = args.to_vec();
    args.extend(["--output", "ndjson"]);
    let o = dir.pd().output(&args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Each step's final status in NDJSON `events`, by step id.
pub(crate) fn statuses(events: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "step_finished")
        .map(|e| {
            (
                e["step"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

pub(crate) fn with_status<'a>(steps: &'a [(String, String)], status: &str) -> Vec<&'a str> {
    steps
        .iter()
        .filter(|(_, s)| s == status)
        .map(|(id, _)| id.as_str())
        .collect()
}

/// What step `step` printed to stdout, from NDJSON `events`.
pub(crate) fn output_of(events: &str, step: &str) -> String {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "output" && e["step"] == step && e["stream"] == "stdout")
        .filter_map(|e| e["data"].as_str().map(str::to_string))
        .collect()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test]
async fn nothing_changed_is_all_cached_and_a_changed_source_reruns_its_chain() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let images = CacheImages::new(&engine, &dir);
    boards(dir.path());

    let first = apply(&dir, &[]);
    assert_eq!(with_status(&first, "succeeded").len(), 8, "{first:?}");
    let f4 = read(&dir.path().join("out/f4.bin"));
    let h7 = read(&dir.path().join("out/h7.bin"));
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();

    let second = apply(&dir, &[]);
    assert_eq!(with_status(&second, "cached").len(), 8, "{second:?}");
    // The pulls wrote their files again, byte for byte.
    assert_eq!(read(&dir.path().join("out/f4.bin")), f4);
    assert_eq!(read(&dir.path().join("out/h7.bin")), h7);
    // Every step hit: no sandbox was created.
    dir.assert_no_leaks().await;

    std::fs::write(dir.path().join("src/f4/main.c"), "int f4_changed;\n").unwrap();
    let third = apply(&dir, &[]);
    assert_eq!(
        with_status(&third, "succeeded"),
        [
            "build@b[board=f4]",
            "get@b[board=f4]",
            "report@b[board=f4]",
            "send@b[board=f4]"
        ]
    );
    assert_eq!(with_status(&third, "cached").len(), 4, "{third:?}");
    assert_eq!(read(&dir.path().join("out/f4.bin")), b"int f4_changed;\n");

    // `--no-cache` runs everything again.
    let fourth = apply(&dir, &["--no-cache"]);
    assert_eq!(with_status(&fourth, "succeeded").len(), 8, "{fourth:?}");
    dir.assert_no_leaks().await;
    assert!(!images.labels().await.is_empty());
}

#[tokio::test]
async fn a_miss_after_hits_starts_from_the_last_hits_image() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    // In the working directory: /tmp may be a tmpfs, which no commit keeps.
    let job = |tail: &str| {
        format!("version: 1\ncache: true\nsandboxes:\n  b: {{ network: false }}\nsteps:\n  make:\n    run: echo made > state\n  use:\n    run: cat state; echo {tail}\n")
    };
    std::fs::write(dir.path().join("job.yaml"), job("one")).unwrap();
    apply(&dir, &[]);
    std::fs::write(dir.path().join("job.yaml"), job("two")).unwrap();
    let out = apply_ndjson(&dir, &["apply", "job.yaml"], 0);
    assert_eq!(with_status(&statuses(&out), "cached"), ["make@b"], "{out}");
    // The file `make` wrote is there, though `make` did not run.
    assert_eq!(output_of(&out, "use@b"), "made\ntwo\n", "{out}");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn uncacheable_steps_are_refused_with_their_reason() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    let text = "version: 1\nsandboxes:\n  b: { network: false }\nsteps:\n  one:\n    run: echo 1\n  talk:\n    session: echo 2\n  after:\n    run: echo 3\n";
    std::fs::write(dir.path().join("job.yaml"), text).unwrap();
    dir.pd()
        .cmd(["plan", "job.yaml", "--cache"])
        .code(0)
        .stdout_has("cache: 0 cached, 1 rerun, 2 not cacheable")
        .stdout_has("one@b reruns: no cached result")
        .stdout_has("talk@b is not cached: a `session` step keeps its state in processes")
        .stdout_has("after@b is not cached: it comes after `talk@b`, a `session` step");
    let o = dir
        .pd()
        .output(&["apply", "job.yaml", "--cache", "--output", "ndjson"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .contains("step talk@b is not cached: a `session` step keeps its state in processes"),
        "{}",
        stdout(&o)
    );
    dir.assert_no_leaks().await;
}

const SECRET: &str = "s3cr3t-CACHE-pd21";

#[tokio::test]
async fn a_secret_value_is_in_no_entry_label_or_log_and_still_counts() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let images = CacheImages::new(&engine, &dir);
    let text = "version: 1\ncache: true\nsecrets:\n  TOKEN: { env: PD_TEST_TOKEN }\nsandboxes:\n  b: { network: false }\nsteps:\n  use:\n    secrets: [TOKEN]\n    run: |\n      echo \"token: $TOKEN\"\n      echo \"key=$TOKEN\" >> \"$POCKETDOCK_OUTPUT\"\n";
    std::fs::write(dir.path().join("job.yaml"), text).unwrap();
    let run = |value: &str| {
        let o = dir
            .pd()
            .env("PD_TEST_TOKEN", value)
            .output(&["apply", "job.yaml", "--output", "ndjson"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(run(SECRET).contains(r#""status":"succeeded""#));
    assert!(run(SECRET).contains(r#""status":"cached""#));
    // Another value is another key.
    assert!(run("another-value").contains(r#""status":"succeeded""#));

    for f in crate::common::files_under(&dir.path().join(".pocketdock")) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(SECRET),
            "{} holds the secret",
            f.display()
        );
    }
    let labels = images.labels().await;
    assert!(!labels.is_empty());
    assert!(labels.iter().all(|l| !l.contains(SECRET)), "{labels:?}");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn only_runs_the_selected_matrix_instance_and_what_it_needs() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    boards(dir.path());
    let steps = apply(&dir, &["--only", "get[board=h7]", "--no-cache"]);
    assert_eq!(
        with_status(&steps, "succeeded"),
        ["build@b[board=h7]", "get@b[board=h7]", "send@b[board=h7]"]
    );
    assert_eq!(with_status(&steps, "skipped").len(), 5, "{steps:?}");
    assert!(dir.path().join("out/h7.bin").is_file());
    assert!(!dir.path().join("out/f4.bin").exists());
    dir.pd()
        .cmd(["apply", "job.yaml", "--only", "get[board=g0]"])
        .code(2)
        .stderr_has("`--only get[board=g0]` names no step of this job");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn cache_list_show_and_prune() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let images = CacheImages::new(&engine, &dir);
    boards(dir.path());
    apply(&dir, &[]);
    let listed = dir.pd().cmd(["cache", "list", "--json"]).code(0).stdout();
    let entries: Vec<Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(entries.len(), 8, "{listed}");
    let key = entries[0]["key"].as_str().unwrap();
    dir.pd()
        .cmd(["cache", "show", &key[..12]])
        .code(0)
        .stdout_has(key);
    dir.pd()
        .cmd(["cache", "show", "zz"])
        .code(1)
        .stderr_has("no cached step result");
    dir.pd()
        .cmd(["cache", "prune", "--older-than", "1h"])
        .code(0)
        .stdout_has("removed 0 entries");
    dir.pd()
        .cmd(["cache", "prune"])
        .code(0)
        .stdout_has("removed 8 entries, 6 images, 2 blobs");
    assert!(images.labels().await.is_empty());
    // With the cache empty, every step runs again.
    assert_eq!(with_status(&apply(&dir, &[]), "succeeded").len(), 8);
}

#[tokio::test]
async fn two_applies_storing_the_same_keys_at_once_leave_a_working_cache() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    boards(dir.path());
    let spawn = || {
        dir.pd()
            .command(["apply", "job.yaml", "--output", "ndjson"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // No half entry: every file under entries/ is a whole one, and a
    // third apply finds them all.
    for f in crate::common::files_under(&dir.path().join(".pocketdock/cache/entries")) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            serde_json::from_str::<Value>(&text).is_ok(),
            "{}",
            f.display()
        );
    }
    assert_eq!(with_status(&apply(&dir, &[]), "cached").len(), 8);
    // The loser's images, left untagged, are what doctor --fix removes.
    dir.pd().cmd(["doctor", "--fix"]).code(0);
    dir.pd().cmd(["doctor"]).code(0).stdout_has("nothing wrong");
    assert_eq!(with_status(&apply(&dir, &[]), "cached").len(), 8);
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn only_with_the_cache_serves_what_the_selection_needs() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache");
    let _images = CacheImages::new(&engine, &dir);
    boards(dir.path());
    apply(&dir, &[]);
    std::fs::write(dir.path().join("src/f4/main.c"), "int f4_v2;\n").unwrap();
    // h7 did not change: what `get` of h7 needs is served.
    let h7 = apply(&dir, &["--only", "get[board=h7]"]);
    assert_eq!(
        with_status(&h7, "cached"),
        ["build@b[board=h7]", "get@b[board=h7]", "send@b[board=h7]"]
    );
    assert_eq!(with_status(&h7, "skipped").len(), 5, "{h7:?}");
    // f4 did: its chain up to `get` runs, nothing else.
    let f4 = apply(&dir, &["--only", "get[board=f4]"]);
    assert_eq!(
        with_status(&f4, "succeeded"),
        ["build@b[board=f4]", "get@b[board=f4]", "send@b[board=f4]"]
    );
    assert_eq!(read(&dir.path().join("out/f4.bin")), b"int f4_v2;\n");
    dir.assert_no_leaks().await;
}
