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

/// Fields and parameters that may still be called `instance`: the wire
/// names kept as aliases are spelt in `#[serde(rename = "instance")]` (a
/// literal, not an identifier), so this list stays empty unless a name
/// must be an identifier; each entry is `file: why`.
const INSTANCE_ALLOWED: &[(&str, &str)] = &[];

/// Every field or parameter named `instance` (`instance: T`, `instance: x`
/// in a struct literal, `.instance` read as a field) in `text`, a source
/// file of `src/` (Rust, or one of the dashboard's scripts), as
/// `file:line: ...`. Comments and string literals do not count: the word
/// names a sandbox or step instance there, and a wire name in
/// `#[serde(rename = "instance")]`.
fn instance_identifiers(rel: &str, text: &str) -> Vec<String> {
    let is_rust = std::path::Path::new(rel)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("rs"));
    let code = if is_rust {
        crate::layers::code_only(text)
    } else {
        js_code_only(text)
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for (at, _) in line.match_indices("instance") {
            let before = &line[..at];
            let after = &line[at + "instance".len()..];
            if before.ends_with(ident) || after.starts_with(ident) {
                continue;
            }
            let rest = after.trim_start();
            let field = rest.starts_with(':') && !rest.starts_with("::");
            let read = before.ends_with('.') && !rest.starts_with('(');
            if field || read {
                out.push(format!(
                    "{rel}:{}: an identifier named `instance`; say `job_id` for a job id",
                    n + 1
                ));
            }
        }
    }
    out
}

/// A script with its `//` comments and its string and template literals
/// blanked out (enough for the dashboard's plain ES modules).
fn js_code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                    out.push(c);
                } else if c == '\n' {
                    out.push('\n');
                }
            }
            None if c == '/' && chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            None if matches!(c, '"' | '\'' | '`') => {
                quote = Some(c);
                out.push(c);
            }
            None => out.push(c),
        }
    }
    out
}

#[test]
fn no_field_or_parameter_is_named_instance() {
    let mut files = source_files("src", "rs");
    files.extend(source_files("src/server/assets", "js"));
    let mut hits = Vec::new();
    for (rel, text) in &files {
        if INSTANCE_ALLOWED.iter().any(|(f, _)| f == rel) {
            continue;
        }
        hits.extend(instance_identifiers(rel, text));
    }
    assert!(
        hits.is_empty(),
        "`instance` names a job id nowhere in code (docs/architecture.md, Glossary; a wire \
         name stays through #[serde(rename = \"instance\")]):\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_identifier_check_catches_a_field_named_instance() {
    let rust = "/// the step instance: `instance: x`\n\
                pub struct Outcome {\n    pub instance: String,\n}\n\
                fn show(o: &Outcome, instance: &str) { println!(\"{}\", o.instance); }\n\
                #[serde(rename = \"instance\")]\npub job_id: String,\n\
                let sandbox_instance = 1; let instances = 2; labels::INSTANCE;\n";
    assert_eq!(
        instance_identifiers("src/job/outcome.rs", rust),
        [
            "src/job/outcome.rs:3: an identifier named `instance`; say `job_id` for a job id",
            "src/job/outcome.rs:5: an identifier named `instance`; say `job_id` for a job id",
            "src/job/outcome.rs:5: an identifier named `instance`; say `job_id` for a job id",
        ]
    );
    let js = "// r.instance in a comment\nconst t = `${n} instances: r.instance`;\n\
              const row = { instance: r.id };\nconst s = \"r.instance\";\n";
    assert_eq!(
        instance_identifiers("src/server/assets/runs.js", js),
        ["src/server/assets/runs.js:3: an identifier named `instance`; say `job_id` for a job id"]
    );
}
