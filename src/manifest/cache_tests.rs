//! `cache:` and `cache_key:`: accepted forms, and mistakes at their line:col.

use super::*;

use super::tests::yaml;

fn only_error(text: &str) -> Diagnostic {
    let d = match yaml(text) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.diagnostics().to_vec(),
    };
    assert_eq!(d.len(), 1, "{d:#?}");
    d[0].clone()
}

#[test]
fn cache_is_read_on_the_job_a_sandbox_and_a_step() {
    let m = yaml(
        "version: 1\ncache: true\nsandboxes:\n  s: { cache: false }\nsteps:\n  a: { run: x, cache: true, cache_key: [gcc-13, { file: ./tool.txt }] }\n",
    )
    .unwrap();
    assert_eq!(m.cache.map(|c| c.value), Some(CacheChoice::On));
    assert_eq!(
        m.sandboxes["s"].cache.as_ref().map(|c| c.value),
        Some(CacheChoice::Off)
    );
    let a = &m.steps["a"];
    assert_eq!(a.cache.as_ref().map(|c| c.value), Some(CacheChoice::On));
    assert!(
        matches!(&a.cache_key[..], [CacheInput::Text(t), CacheInput::File(f)]
        if t.value == "gcc-13" && f.value == "./tool.txt")
    );
}

#[test]
fn cache_force_is_read_on_a_sandbox_and_a_step() {
    let m = yaml(
        "version: 1\nsandboxes:\n  s: { cache: force }\nsteps:\n  a: { run: x, cache: force }\n",
    )
    .unwrap();
    assert_eq!(
        m.sandboxes["s"].cache.as_ref().map(|c| c.value),
        Some(CacheChoice::Force)
    );
    assert_eq!(
        m.steps["a"].cache.as_ref().map(|c| c.value),
        Some(CacheChoice::Force)
    );
}

#[test]
fn a_single_string_is_one_cache_key_input() {
    let m =
        yaml("version: 1\nsandboxes: { s: {} }\nsteps:\n  a: { run: x, cache_key: v2 }\n").unwrap();
    assert_eq!(m.steps["a"].cache_key.len(), 1);
}

#[test]
fn cache_mistakes_point_at_their_value() {
    let d = only_error("version: 1\nsandboxes: { s: {} }\nsteps:\n  a: { run: x, cache: 'yes' }\n");
    assert_eq!(d.position(), "4:23");
    assert_eq!(
        d.message,
        "`cache` must be a boolean or `force`, found a string"
    );
    let Err(e) = yaml(
        "version: 1\nsandboxes: { s: {} }\nsteps:\n  a: { run: x, cache_key: [{ path: x }] }\n",
    ) else {
        panic!("expected an error")
    };
    let d = e.diagnostics();
    assert!(d
        .iter()
        .any(|d| d.position() == "4:30" && d.message.contains("unknown key `path`")));
    assert!(d
        .iter()
        .any(|d| d.position() == "4:28" && d.message.contains("needs `file`")));
    let d =
        only_error("version: 1\nsandboxes: { s: {} }\nsteps:\n  a: { run: x, cache_key: [3] }\n");
    assert_eq!(d.position(), "4:28");
}
