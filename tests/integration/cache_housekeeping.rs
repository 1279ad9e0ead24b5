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
