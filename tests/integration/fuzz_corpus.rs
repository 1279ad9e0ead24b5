//! The fuzz targets' own check (fuzz/fuzz_targets/common.rs: `validate`'s
//! path never panics, and every diagnostic points into the text) over the
//! committed corpus, the seeds and the examples, without fuzzing: in
//! seconds, what fuzzing once found stays covered on every run.

use pocketdock::manifest::Format;

use crate::common::{files_under, repo};

#[path = "../../fuzz/fuzz_targets/common.rs"]
mod check;

fn replay(target: &str, kind: &str, format: Format) {
    let root = repo();
    let committed = root.join("fuzz/corpus").join(target);
    let mut inputs = if committed.is_dir() {
        files_under(&committed)
    } else {
        Vec::new()
    };
    let corpus = inputs.len();
    inputs.extend(files_under(&root.join("fuzz/seeds").join(kind)));
    inputs.extend(
        files_under(&root.join("examples"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == kind)),
    );
    assert!(
        corpus > 0,
        "fuzz/corpus/{target} is empty (scripts/fuzz.sh cmin fills it)"
    );
    for input in &inputs {
        let data = std::fs::read(input).unwrap();
        let path = format!("/fuzz/job.{kind}");
        if let Err(panic) = std::panic::catch_unwind(|| check::validate(&data, format, &path)) {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            panic!("{}: {why}", input.display());
        }
    }
}

#[test]
fn the_yaml_corpus_seeds_and_examples_validate_without_a_crash() {
    replay("validate_yaml", "yaml", Format::Yaml);
}

#[test]
fn the_kdl_corpus_seeds_and_examples_validate_without_a_crash() {
    replay("validate_kdl", "kdl", Format::Kdl);
}
