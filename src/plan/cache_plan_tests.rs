//! Which steps the cache serves, and why the others are refused.

use std::path::Path;

use super::*;
use crate::manifest::{parse, Format, LoadOptions};
use crate::plan::{plan, Plan, PlanOptions};

/// The plan of a test manifest.
fn planned(text: &str) -> Plan {
    let m = parse(
        Path::new("/w/job.yaml"),
        text,
        Format::Yaml,
        &LoadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    plan(m, &PlanOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn cache_of(text: &str, switch: CacheSwitch) -> Vec<(String, StepCache)> {
    let p = planned(text);
    let c = p.cache_plan(switch);
    p.steps.iter().map(|s| s.id.clone()).zip(c).collect()
}

fn states(text: &str, switch: CacheSwitch) -> Vec<String> {
    cache_of(text, switch)
        .into_iter()
        .map(|(id, c)| match c {
            StepCache::Off => format!("{id}: off"),
            StepCache::Cached => format!("{id}: cached"),
            StepCache::Refused(r) => format!("{id}: refused, {r}"),
        })
        .collect()
}

const CHAIN: &str = "
version: 1
sandboxes: { b: { network: false } }
steps:
  fetch: { run: fetch }
  build: { run: make }
  test: { run: make test }
";

#[test]
fn nothing_is_cached_unless_asked() {
    assert!(states(CHAIN, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("off")));
    assert!(states(CHAIN, CacheSwitch::On)
        .iter()
        .all(|s| s.ends_with("cached")));
}

#[test]
fn job_sandbox_and_step_opt_in_and_no_cache_wins() {
    let job = format!("cache: true\n{CHAIN}");
    assert!(states(&job, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("cached")));
    assert!(states(&job, CacheSwitch::Off)
        .iter()
        .all(|s| s.ends_with("off")));
    let sandbox = CHAIN.replace("network: false", "network: false, cache: true");
    assert!(states(&sandbox, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("cached")));
}

#[test]
fn cache_false_on_a_step_stops_the_chain() {
    let text = CHAIN.replace("build: { run: make }", "build: { run: make, cache: false }");
    assert_eq!(
        states(&text, CacheSwitch::On),
        [
            "fetch@b: cached",
            "build@b: off",
            "test@b: refused, it comes after `build@b`, which is not cached",
        ]
    );
}

#[test]
fn network_and_volumes_are_refused_with_their_reason() {
    let net = CHAIN.replace("network: false", "network: true");
    assert!(states(&net, CacheSwitch::On)[0].ends_with("refused, its sandbox has network on"));
    let vol = CHAIN.replace(
        "network: false",
        "network: false, volumes: ['./data:/data']",
    );
    assert!(states(&vol, CacheSwitch::On)[2].contains("host volumes"));
}

#[test]
fn session_and_python_end_the_chain() {
    let text = CHAIN.replace("build: { run: make }", "build: { session: make }");
    assert_eq!(
        states(&text, CacheSwitch::On),
        [
            "fetch@b: cached",
            "build@b: refused, a `session` step keeps its state in processes",
            "test@b: refused, it comes after `build@b`, a `session` step, whose state lives in processes",
        ]
    );
}

#[test]
fn steps_that_may_overlap_are_refused() {
    let text = "
version: 1
sandboxes: { b: { network: false } }
steps:
  one: { run: a }
  two: { run: b, needs: [] }
";
    assert!(states(text, CacheSwitch::On)
        .iter()
        .all(|s| s.ends_with("refused, its sandbox may run two steps at once")));
}

#[test]
fn force_passes_network_volumes_and_process_state() {
    let net = CHAIN.replace("network: false", "network: true, cache: force");
    assert!(states(&net, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("cached")));
    let vol = CHAIN.replace(
        "network: false",
        "network: false, volumes: ['./data:/data'], cache: force",
    );
    assert!(states(&vol, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("cached")));
    let python = CHAIN.replace(
        "build: { run: make }",
        "build: { python: 'x = 1', cache: force }",
    );
    assert!(states(&python, CacheSwitch::On)
        .iter()
        .all(|s| s.ends_with("cached")));
}

#[test]
fn force_on_one_step_passes_that_step_only() {
    let net = CHAIN
        .replace("network: false", "network: true")
        .replace("build: { run: make }", "build: { run: make, cache: force }");
    assert_eq!(
        states(&net, CacheSwitch::On),
        [
            "fetch@b: refused, its sandbox has network on",
            "build@b: refused, it comes after `fetch@b`, which is not cached",
            "test@b: refused, its sandbox has network on",
        ]
    );
    let python = CHAIN.replace("build: { run: make }", "build: { python: 'x = 1' }");
    let python = python.replace("test: { run: make test }", "test: { run: t, cache: force }");
    assert!(states(&python, CacheSwitch::On)[2].ends_with(
        "refused, it comes after `build@b`, a `python` step, whose state lives in processes"
    ));
}

#[test]
fn force_never_passes_overlap_persist_or_snapshot() {
    let text = "
version: 1
sandboxes: { b: { network: false, cache: force } }
steps:
  one: { run: a }
  two: { run: b, needs: [] }
";
    assert!(states(text, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("refused, its sandbox may run two steps at once")));
    let persist = CHAIN.replace(
        "network: false",
        "network: false, persist: true, cache: force",
    );
    assert!(states(&persist, CacheSwitch::Manifest)
        .iter()
        .all(|s| s.ends_with("refused, its sandbox is persistent")));
}

#[test]
fn a_backend_that_cannot_commit_refuses_every_step_with_the_reason() {
    let m = parse(
        Path::new("/w/job.yaml"),
        CHAIN,
        Format::Yaml,
        &LoadOptions::default(),
    )
    .unwrap();
    let opts = PlanOptions {
        capabilities: crate::backend::Capabilities::KUBERNETES,
        ..PlanOptions::default()
    };
    let p = plan(m, &opts).unwrap();
    let c = p.cache_plan(CacheSwitch::On);
    assert_eq!(c.len(), 3);
    for s in &c {
        assert_eq!(s, &StepCache::Refused(Refusal::Backend("Kubernetes")));
    }
    assert_eq!(
        Refusal::Backend("Kubernetes").to_string(),
        "Kubernetes cannot commit a sandbox, which the cache stores"
    );
    // `--no-cache` still means off, not refused.
    assert!(p
        .cache_plan(CacheSwitch::Off)
        .iter()
        .all(|s| *s == StepCache::Off));
}

fn offline(text: &str, switch: CacheSwitch) -> (bool, Vec<StepCache>) {
    let p = planned(text).offline_for_cache(switch);
    (p.sandboxes[0].spec.network, p.cache_plan(switch))
}

const FIRMWARE: &str = "
version: 1
sandboxes: { fw: { profile: embedded } }
steps:
  build: { run: make }
  test: { run: make test }
";

#[test]
fn a_profile_default_network_is_turned_off_when_every_step_is_cached() {
    let (network, cache) = offline(FIRMWARE, CacheSwitch::On);
    assert!(!network);
    assert!(cache.iter().all(StepCache::is_cached));
    // Not asked for the cache: the profile's default stands.
    assert!(offline(FIRMWARE, CacheSwitch::Manifest).0);
    assert!(offline(FIRMWARE, CacheSwitch::Off).0);
}

#[test]
fn a_network_the_manifest_asks_for_or_a_step_that_is_not_cached_keeps_it() {
    let said = FIRMWARE.replace("profile: embedded", "profile: embedded, network: true");
    let (network, cache) = offline(&said, CacheSwitch::On);
    assert!(network);
    assert_eq!(cache[0], StepCache::Refused(Refusal::Network));
    let uncached = FIRMWARE.replace("run: make test", "run: make test, cache: false");
    let (network, cache) = offline(&uncached, CacheSwitch::On);
    assert!(network);
    assert_eq!(cache[0], StepCache::Refused(Refusal::Network));
}
