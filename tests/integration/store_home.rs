//! The store is the one home of `.pocketdock/`: no file of the CLI builds a
//! path into it or lists its records itself.
//!
//! The rule, on the code of every file under `src/cli/` (comments left
//! out, string literals kept): no string literal that is one of the
//! store's names (`.pocketdock`, `instances`, `instance.toml`,
//! `history.jsonl`, `logs`, `data`), and no call of the store's path and
//! listing helpers (`instances_dir`, `data_dir()`, `store::list`,
//! `sandbox_dir::list`, `sandbox_dir::sandbox_dir`, `last_word::read`).
//! Help text may mention `.pocketdock/instances/NAME/`: a literal that
//! only contains a name is prose, not a path being built.

use crate::common::source_files;

/// Literals that would build a path into the store.
const NAMES: &[&str] = &[
    ".pocketdock",
    "instances",
    "instance.toml",
    "history.jsonl",
    "logs",
    "data",
];

/// Calls that would find the store's directories or records by hand.
const CALLS: &[&str] = &[
    "instances_dir",
    "data_dir()",
    "store::list(",
    "sandbox_dir::list(",
    "sandbox_dir::sandbox_dir(",
    "last_word::read(",
];

/// The code of `text` with comments removed, and its string literals.
fn code_and_strings(text: &str) -> (String, Vec<String>) {
    let mut code = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        code.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                s.push('\\');
                                s.push(n);
                            }
                        }
                        '"' => break,
                        _ => s.push(c),
                    }
                }
                code.push_str("\"\"");
                strings.push(s);
            }
            // A char literal such as '"' must not open a string.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if let Some(end) = rest.find('\'').filter(|e| *e > 0) {
                    for _ in 0..=end {
                        chars.next();
                    }
                    code.push_str("' '");
                } else {
                    code.push(c);
                }
            }
            _ => code.push(c),
        }
    }
    (code, strings)
}

/// Every break of the rule in `text`.
fn breaks(text: &str) -> Vec<String> {
    let (code, strings) = code_and_strings(text);
    let mut found: Vec<String> = strings
        .iter()
        .filter(|s| NAMES.contains(&s.as_str()))
        .map(|s| format!("the literal \"{s}\""))
        .collect();
    found.extend(
        CALLS
            .iter()
            .filter(|c| code.contains(*c))
            .map(|c| format!("a call of `{c}`")),
    );
    found
}

#[test]
fn no_file_of_the_cli_reads_the_store_directly() {
    let files = source_files("src/cli", "rs");
    assert!(files.len() > 20, "found too few files: {}", files.len());
    let mut wrong = Vec::new();
    for (path, text) in files {
        for b in breaks(&text) {
            wrong.push(format!("{path}: {b}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "the CLI reaches into .pocketdock/ itself; ask crate::store::Store instead:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_rule_sees_paths_and_calls_but_not_prose_or_comments() {
    assert_eq!(
        breaks(r#"let d = root.join(".pocketdock").join("instances");"#),
        ["the literal \".pocketdock\"", "the literal \"instances\""]
    );
    assert_eq!(
        breaks("let r = store::list(&store::instances_dir(root));"),
        ["a call of `instances_dir`", "a call of `store::list(`"]
    );
    assert!(breaks(r#"// root.join("logs")"#).is_empty());
    assert!(breaks(r#"println!("see .pocketdock/instances/NAME/logs");"#).is_empty());
    assert!(breaks(r#"let q = '"'; let s = "a \" b"; // "logs""#).is_empty());
}
