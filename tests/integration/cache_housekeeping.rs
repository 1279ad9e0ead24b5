//! The step cache's housekeeping (issue 21): `cache prune --max-size`,
//! `doctor` and its cache images no entry names, and a runner killed
//! while it commits a step's result.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::cache::{apply_ndjson, statuses, with_status, CacheImages};
use crate::common::TestProject;

/// Six steps on one sandbox, each adding a file of its own.
const CHAIN: &str = "version: 1\nname: six\ncache: true\nsandboxes:\n  b: { network: false }\nsteps:\n  a:\n    run: head -c 40000 /dev/urandom > a\n  b:\n    run: head -c 40000 /dev/urandom > b\n  c:\n    run: head -c 40000 /dev/urandom > c\n  d:\n    run: head -c 40000 /dev/urandom > d\n  e:\n    run: head -c 40000 /dev/urandom > e\n  f:\n    run: head -c 40000 /dev/urandom > f\n";

fn entries(dir: &TestProject) -> Vec<Value> {
    let listed = dir.pd().cmd(["cache", "list", "--json"]).code(0).stdout();
    serde_json::from_str(&listed).unwrap()
}

fn key(e: &Value) -> String {
    e["key"].as_str().unwrap().to_string()
}

/// Mark entry `key` as last hit `ago` before now.
fn hit_at(dir: &Path, key: &str, ago: Duration) {
    let path = dir.join(format!(".pocketdock/cache/entries/{key}.json"));
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - ago).unwrap();
}

#[tokio::test]
async fn prune_max_size_removes_least_recently_hit_entries_first() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache-prune");
    let images = CacheImages::new(&engine, &dir);
    std::fs::write(dir.path().join("job.yaml"), CHAIN).unwrap();
    apply_ndjson(&dir, &["apply", "job.yaml"], 0);
    let all = entries(&dir);
    assert_eq!(all.len(), 6);
    // Hit in a known order: the first step longest ago.
    let order: Vec<String> = all.iter().map(key).collect();
    for (i, k) in order.iter().enumerate() {
        hit_at(dir.path(), k, Duration::from_secs(600 - 60 * i as u64));
    }
    let sizes: Vec<u64> = order
        .iter()
        .map(|k| {
            let e = all.iter().find(|e| key(e) == *k).unwrap();
            e["size"].as_u64().unwrap()
        })
        .collect();
    let total: u64 = sizes.iter().sum();
    assert!(
        sizes.iter().all(|&s| s > 0),
        "each step adds a file: {sizes:?}"
    );

    // At the total, nothing goes.
    dir.pd()
        .cmd(["cache", "prune", "--max-size", &total.to_string()])
        .code(0)
        .stdout_has("removed 0 entries");
    // One byte less: the least recently hit go first, until the rest fit.
    let max = total - 1;
    dir.pd()
        .cmd(["cache", "prune", "--max-size", &max.to_string()])
        .code(0);
    let left: Vec<String> = entries(&dir).iter().map(key).collect();
    let gone = order.len() - left.len();
    assert!(gone >= 1, "{left:?}");
    assert_eq!(left, order[gone..], "the oldest hits go first");
    assert!(sizes[gone..].iter().sum::<u64>() <= max);
    assert!(
        sizes[gone - 1..].iter().sum::<u64>() > max,
        "no more than needed"
    );
    // Their images went with them; the rest still serve.
    let labels = images.labels().await;
    for k in &order[..gone] {
        assert!(!labels.contains(k), "{k}'s image is left");
    }
    dir.pd()
        .cmd(["cache", "prune", "--max-size", "0"])
        .code(0)
        .stdout_has(&format!("removed {} entries", left.len()))
        .stdout_has("0 B left");
    dir.pd()
        .cmd(["cache", "prune", "--max-size", "lots"])
        .code(2)
        .stderr_has("lots");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn doctor_finds_a_cache_image_no_entry_names_and_fix_removes_it() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache-doctor");
    let images = CacheImages::new(&engine, &dir);
    std::fs::write(dir.path().join("job.yaml"), CHAIN).unwrap();
    apply_ndjson(&dir, &["apply", "job.yaml"], 0);
    dir.pd().cmd(["doctor"]).code(0).stdout_has("nothing wrong");
    // An entry gone (as a lost race leaves it): its image is an orphan.
    let lost = key(&entries(&dir)[0]);
    std::fs::remove_file(
        dir.path()
            .join(format!(".pocketdock/cache/entries/{lost}.json")),
    )
    .unwrap();
    dir.pd()
        .cmd(["doctor"])
        .code(1)
        .stdout_has("Step cache images no cache entry names")
        .stdout_has(&lost[..16]);
    let report = dir.pd().cmd(["doctor", "--json"]).code(1).json();
    let f = &report["findings"][0];
    assert_eq!(f["kind"], "cache_orphan", "{report}");
    assert_eq!(f["key"], lost.as_str());
    dir.pd()
        .cmd(["doctor", "--fix"])
        .code(0)
        .stdout_has("did: remove it");
    dir.pd().cmd(["doctor"]).code(0).stdout_has("nothing wrong");
    assert!(!images.labels().await.contains(&lost));
    // The chain up to the lost entry is still served; from it on, it runs
    // and is stored again.
    let again = statuses(&apply_ndjson(&dir, &["apply", "job.yaml"], 0));
    let served = with_status(&again, "cached").len();
    assert_eq!(
        served + with_status(&again, "succeeded").len(),
        6,
        "{again:?}"
    );
    assert!(served < 6, "{again:?}");
    assert_eq!(entries(&dir).len(), 6);
    dir.assert_no_leaks().await;
}

/// A step whose commit takes a while: it leaves a large file.
const BIG: &str = "version: 1\nname: big\ncache: true\nsandboxes:\n  b: { network: false }\nsteps:\n  small:\n    run: echo small > small\n  big:\n    run: head -c 100000000 /dev/zero > big\n  after:\n    run: ls\n";

/// The state of the project's one container, if there is one.
async fn container_state(engine: &pocketdock::Engine, dir: &TestProject) -> Option<String> {
    let listed = engine
        .list_containers(true, &[dir.label().to_string()])
        .await;
    listed.ok()?.into_iter().next().map(|c| c.state)
}

#[tokio::test]
async fn a_runner_killed_while_it_commits_leaves_no_half_entry() {
    use std::io::BufRead;
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "cache-kill");
    let _images = CacheImages::new(&engine, &dir);
    std::fs::write(dir.path().join("job.yaml"), BIG).unwrap();
    let mut child = dir
        .pd()
        .command(["apply", "job.yaml", "--output", "ndjson"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // `big` ends, then its sandbox is committed (100 MB: it takes a
    // while): kill the runner as soon as it says `big` ended.
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let ended = out.lines().map_while(Result::ok).any(|l| {
        l.contains(r#""event":"step_finished","step":"big@b""#) && l.contains("succeeded")
    });
    assert!(ended, "big@b never succeeded");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The engine finishes (or drops) the commit on its own: wait for it.
    let deadline = std::time::Instant::now() + Duration::from_mins(1);
    while container_state(&engine, &dir).await.as_deref() == Some("paused") {
        assert!(
            std::time::Instant::now() < deadline,
            "the container stayed paused for a minute after its runner was killed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // No half entry: every entry file reads whole, and names an image.
    let entries_dir = dir.path().join(".pocketdock/cache/entries");
    for f in crate::common::files_under(&entries_dir) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // written aside, never renamed: not an entry
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let e: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let image = e["image"].as_str().unwrap();
        assert!(
            engine.inspect_image(image).await.unwrap().is_some(),
            "{name}"
        );
    }

    // The next apply works: what was stored is served, the rest runs.
    let next = statuses(&apply_ndjson(&dir, &["apply", "job.yaml"], 0));
    assert!(
        with_status(&next, "cached").contains(&"small@b"),
        "{next:?}"
    );
    assert!(
        with_status(&next, "succeeded").contains(&"after@b"),
        "{next:?}"
    );

    // doctor closes the killed job, removes its container and any image
    // its commit left that no entry names.
    dir.pd().cmd(["doctor", "--fix"]).code(0);
    dir.pd().cmd(["doctor"]).code(0).stdout_has("nothing wrong");
    dir.assert_no_leaks().await;
    let names: Vec<String> = crate::common::files_under(&entries_dir)
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}
