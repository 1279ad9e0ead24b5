//! The glossary of docs/architecture.md, held against `src/` and `docs/`:
//! a retired word for a concept fails here with the file and line. The
//! glossary itself, and the lines naming a kept alias, may say them.

use crate::common::{repo, source_files};

/// Retired spellings (matched case-insensitively) and the word to use.
const RETIRED: &[(&str, &str)] = &[
    ("next_instance", "next_job_id"),
    ("runsummary", "JobSummary"),
    ("instancedir", "the job record"),
    ("instance dir", "the job record (or sandbox record)"),
    ("job instance", "job"),
    ("job's instance", "job id"),
    ("instance id (`<job>", "job id"),
    ("run record", "job record"),
    ("run id", "job id"),
    ("persistent instance", "sandbox record"),
    ("instance record", "sandbox record"),
];

/// Lines that may name a retired word: the glossary's own rows, and lines
/// that document an alias users already depend on.
fn exempt(line: &str) -> bool {
    let l = line.to_lowercase();
    l.contains("alias") || l.contains("retired")
}

/// The lines of `dir`'s `*.ext` files that use a retired word, outside
/// the glossary itself.
fn scan(dir: &str, ext: &str, hits: &mut Vec<String>) {
    for (file, text) in source_files(dir, ext) {
        let mut in_glossary = false;
        for (i, line) in text.lines().enumerate() {
            if line.starts_with("## ") {
                in_glossary = line == "## Glossary";
            }
            if in_glossary {
                continue;
            }
            let lower = line.to_lowercase();
            for (old, new) in RETIRED {
                if lower.contains(old) && !exempt(line) {
                    hits.push(format!("{file}:{}: `{old}`: say {new}", i + 1));
                }
            }
        }
    }
}

#[test]
fn retired_words_are_gone() {
    let mut hits = Vec::new();
    scan("src", "rs", &mut hits);
    scan("docs", "md", &mut hits);
    assert!(
        hits.is_empty(),
        "retired words (docs/architecture.md, Glossary):\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_glossary_names_every_retired_word() {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md"))
        .unwrap()
        .to_lowercase();
    let glossary = &doc[doc.find("## glossary").expect("no Glossary section")..];
    for word in [
        "job id",
        "job record",
        "sandbox record",
        "parallelism",
        "instance",
    ] {
        assert!(
            glossary.contains(&format!("**{word}**")),
            "glossary lacks {word}"
        );
    }
}
