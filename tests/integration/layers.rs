//! The layer table of docs/architecture.md, held against the code.
//!
//! Every file under `src/` belongs to exactly one layer of the table, and
//! every `crate::…` path in it (a `use` or an inline path, tests included)
//! must name a layer that its own layer may import. An import that runs back
//! up fails here, with the file and line. The size rule lives here too:
//! every source file stays at 800 lines or fewer, with at most two
//! exceptions, each saying why in its first line.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{repo, source_files};

/// A row of the table: a layer, where its files are, what it may import.
#[derive(Debug)]
struct Layer {
    name: String,
    /// `src/x.rs` files and `src/x/` folders.
    places: Vec<String>,
    may_import: BTreeSet<String>,
}

/// The rows between the `<!-- layers -->` and `<!-- /layers -->` markers.
fn parse_table(doc: &str) -> Vec<Layer> {
    let start = doc
        .find("<!-- layers -->")
        .expect("no <!-- layers --> marker");
    let end = doc
        .find("<!-- /layers -->")
        .expect("no <!-- /layers --> marker");
    let mut layers = Vec::new();
    for line in doc[start..end].lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        if cells.len() != 3 || cells[0].contains("---") || cells[0].trim() == "layer" {
            continue;
        }
        let words = |s: &str| -> Vec<String> {
            s.split([',', ' '])
                .map(|w| w.trim().trim_matches('`').to_string())
                .filter(|w| !w.is_empty())
                .collect()
        };
        layers.push(Layer {
            name: cells[0].trim().to_string(),
            places: words(cells[1]),
            may_import: words(cells[2]).into_iter().collect(),
        });
    }
    layers
}

/// The text with comments, string literals and char literals blanked out.
pub(crate) fn code_only(text: &str) -> String {
    scan(text, false)
}

/// The text with comments blanked out, string and char literals kept.
fn without_comments(text: &str) -> String {
    scan(text, true)
}

/// The text with comments blanked out, and string and char literals too
/// unless `keep_literals`.
fn scan(text: &str, keep_literals: bool) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let mut hashes = 0;
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            j += 1;
            while j < b.len() && !b[j..].starts_with(&close) {
                if b[j] == b'\n' && !keep_literals {
                    out.push('\n');
                }
                j += 1;
            }
            let end = (j + close.len()).min(b.len());
            if keep_literals {
                out.push_str(&text[i..end]);
            } else {
                out.push_str("\"\"");
            }
            i = end;
        } else if c == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') && !keep_literals {
                    out.push('\n');
                }
                i += 1;
            }
            i = (i + 1).min(b.len());
            if keep_literals {
                out.push_str(&text[start..i]);
            } else {
                out.push_str("\"\"");
            }
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime.
            let rest = &text[i + 1..];
            let len = if rest.starts_with('\\') {
                rest.find('\'').map(|e| e + 1)
            } else {
                rest.chars()
                    .next()
                    .filter(|ch| rest[ch.len_utf8()..].starts_with('\''))
                    .map(|ch| ch.len_utf8() + 1)
            };
            if let Some(n) = len {
                if keep_literals {
                    out.push_str(&text[i..=i + n]);
                } else {
                    out.push_str("' '");
                }
                i += 1 + n;
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The first segment of every `crate::` path, with its 1-based line.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let b = code.as_bytes();
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && is_ident(b[at - 1]) {
            continue; // `$crate::` in a macro, or `pocketdock_crate::`.
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first segment at depth 1.
            let mut depth = 1;
            let mut item = String::new();
            let mut items = Vec::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            items.push(std::mem::take(&mut item));
                            break;
                        }
                    }
                    ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                    _ if depth == 1 => item.push(ch),
                    _ => {}
                }
            }
            for it in items {
                let first: String = it
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !first.is_empty() && first != "self" {
                    found.push((line, first));
                }
            }
        } else {
            let first: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !first.is_empty() {
                found.push((line, first));
            }
        }
    }
    found
}

/// Which top-level module a name at the crate root comes from: modules are
/// themselves, re-exports (`pub use engine::{Engine, …}`) their module.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in code_only(lib).lines() {
        let line = line.trim();
        if let Some(m) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
        {
            let m = m.trim_end_matches(';').trim();
            names.insert(m.to_string(), m.to_string());
        } else if let Some(u) = line.strip_prefix("pub use ") {
            let Some((module, rest)) = u.split_once("::") else {
                continue;
            };
            let rest = rest.trim_end_matches(';');
            let items = rest.trim_start_matches('{').trim_end_matches('}');
            for item in items.split(',') {
                let item = item.trim();
                let name = item
                    .rsplit_once(" as ")
                    .map_or_else(|| item.rsplit("::").next().unwrap_or(item), |(_, a)| a);
                if !name.is_empty() {
                    names.insert(name.trim().to_string(), module.to_string());
                }
            }
        }
    }
    names
}

/// The layer holding `rel` (a path like `src/engine/exec.rs`).
fn layer_of<'a>(layers: &'a [Layer], rel: &str) -> Option<&'a Layer> {
    layers.iter().find(|l| {
        l.places.iter().any(|p| {
            if p.ends_with('/') {
                rel.starts_with(p.as_str())
            } else {
                rel == p
            }
        })
    })
}

/// Every import that runs against the table, as `file:line: message`.
fn violations(layers: &[Layer], files: &[(String, String)], lib: &str) -> Vec<String> {
    let roots = root_names(lib);
    // The layer a top-level module belongs to.
    let module_layer = |m: &str| -> Option<&str> {
        let file = format!("src/{m}.rs");
        let dir = format!("src/{m}/mod.rs");
        layer_of(layers, &file)
            .or_else(|| layer_of(layers, &dir))
            .map(|l| l.name.as_str())
    };
    let mut out = Vec::new();
    for (rel, text) in files {
        let Some(own) = layer_of(layers, rel) else {
            out.push(format!("{rel}: in no layer of the table"));
            continue;
        };
        if own.may_import.contains("everything") {
            continue;
        }
        for (line, name) in crate_paths(&code_only(text)) {
            let Some(module) = roots.get(&name) else {
                out.push(format!(
                    "{rel}:{line}: `crate::{name}` is not a module or re-export of lib.rs"
                ));
                continue;
            };
            let Some(target) = module_layer(module) else {
                out.push(format!(
                    "{rel}:{line}: module `{module}` is in no layer of the table"
                ));
                continue;
            };
            if target != own.name && !own.may_import.contains(target) {
                out.push(format!(
                    "{rel}:{line}: {} may not import {target} (`crate::{name}`)",
                    own.name
                ));
            }
        }
    }
    out
}

#[test]
fn imports_follow_the_layer_table_of_docs_architecture() {
    let root = repo();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layers = parse_table(&doc);
    assert!(layers.len() >= 8, "the table has too few rows: {layers:?}");
    let files = source_files("src", "rs");
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let bad = violations(&layers, &files, &lib);
    assert!(
        bad.is_empty(),
        "imports that run against docs/architecture.md's layer table:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_catches_an_import_that_runs_back_up() {
    let doc = "<!-- layers -->\n| layer | where | may import |\n|---|---|---|\n\
               | leaves | `src/error.rs` | leaves |\n\
               | engine | `src/engine/` | leaves |\n\
               | sandbox | `src/sandbox/` | engine, leaves |\n\
               | root | `src/lib.rs` | everything |\n<!-- /layers -->";
    let layers = parse_table(doc);
    let lib = "pub mod engine;\npub mod error;\npub mod sandbox;\npub use engine::{Engine, EngineKind as Kind};\n";
    let files = vec![
        (
            "src/engine/exec.rs".to_string(),
            "use crate::error::Error;\n// crate::sandbox in a comment\nlet s = \"crate::sandbox\";\nfn f() { crate::sandbox::x(); }\n".to_string(),
        ),
        (
            "src/sandbox/mod.rs".to_string(),
            "use crate::{Engine, error::{Error, Result}};\nuse crate::Kind;\n".to_string(),
        ),
        ("src/error.rs".to_string(), "use crate::{self as c, Engine};".to_string()),
        ("src/other.rs".to_string(), String::new()),
    ];
    let bad = violations(&layers, &files, lib);
    assert_eq!(
        bad,
        vec![
            "src/engine/exec.rs:4: engine may not import sandbox (`crate::sandbox`)".to_string(),
            "src/error.rs:1: leaves may not import engine (`crate::Engine`)".to_string(),
            "src/other.rs: in no layer of the table".to_string(),
        ]
    );
}

/// What names a part of the store's layout: its file and directory names
/// (as a path join's or a path's literal) and its layout helpers.
const STORE_NAMES: &[&str] = &[
    ".pocketdock",
    "instances",
    "instance.toml",
    "history.jsonl",
    "logs",
    "data",
    "artifacts",
    ".space-reserve",
];
const STORE_HELPERS: &[&str] = &[
    "HISTORY_FILE",
    "RECORD_FILE",
    "RESERVE_FILE",
    "records_dir",
    "instances_dir",
];

/// The layers above `below`: those that may import it, and those that may
/// import one of them (`steps`, through `run`), but none `below` itself
/// imports. (Reaching further runs round the table's one cycle, `steps`
/// and the layers that hold its sum types.)
fn above(layers: &[Layer], below: &str) -> BTreeSet<String> {
    let imports =
        |l: &Layer, m: &str| l.may_import.contains("everything") || l.may_import.contains(m);
    let own: BTreeSet<String> = layers
        .iter()
        .find(|l| l.name == below)
        .map(|l| l.may_import.clone())
        .unwrap_or_default();
    let direct: BTreeSet<String> = layers
        .iter()
        .filter(|l| l.name != below && imports(l, below))
        .map(|l| l.name.clone())
        .collect();
    layers
        .iter()
        .filter(|l| direct.contains(&l.name) || direct.iter().any(|d| imports(l, d)))
        .map(|l| l.name.clone())
        .filter(|n| n != below && !own.contains(n))
        .collect()
}

/// Every place a file of a layer above `store` names a store path: a path
/// join or a path built from one of the store's names (`.join("logs")`,
/// `Path::new(".pocketdock/...")`), or one of its layout helpers. Comments
/// and messages may name them; code asks the `Store`.
fn store_path_violations(layers: &[Layer], files: &[(String, String)]) -> Vec<String> {
    let above = above(layers, "store");
    let mut out = Vec::new();
    for (rel, text) in files {
        if !layer_of(layers, rel).is_some_and(|l| above.contains(&l.name)) {
            continue;
        }
        let code = code_only(text);
        for (n, line) in code.lines().enumerate() {
            for helper in STORE_HELPERS {
                let found = line.match_indices(helper).any(|(at, _)| {
                    let ident = |c: char| c.is_alphanumeric() || c == '_';
                    !line[..at].ends_with(ident) && !line[at + helper.len()..].starts_with(ident)
                });
                if found {
                    out.push(format!("{rel}:{}: names the store's `{helper}`", n + 1));
                }
            }
        }
        let literal = without_comments(text);
        for (n, line) in literal.lines().enumerate() {
            for opener in [".join(\"", "Path::new(\"", "PathBuf::from(\""] {
                for (at, _) in line.match_indices(opener) {
                    let arg = &line[at + opener.len()..];
                    let arg = &arg[..arg.find('"').unwrap_or(arg.len())];
                    let names_store = arg.split('/').any(|part| STORE_NAMES.contains(&part));
                    if names_store {
                        out.push(format!(
                            "{rel}:{}: builds a store path (`{opener}{arg}\"`)",
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn no_layer_above_the_store_names_a_store_path() {
    let root = repo();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layers = parse_table(&doc);
    let files = source_files("src", "rs");
    let bad = store_path_violations(&layers, &files);
    assert!(
        bad.is_empty(),
        "code above src/store/ that names the store's layout; ask crate::store::Store (or its \
         value types) instead:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_catches_a_store_path_above_the_store() {
    let doc = "<!-- layers -->\n| layer | where | may import |\n|---|---|---|\n\
               | leaves | `src/error.rs` | leaves |\n\
               | store | `src/store/` | leaves |\n\
               | job | `src/job/` | store, leaves |\n\
               | server | `src/server/` | job, leaves |\n\
               | root | `src/lib.rs` | everything |\n<!-- /layers -->";
    let layers = parse_table(doc);
    let files = vec![
        (
            "src/server/files.rs".to_string(),
            "// dir.join(\"logs\") in a comment is fine\n\
             let m = \"see .pocketdock/instances/\";\n\
             let p = dir.join(\"logs\").join(&s.log);\n\
             let t = Path::new(\".pocketdock/instances/x/instance.toml\");\n\
             let h = dir.join(HISTORY_FILE);\n\
             let r = store.records_dir();\n\
             let ok = dir.join(\"logs_of_mine\");\n"
                .to_string(),
        ),
        (
            "src/store/home.rs".to_string(),
            "let p = root.join(\".pocketdock\").join(\"instances\");\n".to_string(),
        ),
        (
            "src/error.rs".to_string(),
            "let p = x.join(\"data\");\n".to_string(),
        ),
    ];
    assert_eq!(
        store_path_violations(&layers, &files),
        vec![
            "src/server/files.rs:5: names the store's `HISTORY_FILE`".to_string(),
            "src/server/files.rs:6: names the store's `records_dir`".to_string(),
            "src/server/files.rs:3: builds a store path (`.join(\"logs\"`)".to_string(),
            "src/server/files.rs:4: builds a store path (`Path::new(\".pocketdock/instances/x/instance.toml\"`)".to_string(),
        ]
    );
}

/// Lines allowed in one source file, and how many files may exceed it.
const MAX_LINES: usize = 800;
const MAX_EXCEPTIONS: usize = 2;

#[test]
fn source_files_stay_small_enough_to_read() {
    let mut over = Vec::new();
    let mut excused = Vec::new();
    for (rel, text) in source_files("src", "rs") {
        // Unit-test files are exempt.
        if rel.ends_with("/tests.rs") || rel.split('/').any(|c| c == "tests") {
            continue;
        }
        let lines = text.lines().count();
        if lines <= MAX_LINES {
            continue;
        }
        if text
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("// Over 800 lines: "))
        {
            excused.push(rel);
        } else {
            over.push(format!("{rel}: {lines} lines"));
        }
    }
    assert!(over.is_empty(), "files over {MAX_LINES} lines (split them, or excuse at most {MAX_EXCEPTIONS} with a first line `// Over 800 lines: <why>`):\n{}", over.join("\n"));
    assert!(
        excused.len() <= MAX_EXCEPTIONS,
        "more than {MAX_EXCEPTIONS} excused files: {excused:?}"
    );
}
